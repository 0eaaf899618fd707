/* adaptive.c - the adaptive rate controller (adaptive.h). Every line has
 * its twin in lua/ack.lua: change both or neither. */
#include "job/adaptive.h"

static int64_t clamp(int64_t v, int64_t lo, int64_t hi)
{
    return v < lo ? lo : v > hi ? hi : v;
}

int64_t sl_adaptive_start_rate(const sl_adaptive_params *p, int64_t file_rate_milli)
{
    return clamp(file_rate_milli, p->min_milli, p->max_milli);
}

bool sl_adaptive_echo(int64_t sent_rate_milli, int64_t rate_now_milli)
{
    return rate_now_milli > 0 && sent_rate_milli > rate_now_milli;
}

bool sl_adaptive_pause_slows(int64_t pause_us, int64_t sent_rate_milli)
{
    /* one interval: 10^9 / rate_milli us (a product could overflow: a
     * day's pause at 10^9 milli-jobs/s) */
    return sent_rate_milli <= 0 || pause_us > INT64_C(1000000000) / sent_rate_milli;
}

/* Refusals of batch b: what tells the controller it is too fast. */
static int64_t refusals(const sl_adaptive_params *p, const sl_adaptive_batch *b)
{
    return b->limited + (p->on_timeout ? b->timeouts : 0) + (p->on_5xx ? b->errors_5xx : 0);
}

/* Whether the window [at, now] used at least 4/5 of the slots its rate
 * gave: used jobs against rate_milli x elapsed_ms / 10^6 jobs, compared
 * in milli-jobs and integers (elapsed capped so the product stays exact
 * as a double in Lua). */
static bool slots_used(const sl_adaptive_state *s, int64_t now_us)
{
    int64_t elapsed_us = clamp(now_us - s->at_us, 0, SL_ADAPTIVE_WINDOW_MAX_US);
    int64_t slots_milli = s->rate_milli * (elapsed_us / 1000) / 1000;
    return s->used * 1000 * 5 >= slots_milli * 4;
}

sl_adaptive_change sl_adaptive_step(const sl_adaptive_params *p, sl_adaptive_state *s,
                                    const sl_adaptive_batch *b, int64_t now_us,
                                    int64_t start_rate_milli)
{
    if (s->rate_milli <= 0) {
        *s = (sl_adaptive_state){.rate_milli = sl_adaptive_start_rate(p, start_rate_milli),
                                 .at_us = now_us};
    }
    s->used += b->used;
    s->ok += b->ok;
    s->bad += refusals(p, b);
    int64_t old = s->rate_milli;
    /* A clock that went back (another daemon's ack, a Redis failover)
     * closes no window: the next batch past the cooldown does. */
    if (now_us - s->at_us < p->cooldown_us) {
        s->rate_milli = clamp(old, p->min_milli, p->max_milli);
        return s->rate_milli == old ? SL_ADAPTIVE_SAME : s->rate_milli < old ? SL_ADAPTIVE_DOWN
                                                                              : SL_ADAPTIVE_UP;
    }
    int64_t rate = old;
    if (s->bad > 0)
        rate = old * p->decrease_permille / 1000;
    else if (s->ok > 0 && slots_used(s, now_us))
        rate = old + p->increase_milli;
    rate = clamp(rate, p->min_milli, p->max_milli);
    *s = (sl_adaptive_state){.rate_milli = rate, .at_us = now_us};
    return rate == old ? SL_ADAPTIVE_SAME : rate < old ? SL_ADAPTIVE_DOWN : SL_ADAPTIVE_UP;
}
