/* config_fields.c - the table of scalar config fields (config_fields.h).
 * To add a field: a row here, its key in config.c's list of known keys,
 * one sl_config_field_read where the struct is filled, and SPEC section 6. */
#include <inttypes.h>

#include "admission/admission.h"
#include "config/config_fields.h"
#include "config/config_types.h"

static const char *const overflow_names[] = {
    [SL_OVERFLOW_WAIT] = "wait",
    [SL_OVERFLOW_DEAD_LETTER] = "dead-letter",
    NULL,
};
static const char *const format_names[] = {
    [SL_FORMAT_ENVELOPE] = "envelope",
    [SL_FORMAT_RAW] = "raw",
    NULL,
};
static const char *const on_deny_names[] = {
    [SL_ON_DENY_DELAY] = "delay",
    [SL_ON_DENY_DEAD_LETTER] = "dead-letter",
    NULL,
};
static const char *const limit_type_names[] = {
    [SL_LIMIT_POLICING] = "policing",
    [SL_LIMIT_TOKEN_BUCKET] = "token_bucket",
    [SL_LIMIT_FIXED_WINDOW] = "fixed_window",
    [SL_LIMIT_SLIDING_WINDOW_LOG] = "sliding_window_log",
    [SL_LIMIT_SLIDING_WINDOW_COUNTER] = "sliding_window_counter",
    NULL,
};

/* name, type, min, max, required, default, names */
static const sl_field fields[SL_FIELD_COUNT] = {
    /* The default of workers is the CPU count (sl_config_env), clamped to
     * these bounds by config.c: the row's 0 is never used. */
    [SL_FIELD_WORKERS] = {"workers", SL_FIELD_INT, 1, 256, false, 0, NULL},
    [SL_FIELD_GRACE_MS] = {"grace_ms", SL_FIELD_INT, 0, 3600000, false, 10000, NULL},
    /* A tenant found through the "*" template is forgotten after this long
     * idle with empty keys (10 minutes), and at most this many are served
     * at once: any producer can name new tenants. */
    [SL_FIELD_FORGET_IDLE_MS] = {"forget_idle_ms", SL_FIELD_INT, 100, 86400000, false, 600000,
                                 NULL},
    [SL_FIELD_MAX_DISCOVERED_TENANTS] = {"max_discovered_tenants", SL_FIELD_INT, 1, 1000000, false,
                                         10000, NULL},

    [SL_FIELD_RATE_JOBS] = {"rate", SL_FIELD_RATE, SL_RATE_MILLI_MIN, SL_RATE_MILLI_MAX, true, 0,
                            NULL},
    [SL_FIELD_CAPACITY] = {"capacity", SL_FIELD_INT, 1, SL_CAPACITY_MAX, false, 1000, NULL},
    [SL_FIELD_OVERFLOW] = {"overflow", SL_FIELD_ENUM, 0, 0, false, SL_OVERFLOW_WAIT,
                           overflow_names},
    [SL_FIELD_CONCURRENCY] = {"concurrency", SL_FIELD_INT, 1, 10000, false, 16, NULL},
    [SL_FIELD_TIMEOUT_MS] = {"timeout_ms", SL_FIELD_INT, 1, 3600000, false, 5000, NULL},
    [SL_FIELD_FORMAT] = {"format", SL_FIELD_ENUM, 0, 0, false, SL_FORMAT_ENVELOPE, format_names},
    /* 0: no limit. */
    [SL_FIELD_MAX_WAIT_MS] = {"max_wait_ms", SL_FIELD_INT, 0, SL_WINDOW_MS_MAX, false, 0, NULL},
    [SL_FIELD_MAX_JOB_BYTES] = {"max_job_bytes", SL_FIELD_INT, 1, 64 * 1024 * 1024, false,
                                1024 * 1024, NULL},

    [SL_FIELD_RETRY_MAX_ATTEMPTS] = {"max_attempts", SL_FIELD_INT, 1, 1000, false, 5, NULL},
    [SL_FIELD_RETRY_BASE_MS] = {"base_ms", SL_FIELD_INT, 1, 3600000, false, 500, NULL},
    /* Also at least base_ms, which config.c checks. */
    [SL_FIELD_RETRY_MAX_MS] = {"max_ms", SL_FIELD_INT, 1, 86400000, false, 60000, NULL},

    [SL_FIELD_LIMIT_TYPE] = {"type", SL_FIELD_ENUM, 0, 0, true, 0, limit_type_names},
    [SL_FIELD_LIMIT_ON_DENY] = {"on_deny", SL_FIELD_ENUM, 0, 0, false, SL_ON_DENY_DELAY,
                                on_deny_names},

    [SL_FIELD_ADAPTIVE_MIN] = {"min", SL_FIELD_RATE, SL_RATE_MILLI_MIN, SL_RATE_MILLI_MAX, true, 0,
                               NULL},
    [SL_FIELD_ADAPTIVE_MAX] = {"max", SL_FIELD_RATE, SL_RATE_MILLI_MIN, SL_RATE_MILLI_MAX, true, 0,
                               NULL},
    /* 0: max / 40, which config.c fills in. */
    [SL_FIELD_ADAPTIVE_INCREASE] = {"increase", SL_FIELD_RATE, SL_RATE_MILLI_MIN,
                                    SL_RATE_MILLI_MAX, false, 0, NULL},
    [SL_FIELD_ADAPTIVE_COOLDOWN_MS] = {"cooldown_ms", SL_FIELD_INT, 10, 3600000, false,
                                       SL_ADAPTIVE_COOLDOWN_MS_DEFAULT, NULL},
};

