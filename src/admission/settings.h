/* settings.h - the C model of how lua/claim.lua applies a tenant's live
 * settings (SPEC section 9, key PREFIX:{T}:settings) over the file's
 * values: which rate, capacity and concurrency a claim uses, and whether
 * the tenant is paused. Pure: time is passed in. `sluice stats` and
 * `sluice tenant show` decide with it what the next claim will. */
#ifndef SLUICE_SETTINGS_H
#define SLUICE_SETTINGS_H

#include <stdbool.h>
#include <stdint.h>

/* Where an effective rate comes from. */
typedef enum sl_rate_source {
    SL_RATE_FILE,
    SL_RATE_OVERRIDE,
    SL_RATE_ADAPTIVE,
} sl_rate_source;

/* The fields of the settings hash as read; 0: absent or not a positive
 * integer (the script ignores those as well). */
typedef struct sl_settings {
    int64_t rate_milli;
    int64_t capacity;
    int64_t concurrency;
    int64_t paused_until_ms; /* unix ms */
    int64_t adaptive_rate_milli;
} sl_settings;

/* The file's values a claim passes (adaptive_max_milli 0: not adaptive). */
typedef struct sl_settings_file {
    int64_t rate_milli;
    int64_t capacity;
    int64_t concurrency;
    int64_t adaptive_min_milli, adaptive_max_milli;
} sl_settings_file;

/* What a claim at now_ms applies, and where each value comes from. */
typedef struct sl_settings_effective {
    int64_t rate_milli;
    sl_rate_source rate_source;
    int64_t capacity;
    bool capacity_overridden;
    int64_t concurrency;
    bool concurrency_overridden;
    bool paused; /* paused_until_ms lies after now_ms */
} sl_settings_effective;

/* Pause without an end (`sluice tenant pause T` without --for): the
 * last millisecond of the year 9999, as unix ms. */
#define SL_PAUSED_FOREVER_MS INT64_C(253402300799999)

/* A settings field's text as the script reads it: a positive decimal
 * integer (at most 15 digits: exact in a Lua number), else 0. NULL (absent) is 0. */
int64_t sl_settings_field(const char *text);

/* The effective values of a claim at now_ms (unix ms): an override beats
 * the file; the adaptive rate, clamped to the file's bounds, beats the
 * file's rate for an adaptive tenant. */
sl_settings_effective sl_settings_apply(const sl_settings *s, const sl_settings_file *file,
                                        int64_t now_ms);

/* "file", "override" or "adaptive". */
const char *sl_rate_source_name(sl_rate_source source);

/* The source named text; false (leaving *out alone) if none is. */
bool sl_rate_source_parse(const char *text, sl_rate_source *out);

#endif
