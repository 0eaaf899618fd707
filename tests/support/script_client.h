/* script_client.h - calls the embedded admission scripts on a test Redis. */
#ifndef SLUICE_TEST_SCRIPT_CLIENT_H
#define SLUICE_TEST_SCRIPT_CLIENT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <hiredis/hiredis.h>

#include "admission/admission.h"

/* SCRIPT LOADs the embedded script `name`; writes its SHA1 (41 bytes). */
bool sc_load(redisContext *c, const char *name, char sha[41]);

/* Formats a rate in milli-jobs/s as the decimal the scripts take ("3.000"). */
void sc_format_rate(int64_t rate_milli, char out[32]);

/* Formats the second ARGV of a script: a rate for bucket scripts, an
 * integer window_ms for window scripts. */
void sc_format_second(bool window, int64_t second, char out[32]);

/* Turns an EVALSHA reply into a verdict; false (message in err) if the
 * reply is not the {allowed, remaining, wait_us} array. */
bool sc_parse_verdict(const redisReply *reply, sl_verdict *out, char *err, size_t err_size);

/* EVALSHA sha 1 key first second [now] (now < 0: let the script use TIME).
 * Returns the reply; caller frees. */
redisReply *sc_call(redisContext *c, const char *sha, const char *key, const char *first,
                    const char *second, int64_t now_us);

#endif