const sl_field *sl_config_field(sl_field_id id)
{
    return &fields[id];
}

/* A rate in jobs/s: a JSON number within the row's bounds and a multiple
 * of 0.001, converted to milli-jobs/s exactly (0.1 is not exact in binary,
 * so allow the conversion's rounding error but nothing near a real
 * fraction). */
static sl_jpath_status read_rate(sl_jpath_reader *r, const cJSON *v, const char *path,
                                 const sl_field *f, int64_t *out)
{
    if (!cJSON_IsNumber(v)) {
        sl_jpath_fail(r, path, "must be a number (jobs per second), not %s", sl_jpath_type(v));
        return SL_JPATH_BAD;
    }
    double d = v->valuedouble;
    if (!(d > 0)) {
        sl_jpath_fail(r, path, "must be > 0");
        return SL_JPATH_BAD;
    }
    if (d > (double)f->max / 1000) {
        sl_jpath_fail(r, path, "must be at most %" PRId64, f->max / 1000);
        return SL_JPATH_BAD;
    }
    /* llround without libm: scaled is in (0, max]. */
    double scaled = d * 1000;
    int64_t milli = (int64_t)(scaled + 0.5);
    double off = scaled - (double)milli;
    if (off > 1e-6 || off < -1e-6 || milli < f->min) {
        sl_jpath_fail(r, path, "must be a multiple of 0.001 (at least %" PRId64 ".%03" PRId64 ")",
                      f->min / 1000, f->min % 1000);
        return SL_JPATH_BAD;
    }
    *out = milli;
    return SL_JPATH_OK;
}

sl_jpath_status sl_config_field_read(sl_jpath_reader *r, const cJSON *obj, const char *parent,
                                     sl_field_id id, int64_t *out)
{
    const sl_field *f = &fields[id];
    if (!f->required)
        *out = f->def;
    const cJSON *v = sl_jpath_member(obj, f->name);
    if (!v) {
        if (f->required)
            sl_jpath_require(r, SL_JPATH_ABSENT, parent, f->name);
        return SL_JPATH_ABSENT;
    }
    switch (f->type) {
    case SL_FIELD_INT:
        return sl_jpath_int(r, obj, parent, f->name, f->min, f->max, out);
    case SL_FIELD_RATE: {
        char path[SL_JPATH_LEN];
        sl_jpath_key(path, sizeof path, parent, f->name);
        return read_rate(r, v, path, f, out);
    }
    case SL_FIELD_ENUM: {
        int index = 0;
        sl_jpath_status st = sl_jpath_enum(r, obj, parent, f->name, f->names, &index);
        if (st == SL_JPATH_OK)
            *out = index;
        return st;
    }
    }
    return SL_JPATH_BAD;
}

const char *sl_limit_type_name(sl_limit_type type)
{
    if ((unsigned)type > SL_LIMIT_SLIDING_WINDOW_COUNTER)
        return NULL;
    return limit_type_names[type];
}
