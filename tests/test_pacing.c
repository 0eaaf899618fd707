/* test_pacing.c - the window bound and the paced catch-up of SPEC §4
 * (pacing.c): simulated workers on a simulated clock that stalls; time is
 * passed in. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>

#include "job/claim_policy.h"
#include "job/pacing.h"

/* ---- what SPEC §4 measures, computed here on its own ---- */

/* W = max(10 intervals, 100 ms), in us. */
static double window_of(double rate)
{
    double ten = 10e6 / rate;
    return ten > 100000 ? ten : 100000;
}

/* floor(1.02 x rate x W) + 1 (rounded as a careful reader would: 10.2
 * intervals up to 100/s, 0.102 s x rate above). */
static size_t bound_of(double rate)
{
    return (size_t)(1.02 * rate * window_of(rate) / 1e6 + 1e-9) + 1;
}

/* The most of the sorted times t in any half-open window of `window` us. */
static size_t most_in(const int64_t *t, size_t n, double window)
{
    size_t most = 0;
    for (size_t i = 0, j = 0; i < n; i++) {
        while (j < n && (double)(t[j] - t[i]) < window)
            j++;
        if (j - i > most)
            most = j - i;
    }
    return most;
}

/* ---- a simulated worker ---- */

/* One tenant: jobs with the Redis schedule's slots (1/rate apart exactly,
 * from its first slot), all claimed; out holds each job's departure. */
typedef struct sim_tenant {
    double rate;
    int64_t first_slot;
    size_t n, sent;
    sl_pace pace;
    sl_pace_rules rules;
    int64_t *out;
} sim_tenant;

/* The machine: stalls of stall_us every period_us from stall_at (one
 * stall when period_us is 0); each wake-up comes 0 to max_late_us after
 * its timer; each job costs send_us of the worker's time. */
typedef struct sim_machine {
    int64_t stall_at, stall_us, period_us;
    int64_t max_late_us, send_us;
} sim_machine;

static int64_t slot_of(const sim_tenant *t, size_t i)
{
    return t->first_slot + (int64_t)((double)i * 1e6 / t->rate);
}

static void tenant_init(sim_tenant *t, double rate, int64_t first_slot, size_t n)
{
    *t = (sim_tenant){.rate = rate, .first_slot = first_slot, .n = n};
    t->rules = sl_pace_rules_for((int64_t)(rate * 1000 + 0.5));
    cr_assert(sl_pace_reset(&t->pace, &t->rules));
    t->out = calloc(n, sizeof *t->out);
}

static void tenant_free(sim_tenant *t)
{
    sl_pace_free(&t->pace);
    free(t->out);
}

/* When a wake-up meant for `at` (late by `late`) comes on the machine:
 * never inside a stall, but at its end. */
static int64_t wake_at(const sim_machine *m, int64_t at)
{
    if (m->stall_us == 0 || at < m->stall_at)
        return at;
    int64_t since = at - m->stall_at;
    if (m->period_us == 0)
        return since < m->stall_us ? m->stall_at + m->stall_us : at;
    int64_t in = since % m->period_us;
    return in < m->stall_us ? at - in + m->stall_us : at;
}

/* The worker's loop, as tenant.c's release_due runs it: each wake-up
 * sends every tenant's jobs the slot and the pace allow, then the one
 * timer arms for the earliest tenant due. */
static void run_worker(const sim_machine *m, sim_tenant *ts, size_t count)
{
    uint64_t rng = 88172645463325252u;
    int64_t now = wake_at(m, ts[0].first_slot);
    for (;;) {
        for (size_t k = 0; k < count; k++) {
            sim_tenant *t = &ts[k];
            while (t->sent < t->n &&
                   sl_departure_allowed(slot_of(t, t->sent), &t->pace, &t->rules, now)) {
                sl_pace_note(&t->pace, &t->rules, now);
                t->out[t->sent++] = now;
                now += m->send_us;
            }
        }
        int64_t next = INT64_MAX;
        double fastest = 0; /* one timer per worker here: the tenant due first decides */
        for (size_t k = 0; k < count; k++)
            if (ts[k].sent < ts[k].n) {
                int64_t at = sl_departure_at(slot_of(&ts[k], ts[k].sent), &ts[k].pace, &ts[k].rules);
                if (at < next) {
                    next = at;
                    fastest = ts[k].rate;
                }
            }
        if (next == INT64_MAX)
            return;
        rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17; /* xorshift: timer lateness */
        int64_t late = m->max_late_us ? (int64_t)(rng % (uint64_t)(m->max_late_us + 1)) : 0;
        now = wake_at(m, now + sl_departure_wait_us(next, now, (int64_t)(1e6 / fastest)) + late);
    }
}

