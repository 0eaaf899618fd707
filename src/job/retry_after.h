/* retry_after.h - the Retry-After response header (RFC 9110 10.2.3).
 * Pure: the current time is an argument. */
#ifndef SLUICE_RETRY_AFTER_H
#define SLUICE_RETRY_AFTER_H

#include <stdbool.h>
#include <stdint.h>

/* The longest delay a Retry-After can ask for: one day. Larger values (or
 * dates further ahead) are clamped to it, so a broken or hostile downstream
 * cannot park a tenant for years; the pause can be renewed by the next 429. */
#define SL_RETRY_AFTER_MAX_MS INT64_C(86400000)

/* Parses `value` (NUL-terminated, NULL allowed) and on success stores the
 * delay from now_ms (unix ms) in *delay_ms, clamped to
 * [0, SL_RETRY_AFTER_MAX_MS], and returns true. Accepted:
 * - delay-seconds: 1*DIGIT ("120"; no sign, no fraction);
 * - HTTP-date as IMF-fixdate "Sun, 06 Nov 1994 08:49:37 GMT", RFC 850
 *   "Sunday, 06-Nov-94 08:49:37 GMT" (two-digit years read as the year
 *   within (now - 50, now + 50] years) and asctime "Sun Nov  6 08:49:37 1994".
 *   A date in the past gives 0. Day and month names are matched
 *   case-insensitively; the weekday must be a valid name but is not checked
 *   against the date (some servers get it wrong; the date is what counts).
 *   Second 60 (leap second) is accepted.
 * SP/HTAB/CR/LF around the value are ignored. Anything else: false, and
 * *delay_ms is left alone. */
bool sl_retry_after_parse(const char *value, int64_t now_ms, int64_t *delay_ms);

#endif
