/* sliding_window_log.c - model of lua/sliding_window_log.lua. */
#include <string.h>

#include "admission/admission.h"
#include "base/intmath.h"

sl_verdict sl_sliding_window_log_admit(sl_sliding_window_log_state *state,
                                       const sl_window_params *p, int64_t now_us)
{
    int64_t window_us = p->window_ms * 1000;
    /* ZREMRANGEBYSCORE -inf (now - window): the window is (now - window, now]. */
    size_t gone = 0;
    while (gone < state->len && state->times[gone] <= now_us - window_us)
        gone++;
    memmove(state->times, state->times + gone, (state->len - gone) * sizeof *state->times);
    state->len -= gone;

    int64_t count = (int64_t)state->len;
    if (count >= p->max) {
        int64_t blocking = state->times[count - p->max];
        return (sl_verdict){.allowed = false, .wait_us = blocking + window_us - now_us};
    }
    /* ZADD keeps scores ordered; an equal score goes after its peers. */
    size_t at = state->len;
    while (at > 0 && state->times[at - 1] > now_us)
        at--;
    memmove(state->times + at + 1, state->times + at, (state->len - at) * sizeof *state->times);
    state->times[at] = now_us;
    state->len++;
    state->expire_at_ms = sl_ceildiv(state->times[state->len - 1] + window_us, 1000);
    return (sl_verdict){.allowed = true, .remaining = p->max - count - 1};
}