/* Job i's lateness against its slot. */
static int64_t lateness(const sim_tenant *t, size_t i)
{
    return t->out[i] - slot_of(t, i);
}

static int compare_int64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

/* The p-th percentile (0..100) of a tenant's lateness, us. */
static int64_t lateness_pct(const sim_tenant *t, int p)
{
    int64_t *late = malloc(t->n * sizeof *late);
    for (size_t i = 0; i < t->n; i++)
        late[i] = lateness(t, i);
    qsort(late, t->n, sizeof *late, compare_int64);
    int64_t v = late[(t->n - 1) * (size_t)p / 100];
    free(late);
    return v;
}

/* The delivered rate's error, first to last departure. */
static double rate_error(const sim_tenant *t)
{
    double rate = (double)(t->n - 1) * 1e6 / (double)(t->out[t->n - 1] - t->out[0]);
    return rate / t->rate - 1;
}

static void assert_window_bound(const sim_tenant *t)
{
    size_t most = most_in(t->out, t->n, window_of(t->rate)), bound = bound_of(t->rate);
    cr_assert_leq(most, bound, "%g/s: %zu departures in %.0f us (at most %zu)", t->rate, most,
                  window_of(t->rate), bound);
}

/* ---- the rules ---- */

Test(pacing, the_window_and_its_bound_are_those_of_the_spec)
{
    double rates[] = {0.5, 1, 3, 10, 99, 100, 101, 250, 1000, 3333, 5000, 9990, 20000, 100000};
    for (size_t i = 0; i < sizeof rates / sizeof *rates; i++) {
        sl_pace_rules r = sl_pace_rules_for((int64_t)(rates[i] * 1000 + 0.5));
        cr_assert_eq(r.most_in_window, (int64_t)bound_of(rates[i]), "%g/s", rates[i]);
        cr_assert(fabs((double)r.window_us - window_of(rates[i])) <= 1, "%g/s: W %lld us", rates[i],
                  (long long)r.window_us);
        cr_assert_eq(sl_pace_most_in(&r, r.window_us), r.most_in_window, "%g/s", rates[i]);
        /* the catch-up: 1.02 / 1.01 (0.99%) to 2% above the rate */
        double speedup = 1e9 / rates[i] / (double)r.gap_ns;
        cr_assert(speedup <= 1.02 && speedup >= 1.02 / 1.01, "%g/s: catch-up x%.4f", rates[i], speedup);
        cr_assert_geq(r.tolerance_ns, r.window_us * 10, /* W / 100: 1 ms at 100 ms */
                      "%g/s: tolerance %lld ns", rates[i], (long long)r.tolerance_ns);
    }
    sl_pace_rules r = sl_pace_rules_for(1000000);
    cr_assert_eq(r.window_us, 100000);
    cr_assert_eq(r.most_in_window, 103);
    cr_assert_eq(sl_pace_rules_for(5000000).most_in_window, 511);
    cr_assert_eq(sl_pace_rules_for(20000000).most_in_window, 2041);
    cr_assert_eq(sl_pace_rules_for(1000).most_in_window, 11, "11 in any 10 intervals at 1/s");
    cr_assert_eq(sl_pace_most_in_10_intervals(10000), 11, "at 100/s");
}

/* ---- on schedule ---- */

Test(pacing, on_schedule_nobody_waits)
{
    sim_tenant t;
    tenant_init(&t, 1000, 1000000, 200);
    run_worker(&(sim_machine){0}, &t, 1);
    for (size_t i = 0; i < t.n; i++)
        cr_assert_eq(lateness(&t, i), 0, "job %zu held back", i);
    tenant_free(&t);
}

Test(pacing, timer_lateness_within_the_tolerance_is_not_punished)
{
    /* 1,000/s: every wake-up late by up to 1 ms; no job is held by the
     * pace beyond its own wake-up's lateness */
    sim_tenant t;
    tenant_init(&t, 1000, 0, 5000);
    run_worker(&(sim_machine){.max_late_us = 1000}, &t, 1);
    for (size_t i = 0; i < t.n; i++)
        cr_assert_leq(lateness(&t, i), 1000, "job %zu: %lld us late", i, (long long)lateness(&t, i));
    assert_window_bound(&t);
    tenant_free(&t);
}

Test(pacing, a_late_departure_does_not_hold_the_next_job)
{
    /* 100/s: one job leaves 1.9 ms late; the next still leaves at its slot */
    sl_pace p = {0};
    sl_pace_rules r = sl_pace_rules_for(100000);
    sl_pace_note(&p, &r, 0);
    sl_pace_note(&p, &r, 11900);
    cr_assert_leq(sl_pace_allows_at(&p, &r), 20000);
}

