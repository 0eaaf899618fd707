/* test_outcome.c - the delivery decision table (job/outcome.h): what a
 * status, a Retry-After and an attempt count make of a delivery. */
#include <criterion/criterion.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "job/backoff.h"
#include "job/outcome.h"
#include "job/retry_after.h"

#define T_1994 INT64_C(784111777000) /* Sun, 06 Nov 1994 08:49:37 GMT: the date of RFC 9110's examples */

/* ---- outcome ---------------------------------------------------------- */

#define BASE 500
#define MAXMS 60000

static sl_outcome decide(int status, const char *retry_after, int attempts, int max_attempts,
                         uint64_t random)
{
    return sl_outcome_decide(status, retry_after, attempts, max_attempts, BASE, MAXMS, T_1994,
                             random);
}

Test(outcome, two_hundreds_are_delivered)
{
    const int codes[] = {200, 201, 202, 204, 226, 299};
    for (size_t i = 0; i < sizeof codes / sizeof codes[0]; i++) {
        for (int attempts = 1; attempts <= 6; attempts++) {
            sl_outcome o = decide(codes[i], "5", attempts, 5, UINT64_MAX);
            cr_assert_eq(o.kind, SL_OUTCOME_DELIVERED, "%d", codes[i]);
            cr_assert_eq(o.delay_ms, 0);
            cr_assert_null(o.reason);
        }
    }
}

Test(outcome, client_errors_are_dead_at_once)
{
    const int codes[] = {400, 401, 403, 404, 405, 409, 410, 413, 415, 422, 424, 426, 431, 451, 499};
    for (size_t i = 0; i < sizeof codes / sizeof codes[0]; i++) {
        for (int attempts = 1; attempts <= 6; attempts++) {
            sl_outcome o = decide(codes[i], "5", attempts, 5, UINT64_MAX);
            cr_assert_eq(o.kind, SL_OUTCOME_DEAD, "%d", codes[i]);
            cr_assert_str_eq(o.reason, "http_4xx", "%d at %d", codes[i], attempts);
            cr_assert_eq(o.delay_ms, 0);
        }
    }
}

Test(outcome, redirects_are_dead)
{
    const int codes[] = {300, 301, 302, 303, 304, 307, 308, 399};
    for (size_t i = 0; i < sizeof codes / sizeof codes[0]; i++) {
        sl_outcome o = decide(codes[i], NULL, 1, 5, 0);
        cr_assert_eq(o.kind, SL_OUTCOME_DEAD, "%d", codes[i]);
        cr_assert_str_eq(o.reason, "http_3xx");
    }
}

Test(outcome, transient_failures_retry_with_backoff)
{
    const int codes[] = {0, 408, 425, 500, 501, 502, 504, 507, 599,
                         100, 101, 199, -1, 600, 999}; /* the last: no usable response */
    uint64_t state = 5;
    for (size_t i = 0; i < sizeof codes / sizeof codes[0]; i++) {
        for (int attempts = 1; attempts < 5; attempts++) {
            uint64_t r = sl_random_u64(&state);
            sl_outcome o = decide(codes[i], "7", attempts, 5, r); /* Retry-After ignored */
            cr_assert_eq(o.kind, SL_OUTCOME_RETRY, "%d", codes[i]);
            cr_assert_null(o.reason);
            cr_assert_eq(o.delay_ms, sl_backoff_ms(attempts, BASE, MAXMS, r), "%d", codes[i]);
        }
        /* the cap grows with the attempts */
        cr_assert_eq(decide(codes[i], NULL, 1, 10, UINT64_MAX).delay_ms, 500);
        cr_assert_eq(decide(codes[i], NULL, 4, 10, UINT64_MAX).delay_ms, 4000);
        cr_assert_eq(decide(codes[i], NULL, 9, 10, UINT64_MAX).delay_ms, 60000);
    }
}

Test(outcome, throttling_pauses_for_retry_after)
{
    const int codes[] = {429, 503};
    for (size_t i = 0; i < 2; i++) {
        sl_outcome o = decide(codes[i], "7", 1, 5, UINT64_MAX);
        cr_assert_eq(o.kind, SL_OUTCOME_PAUSE_RETRY);
        cr_assert_eq(o.delay_ms, 7000);
        cr_assert_null(o.reason);
        o = decide(codes[i], "0", 1, 5, UINT64_MAX);
        cr_assert_eq(o.kind, SL_OUTCOME_PAUSE_RETRY);
        cr_assert_eq(o.delay_ms, 0);
        o = decide(codes[i], "Sun, 06 Nov 1994 08:50:37 GMT", 2, 5, UINT64_MAX);
        cr_assert_eq(o.kind, SL_OUTCOME_PAUSE_RETRY);
        cr_assert_eq(o.delay_ms, 60000);
        o = decide(codes[i], "999999999", 2, 5, UINT64_MAX); /* clamped to a day */
        cr_assert_eq(o.delay_ms, SL_RETRY_AFTER_MAX_MS);
        /* absent or garbage: the backoff; only a 429 still pauses the tenant */
        sl_outcome_kind without = codes[i] == 429 ? SL_OUTCOME_PAUSE_RETRY : SL_OUTCOME_RETRY;
        o = decide(codes[i], NULL, 3, 5, UINT64_MAX);
        cr_assert_eq(o.kind, without, "status %d without Retry-After", codes[i]);
        cr_assert_eq(o.delay_ms, 2000);
        o = decide(codes[i], "soon", 3, 5, UINT64_C(1) << 63);
        cr_assert_eq(o.kind, without, "status %d with garbage Retry-After", codes[i]);
        cr_assert_eq(o.delay_ms, 1000);
    }
}

Test(outcome, exhausted_boundary)
{
    /* max 5: the 4th failure still retries, the 5th is the last */
    const int retryable[] = {0, 408, 425, 429, 500, 503};
    for (size_t i = 0; i < sizeof retryable / sizeof retryable[0]; i++) {
        int s = retryable[i];
        cr_assert_neq(decide(s, "1", 4, 5, 0).kind, SL_OUTCOME_DEAD, "%d at 4", s);
        for (int attempts = 5; attempts <= 7; attempts++) {
            sl_outcome o = decide(s, "1", attempts, 5, 0);
            cr_assert_eq(o.kind, SL_OUTCOME_DEAD, "%d at %d", s, attempts);
            cr_assert_str_eq(o.reason, "exhausted");
            cr_assert_eq(o.delay_ms, 0);
        }
        /* max_attempts 1 (or less): the first failure is final */
        cr_assert_str_eq(decide(s, NULL, 1, 1, 0).reason, "exhausted");
        cr_assert_str_eq(decide(s, NULL, 1, 0, 0).reason, "exhausted");
        cr_assert_str_eq(decide(s, NULL, 0, 1, 0).reason, "exhausted");
    }
    /* a success on the last attempt is still a delivery, a 404 still http_4xx */
    cr_assert_eq(decide(200, NULL, 5, 5, 0).kind, SL_OUTCOME_DELIVERED);
    cr_assert_str_eq(decide(404, NULL, 5, 5, 0).reason, "http_4xx");
    cr_assert_str_eq(decide(301, NULL, 5, 5, 0).reason, "http_3xx");
}
