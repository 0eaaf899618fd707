/* resp_input.h - what the harnesses of Redis replies share: a fuzz input
 * fed to hiredis's I/O-free reader (the code that reads the socket in the
 * daemon) in pieces, and every reply it yields handed to a check.
 *
 * Inputs announcing an array over SL_FUZZ_ARRAY_MAX elements (or below
 * -1) are skipped: hiredis 0.14 allocates an array's element pointers as
 * soon as it reads the count, so "*400000000" asks for 3.2 GB before any
 * element arrives; that is the reader's own trust in the server, not the
 * code under test's, and it would stop every run as an out-of-memory. */
#ifndef SLUICE_FUZZ_RESP_INPUT_H
#define SLUICE_FUZZ_RESP_INPUT_H

#include <stddef.h>
#include <stdint.h>

#include <hiredis/hiredis.h>

#define SL_FUZZ_ARRAY_MAX 100000

/* Feeds data[0, size) to a reader piece bytes at a time (piece >= 1) and
 * calls check(reply, arg) on each reply (freed afterwards), until the
 * input ends or the reader reports a protocol error. */
void sl_fuzz_resp_each(const uint8_t *data, size_t size, size_t piece,
                       void (*check)(const redisReply *reply, void *arg), void *arg);

#endif
