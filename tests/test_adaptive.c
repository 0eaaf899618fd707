/* test_adaptive.c - the adaptive rate controller (job/adaptive.h) against a
 * simulated endpoint whose hidden limit changes. No clock: simulated time
 * is a loop counter. */
#include <criterion/criterion.h>
#include <inttypes.h>
#include <stdio.h>

#include "config/config.h"
#include "job/adaptive.h"

#define MS INT64_C(1000) /* us */
#define S INT64_C(1000000)

static sl_adaptive_params defaults(int64_t min, int64_t max)
{
    return (sl_adaptive_params){
        .min_milli = min * 1000,
        .max_milli = max * 1000,
        .decrease_permille = SL_ADAPTIVE_DECREASE_PERMILLE_DEFAULT,
        .increase_milli = max * 1000 / SL_ADAPTIVE_INCREASE_DIVISOR,
        .cooldown_us = SL_ADAPTIVE_COOLDOWN_MS_DEFAULT * MS,
    };
}

/* ---- single steps --------------------------------------------------- */

/* The single-step tests use a 2 s window, x0.7 and +10/s steps whatever
 * the defaults are. */
static sl_adaptive_params two_second(int64_t min, int64_t max)
{
    sl_adaptive_params p = defaults(min, max);
    p.cooldown_us = 2 * S;
    p.decrease_permille = 700;
    p.increase_milli = 10000;
    return p;
}

Test(adaptive, starts_at_the_file_rate_within_bounds)
{
    sl_adaptive_params p = two_second(5, 200);
    cr_assert_eq(sl_adaptive_start_rate(&p, 50000), 50000);
    cr_assert_eq(sl_adaptive_start_rate(&p, 1000), 5000);
    cr_assert_eq(sl_adaptive_start_rate(&p, 900000), 200000);
    sl_adaptive_state s = {0};
    sl_adaptive_batch none = {0};
    cr_assert_eq(sl_adaptive_step(&p, &s, &none, 7 * S, 900000), SL_ADAPTIVE_SAME);
    cr_assert_eq(s.rate_milli, 200000);
    cr_assert_eq(s.at_us, 7 * S);
}

Test(adaptive, a_refusal_decreases_once_per_cooldown)
{
    sl_adaptive_params p = two_second(5, 200);
    sl_adaptive_state s = {.rate_milli = 100000, .at_us = 0};
    sl_adaptive_batch limited = {.used = 10, .limited = 1};
    /* inside the window: counted, no change */
    cr_assert_eq(sl_adaptive_step(&p, &s, &limited, 1 * S, 0), SL_ADAPTIVE_SAME);
    cr_assert_eq(s.rate_milli, 100000);
    cr_assert_eq(s.bad, 1);
    /* the window closes: down by 0.7 */
    sl_adaptive_batch quiet = {.used = 10, .ok = 10};
    cr_assert_eq(sl_adaptive_step(&p, &s, &quiet, 2 * S, 0), SL_ADAPTIVE_DOWN);
    cr_assert_eq(s.rate_milli, 70000);
    cr_assert_eq(s.at_us, 2 * S);
    cr_assert_eq(s.bad + s.ok + s.used, 0);
    /* refusals right after it wait for the next window */
    cr_assert_eq(sl_adaptive_step(&p, &s, &limited, 2 * S + 1, 0), SL_ADAPTIVE_SAME);
    cr_assert_eq(sl_adaptive_step(&p, &s, &limited, 4 * S - 1, 0), SL_ADAPTIVE_SAME);
    cr_assert_eq(s.rate_milli, 70000);
    cr_assert_eq(sl_adaptive_step(&p, &s, &limited, 4 * S, 0), SL_ADAPTIVE_DOWN);
    cr_assert_eq(s.rate_milli, 49000);
}

Test(adaptive, timeouts_and_5xx_count_only_when_enabled)
{
    sl_adaptive_params p = two_second(5, 200);
    sl_adaptive_batch b = {.used = 1000, .ok = 1, .timeouts = 3, .errors_5xx = 2};
    sl_adaptive_state s = {.rate_milli = 100000};
    cr_assert_eq(sl_adaptive_step(&p, &s, &b, 2 * S, 0), SL_ADAPTIVE_UP);
    p.on_timeout = true;
    s = (sl_adaptive_state){.rate_milli = 100000};
    cr_assert_eq(sl_adaptive_step(&p, &s, &b, 2 * S, 0), SL_ADAPTIVE_DOWN);
    p.on_timeout = false;
    p.on_5xx = true;
    s = (sl_adaptive_state){.rate_milli = 100000};
    cr_assert_eq(sl_adaptive_step(&p, &s, &b, 2 * S, 0), SL_ADAPTIVE_DOWN);
}

