/* policing.c - model of lua/policing.lua: the leaky bucket used as a meter. */
#include "admission/admission.h"
#include "base/intmath.h"

sl_verdict sl_policing_admit(sl_policing_state *state, const sl_bucket_params *p, int64_t now_us)
{
    int64_t rate = p->rate_milli;
    int64_t level = state->level;
    if (now_us > state->last && level > 0) {
        int64_t elapsed = now_us - state->last;
        /* Compare before multiplying: elapsed * rate may pass 2^53. */
        level = elapsed >= sl_ceildiv(level, rate) ? 0 : level - elapsed * rate;
    }
    if (level + SL_JOB > p->capacity * SL_JOB)
        return (sl_verdict){.allowed = false,
                            .wait_us = sl_ceildiv(level + SL_JOB - p->capacity * SL_JOB, rate)};

    state->level = level + SL_JOB;
    state->last = sl_max64(now_us, state->last);
    state->expire_at_ms = sl_ceildiv(state->last + sl_ceildiv(state->level, rate), 1000);
    return (sl_verdict){.allowed = true,
                        .remaining = sl_floordiv(p->capacity * SL_JOB - state->level, SL_JOB)};
}
