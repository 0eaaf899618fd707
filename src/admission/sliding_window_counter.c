/* sliding_window_counter.c - model of lua/sliding_window_counter.lua. */
#include "admission/admission.h"
#include "base/intmath.h"

/* Time until a denied job would pass: later in this window as the previous
 * window's weight falls, or in the next one once this window's count,
 * become the previous, weighs little enough. */
static int64_t sliding_window_counter_wait(int64_t cur, int64_t prev, const sl_window_params *p,
                                           int64_t start_us, int64_t now_us)
{
    int64_t window_ms = p->window_ms;
    int64_t window_us = window_ms * 1000;
    if (cur + 1 > p->max) {
        int64_t elapsed_needed = window_ms - sl_floordiv((p->max - 1) * window_ms, cur);
        return start_us + window_us + elapsed_needed * 1000 - now_us;
    }
    int64_t elapsed_needed = window_ms - sl_floordiv((p->max - cur - 1) * window_ms, prev);
    if (elapsed_needed < window_ms)
        return start_us + elapsed_needed * 1000 - now_us;
    return start_us + window_us - now_us;
}

sl_verdict sl_sliding_window_counter_admit(sl_sliding_window_counter_state *state,
                                           const sl_window_params *p, int64_t now_us)
{
    int64_t window_ms = p->window_ms;
    int64_t window_us = window_ms * 1000;
    int64_t window = sl_floordiv(now_us, window_us);
    int64_t start_us = window * window_us;
    int64_t elapsed_ms = sl_floordiv(now_us - start_us, 1000);
    int64_t cur = 0, prev = 0;
    if (state->present && state->window == window) {
        cur = state->cur;
        prev = state->prev;
    } else if (state->present && state->window == window - 1) {
        prev = state->cur;
    }
    /* estimate + 1 <= max, with estimate = prev * (window - elapsed) / window + cur,
     * multiplied out by window so it is compared in integers. */
    int64_t weighted_prev = prev * (window_ms - elapsed_ms);
    if (weighted_prev + (cur + 1) * window_ms > p->max * window_ms)
        return (sl_verdict){
            .allowed = false,
            .wait_us = sliding_window_counter_wait(cur, prev, p, start_us, now_us),
        };

    state->present = true;
    state->window = window;
    state->cur = cur + 1;
    state->prev = prev;
    state->expire_at_ms = (window + 2) * window_ms;
    return (sl_verdict){
        .allowed = true,
        .remaining = sl_floordiv(p->max * window_ms - weighted_prev, window_ms) - state->cur,
    };
}