Test(adaptive, rises_only_when_the_slots_were_used)
{
    sl_adaptive_params p = two_second(5, 200);
    /* 100/s over 2 s: 200 slots; 160 is 4/5 of them */
    sl_adaptive_state s = {.rate_milli = 100000};
    sl_adaptive_batch b = {.used = 159, .ok = 159};
    cr_assert_eq(sl_adaptive_step(&p, &s, &b, 2 * S, 0), SL_ADAPTIVE_SAME);
    cr_assert_eq(s.rate_milli, 100000);
    s = (sl_adaptive_state){.rate_milli = 100000};
    b.used = 160;
    cr_assert_eq(sl_adaptive_step(&p, &s, &b, 2 * S, 0), SL_ADAPTIVE_UP);
    cr_assert_eq(s.rate_milli, 110000);
    /* used but nothing succeeded (all 4xx, say): no rise */
    s = (sl_adaptive_state){.rate_milli = 100000};
    b.ok = 0;
    cr_assert_eq(sl_adaptive_step(&p, &s, &b, 2 * S, 0), SL_ADAPTIVE_SAME);
}

Test(adaptive, bounds_hold)
{
    sl_adaptive_params p = two_second(5, 200);
    sl_adaptive_state s = {.rate_milli = 6000};
    sl_adaptive_batch bad = {.limited = 1};
    for (int i = 1; i <= 20; i++) {
        sl_adaptive_step(&p, &s, &bad, i * 2 * S, 0);
        cr_assert_geq(s.rate_milli, 5000);
    }
    cr_assert_eq(s.rate_milli, 5000);
    s = (sl_adaptive_state){.rate_milli = 195000};
    sl_adaptive_batch good = {.used = 1000000, .ok = 1};
    for (int i = 1; i <= 20; i++) {
        sl_adaptive_step(&p, &s, &good, i * 2 * S, 0);
        cr_assert_leq(s.rate_milli, 200000);
    }
    cr_assert_eq(s.rate_milli, 200000);
    /* a stored rate outside new bounds is brought inside at once */
    s = (sl_adaptive_state){.rate_milli = 900000, .at_us = 0};
    sl_adaptive_batch none = {0};
    cr_assert_eq(sl_adaptive_step(&p, &s, &none, 1, 0), SL_ADAPTIVE_DOWN);
    cr_assert_eq(s.rate_milli, 200000);
}

Test(adaptive, a_clock_going_back_closes_no_window)
{
    sl_adaptive_params p = two_second(5, 200);
    sl_adaptive_state s = {.rate_milli = 100000, .at_us = 10 * S};
    sl_adaptive_batch bad = {.limited = 5};
    cr_assert_eq(sl_adaptive_step(&p, &s, &bad, 3 * S, 0), SL_ADAPTIVE_SAME);
    cr_assert_eq(s.at_us, 10 * S);
}

Test(adaptive, huge_idle_gap_does_not_overflow)
{
    sl_adaptive_params p = defaults(1, 1000000);
    sl_adaptive_state s = {.rate_milli = 1000000000, .at_us = 0};
    sl_adaptive_batch b = {.used = 1, .ok = 1};
    cr_assert_eq(sl_adaptive_step(&p, &s, &b, INT64_C(1) << 62, 0), SL_ADAPTIVE_SAME);
}

/* Requests claimed ahead leave at the old pace after a decrease: their
 * refusals say nothing new (the daemon leaves them out of the batch). */
Test(adaptive, a_refusal_at_a_pace_already_lowered_is_an_echo)
{
    cr_assert(sl_adaptive_echo(100000, 85000), "sent at 100/s, the rate is 85/s now");
    cr_assert_not(sl_adaptive_echo(85000, 85000), "sent at the present rate");
    cr_assert_not(sl_adaptive_echo(80000, 85000), "sent before an increase");
    cr_assert_not(sl_adaptive_echo(100000, 0), "no rate heard yet");
}

/* A header's pause slows the tenant (and steps it down) only when it is
 * longer than the tenant's own interval. */
Test(adaptive, a_pause_counts_only_when_longer_than_an_interval)
{
    cr_assert_not(sl_adaptive_pause_slows(25000, 38000), "25 ms, sending every 26.3 ms");
    cr_assert(sl_adaptive_pause_slows(25000, 45000), "25 ms, sending every 22.2 ms");
    cr_assert_not(sl_adaptive_pause_slows(25000, 40000), "exactly one interval");
    cr_assert(sl_adaptive_pause_slows(25001, 40000));
    cr_assert(sl_adaptive_pause_slows(INT64_C(86400000000), INT64_C(1000000000)), "a day at the top rate");
    cr_assert(sl_adaptive_pause_slows(1, 0), "no rate known: counts");
}

