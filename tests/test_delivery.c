/* test_delivery.c - the pure delivery decisions: backoff with full jitter,
 * Retry-After parsing, and the outcome table. No clock: time and
 * randomness are arguments. */
#include <criterion/criterion.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "job/backoff.h"
#include "job/outcome.h"
#include "job/retry_after.h"

/* ---- backoff ---------------------------------------------------------- */

Test(backoff, cap_doubles_from_base_up_to_max)
{
    const int64_t expect_cap[] = {500, 500, 1000, 2000, 4000, 8000, 16000, 32000, 60000, 60000};
    for (int n = 1; n < 10; n++) {
        cr_assert_eq(sl_backoff_ms(n, 500, 60000, UINT64_MAX), expect_cap[n],
                     "attempt %d: %" PRId64, n, sl_backoff_ms(n, 500, 60000, UINT64_MAX));
        cr_assert_eq(sl_backoff_ms(n, 500, 60000, 0), 0);
    }
    /* attempts below 1 read as 1 */
    cr_assert_eq(sl_backoff_ms(0, 500, 60000, UINT64_MAX), 500);
    cr_assert_eq(sl_backoff_ms(INT_MIN, 500, 60000, UINT64_MAX), 500);
    /* base above max: max */
    cr_assert_eq(sl_backoff_ms(1, 90000, 60000, UINT64_MAX), 60000);
    /* degenerate parameters: no delay */
    cr_assert_eq(sl_backoff_ms(3, 0, 60000, UINT64_MAX), 0);
    cr_assert_eq(sl_backoff_ms(3, 500, 0, UINT64_MAX), 0);
    cr_assert_eq(sl_backoff_ms(3, -5, -1, UINT64_MAX), 0);
    /* the midpoint of the random range is the midpoint of [0, cap] */
    cr_assert_eq(sl_backoff_ms(1, 1000, 60000, UINT64_C(1) << 63), 500);
}

Test(backoff, no_overflow_for_any_attempt_count)
{
    const int attempts[] = {31, 32, 62, 63, 64, 65, 100, 1000, INT_MAX};
    for (size_t i = 0; i < sizeof attempts / sizeof attempts[0]; i++) {
        cr_assert_eq(sl_backoff_ms(attempts[i], 500, 60000, UINT64_MAX), 60000, "n=%d",
                     attempts[i]);
        cr_assert_eq(sl_backoff_ms(attempts[i], INT64_C(1) << 40, INT64_MAX, UINT64_MAX),
                     INT64_MAX, "n=%d", attempts[i]);
        cr_assert_eq(sl_backoff_ms(attempts[i], INT64_MAX, INT64_MAX, UINT64_MAX), INT64_MAX);
    }
    /* 1 << 62 is still exact, one more doubling hits the max */
    cr_assert_eq(sl_backoff_ms(63, 1, INT64_MAX, UINT64_MAX), INT64_C(1) << 62);
    cr_assert_eq(sl_backoff_ms(64, 1, INT64_MAX, UINT64_MAX), INT64_MAX);
    cr_assert_eq(sl_backoff_ms(INT_MAX, 1, INT64_MAX, UINT64_MAX), INT64_MAX);
    cr_assert_eq(sl_backoff_ms(2, INT64_MAX / 2, INT64_MAX, UINT64_MAX), INT64_MAX - 1);
    cr_assert_eq(sl_backoff_ms(3, INT64_MAX / 2, INT64_MAX, UINT64_MAX), INT64_MAX);
}

Test(backoff, always_within_zero_and_cap)
{
    uint64_t state = 42;
    for (int n = 1; n <= 200; n++) {
        int64_t cap = n >= 8 ? 60000 : INT64_C(500) << (n - 1);
        if (cap > 60000)
            cap = 60000;
        for (int k = 0; k < 500; k++) {
            int64_t d = sl_backoff_ms(n, 500, 60000, sl_random_u64(&state));
            cr_assert(d >= 0 && d <= cap, "n=%d: %" PRId64 " outside [0, %" PRId64 "]", n, d, cap);
        }
    }
}