/* ---- stalls ---- */

Test(pacing, a_50_ms_stall_at_1000_per_s_is_made_up_at_2_percent)
{
    sim_tenant t;
    tenant_init(&t, 1000, 0, 10000); /* 10 s */
    run_worker(&(sim_machine){.stall_at = 1000000, .stall_us = 50000, .max_late_us = 50}, &t, 1);
    assert_window_bound(&t);
    /* the stall's 50 jobs leave paced: the catch-up, from the stall's end
     * to the first job less than an interval late, runs 1% to 2% fast */
    size_t first = 1000, back = first;
    while (lateness(&t, back) >= 1000)
        back++;
    /* (the first few leave together: what the tolerance allows at once) */
    size_t burst = 1 + (size_t)(t.rules.tolerance_ns / t.rules.gap_ns);
    cr_assert_eq(t.out[first + burst - 1], t.out[first]);
    cr_assert_gt(t.out[first + burst], t.out[first], "more than the tolerance at once");
    double catch_up = (double)(back - first - burst) * 1e6 /
                      (double)(t.out[back] - t.out[first + burst]) / t.rate;
    cr_assert(catch_up > 1.0099 && catch_up <= 1.02, "catch-up x%.4f over %zu jobs", catch_up,
              back - first);
    cr_assert_lt(t.out[back] - t.out[first], 4000000, "back on its slots %lld us after the stall",
                 (long long)(t.out[back] - t.out[first]));
    /* back on its slots, it stays there: lateness returns to ~0 */
    for (size_t i = back; i < t.n; i++)
        cr_assert_leq(lateness(&t, i), 1000, "job %zu: %lld us late", i, (long long)lateness(&t, i));
    cr_assert_leq(lateness(&t, t.n - 1), 50, "the last job %lld us late",
                  (long long)lateness(&t, t.n - 1));
    /* no time forgotten: over the run the rate is the configured one */
    cr_assert_lt(fabs(rate_error(&t)), 0.0001, "rate error %.4f%%", rate_error(&t) * 100);
    tenant_free(&t);
}

Test(pacing, the_log_keeps_the_bound_where_the_tolerance_alone_would_not)
{
    /* after a 50 ms stall at 1,000/s, 3 jobs leave at once (2 ms of
     * tolerance) and the rest 2% fast: 105 in the first 100 ms, but for
     * the log */
    sim_machine stall = {.stall_at = 1000000, .stall_us = 50000};
    sim_tenant t;
    tenant_init(&t, 1000, 0, 3000);
    sl_pace_free(&t.pace); /* no log */
    run_worker(&stall, &t, 1);
    size_t unlogged = most_in(t.out, t.n, window_of(1000));
    cr_assert_gt(unlogged, bound_of(1000), "%zu in 100 ms without the log", unlogged);
    tenant_free(&t);
    tenant_init(&t, 1000, 0, 3000);
    run_worker(&stall, &t, 1);
    assert_window_bound(&t);
    tenant_free(&t);
}

Test(pacing, a_new_rate_gets_a_log_of_its_own)
{
    sl_pace p = {0};
    sl_pace_rules slow = sl_pace_rules_for(100000), fast = sl_pace_rules_for(20000000);
    cr_assert(sl_pace_reset(&p, &slow));
    int64_t *marks = p.marks;
    cr_assert(sl_pace_reset(&p, &slow));
    cr_assert_eq(p.marks, marks, "the same bound keeps its log");
    for (int i = 0; i < 20; i++)
        sl_pace_note(&p, &slow, i * 10000);
    cr_assert(sl_pace_reset(&p, &fast));
    cr_assert_eq(p.most, 2041);
    cr_assert_eq(p.departed, 0, "a log of the old rate's departures");
    cr_assert(p.started, "the pace is kept");
    sl_pace_free(&p);
    cr_assert_null(p.marks);
}

Test(pacing, stalls_of_5_ms_every_500_ms_at_5000_per_s_are_made_up)
{
    sim_tenant t;
    tenant_init(&t, 5000, 0, 100000); /* 20 s */
    run_worker(&(sim_machine){.stall_at = 250000, .stall_us = 5000, .period_us = 500000,
                              .max_late_us = 100, .send_us = 5},
               &t, 1);
    assert_window_bound(&t);
    /* before each stall, the last one is made up */
    for (int64_t stall = 250000 + 500000; stall < 19000000; stall += 500000) {
        size_t i = (size_t)(stall / 200) - 2; /* the job two slots before the stall */
        cr_assert_leq(lateness(&t, i), 200, "%lld us late before the stall at %lld ms",
                      (long long)lateness(&t, i), (long long)stall / 1000);
    }
    /* the long-run rate error goes to ~0: lateness does not pile up */
    cr_assert_lt(fabs(rate_error(&t)), 0.0001, "rate error %.4f%%", rate_error(&t) * 100);
    /* the worst 100 ms after a stall is paced: about 1.02 x the rate */
    cr_assert_geq(most_in(t.out, t.n, 100000), 505, "the catch-up uses the 2%%");
    tenant_free(&t);
}

