/* test_retry_after.c - Retry-After in seconds and in the three HTTP date
 * forms (job/retry_after.h). No clock: now is an argument. */
#include <criterion/criterion.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "job/backoff.h" /* sl_random_u64 */
#include "job/retry_after.h"

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
