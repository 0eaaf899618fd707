/* ratelimit_headers.h - an endpoint's own rate-limit headers (issue 16):
 * when they say no request is left before a reset, the tenant pauses
 * fleet-wide until then, before the endpoint has to refuse.
 *
 * Read, newest form first:
 * - `RateLimit` (IETF draft-ietf-httpapi-ratelimit-headers, structured
 *   field list): `"default";r=0;t=30`, one item per policy; r is what
 *   remains, t the seconds until the window resets. The draft's earlier
 *   dictionary form `limit=100, remaining=0, reset=30` is read too.
 *   (`RateLimit-Policy` describes quotas, not the present: not needed to
 *   decide a pause, so not read.)
 * - `RateLimit-Remaining` with `RateLimit-Reset` (the draft's older
 *   separate fields);
 * - `X-RateLimit-Remaining` with `X-RateLimit-Reset` (GitHub, Twitter and
 *   many others).
 * A Reset of the last two is seconds (a fraction allowed) or a unix time:
 * at least 10^9 (2001-09-09 as a unix time, 31 years as a delay) is unix
 * seconds, at least 10^12 unix milliseconds. A reset in the past is 0,
 * and every delay is clamped to SL_RETRY_AFTER_MAX_MS (one day) as
 * Retry-After's is. Remaining 0 without a reset asks for nothing: how
 * long to wait is unknown, and a 429 will say it.
 *
 * Pure: capture is bytes in, the decision takes the time as an argument. */
#ifndef SLUICE_RATELIMIT_HEADERS_H
#define SLUICE_RATELIMIT_HEADERS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Values longer than this are not kept (no honest one is). */
#define SL_RATELIMIT_VALUE_MAX 127

/* The rate-limit headers of one response, as received (NUL-terminated,
 * "" when absent). Zeroed memory is an empty one. */
typedef struct sl_ratelimit_raw {
    char ratelimit[SL_RATELIMIT_VALUE_MAX + 1];   /* RateLimit */
    char remaining[SL_RATELIMIT_VALUE_MAX + 1];   /* RateLimit-Remaining */
    char reset[SL_RATELIMIT_VALUE_MAX + 1];       /* RateLimit-Reset */
    char x_remaining[SL_RATELIMIT_VALUE_MAX + 1]; /* X-RateLimit-Remaining */
    char x_reset[SL_RATELIMIT_VALUE_MAX + 1];     /* X-RateLimit-Reset */
    bool any;                                     /* one of them was kept */
} sl_ratelimit_raw;

/* Empties r (a new response, after an interim one). */
void sl_ratelimit_clear(sl_ratelimit_raw *r);

/* If name[0, name_len) (any case) is one of the headers above, keeps
 * value[0, value_len) (surrounding SP/HTAB/CR/LF trimmed) in r, a later
 * one replacing an earlier, and returns true; an over-long value empties
 * that field. Else false, r untouched. */
bool sl_ratelimit_capture(sl_ratelimit_raw *r, const char *name, size_t name_len,
                          const char *value, size_t value_len);

/* Whether r (NULL: none) says nothing remains before a reset; then the
 * delay from now_ms (unix ms) to the reset, in [0, SL_RETRY_AFTER_MAX_MS],
 * goes to *delay_ms. When several forms or policies say so, the longest
 * delay counts. Malformed values are ignored. */
bool sl_ratelimit_pause(const sl_ratelimit_raw *r, int64_t now_ms, int64_t *delay_ms);

#endif
