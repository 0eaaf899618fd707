/* fixed_window.c - model of lua/fixed_window.lua. */
#include "admission/admission.h"
#include "base/intmath.h"

sl_verdict sl_fixed_window_admit(sl_fixed_window_state *state, const sl_window_params *p,
                                 int64_t now_us)
{
    int64_t window_us = p->window_ms * 1000;
    int64_t window = sl_floordiv(now_us, window_us);
    int64_t count = (state->present && state->window == window) ? state->count : 0;
    if (count >= p->max)
        return (sl_verdict){.allowed = false, .wait_us = (window + 1) * window_us - now_us};

    state->present = true;
    state->window = window;
    state->count = count + 1;
    state->expire_at_ms = (window + 1) * p->window_ms;
    return (sl_verdict){.allowed = true, .remaining = p->max - state->count};
}
