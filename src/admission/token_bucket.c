/* token_bucket.c - model of lua/token_bucket.lua. */
#include "admission/admission.h"
#include "base/intmath.h"

sl_verdict sl_token_bucket_admit(sl_token_bucket_state *state, const sl_bucket_params *p,
                                 int64_t now_us)
{
    int64_t rate = p->rate_milli;
    int64_t full = p->capacity * SL_JOB;
    int64_t tokens = state->present ? state->tokens : full;
    int64_t last = state->present ? state->last : now_us;
    if (tokens > full)
        tokens = full; /* the capacity was lowered */
    if (now_us > last && tokens < full) {
        int64_t elapsed = now_us - last;
        /* Compare before multiplying: elapsed * rate may pass 2^53. */
        tokens = elapsed >= sl_ceildiv(full - tokens, rate) ? full : tokens + elapsed * rate;
    }
    if (tokens < SL_JOB)
        return (sl_verdict){.allowed = false, .wait_us = sl_ceildiv(SL_JOB - tokens, rate)};

    state->present = true;
    state->tokens = tokens - SL_JOB;
    state->last = sl_max64(now_us, last);
    state->expire_at_ms = sl_ceildiv(state->last + sl_ceildiv(full - state->tokens, rate), 1000);
    return (sl_verdict){.allowed = true, .remaining = sl_floordiv(state->tokens, SL_JOB)};
}