Test(backoff, full_jitter_is_roughly_uniform)
{
    const int64_t caps[] = {1, 9, 500, 60000, INT64_C(1) << 40};
    for (size_t c = 0; c < sizeof caps / sizeof caps[0]; c++) {
        uint64_t state = 7 + c;
        int64_t cap = caps[c];
        int buckets[10] = {0};
        double sum = 0;
        const int draws = 10000;
        for (int i = 0; i < draws; i++) {
            int64_t d = sl_backoff_ms(1, cap, cap, sl_random_u64(&state));
            cr_assert(d >= 0 && d <= cap);
            sum += (double)d;
            buckets[(int)((double)d / ((double)cap + 1) * 10)]++;
        }
        double mean = sum / draws;
        cr_assert(mean > 0.9 * (double)cap / 2 && mean < 1.1 * (double)cap / 2,
                  "cap %" PRId64 ": mean %f", cap, mean);
        if (cap >= 500)
            for (int b = 0; b < 10; b++)
                cr_assert(buckets[b] > 800 && buckets[b] < 1200, "cap %" PRId64 " bucket %d: %d",
                          cap, b, buckets[b]);
    }
}

Test(backoff, both_ends_are_reachable)
{
    uint64_t state = 99;
    bool zero = false, top = false;
    for (int i = 0; i < 10000 && !(zero && top); i++) {
        int64_t d = sl_backoff_ms(1, 9, 9, sl_random_u64(&state));
        zero = zero || d == 0;
        top = top || d == 9;
    }
    cr_assert(zero && top, "0 reached %d, cap reached %d", zero, top);
}

Test(random, splitmix64_reference_values)
{
    uint64_t state = 0;
    cr_assert_eq(sl_random_u64(&state), UINT64_C(0xe220a8397b1dcdaf));
    cr_assert_eq(sl_random_u64(&state), UINT64_C(0x6e789e6aa1b965f4));
    cr_assert_eq(sl_random_u64(&state), UINT64_C(0x06c45d188009454f));
    state = 1234567;
    cr_assert_eq(sl_random_u64(&state), UINT64_C(0x599ed017fb08fc85));
    /* Bits are balanced: each of the 64 bits set about half the time. */
    int ones[64] = {0};
    for (int i = 0; i < 10000; i++) {
        uint64_t r = sl_random_u64(&state);
        for (int b = 0; b < 64; b++)
            ones[b] += (int)((r >> b) & 1);
    }
    for (int b = 0; b < 64; b++)
        cr_assert(ones[b] > 4700 && ones[b] < 5300, "bit %d set %d times", b, ones[b]);
}

/* ---- Retry-After ------------------------------------------------------ */

#define T_1994 INT64_C(784111777000) /* Sun, 06 Nov 1994 08:49:37 GMT */
#define T_2025 INT64_C(1750000000000) /* 2025-06-15 */

static int64_t ra(const char *value, int64_t now_ms)
{
    int64_t delay = -12345;
    cr_assert(sl_retry_after_parse(value, now_ms, &delay), "refused '%s'", value);
    return delay;
}

static void ra_bad(const char *value)
{
    int64_t delay = -12345;
    cr_assert_not(sl_retry_after_parse(value, T_2025, &delay), "accepted '%s'", value);
    cr_assert_eq(delay, -12345, "'%s' touched the delay", value);
}

Test(retry_after, delay_seconds)
{
    cr_assert_eq(ra("120", T_2025), 120000);
    cr_assert_eq(ra("0", T_2025), 0);
    cr_assert_eq(ra("007", T_2025), 7000);
    cr_assert_eq(ra("  5 \t", T_2025), 5000);
    cr_assert_eq(ra("5\r\n", T_2025), 5000);
    cr_assert_eq(ra("86400", T_2025), SL_RETRY_AFTER_MAX_MS);
    cr_assert_eq(ra("86399", T_2025), SL_RETRY_AFTER_MAX_MS - 1000);
    cr_assert_eq(ra("86401", T_2025), SL_RETRY_AFTER_MAX_MS);
    cr_assert_eq(ra("99999999999999999999999999999999999999", T_2025), SL_RETRY_AFTER_MAX_MS);
    /* delay-seconds do not depend on the clock */
    cr_assert_eq(ra("3", INT64_MIN), 3000);
}

