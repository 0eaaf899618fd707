/* settings.c - see settings.h; lua/claim.lua's "Settings" is the script. */
#include <string.h>

#include "admission/settings.h"

int64_t sl_settings_field(const char *text)
{
    if (!text || !*text || strlen(text) > 15)
        return 0;
    int64_t n = 0;
    for (const char *p = text; *p; p++) {
        if (*p < '0' || *p > '9')
            return 0;
        n = n * 10 + (*p - '0');
    }
    return n;
}

sl_settings_effective sl_settings_apply(const sl_settings *s, const sl_settings_file *file,
                                        int64_t now_ms)
{
    sl_settings_effective e = {
        .rate_milli = file->rate_milli,
        .rate_source = SL_RATE_FILE,
        .capacity = s->capacity > 0 ? s->capacity : file->capacity,
        .capacity_overridden = s->capacity > 0,
        .concurrency = s->concurrency > 0 ? s->concurrency : file->concurrency,
        .concurrency_overridden = s->concurrency > 0,
        .paused = s->paused_until_ms > now_ms,
    };
    if (s->rate_milli > 0) {
        e.rate_milli = s->rate_milli;
        e.rate_source = SL_RATE_OVERRIDE;
    } else if (s->adaptive_rate_milli > 0 && file->adaptive_max_milli > 0) {
        int64_t r = s->adaptive_rate_milli;
        if (r > file->adaptive_max_milli)
            r = file->adaptive_max_milli;
        if (r < file->adaptive_min_milli)
            r = file->adaptive_min_milli;
        e.rate_milli = r;
        e.rate_source = SL_RATE_ADAPTIVE;
    }
    return e;
}

static const char *const source_names[] = {
    [SL_RATE_FILE] = "file",
    [SL_RATE_OVERRIDE] = "override",
    [SL_RATE_ADAPTIVE] = "adaptive",
};

const char *sl_rate_source_name(sl_rate_source source)
{
    if ((unsigned)source > SL_RATE_ADAPTIVE)
        return "file";
    return source_names[source];
}

bool sl_rate_source_parse(const char *text, sl_rate_source *out)
{
    for (unsigned i = 0; i <= SL_RATE_ADAPTIVE; i++)
        if (strcmp(text, source_names[i]) == 0) {
            *out = (sl_rate_source)i;
            return true;
        }
    return false;
}
