/* test_ratelimit_headers.c - the endpoint's rate-limit headers
 * (job/ratelimit_headers.h): capture, the forms, and hostile values. No
 * clock: now is an argument. */
#include <criterion/criterion.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "job/backoff.h" /* sl_random_u64 */
#include "job/ratelimit_headers.h"
#include "job/retry_after.h"

#define NOW_MS INT64_C(1750000000000) /* 2025-06-15, unix ms */

static sl_ratelimit_raw raw;

static void set(const char *name, const char *value)
{
    cr_assert(sl_ratelimit_capture(&raw, name, strlen(name), value, strlen(value)), "%s", name);
}

/* The pause the captured headers ask for; -1: none. */
static int64_t pause_ms(void)
{
    int64_t d = -12345;
    if (!sl_ratelimit_pause(&raw, NOW_MS, &d)) {
        cr_assert_eq(d, -12345, "no pause, yet the delay was touched");
        return -1;
    }
    cr_assert_geq(d, 0);
    cr_assert_leq(d, SL_RETRY_AFTER_MAX_MS);
    return d;
}

static int64_t ietf(const char *value)
{
    sl_ratelimit_clear(&raw);
    set("RateLimit", value);
    return pause_ms();
}

static int64_t x_pair(const char *remaining, const char *reset)
{
    sl_ratelimit_clear(&raw);
    set("X-RateLimit-Remaining", remaining);
    set("X-RateLimit-Reset", reset);
    return pause_ms();
}

Test(ratelimit, captures_the_known_names_in_any_case)
{
    sl_ratelimit_clear(&raw);
    const char *other = "Retry-After";
    cr_assert_not(sl_ratelimit_capture(&raw, other, strlen(other), "5", 1));
    cr_assert_not(raw.any);
    set("x-ratelimit-remaining", "  0 \r\n");
    cr_assert_str_eq(raw.x_remaining, "0");
    set("RATELIMIT-RESET", "7");
    cr_assert_str_eq(raw.reset, "7");
    cr_assert(raw.any);
    /* a name that only starts like one is not one */
    const char *longer = "X-RateLimit-Remaining-Minute";
    cr_assert_not(sl_ratelimit_capture(&raw, longer, strlen(longer), "0", 1));
    /* over-long or NUL-bearing values are dropped whole */
    char big[400];
    memset(big, '9', sizeof big);
    set("X-RateLimit-Reset", "5");
    cr_assert(sl_ratelimit_capture(&raw, "X-RateLimit-Reset", 17, big, sizeof big));
    cr_assert_str_eq(raw.x_reset, "");
    cr_assert(sl_ratelimit_capture(&raw, "X-RateLimit-Reset", 17, "1\0002", 3));
    cr_assert_str_eq(raw.x_reset, "");
    sl_ratelimit_clear(&raw);
    cr_assert_not(raw.any);
    cr_assert_eq(pause_ms(), -1);
    cr_assert_not(sl_ratelimit_pause(NULL, NOW_MS, &(int64_t){0}));
}

Test(ratelimit, ietf_structured_list)
{
    cr_assert_eq(ietf("\"default\";r=0;t=30"), 30000);
    cr_assert_eq(ietf("default;r=0;t=30"), 30000);
    cr_assert_eq(ietf("\"default\";r=5;t=30"), -1, "something remains");
    cr_assert_eq(ietf("\"default\";r=0"), -1, "no reset: no pause");
    cr_assert_eq(ietf("\"default\";t=0;r=0"), 0, "any order; t=0 is now");
    /* several policies: the exhausted one with the longest reset counts */
    cr_assert_eq(ietf("\"burst\";r=0;t=2, \"day\";r=100;t=80000, \"hour\";r=0;t=900"), 900000);
    cr_assert_eq(ietf("\"a\";r=3;t=2,\"b\";r=0;t=7"), 7000);
    /* unknown parameters and quoted names with escapes are skipped */
    cr_assert_eq(ietf("\"we\\\"ird, name\";x=\"y;z\";pk=:abc=:;r=0;t=4"), 4000);
    cr_assert_eq(ietf("default;flag;r=0;t=4"), 4000);
    /* t far ahead: a day at most */
    cr_assert_eq(ietf("default;r=0;t=99999999999999999999999"), SL_RETRY_AFTER_MAX_MS);
}

