/* retry_after.c - Retry-After parsing (see retry_after.h). Dates become
 * epoch times by days-from-civil arithmetic: no timegm, no locale, no TZ. */
#include "job/retry_after.h"

#include <string.h>
#include <strings.h>

#include "base/intmath.h"

#define MS_PER_DAY INT64_C(86400000)
#define MS_YEAR_9999_END INT64_C(253402300800000) /* 10000-01-01 */

static const char *const short_days[] = {"Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun"};
static const char *const long_days[] = {"Monday",   "Tuesday", "Wednesday", "Thursday",
                                        "Friday",   "Saturday", "Sunday"};
static const char *const months[] = {"Jan", "Feb", "Mar", "Apr", "May", "Jun",
                                     "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"};

/* Days since 1970-01-01 of a proleptic Gregorian date (H. Hinnant's
 * days_from_civil), valid for any year an int64 day count can hold. */
static int64_t days_from_civil(int64_t y, int m, int d)
{
    y -= m <= 2;
    int64_t era = (y >= 0 ? y : y - 399) / 400;
    int64_t yoe = y - era * 400;
    int64_t doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
    int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    return era * 146097 + doe - 719468;
}

/* The civil year of a day count (the inverse, year part only). */
static int64_t year_from_days(int64_t z)
{
    z += 719468;
    int64_t era = (z >= 0 ? z : z - 146096) / 146097;
    int64_t doe = z - era * 146097;
    int64_t yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
    int64_t doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    int64_t mp = (5 * doy + 2) / 153;
    return yoe + era * 400 + (mp >= 10);
}

static bool leap(int64_t y)
{
    return (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
}

static int days_in_month(int64_t y, int m)
{
    static const int dim[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    return m == 2 && leap(y) ? 29 : dim[m - 1];
}

/* A cursor over the trimmed value. */
typedef struct cur {
    const char *p, *end;
} cur;

static bool lit(cur *c, const char *s)
{
    size_t n = strlen(s);
    if ((size_t)(c->end - c->p) < n || memcmp(c->p, s, n) != 0)
        return false;
    c->p += n;
    return true;
}

/* Exactly n digits. */
static bool digits(cur *c, int n, int *out)
{
    if (c->end - c->p < n)
        return false;
    int v = 0;
    for (int i = 0; i < n; i++) {
        if (c->p[i] < '0' || c->p[i] > '9')
            return false;
        v = v * 10 + (c->p[i] - '0');
    }
    c->p += n;
    *out = v;
    return true;
}

/* One of names[0..count), case-insensitively, whole word; index in *out. */
static bool name(cur *c, const char *const *names, int count, int *out)
{
    for (int i = 0; i < count; i++) {
        size_t n = strlen(names[i]);
        if ((size_t)(c->end - c->p) >= n && strncasecmp(c->p, names[i], n) == 0) {
            c->p += n;
            *out = i;
            return true;
        }
    }
    return false;
}

/* time-of-day = hour ":" minute ":" second; returns seconds of the day. */
static bool time_of_day(cur *c, int64_t *secs)
{
    int h, m, s;
    if (!digits(c, 2, &h) || !lit(c, ":") || !digits(c, 2, &m) || !lit(c, ":") ||
        !digits(c, 2, &s))
        return false;
    if (h > 23 || m > 59 || s > 60)
        return false;
    *secs = h * 3600 + m * 60 + s;
    return true;
}

static bool at_end(const cur *c)
{
    return c->p == c->end;
}

/* IMF-fixdate, RFC 850 or asctime -> unix ms. */
static bool http_date(cur c, int64_t now_ms, int64_t *out_ms)
{
    int wd, day, month, year, yy;
    int64_t secs, y;
    cur start = c;

    /* IMF-fixdate: Sun, 06 Nov 1994 08:49:37 GMT */
    if (name(&c, short_days, 7, &wd) && lit(&c, ", ") && digits(&c, 2, &day) && lit(&c, " ") &&
        name(&c, months, 12, &month) && lit(&c, " ") && digits(&c, 4, &year) && lit(&c, " ") &&
        time_of_day(&c, &secs) && lit(&c, " GMT") && at_end(&c)) {
        y = year;
        goto civil;
    }

    /* RFC 850: Sunday, 06-Nov-94 08:49:37 GMT */
    c = start;
    if (name(&c, long_days, 7, &wd) && lit(&c, ", ") && digits(&c, 2, &day) && lit(&c, "-") &&
        name(&c, months, 12, &month) && lit(&c, "-") && digits(&c, 2, &yy) && lit(&c, " ") &&
        time_of_day(&c, &secs) && lit(&c, " GMT") && at_end(&c)) {
        /* RFC 9110: a two-digit year more than 50 years ahead is in the
         * past century; symmetric the other way round. */
        int64_t now_clamped = now_ms < 0 ? 0 : now_ms >= MS_YEAR_9999_END ? MS_YEAR_9999_END - 1 : now_ms;
        int64_t now_year = year_from_days(sl_floordiv(now_clamped, MS_PER_DAY));
        y = now_year - now_year % 100 + yy;
        if (y > now_year + 50)
            y -= 100;
        else if (y <= now_year - 50)
            y += 100;
        goto civil;
    }

    /* asctime: Sun Nov  6 08:49:37 1994 (day as " 6" or "06") */
    c = start;
    if (name(&c, short_days, 7, &wd) && lit(&c, " ") && name(&c, months, 12, &month) &&
        lit(&c, " ")) {
        if (c.p < c.end && *c.p == ' ') {
            c.p++;
            if (!digits(&c, 1, &day))
                return false;
        } else if (!digits(&c, 2, &day)) {
            return false;
        }
        if (lit(&c, " ") && time_of_day(&c, &secs) && lit(&c, " ") && digits(&c, 4, &year) &&
            at_end(&c)) {
            y = year;
            goto civil;
        }
    }
    return false;

civil:
    month += 1;
    if (day < 1 || day > days_in_month(y, month))
        return false;
    *out_ms = (days_from_civil(y, month, day) * 86400 + secs) * 1000;
    return true;
}

static bool is_ows(char ch)
{
    return ch == ' ' || ch == '\t' || ch == '\r' || ch == '\n';
}

bool sl_retry_after_parse(const char *value, int64_t now_ms, int64_t *delay_ms)
{
    if (!value)
        return false;
    cur c = {value, value + strlen(value)};
    while (c.p < c.end && is_ows(*c.p))
        c.p++;
    while (c.end > c.p && is_ows(c.end[-1]))
        c.end--;
    if (c.p == c.end)
        return false;

    if (*c.p >= '0' && *c.p <= '9') {
        int64_t secs = 0;
        for (const char *p = c.p; p < c.end; p++) {
            if (*p < '0' || *p > '9')
                return false; /* no HTTP-date starts with a digit */
            if (secs <= SL_RETRY_AFTER_MAX_MS / 1000)
                secs = secs * 10 + (*p - '0'); /* saturates above the clamp */
        }
        int64_t ms = secs * 1000;
        *delay_ms = ms > SL_RETRY_AFTER_MAX_MS ? SL_RETRY_AFTER_MAX_MS : ms;
        return true;
    }

    int64_t at_ms; /* years 0000..9999: |at_ms| < 2^48 */
    if (!http_date(c, now_ms, &at_ms))
        return false;
    if (now_ms >= at_ms)
        *delay_ms = 0;
    else if (now_ms <= at_ms - SL_RETRY_AFTER_MAX_MS) /* no overflow for any now_ms */
        *delay_ms = SL_RETRY_AFTER_MAX_MS;
    else
        *delay_ms = at_ms - now_ms;
    return true;
}
