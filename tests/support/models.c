/* models.c - the model_ops table over src/admission/admission.h. */
#include <stdlib.h>
#include <string.h>

#include "models.h"

static void *must_alloc(size_t size)
{
    void *p = calloc(1, size);
    if (!p)
        abort();
    return p;
}

static bool is_log(const model_ops *m)
{
    return strcmp(m->script, "sliding_window_log") == 0;
}

void *model_create(const model_ops *m, int64_t first)
{
    void *state = must_alloc(m->state_size);
    if (is_log(m)) {
        sl_sliding_window_log_state *log = state;
        log->cap = (size_t)first;
        log->times = must_alloc(log->cap * sizeof *log->times);
    }
    return state;
}

void model_destroy(const model_ops *m, void *state)
{
    if (is_log(m))
        free(((sl_sliding_window_log_state *)state)->times);
    free(state);
}

void *model_clone(const model_ops *m, const void *state)
{
    void *copy = must_alloc(m->state_size);
    memcpy(copy, state, m->state_size);
    if (is_log(m)) {
        const sl_sliding_window_log_state *log = state;
        sl_sliding_window_log_state *log_copy = copy;
        log_copy->times = must_alloc(log->cap * sizeof *log->times);
        memcpy(log_copy->times, log->times, log->len * sizeof *log->times);
    }
    return copy;
}

void model_reset(const model_ops *m, void *state)
{
    if (is_log(m)) {
        sl_sliding_window_log_state *log = state;
        log->len = 0;
        log->expire_at_ms = 0;
    } else {
        memset(state, 0, m->state_size);
    }
}

int64_t model_expire_at_ms(const model_ops *m, const void *state)
{
    int64_t at;
    memcpy(&at, (const char *)state + m->expire_offset, sizeof at);
    return at;
}

static sl_verdict shaping(void *s, int64_t capacity, int64_t rate_milli, int64_t now)
{
    return sl_shaping_admit(s, &(sl_bucket_params){capacity, rate_milli}, now);
}
static sl_verdict policing(void *s, int64_t capacity, int64_t rate_milli, int64_t now)
{
    return sl_policing_admit(s, &(sl_bucket_params){capacity, rate_milli}, now);
}
static sl_verdict token_bucket(void *s, int64_t capacity, int64_t rate_milli, int64_t now)
{
    return sl_token_bucket_admit(s, &(sl_bucket_params){capacity, rate_milli}, now);
}
static sl_verdict fixed_window(void *s, int64_t max, int64_t window_ms, int64_t now)
{
    return sl_fixed_window_admit(s, &(sl_window_params){max, window_ms}, now);
}
static sl_verdict sliding_window_log(void *s, int64_t max, int64_t window_ms, int64_t now)
{
    return sl_sliding_window_log_admit(s, &(sl_window_params){max, window_ms}, now);
}
static sl_verdict sliding_window_counter(void *s, int64_t max, int64_t window_ms, int64_t now)
{
    return sl_sliding_window_counter_admit(s, &(sl_window_params){max, window_ms}, now);
}

const model_ops model_list[] = {
    {"shaping", false, sizeof(sl_shaping_state),
     offsetof(sl_shaping_state, expire_at_ms), shaping},
    {"policing", false, sizeof(sl_policing_state),
     offsetof(sl_policing_state, expire_at_ms), policing},
    {"token_bucket", false, sizeof(sl_token_bucket_state),
     offsetof(sl_token_bucket_state, expire_at_ms), token_bucket},
    {"fixed_window", true, sizeof(sl_fixed_window_state),
     offsetof(sl_fixed_window_state, expire_at_ms), fixed_window},
    {"sliding_window_log", true, sizeof(sl_sliding_window_log_state),
     offsetof(sl_sliding_window_log_state, expire_at_ms), sliding_window_log},
    {"sliding_window_counter", true, sizeof(sl_sliding_window_counter_state),
     offsetof(sl_sliding_window_counter_state, expire_at_ms), sliding_window_counter},
};
const int model_count = sizeof model_list / sizeof model_list[0];

const model_ops *model_find(const char *script)
{
    for (int i = 0; i < model_count; i++)
        if (strcmp(model_list[i].script, script) == 0)
            return &model_list[i];
    return NULL;
}
