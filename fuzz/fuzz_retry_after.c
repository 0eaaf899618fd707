/* fuzz_retry_after.c - Retry-After parsing (sl_retry_after_parse).
 *
 * Input: bytes 0-5 pick the current time (unix ms, 48 bits: to the year
 * 10889, past every date the header can name); the rest is the header
 * value (NULs cut it short, as in a C string).
 *
 * Checked, beyond memory safety and undefined behaviour (overflowing date
 * arithmetic): an accepted value gives a delay in [0, SL_RETRY_AFTER_MAX_MS];
 * a refused one leaves *delay_ms alone; SP/HTAB/CR/LF around the value
 * change nothing; and a value accepted at some now is accepted at every
 * later now, with a delay that never grows (time only brings a date
 * closer; delay-seconds do not depend on now at all). RFC 850 dates are
 * left out of that last check: their two-digit year is read relative to
 * now, so a later now may rightly move "94" a century ahead. */
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "job/retry_after.h"
#include "violation.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define SENTINEL INT64_C(-12345)

static bool parse(const char *value, int64_t now_ms, int64_t *delay_ms)
{
    *delay_ms = SENTINEL;
    bool ok = sl_retry_after_parse(value, now_ms, delay_ms);
    if (ok ? *delay_ms < 0 || *delay_ms > SL_RETRY_AFTER_MAX_MS : *delay_ms != SENTINEL)
        sl_fuzz_violation("\"%s\" at %lld: %s, delay %lld", value ? value : "(null)", (long long)now_ms,
                          ok ? "accepted" : "refused", (long long)*delay_ms);
    return ok;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 6 || size > 4096)
        return 0;
    int64_t now_ms = 0;
    for (int i = 0; i < 6; i++)
        now_ms = now_ms << 8 | data[i];
    size_t len = size - 6;
    char *value = malloc(len + 5);
    if (!value)
        return 0;
    value[0] = ' ';
    value[1] = '\t';
    memcpy(value + 2, data + 6, len);
    value[len + 2] = '\r';
    value[len + 3] = '\n';
    value[len + 4] = '\0';
    char *bare = value + 2;
    char saved = bare[len];
    bare[len] = '\0';

    int64_t delay, padded_delay, later_delay;
    bool ok = parse(bare, now_ms, &delay);
    bare[len] = saved;
    bool padded_ok = parse(value, now_ms, &padded_delay);
    if (padded_ok != ok || (ok && padded_delay != delay))
        sl_fuzz_violation("\"%s\" and the same padded differ", bare);
    /* One second, one hour and one year later. */
    static const int64_t later[] = {1000, 3600000, INT64_C(31556952000)};
    bool two_digit_year = strchr(bare, '-') != NULL;
    for (size_t i = 0; ok && !two_digit_year && i < sizeof later / sizeof later[0]; i++) {
        if (!parse(value, now_ms + later[i], &later_delay) || later_delay > delay)
            sl_fuzz_violation("\"%s\": delay %lld at now, %lld %lld ms later", value, (long long)delay,
                              (long long)later_delay, (long long)later[i]);
    }
    parse(NULL, now_ms, &delay);
    free(value);
    return 0;
}
