/* test_backoff.c - retry backoff with full jitter (job/backoff.h) and the
 * random numbers it draws from. No clock: randomness is an argument. */
#include <criterion/criterion.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "job/backoff.h"

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

Test(backoff, a_connection_that_stayed_up_starts_over)
{
    cr_assert_eq(sl_backoff_failures(5, 1000, 1000), 1);
    cr_assert_eq(sl_backoff_failures(64, 60000, 1000), 1);
    cr_assert_eq(sl_backoff_failures(0, 1000, 1000), 1);
}

Test(backoff, a_flapping_server_is_retried_ever_more_slowly)
{
    /* Accepted, usable, dropped after 50 ms, again and again: the count
     * (so the delay's cap) grows as if each had been refused. */
    int failures = 0;
    for (int i = 1; i <= 6; i++) {
        failures = sl_backoff_failures(failures, 50, 1000);
        cr_assert_eq(failures, i);
    }
    cr_assert_eq(sl_backoff_ms(failures, 100, 5000, UINT64_MAX), 3200);
    failures = sl_backoff_failures(failures, -1, 1000); /* never usable */
    cr_assert_eq(failures, 7);
    cr_assert_eq(sl_backoff_ms(failures, 100, 5000, UINT64_MAX), 5000);
}

Test(backoff, failures_stop_growing)
{
    cr_assert_eq(sl_backoff_failures(64, 0, 1000), 64);
    cr_assert_eq(sl_backoff_failures(INT_MAX, -1, 1000), 64);
    cr_assert_eq(sl_backoff_failures(-3, -1, 1000), 1);
}
