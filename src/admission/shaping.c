/* shaping.c - model of lua/shaping.lua: the leaky bucket used as a queue,
 * and the pause that ack.lua applies to it. */
#include "admission/admission.h"
#include "base/intmath.h"

sl_verdict sl_shaping_admit(sl_shaping_state *state, const sl_bucket_params *p, int64_t now_us)
{
    int64_t rate = p->rate_milli;
    int64_t next_free = state->next_free;
    int64_t frac = state->frac;
    if (frac >= rate)
        frac = rate - 1; /* the rate changed since the state was written */
    if (next_free <= now_us) {
        next_free = now_us; /* idle: the schedule restarts at now */
        frac = 0;
    }
    /* Accept while level + 1 <= capacity; compared as a backlog in us so
     * that a far-away next_free is never multiplied by the rate. */
    int64_t max_backlog = sl_floordiv(p->capacity * SL_JOB - SL_JOB + frac, rate);
    if (next_free - now_us > max_backlog)
        return (sl_verdict){.allowed = false, .wait_us = next_free - now_us - max_backlog};

    int64_t level = (next_free - now_us) * rate - frac;
    int64_t rest = SL_JOB - frac;
    int64_t step = sl_ceildiv(rest, rate);
    state->next_free = next_free + step;
    state->frac = step * rate - rest;
    state->expire_at_ms = sl_ceildiv(state->next_free, 1000);
    return (sl_verdict){
        .allowed = true,
        .remaining = sl_floordiv(p->capacity * SL_JOB - level - SL_JOB, SL_JOB),
        .wait_us = next_free - now_us,
    };
}

bool sl_shaping_pause(sl_shaping_state *state, int64_t until_us)
{
    if (until_us <= state->next_free)
        return false;
    /* The exact point is until_us itself: nothing of a job is left over. */
    state->next_free = until_us;
    state->frac = 0;
    state->expire_at_ms = sl_ceildiv(until_us, 1000);
    return true;
}
