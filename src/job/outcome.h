/* outcome.h - what to do with a job after one delivery attempt (SPEC
 * section 5). Pure: time and randomness are arguments.
 *
 * The table (first matching row wins):
 *   200..299                      DELIVERED
 *   300..399                      DEAD "http_3xx": redirects are never
 *                                 followed (that would step around the
 *                                 endpoint and allow_urls), and the same
 *                                 request gets the same redirect again
 *   400..499 except 408 425 429   DEAD "http_4xx", even on the last attempt
 *   attempts_done >= max_attempts DEAD "exhausted" (for every row below)
 *   429, 503 with Retry-After     PAUSE_RETRY, delay from Retry-After (when
 *                                 parseable); the caller pauses the tenant
 *                                 for delay_ms
 *   429 without (usable) one      PAUSE_RETRY after sl_backoff_ms
 *   503 without (usable) one      RETRY after sl_backoff_ms: a server error
 *                                 that names no time pauses nobody
 *   408, 425, other 500..599      RETRY after sl_backoff_ms
 *   0 (timeout, connection error) RETRY after sl_backoff_ms
 *   anything else (1xx as a final status, < 0, >= 600): no usable HTTP
 *                                 response, so treated like 0: RETRY
 * A 429/503 counts as an attempt: the request reached the downstream and
 * was refused, so it is a retry like any other. (A deferral by one of the
 * tenant's own limits is no attempt, but is never decided here.) The
 * backoff is sl_backoff_ms(attempts_done, base_ms, max_ms, random).
 */
#ifndef SLUICE_OUTCOME_H
#define SLUICE_OUTCOME_H

#include <stdint.h>

typedef enum {
    SL_OUTCOME_DELIVERED,
    SL_OUTCOME_RETRY,
    SL_OUTCOME_PAUSE_RETRY,
    SL_OUTCOME_DEAD,
} sl_outcome_kind;

typedef struct sl_outcome {
    sl_outcome_kind kind;
    int64_t delay_ms;   /* RETRY, PAUSE_RETRY: wait before the next attempt; else 0 */
    const char *reason; /* DEAD: "http_3xx", "http_4xx" or "exhausted" (static); else NULL */
} sl_outcome;

/* Decides after an attempt that got `http_status` (0 = no response: timeout
 * or connection error) with the Retry-After header value `retry_after`
 * (NULL when absent). attempts_done counts this attempt (values < 1 read
 * as 1); max_attempts < 1 is read as 1. now_ms is unix ms (for HTTP-date
 * Retry-After); random is a uniformly random 64-bit value for the jitter. */
sl_outcome sl_outcome_decide(int http_status, const char *retry_after, int attempts_done,
                             int max_attempts, int64_t base_ms, int64_t max_ms, int64_t now_ms,
                             uint64_t random);

#endif