Test(ratelimit, ietf_earlier_dictionary)
{
    cr_assert_eq(ietf("limit=100, remaining=0, reset=30"), 30000);
    cr_assert_eq(ietf("limit=100, remaining=1, reset=30"), -1);
    cr_assert_eq(ietf("reset=12, remaining=0"), 12000);
    cr_assert_eq(ietf("remaining=0"), -1);
}

Test(ratelimit, separate_fields_seconds_or_unix_time)
{
    cr_assert_eq(x_pair("0", "30"), 30000);
    cr_assert_eq(x_pair("0", "1.5"), 1500);
    cr_assert_eq(x_pair("0", "0.0001"), 1, "fractions round up");
    cr_assert_eq(x_pair("0", "0"), 0);
    cr_assert_eq(x_pair("1", "30"), -1);
    cr_assert_eq(x_pair("0", "999999999"), SL_RETRY_AFTER_MAX_MS, "below 10^9: seconds");
    cr_assert_eq(x_pair("0", "1750000042"), 42000, "unix seconds");
    cr_assert_eq(x_pair("0", "1750000000.25"), 250, "unix seconds with a fraction");
    cr_assert_eq(x_pair("0", "1749999000"), 0, "a reset in the past");
    cr_assert_eq(x_pair("0", "1750000001234"), 1234, "unix milliseconds");
    cr_assert_eq(x_pair("0", "1850000000"), SL_RETRY_AFTER_MAX_MS, "years ahead: a day");
    sl_ratelimit_clear(&raw);
    set("RateLimit-Remaining", "0");
    set("RateLimit-Reset", "9");
    cr_assert_eq(pause_ms(), 9000);
    /* a remaining of one family does not pair with a reset of another */
    sl_ratelimit_clear(&raw);
    set("RateLimit-Remaining", "0");
    set("X-RateLimit-Reset", "9");
    cr_assert_eq(pause_ms(), -1);
    /* both families: the longest */
    set("X-RateLimit-Remaining", "0");
    set("RateLimit-Reset", "3");
    set("RateLimit", "p;r=0;t=5");
    cr_assert_eq(pause_ms(), 9000);
}

Test(ratelimit, hostile_values_ask_for_nothing)
{
    const char *bad[] = {"",    "-1",  "+0",   "0x0",  "1e3", "abc", "1.",  ".5",  "1..2",
                         "1 2", "1,2", "٣",    "0\t1", "NaN", "inf", "-0",  "00x", "1.5.5"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        cr_assert_eq(x_pair("0", bad[i]), -1, "reset '%s'", bad[i]);
        cr_assert_eq(x_pair(bad[i], "5"), -1, "remaining '%s'", bad[i]);
    }
    cr_assert_eq(x_pair("00", "5"), 5000, "leading zeros are still zero");
    cr_assert_eq(x_pair("99999999999999999999999999", "5"), -1);
    cr_assert_eq(x_pair("0", "99999999999999999999999999999.9999"), SL_RETRY_AFTER_MAX_MS,
                 "an absurd time: far ahead, a day");
    const char *bad_ietf[] = {"", ";", ",,,", "\"unterminated;r=0;t=5", "d;r=-0;t=5",
                              "d;r=0;t=-5", "d;r=0;t=5s", "d;r=0.0;t=5", "d;r;t=5",
                              "d;r=0;;t=5", "=0", "d;=0;t=5", "\"a\\", "d;r=0;t"};
    for (size_t i = 0; i < sizeof bad_ietf / sizeof bad_ietf[0]; i++)
        cr_assert_eq(ietf(bad_ietf[i]), -1, "RateLimit '%s'", bad_ietf[i]);
    /* a bad member stops the reading, what came before it counts */
    cr_assert_eq(ietf("a;r=0;t=5, b;r=0;;t=9"), 5000);
}

Test(ratelimit, random_bytes_never_crash_or_escape_the_bounds)
{
    uint64_t rng = 7;
    const char alphabet[] = "0123456789;,=\" .tr\\-abx\t";
    for (int n = 0; n < 20000; n++) {
        char v[64];
        size_t len = sl_random_u64(&rng) % (sizeof v - 1);
        for (size_t i = 0; i < len; i++)
            v[i] = alphabet[sl_random_u64(&rng) % (sizeof alphabet - 1)];
        v[len] = '\0';
        sl_ratelimit_clear(&raw);
        set("RateLimit", v);
        set("X-RateLimit-Remaining", n % 2 ? "0" : v);
        set("X-RateLimit-Reset", v);
        pause_ms(); /* asserts the bounds */
    }
}
