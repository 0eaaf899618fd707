/* resp_stream.h - what the harnesses of Redis replies share: a RESP
 * stream fed to hiredis's I/O-free reader in pieces, as redis_link reads
 * a socket, each reply it yields handed to a check. */
#ifndef SLUICE_FUZZ_RESP_STREAM_H
#define SLUICE_FUZZ_RESP_STREAM_H

#include <stddef.h>
#include <stdint.h>

#include <hiredis/hiredis.h>

/* Feeds data[0, size) in pieces of `piece` bytes (>= 1) and calls
 * check(reply, arg) for each whole reply, until the stream ends or the
 * reader reports a protocol error (the daemon then drops the connection).
 * Streams announcing an array over 100,000 elements (or below -1) are
 * skipped: hiredis 0.14 allocates the element pointers as soon as it
 * reads the count, the reader's own trust in the server, which would stop
 * every run as an out-of-memory. */
void sl_fuzz_resp_stream(const uint8_t *data, size_t size, size_t piece,
                         void (*check)(const redisReply *reply, void *arg), void *arg);

#endif