/* ---- a simulated endpoint ------------------------------------------- */

/* The endpoint: a token bucket of `limit` jobs/s holding at most a tenth
 * of a second of tokens, answering 429 when empty. sluice sends at its
 * effective rate to a queue that never empties (or, idle, never sends),
 * and acks every 10 ms. Counts are in milli-jobs to keep slow rates
 * exact. */
typedef struct sim {
    sl_adaptive_params p;
    sl_adaptive_state s;
    int64_t tokens_milli, credit_milli;
    int64_t sent, refused;
} sim;

/* Runs from t0 for dur_us against limit (jobs/s); returns the jobs
 * delivered in [t0 + settle_us, t0 + dur_us) and counts into *sm. */
static int64_t run(sim *sm, int64_t t0, int64_t dur_us, int64_t limit, int64_t settle_us,
                   bool idle, int64_t *refused_late)
{
    const int64_t tick = 10 * MS;
    int64_t delivered_late = 0;
    for (int64_t t = t0; t < t0 + dur_us; t += tick) {
        int64_t cap = limit * 1000 / 10;
        sm->tokens_milli += limit * 1000 * tick / S;
        if (sm->tokens_milli > cap)
            sm->tokens_milli = cap;
        sl_adaptive_batch b = {0};
        if (!idle) {
            sm->credit_milli += sm->s.rate_milli * tick / S;
            while (sm->credit_milli >= 1000) {
                sm->credit_milli -= 1000;
                b.used++;
                if (sm->tokens_milli >= 1000) {
                    sm->tokens_milli -= 1000;
                    b.ok++;
                } else {
                    b.limited++;
                }
            }
        }
        sm->sent += b.used;
        sm->refused += b.limited;
        if (t >= t0 + settle_us) {
            delivered_late += b.ok;
            if (refused_late)
                *refused_late += b.limited;
        }
        sl_adaptive_step(&sm->p, &sm->s, &b, t + tick, 50000);
        cr_assert_geq(sm->s.rate_milli, sm->p.min_milli);
        cr_assert_leq(sm->s.rate_milli, sm->p.max_milli);
    }
    return delivered_late;
}

Test(adaptive, converges_near_a_changing_hidden_limit)
{
    sim sm = {.p = defaults(5, 200)};
    const int64_t phase = 60 * S, settle = 10 * S;
    const int64_t limits[] = {100, 40, 80};
    for (int i = 0; i < 3; i++) {
        int64_t refused_late = 0;
        /* the 10 s after the first 10: already near the new limit */
        int64_t early = run(&sm, i * phase, 2 * settle, limits[i], settle, false, &refused_late);
        double early_rate = (double)early / ((double)settle / S);
        cr_assert_geq(early_rate, 0.85 * (double)limits[i], "limit %" PRId64 ": %.1f at 10-20 s",
                      limits[i], early_rate);
        int64_t d = early + run(&sm, i * phase + 2 * settle, phase - 2 * settle, limits[i], 0,
                                false, &refused_late);
        double rate = (double)d / ((double)(phase - settle) / S);
        fprintf(stderr,
                "limit %" PRId64 "/s: delivered %.1f/s in 10-20 s, %.1f/s in 10-60 s, 429s %" PRId64
                "\n",
                limits[i], early_rate, rate, refused_late);
        /* AIMD saws below the limit: x0.85 down, +5/s up per second */
        cr_assert_geq(rate, 0.90 * (double)limits[i], "limit %" PRId64 ": %.1f", limits[i], rate);
        cr_assert_leq(rate, 1.0 * (double)limits[i] + 0.5);
    }
    double fraction = (double)sm.refused / (double)sm.sent;
    fprintf(stderr, "429s: %" PRId64 " of %" PRId64 " (%.2f%%)\n", sm.refused, sm.sent,
            100 * fraction);
    cr_assert_lt(fraction, 0.03);
}

Test(adaptive, an_idle_tenant_does_not_rise)
{
    sim sm = {.p = defaults(5, 200)};
    sm.s = (sl_adaptive_state){.rate_milli = 30000};
    run(&sm, 0, 120 * S, 100, 0, true, NULL);
    cr_assert_eq(sm.s.rate_milli, 30000);
    cr_assert_eq(sm.sent, 0);
}