Test(retry_after, garbage_is_refused)
{
    const char *bad[] = {NULL,    "",      "   ",   "-5",   "+5",     "1.5",   "5s",
                         "0x10",  "1 2",   "abc",   "1e3",  "５",     "5,",    "\t\r\n",
                         "Sun, 06 Nov 1994 08:49:37 UTC",
                         "Sun, 06 Nov 1994 08:49:37 gmt",
                         "Sun, 6 Nov 1994 08:49:37 GMT",
                         "Sun, 06 Nov 94 08:49:37 GMT",
                         "Sun, 06 Nov 1994 08:49 GMT",
                         "Sun, 06 Nov 1994 8:49:37 GMT",
                         "Sun, 06 Nov 1994 08:49:37 GMT x",
                         "Sun,06 Nov 1994 08:49:37 GMT",
                         "Sun 06 Nov 1994 08:49:37 GMT",
                         "Sun,  06 Nov 1994 08:49:37 GMT",
                         "Fun, 06 Nov 1994 08:49:37 GMT",
                         "Sun, 06 Nox 1994 08:49:37 GMT",
                         "Sun, 06 November 1994 08:49:37 GMT",
                         "Sun, 00 Nov 1994 08:49:37 GMT",
                         "Sun, 31 Nov 1994 08:49:37 GMT",
                         "Wed, 29 Feb 2023 00:00:00 GMT",
                         "Sat, 29 Feb 1900 00:00:00 GMT",
                         "Sun, 06 Nov 1994 24:00:00 GMT",
                         "Sun, 06 Nov 1994 23:60:00 GMT",
                         "Sun, 06 Nov 1994 23:59:61 GMT",
                         "Sunday, 06-Nov-1994 08:49:37 GMT",
                         "Sun, 06-Nov-94 08:49:37 GMT",
                         "Sunday, 06 Nov 94 08:49:37 GMT",
                         "Sunday, 6-Nov-94 08:49:37 GMT",
                         "Sun Nov 6 08:49:37 1994",
                         "Sun Nov   6 08:49:37 1994",
                         "Sun Nov  6 08:49:37 94",
                         "Sun Nov  6 08:49:37 1994 GMT",
                         "Sun, Nov  6 08:49:37 1994",
                         "1994-11-06T08:49:37Z"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        ra_bad(bad[i]);
}

Test(retry_after, the_three_date_forms)
{
    int64_t now = T_1994 - 10000;
    cr_assert_eq(ra("Sun, 06 Nov 1994 08:49:37 GMT", now), 10000);
    cr_assert_eq(ra("Sunday, 06-Nov-94 08:49:37 GMT", now), 10000);
    cr_assert_eq(ra("Sun Nov  6 08:49:37 1994", now), 10000);
    cr_assert_eq(ra("Sun Nov 06 08:49:37 1994", now), 10000);
    cr_assert_eq(ra(" \tSun, 06 Nov 1994 08:49:37 GMT\r\n", now), 10000);
    /* names in any case; the weekday need not match the date */
    cr_assert_eq(ra("sun, 06 NOV 1994 08:49:37 GMT", now), 10000);
    cr_assert_eq(ra("Mon, 06 Nov 1994 08:49:37 GMT", now), 10000);
    cr_assert_eq(ra("WEDNESDAY, 06-nov-94 08:49:37 GMT", now), 10000);
    /* a leap second counts as the next second */
    cr_assert_eq(ra("Sun, 06 Nov 1994 08:49:60 GMT", now), 33000);
}

Test(retry_after, past_dates_are_no_delay)
{
    cr_assert_eq(ra("Sun, 06 Nov 1994 08:49:37 GMT", T_1994), 0);
    cr_assert_eq(ra("Sun, 06 Nov 1994 08:49:37 GMT", T_1994 + 1), 0);
    cr_assert_eq(ra("Sun, 06 Nov 1994 08:49:37 GMT", T_2025), 0);
    cr_assert_eq(ra("Sunday, 06-Nov-94 08:49:37 GMT", T_2025), 0);
    cr_assert_eq(ra("Sun Nov  6 08:49:37 1994", T_2025), 0);
    cr_assert_eq(ra("Mon, 01 Jan 0001 00:00:00 GMT", T_2025), 0);
    cr_assert_eq(ra("Sun, 06 Nov 1994 08:49:37 GMT", INT64_MAX), 0);
}

Test(retry_after, far_dates_are_clamped_to_a_day)
{
    cr_assert_eq(ra("Fri, 31 Dec 9999 23:59:59 GMT", T_2025), SL_RETRY_AFTER_MAX_MS);
    cr_assert_eq(ra("Fri, 31 Dec 9999 23:59:59 GMT", INT64_MIN), SL_RETRY_AFTER_MAX_MS);
    cr_assert_eq(ra("Sun, 06 Nov 1994 08:49:37 GMT", T_1994 - SL_RETRY_AFTER_MAX_MS),
                 SL_RETRY_AFTER_MAX_MS);
    cr_assert_eq(ra("Sun, 06 Nov 1994 08:49:37 GMT", T_1994 - SL_RETRY_AFTER_MAX_MS + 1),
                 SL_RETRY_AFTER_MAX_MS - 1);
}

Test(retry_after, known_epochs)
{
    const struct {
        const char *date;
        int64_t epoch_s;
    } known[] = {
        {"Thu, 01 Jan 1970 00:00:00 GMT", 0},
        {"Wed, 31 Dec 1969 23:59:59 GMT", -1},
        {"Wed, 01 Mar 2000 00:00:00 GMT", 951868800},
        {"Tue, 29 Feb 2000 12:00:00 GMT", 951825600},
        {"Thu, 29 Feb 2024 00:00:00 GMT", 1709164800},
        {"Tue, 19 Jan 2038 03:14:07 GMT", 2147483647},
        {"Mon, 01 Mar 2100 00:00:00 GMT", INT64_C(4107542400)},
        {"Sat, 01 Jan 2000 00:00:00 GMT", 946684800},
    };
    for (size_t i = 0; i < sizeof known / sizeof known[0]; i++)
        cr_assert_eq(ra(known[i].date, known[i].epoch_s * 1000 - 1500), 1500, "%s", known[i].date);
}

Test(retry_after, agrees_with_gmtime_on_random_dates)
{
    /* Oracle: the C library formats random instants (the test process runs
     * in the "C" locale); the parser must land on the same instant. */
    uint64_t state = 2024;
    for (int i = 0; i < 20000; i++) {
        time_t t = (time_t)(sl_random_u64(&state) % UINT64_C(253402300800)); /* to 9999 */
        struct tm tm;
        cr_assert_not_null(gmtime_r(&t, &tm));
        char imf[64], rfc850[96], asc[64];
        strftime(imf, sizeof imf, "%a, %d %b %Y %H:%M:%S GMT", &tm);
        strftime(asc, sizeof asc, "%a %b %e %H:%M:%S %Y", &tm);
        int64_t now = (int64_t)t * 1000 - 2000;
        cr_assert_eq(ra(imf, now), 2000, "%s", imf);
        cr_assert_eq(ra(asc, now), 2000, "%s", asc);
        /* RFC 850 only means something within 50 years of now */
        if (tm.tm_year + 1900 >= 1971) {
            char weekday[32], rest[32];
            strftime(weekday, sizeof weekday, "%A, %d-%b-", &tm);
            strftime(rest, sizeof rest, " %H:%M:%S GMT", &tm);
            snprintf(rfc850, sizeof rfc850, "%s%02d%s", weekday, (tm.tm_year + 1900) % 100, rest);
            cr_assert_eq(ra(rfc850, now), 2000, "%s", rfc850);
        }
    }
}

Test(retry_after, rfc850_two_digit_years)
{
    /* now in 2025: "76" is more than 50 years ahead, so 1976 (past) */
    cr_assert_eq(ra("Thursday, 01-Jan-76 00:00:00 GMT", T_2025), 0);
    /* "70" is 2070, 45 years ahead: clamped to a day */
    cr_assert_eq(ra("Wednesday, 01-Jan-70 00:00:00 GMT", T_2025), SL_RETRY_AFTER_MAX_MS);
    /* just before 2070 "70" is the coming year */
    cr_assert_eq(ra("Wednesday, 01-Jan-70 00:00:00 GMT", INT64_C(3155759999000)), 1000);
    /* in 2060, "05" is 2105 (45 years ahead), not 2005 */
    int64_t in_2060 = INT64_C(2871763199000); /* 2060-12-31 23:59:59 */
    cr_assert_eq(ra("Tuesday, 01-Jan-05 00:00:00 GMT", in_2060), SL_RETRY_AFTER_MAX_MS);
    /* "10" is 2110: exactly 50 years ahead is not "more than 50" */
    cr_assert_eq(ra("Wednesday, 01-Jan-10 00:00:00 GMT", in_2060), SL_RETRY_AFTER_MAX_MS);
    /* "11" is 2011 (past), since 2111 is more than 50 years on */
    cr_assert_eq(ra("Saturday, 01-Jan-11 00:00:00 GMT", in_2060), 0);
}

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