Test(pacing, late_timers_at_20000_per_s_still_catch_up)
{
    /* wake-ups up to 0.5 ms late (10 intervals) and a 20 ms stall first:
     * late wake-ups send what is due at once, and lose nothing */
    sim_tenant t;
    tenant_init(&t, 20000, 0, 60000); /* 3 s */
    run_worker(&(sim_machine){.stall_at = 0, .stall_us = 20000, .max_late_us = 500}, &t, 1);
    assert_window_bound(&t);
    cr_assert_lt(lateness(&t, t.n - 1), 600, "still %lld us late after 3 s",
                 (long long)lateness(&t, t.n - 1));
    tenant_free(&t);
}

Test(pacing, a_process_behind_at_full_speed_is_not_held)
{
    /* rate 1,000,000/s and the worker far behind (each claim restarts the
     * schedule at Redis's now, so slots jump ahead between batches): the
     * pace never holds a job that is due */
    sl_pace p = {0};
    sl_pace_rules r = sl_pace_rules_for(1000000000);
    int64_t out[100];
    int64_t now = 200000;
    for (int i = 0; i < 100; i++) {
        int64_t at = sl_pace_allows_at(&p, &r);
        cr_assert_leq(at, now, "job %d held until %lld, at %lld", i, (long long)at, (long long)now);
        sl_pace_note(&p, &r, now);
        out[i] = now;
        now += 30; /* as fast as the worker goes */
    }
    cr_assert_eq(out[99] - out[0], 99 * 30);
}

Test(pacing, the_bound_holds_however_late_the_wakeups_come)
{
    /* from 0.5/s to 100,000/s, stalls of 3 intervals and wake-ups up to
     * 3 ms late: never more than the bound in any window W */
    double rates[] = {0.5, 1, 7, 10, 100, 101, 333, 1000, 2500, 5000, 9990, 20000, 100000};
    for (size_t i = 0; i < sizeof rates / sizeof *rates; i++) {
        double interval = 1e6 / rates[i];
        size_t n = rates[i] < 100 ? 400 : (size_t)(rates[i] * 2); /* 2 s, or 400 jobs */
        sim_tenant t;
        tenant_init(&t, rates[i], 0, n);
        int64_t stall = (int64_t)(3 * interval) > 20000 ? (int64_t)(3 * interval) : 20000;
        run_worker(&(sim_machine){.stall_at = (int64_t)(7.5 * interval), .stall_us = stall,
                                  .period_us = (int64_t)(interval * (double)n / 4),
                                  .max_late_us = 3000},
                   &t, 1);
        assert_window_bound(&t);
        tenant_free(&t);
    }
}

/* ---- tenants of one worker ---- */

Test(pacing, tenants_of_one_worker_keep_their_own_pace)
{
    /* 50/s, 500/s and 5,000/s with 4 s of backlog each, on one worker
     * whose wake-ups cost and come late, and which stalls 5 ms every
     * 500 ms: each tenant keeps its bound and its slots */
    double rates[] = {50, 500, 5000};
    sim_tenant ts[3];
    for (size_t k = 0; k < 3; k++)
        tenant_init(&ts[k], rates[k], 1000 + (int64_t)k * 37, (size_t)(rates[k] * 4) + 1);
    run_worker(&(sim_machine){.stall_at = 250000, .stall_us = 5000, .period_us = 500000,
                              .max_late_us = 100, .send_us = 30},
               ts, 3);
    for (size_t k = 0; k < 3; k++) {
        assert_window_bound(&ts[k]);
        int64_t p50 = lateness_pct(&ts[k], 50), p99 = lateness_pct(&ts[k], 99);
        cr_assert_leq(p50, 2500, "%g/s: lateness p50 %lld us", rates[k], (long long)p50);
        cr_assert_leq(p99, 5500, "%g/s: lateness p99 %lld us", rates[k], (long long)p99);
        cr_assert_lt(fabs(rate_error(&ts[k])), 0.002, "%g/s: rate error %.4f%%", rates[k],
                     rate_error(&ts[k]) * 100);
        tenant_free(&ts[k]);
    }
}
