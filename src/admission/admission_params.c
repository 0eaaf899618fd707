/* admission_params.c - the parameter ranges of the admission scripts. */
#include <string.h>

#include "admission/admission.h"

const char *sl_bucket_params_error(const sl_bucket_params *p)
{
    if (p->capacity < 1 || p->capacity > SL_CAPACITY_MAX)
        return "capacity: must be an integer between 1 and 9000000";
    if (p->rate_milli < SL_RATE_MILLI_MIN || p->rate_milli > SL_RATE_MILLI_MAX)
        return "rate: must be between 0.001 and 1000000, a multiple of 0.001";
    return NULL;
}

const char *sl_window_params_error(const sl_window_params *p, bool counter)
{
    if (p->max < 1 || p->max > SL_WINDOW_MAX_MAX)
        return "max: must be an integer between 1 and 1000000000";
    if (p->window_ms < 1 || p->window_ms > SL_WINDOW_MS_MAX)
        return "window_ms: must be an integer between 1 and 31622400000 (366 days)";
    /* (max + 1) * window_ms > 2^52, divided so that it cannot overflow */
    if (counter && p->max + 1 > SL_COUNTER_PRODUCT_MAX / p->window_ms)
        return "max: (max + 1) * window_ms must stay below 2^52 for exact arithmetic";
    return NULL;
}

bool sl_parse_rate_milli(const char *text, int64_t *out)
{
    /* Same grammar as the scripts: digits, optionally '.' and digits, at most
     * three significant decimals, at most 7 whole digits. */
    size_t whole_len = strspn(text, "0123456789");
    if (whole_len == 0 || whole_len > 7)
        return false;
    int64_t milli = 0;
    for (size_t i = 0; i < whole_len; i++)
        milli = milli * 10 + (text[i] - '0');
    milli *= 1000;
    const char *rest = text + whole_len;
    if (*rest == '.') {
        rest++;
        size_t frac_len = strspn(rest, "0123456789");
        if (frac_len == 0 || rest[frac_len] != '\0')
            return false;
        int64_t scale = 100;
        for (size_t i = 0; i < frac_len; i++, scale /= 10) {
            if (i >= 3 && rest[i] != '0')
                return false; /* finer than 0.001 */
            if (i < 3)
                milli += (rest[i] - '0') * scale;
        }
    } else if (*rest != '\0') {
        return false;
    }
    if (milli < SL_RATE_MILLI_MIN || milli > SL_RATE_MILLI_MAX)
        return false;
    *out = milli;
    return true;
}
