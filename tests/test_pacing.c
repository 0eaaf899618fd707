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
    size_t due_end, stale_end; /* due_at's counts: jobs sent..due_end-1 have their slot */
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

/* The tenant's jobs whose slot has come at now, from job `sent`, as
 * tenant.c's count_due counts them (each job passed once). */
static sl_pace_due due_at(sim_tenant *t, int64_t now)
{
    if (t->due_end < t->sent)
        t->due_end = t->sent;
    if (t->stale_end < t->sent)
        t->stale_end = t->sent;
    while (t->due_end < t->n && slot_of(t, t->due_end) <= now + SL_SEND_EARLY_US)
        t->due_end++;
    while (t->stale_end < t->due_end && slot_of(t, t->stale_end) <= now - t->rules.fleet_fresh_us)
        t->stale_end++;
    return (sl_pace_due){.now_us = now,
                         .count = (int64_t)(t->due_end - t->sent),
                         .stale = (int64_t)(t->stale_end - t->sent),
                         .next_us = t->due_end < t->n ? slot_of(t, t->due_end) - SL_SEND_EARLY_US
                                                      : INT64_MAX,
                         .oldest_us = t->sent < t->n ? slot_of(t, t->sent) : 0};
}

/* count jobs owed at now, stale of them long enough to count in the
 * fleet's rule, none claimed after them. */
static sl_pace_due owed(int64_t now, int64_t count, int64_t stale)
{
    return (sl_pace_due){.now_us = now, .count = count, .stale = stale, .next_us = INT64_MAX};
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
                   sl_departure_allowed(slot_of(t, t->sent), &t->pace, &t->rules, due_at(t, now))) {
                sl_pace_note(&t->pace, &t->rules, slot_of(t, t->sent), due_at(t, now));
                t->out[t->sent++] = now;
                now += m->send_us;
            }
        }
        int64_t next = INT64_MAX;
        double fastest = 0; /* one timer per worker here: the tenant due first decides */
        for (size_t k = 0; k < count; k++)
            if (ts[k].sent < ts[k].n) {
                int64_t at = sl_departure_at(slot_of(&ts[k], ts[k].sent), &ts[k].pace, &ts[k].rules,
                                             due_at(&ts[k], now));
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
    sl_pace_note(&p, &r, 0, owed(0, 1, 0));
    sl_pace_note(&p, &r, 10000, owed(11900, 1, 10000));
    cr_assert_leq(sl_pace_allows_at(&p, &r, owed(20000, 1, 20000)), 20000);
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
        sl_pace_note(&p, &slow, i * 10000, owed(i * 10000, 1, i * 10000));
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
        int64_t at = sl_pace_allows_at(&p, &r, owed(now, 1, now));
        cr_assert_leq(at, now, "job %d held until %lld, at %lld", i, (long long)at, (long long)now);
        sl_pace_note(&p, &r, now, owed(now, 1, now));
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

/* ---- a fleet: processes sharing one tenant's schedule ---- */

/* One process of a fleet: the slots of the schedule it claimed (indices,
 * in order), its machine, and its departures. */
typedef struct sim_member {
    size_t *own, n, sent;
    size_t due_end;   /* its jobs sent..due_end-1 have their slot (as tenant.c counts) */
    size_t stale_end; /* ... and sent..stale_end-1 came fleet_fresh_us ago or more */
    int64_t claim_at; /* its next claim */
    int64_t backlog_until; /* tenant.c's: until when the fleet may hold slots to come */
    sim_machine machine;
    sl_pace pace;
    int64_t wake;     /* its next departure's wake-up */
    int64_t *out;     /* its departures */
    uint64_t rng;
} sim_member;

/* k processes (at most 4) on one tenant of `rate` and n slots (a backlog),
 * as a daemon claims them: each claims what departs within a lookahead
 * from the shared schedule, again when the jobs it holds run low (as
 * job/claim_policy.h says), each starting up to seed-random 50 ms after
 * the first. Each process departs its own slots only, on its own machine
 * (its stalls). counted: each pace is given the schedule's slots (the
 * gaps between a process's slots are the others'); else each process's
 * own slots as if they followed one another (it cannot tell it is in a
 * fleet). A process whose pace wants new slots for the jobs it owes late
 * (the backlog over) gets them from the schedule as lua/reslot.lua gives
 * them, unless `refused` (Redis did not answer: they go as if alone). */
typedef struct sim_fleet {
    double rate;
    size_t n, k;
    uint64_t seed;
    const sim_machine *machines; /* k of them */
    bool counted;
    bool made_up; /* the run is long enough for stalls' debts to be made up */
    bool refused;
} sim_fleet;

static uint64_t xorshift(uint64_t *s)
{
    *s ^= *s << 13, *s ^= *s >> 7, *s ^= *s << 17;
    return *s;
}

static int64_t fleet_slot(const sim_fleet *f, size_t i)
{
    return 1000000 + (int64_t)((double)i * 1e6 / f->rate);
}

/* The slot member m's pace is told for its j-th job (schedule clock). */
static int64_t member_schedule_slot(const sim_fleet *f, const sim_member *m, size_t j)
{
    return fleet_slot(f, f->counted ? m->own[j] : j);
}

/* m's jobs whose slot has come at now, as tenant.c's count_due counts them. */
static sl_pace_due member_due(const sim_fleet *f, const sl_pace_rules *r, sim_member *m,
                              int64_t now)
{
    if (m->due_end < m->sent)
        m->due_end = m->sent;
    if (m->stale_end < m->sent)
        m->stale_end = m->sent;
    while (m->due_end < m->n && fleet_slot(f, m->own[m->due_end]) <= now + SL_SEND_EARLY_US)
        m->due_end++;
    while (m->stale_end < m->due_end &&
           fleet_slot(f, m->own[m->stale_end]) <= now - r->fleet_fresh_us)
        m->stale_end++;
    int64_t next = m->due_end < m->n ? fleet_slot(f, m->own[m->due_end]) - SL_SEND_EARLY_US
                                     : INT64_MAX;
    return (sl_pace_due){.now_us = now,
                         .count = (int64_t)(m->due_end - m->sent),
                         .stale = (int64_t)(m->stale_end - m->sent),
                         .next_us = next,
                         .oldest_us = m->sent < m->n ? fleet_slot(f, m->own[m->sent]) : 0,
                         .backlog = now < m->backlog_until};
}

/* m claims at now what departs before now + lookahead from the schedule's
 * next slot (*next_free), and when to claim again. */
static void member_claim(const sim_fleet *f, const sl_pace_rules *r, sim_member *m,
                         size_t *next_free, int64_t now, int64_t lookahead)
{
    for (size_t got = 0; *next_free < f->n && got < SL_CLAIM_BATCH &&
                         (got == 0 || fleet_slot(f, *next_free) < now + lookahead);
         got++) {
        size_t j = m->n;
        m->own[m->n++] = (*next_free)++;
        int64_t previous = j > m->sent ? member_schedule_slot(f, m, j - 1) : INT64_MIN;
        sl_pace_claimed(&m->pace, r, previous, now, member_schedule_slot(f, m, j),
                        fleet_slot(f, m->own[j]));
    }
    m->backlog_until = sl_claim_backlog_until(*next_free < f->n, m->backlog_until, now,
                                              (int64_t)(f->rate * 1000 + 0.5));
    /* claim again while the jobs held last SL_CLAIM_REFILL_US more (and
     * once more, to find the queue drained) */
    m->claim_at = m->backlog_until == INT64_MAX
                      ? fleet_slot(f, m->own[m->n - 1]) - SL_CLAIM_REFILL_US
                      : INT64_MAX;
    if (m->claim_at <= now)
        m->claim_at = now + 1000; /* the round trip of a claim */
}

/* m's jobs owed, all of them (none has a slot to come), take new slots at
 * now: after every slot given before, 1/rate apart (*next_free, past the
 * backlog's, counts them on), as lua/reslot.lua gives them. */
static void member_reslot(const sim_fleet *f, const sl_pace_rules *r, sim_member *m,
                          size_t *next_free, int64_t now)
{
    while (fleet_slot(f, *next_free) < now)
        (*next_free)++;
    int64_t previous = INT64_MIN;
    for (size_t j = m->sent; j < m->n; j++) {
        m->own[j] = (*next_free)++;
        sl_pace_claimed(&m->pace, r, previous, now, fleet_slot(f, m->own[j]),
                        fleet_slot(f, m->own[j]));
        previous = fleet_slot(f, m->own[j]);
    }
    sl_pace_slots_renewed(&m->pace);
    m->due_end = m->stale_end = m->sent;
}

/* Runs the fleet; returns its merged departures, sorted (the caller frees
 * them). Every process ends on its slots: the time is made up. */
static int64_t *run_fleet(const sim_fleet *f)
{
    sim_member ms[4];
    sl_pace_rules r = sl_pace_rules_for((int64_t)(f->rate * 1000 + 0.5));
    int64_t lookahead = sl_claim_lookahead_us((int64_t)(f->rate * 1000 + 0.5));
    uint64_t rng = f->seed + 1;
    for (size_t k = 0; k < f->k; k++) {
        ms[k] = (sim_member){.machine = f->machines[k], .rng = 88172645463325252u + k,
                             .wake = INT64_MAX};
        ms[k].own = calloc(f->n, sizeof *ms[k].own);
        ms[k].out = calloc(f->n, sizeof *ms[k].out);
        ms[k].claim_at = fleet_slot(f, 0) - lookahead +
                         (f->seed && k ? (int64_t)(xorshift(&rng) % 50000) : (int64_t)k * 100);
        cr_assert(sl_pace_reset(&ms[k].pace, &r));
    }
    int64_t *merged = malloc(f->n * sizeof *merged);
    size_t departed = 0, next_free = 0;
    for (;;) {
        sim_member *m = NULL; /* the process that wakes first, to claim or to send */
        for (size_t k = 0; k < f->k; k++)
            if (!m || (ms[k].wake < ms[k].claim_at ? ms[k].wake : ms[k].claim_at) <
                          (m->wake < m->claim_at ? m->wake : m->claim_at))
                m = &ms[k];
        int64_t event = m->wake < m->claim_at ? m->wake : m->claim_at;
        if (event == INT64_MAX)
            break;
        int64_t now = wake_at(&m->machine, event);
        if (now > event) { /* stalled: it wakes later, in turn with the others */
            m->wake = m->wake < now ? now : m->wake;
            m->claim_at = m->claim_at < now ? now : m->claim_at;
            continue;
        }
        if (m->claim_at <= now)
            member_claim(f, &r, m, &next_free, now, lookahead);
        sl_pace_due due = member_due(f, &r, m, now);
        for (;;) { /* as tenant.c's release_due: new slots asked before each departure */
            if (m->sent < m->n && f->counted && !f->refused &&
                sl_pace_wants_slots(&m->pace, &r, due)) {
                member_reslot(f, &r, m, &next_free, now);
                due = member_due(f, &r, m, now);
            }
            if (m->sent == m->n ||
                !sl_departure_allowed(fleet_slot(f, m->own[m->sent]), &m->pace, &r, due))
                break;
            sl_pace_note(&m->pace, &r, member_schedule_slot(f, m, m->sent), due);
            merged[departed++] = m->out[m->sent] = now;
            m->sent++;
            now += m->machine.send_us;
            due = member_due(f, &r, m, now);
        }
        m->wake = INT64_MAX;
        if (m->sent == m->n)
            continue;
        int64_t at = sl_departure_at(fleet_slot(f, m->own[m->sent]), &m->pace, &r, due);
        uint64_t late_max = (uint64_t)m->machine.max_late_us;
        int64_t late = late_max ? (int64_t)(xorshift(&m->rng) % (late_max + 1)) : 0;
        m->wake = now + sl_departure_wait_us(at, now, (int64_t)(1e6 / f->rate)) + late;
    }
    /* A member of a fleet catches up only in its turns (pacing.h), and not
     * at all where the fleet has no room: a short run may end with the
     * debt of a stall kept, never more than it and a claim's slots. */
    int64_t made_up = 3000;
    if (!f->made_up || r.fleet_slack < 0)
        made_up += f->machines[0].stall_us + lookahead;
    for (size_t k = 0; k < f->k; k++) {
        sim_member *m = &ms[k];
        if (m->n == 0)
            continue;
        int64_t last = fleet_slot(f, m->own[m->n - 1]), late = m->out[m->n - 1] - last;
        cr_assert_leq(late, made_up, "%g/s, process %zu of %zu (seed %llu) still %lld us late at "
                      "the end", f->rate, k, f->k, (unsigned long long)f->seed, (long long)late);
        sl_pace_free(&m->pace);
        free(m->own);
        free(m->out);
    }
    cr_assert_eq(departed, f->n);
    qsort(merged, departed, sizeof *merged, compare_int64);
    return merged;
}

/* The most merged departures in any window W of the fleet's rate. */
static size_t fleet_most(const sim_fleet *f)
{
    int64_t *merged = run_fleet(f);
    size_t most = most_in(merged, f->n, window_of(f->rate));
    free(merged);
    return most;
}

Test(pacing, a_gap_between_its_slots_puts_a_process_in_a_fleet)
{
    sl_pace p = {0};
    sl_pace_rules r = sl_pace_rules_for(1000000); /* 1,000/s, W 100 ms */
    cr_assert(sl_pace_reset(&p, &r));
    sl_pace_due one = owed(1000000, 1, 0);
    sl_pace_claimed(&p, &r, INT64_MIN, 999000, 1000000, 1000000);
    cr_assert_eq(p.fleet_until_us, INT64_MIN, "the first slot is the claim's now + 1 ms");
    sl_pace_claimed(&p, &r, 1000000, 999000, 1001001, 1001001);
    cr_assert_eq(p.fleet_until_us, INT64_MIN, "the next slot, to the microsecond");
    sl_pace_note(&p, &r, 1000000, one);
    sl_pace_note(&p, &r, 1001001, owed(1001001, 1, 0));
    /* alone, a late job is held by the pace only */
    sl_pace_due late = owed(1052000, 40, 40);
    late.next_us = 1060000;
    late.backlog = true;
    int64_t alone = sl_pace_allows_at(&p, &r, late);
    /* a claim whose first slot is 1.5 intervals on: others hold one */
    sl_pace_claimed(&p, &r, INT64_MIN, 1001000, 1002501, 1002501);
    cr_assert_eq(p.fleet_until_us, 1002501 + 10 * r.window_us, "in a fleet for 10 W");
    cr_assert_eq(sl_pace_allows_at(&p, &r, late), 1060000, "outside its turns, it keeps its level");
    /* the slot drawn in the period at 1,050 ms gives it that turn (1,051
     * to 1,099 ms, a guard of 1 ms at each end) */
    int64_t drawn = sl_pace_turn_drawn_at(&r, 1050000);
    cr_assert_geq(drawn, 1050000);
    cr_assert_lt(drawn, 1100000);
    sl_pace_claimed(&p, &r, 1002501, 1001000, drawn, drawn);
    cr_assert_eq(sl_pace_allows_at(&p, &r, late), alone, "nothing owed above what it owes");
    late.now_us = p.fleet_until_us;
    cr_assert_eq(sl_pace_allows_at(&p, &r, late), alone, "alone again after 10 W");
    /* the schedule ran dry and restarted at the claim's now: a lone
     * process whose claims fell behind, or an idle one, not a fleet */
    sl_pace lone = {0};
    cr_assert(sl_pace_reset(&lone, &r));
    sl_pace_note(&lone, &r, 1000000, owed(1000000, 1, 0));
    sl_pace_claimed(&lone, &r, INT64_MIN, 1090000, 1090000, 1090000);
    sl_pace_claimed(&lone, &r, 1090000, 1090000, 1091000, 1091000);
    cr_assert_eq(lone.fleet_until_us, INT64_MIN);
    sl_pace_free(&lone);
    /* the first claim of a process whose slots start later than now */
    sl_pace q = {0};
    cr_assert(sl_pace_reset(&q, &r));
    sl_pace_claimed(&q, &r, INT64_MIN, 1000000, 1070000, 1070000);
    cr_assert_eq(q.fleet_until_us, 1070000 + 10 * r.window_us);
    sl_pace_free(&q);
    sl_pace_free(&p);
}

Test(pacing, the_fleet_slack_is_the_bound_less_the_schedule_and_the_others_timers)
{
    /* 103 - 100 slots - 1 owed by another's timer - 1 */
    cr_assert_eq(sl_pace_rules_for(1000000).fleet_slack, 1);
    cr_assert_eq(sl_pace_rules_for(1000000).fleet_fresh_us, 950);
    /* a member on time owes a job for 0.85 ms: 5 slots at 5,000/s, 17 at
     * 20,000/s, 3 at 3,333/s (300.03 us, rounded on the schedule) */
    cr_assert_eq(sl_pace_rules_for(5000000).fleet_slack, 511 - 500 - 5 - 1);
    cr_assert_eq(sl_pace_rules_for(5000000).fleet_fresh_us, 800);
    cr_assert_eq(sl_pace_rules_for(20000000).fleet_slack, 2041 - 2000 - 17 - 1);
    cr_assert_eq(sl_pace_rules_for(3333000).fleet_slack, 340 - 334 - 3 - 1);
    /* 11 in 10 intervals: none left in a fleet; a job owed for less than
     * 9.95 ms of its 10 cannot be owed beside another's */
    cr_assert_eq(sl_pace_rules_for(100000).fleet_slack, -1);
    cr_assert_eq(sl_pace_rules_for(100000).fleet_fresh_us, 9950);
    /* W to the us above holds 11 slots at 3/s or 60/s: still -1, or a
     * late member could never send */
    cr_assert_eq(sl_pace_rules_for(3000).fleet_slack, -1);
    cr_assert_eq(sl_pace_rules_for(60000).fleet_slack, -1);
}

/* A process in a fleet (its first claim began 30 slots past the claim's
 * now) that sent its slots 900 ms and 950 ms on time. */
static void in_a_fleet(sl_pace *p, const sl_pace_rules *r)
{
    cr_assert(sl_pace_reset(p, r));
    sl_pace_claimed(p, r, INT64_MIN, 870000, 900000, 900000);
    sl_pace_note(p, r, 900000, owed(900000, 1, 0));
    sl_pace_claimed(p, r, INT64_MIN, 880000, 950000, 950000);
    sl_pace_note(p, r, 950000, owed(950000, 1, 0));
}

/* A job's due counts with more slots of its own to come. */
static sl_pace_due owed_more(int64_t now, int64_t count, int64_t stale, int64_t next_us)
{
    sl_pace_due due = owed(now, count, stale);
    due.next_us = next_us;
    due.backlog = true;
    return due;
}

/* ... and the oldest of them had its slot at oldest_us. */
static sl_pace_due owed_since(int64_t now, int64_t count, int64_t stale, int64_t next_us,
                              int64_t oldest_us)
{
    sl_pace_due due = owed_more(now, count, stale, next_us);
    due.oldest_us = oldest_us;
    return due;
}

Test(pacing, in_a_fleet_a_late_process_waits_while_the_others_slots_pass)
{
    /* 1,000/s, slack 1: in its turn a member's catch-up may lower its debt
     * by 2 in any W. Its slots 1,041..1,060 ms came during a stall (the
     * others held 951..1,040 ms); the period at 1,050 ms is its turn (it
     * claimed the slot drawn there). At 1,060 ms it owes 20,
     * 19 of them for more than 1 ms (the level). It sends 3, which leaves
     * 17 owed; a fourth would leave 16, 3 below the level. It waits until
     * that level is W ago, or until its next slot comes (the others' slots
     * meanwhile are theirs) */
    sl_pace p = {0};
    sl_pace_rules r = sl_pace_rules_for(1000000);
    in_a_fleet(&p, &r);
    sl_pace_claimed(&p, &r, 950000, 950000, 1041000, 1041000);
    for (int64_t slot = 1042000; slot <= 1061000; slot += 1000)
        sl_pace_claimed(&p, &r, slot - 1000, 950000, slot, slot);
    int64_t drawn = sl_pace_turn_drawn_at(&r, 1050000);
    sl_pace_claimed(&p, &r, 1061000, 950000, drawn, drawn);
    int64_t next = 1061000 - SL_SEND_EARLY_US;
    cr_assert_leq(sl_pace_allows_at(&p, &r, owed_since(1060000, 20, 19, next, 1041000)), 1060000);
    sl_pace_note(&p, &r, 1041000, owed_since(1060000, 20, 19, next, 1041000));
    sl_pace_note(&p, &r, 1042000, owed_since(1060000, 19, 18, next, 1042000));
    cr_assert_leq(sl_pace_allows_at(&p, &r, owed_since(1060000, 18, 17, next, 1043000)), 1060000);
    sl_pace_note(&p, &r, 1043000, owed_since(1060000, 18, 17, next, 1043000));
    sl_pace_due left = owed_since(1060000, 17, 16, next, 1044000);
    cr_assert_eq(sl_pace_allows_at(&p, &r, left), left.next_us, "held until its next slot comes");
    /* with no slot of its own claimed, it waits for its next claim (whose
     * reply wakes it; W at most) while the queue has more; when not, the
     * fleet's backlog is over: it paces as if alone */
    left.next_us = INT64_MAX;
    cr_assert_eq(sl_pace_allows_at(&p, &r, left), 1060000 + r.window_us);
    left.backlog = false;
    cr_assert_leq(sl_pace_allows_at(&p, &r, left), 1061000);
    /* held by its level, it may go once that is W ago (W/8 to spare) */
    left = owed_more(1060000, 17, 16, 1260000);
    int64_t at = sl_pace_allows_at(&p, &r, left);
    cr_assert_geq(at, 1160000, "held until %lld us", (long long)at);
    cr_assert_leq(at, 1160000 + r.window_us / 8 + 1, "held until %lld us", (long long)at);
    /* a slot came: 18 owed, the level is kept, it may go */
    cr_assert_leq(sl_pace_allows_at(&p, &r, owed_more(1061000, 18, 17, 1062000)), 1061000);
    /* past its turn (which ends 1 ms before 1,100 ms; it owns no later
     * one) it keeps its level: one job per slot of its own, none beyond */
    sl_pace_due after = owed_more(1099000, 17, 17, 1100000);
    cr_assert_eq(sl_pace_allows_at(&p, &r, after), 1100000, "its level is kept after its turn");
    /* alone, the same departures are held by the pace only */
    sl_pace alone = {0};
    cr_assert(sl_pace_reset(&alone, &r));
    for (int64_t slot = 900000; slot < 1041000; slot += 1000) {
        sl_pace_claimed(&alone, &r, slot - 1000, 890000, slot, slot);
        sl_pace_note(&alone, &r, slot, owed(slot, 1, 0));
    }
    sl_pace_note(&alone, &r, 1041000, owed_since(1060000, 20, 19, next, 1041000));
    sl_pace_note(&alone, &r, 1042000, owed_since(1060000, 19, 18, next, 1042000));
    sl_pace_note(&alone, &r, 1043000, owed_since(1060000, 18, 17, next, 1043000));
    cr_assert_leq(sl_pace_allows_at(&alone, &r, owed_more(1060000, 17, 16, next)), 1061000);
    sl_pace_free(&alone);
    sl_pace_free(&p);
}

Test(pacing, in_a_fleet_a_first_departure_late_keeps_its_debt_too)
{
    /* A process whose first claim came with others' slots before its own
     * (a fleet), that started late: at 1,000 ms it owes its slots 990 to
     * 1,000 ms, all 11 for over a millisecond, and it never departed. Its
     * first job may not lower that debt outside a turn of its own any
     * more than a later one: it waits until its next slot comes */
    sl_pace p = {0};
    sl_pace_rules r = sl_pace_rules_for(1000000);
    cr_assert(sl_pace_reset(&p, &r));
    for (int64_t slot = 990000; slot <= 1001000; slot += 1000)
        sl_pace_claimed(&p, &r, slot == 990000 ? INT64_MIN : slot - 1000, 900000, slot, slot);
    cr_assert_gt(p.fleet_until_us, 1000000, "in a fleet");
    sl_pace_due late = owed_more(1000000, 11, 11, 1001000 - SL_SEND_EARLY_US);
    cr_assert_eq(sl_pace_allows_at(&p, &r, late), late.next_us);
    /* its slot came: 12 owed, one may go and keep the level */
    cr_assert_leq(sl_pace_allows_at(&p, &r, owed_more(1001000, 12, 11, 1002000)), 1001000);
    /* alone, the first job goes at once */
    sl_pace alone = {0};
    cr_assert(sl_pace_reset(&alone, &r));
    cr_assert_eq(sl_pace_allows_at(&alone, &r, late), INT64_MIN);
    sl_pace_free(&alone);
    sl_pace_free(&p);
}

Test(pacing, a_period_s_turn_belongs_to_one_member_at_most)
{
    /* Two members claim a schedule's slots in runs of 1 to 40 in turn, at
     * rates whose interval is and is not a whole microsecond: at no time
     * are both in a turn, and turns come to each */
    int64_t rates[] = {1000000, 3333000, 20000000};
    for (size_t i = 0; i < sizeof rates / sizeof *rates; i++) {
        sl_pace_rules r = sl_pace_rules_for(rates[i]);
        uint64_t rng = 7919;
        sl_pace ms[2] = {{0}, {0}};
        cr_assert(sl_pace_reset(&ms[0], &r));
        cr_assert(sl_pace_reset(&ms[1], &r));
        int64_t turns[2] = {0, 0};
        size_t slot = 0, k = 0;
        for (int64_t now = 1000000; now < 4000000; now += 500) {
            /* claim what lies within 20 ms, in runs */
            while (1000000 + (int64_t)slot * r.interval_ns / 1000 < now + 20000) {
                size_t run = 1 + (size_t)(xorshift(&rng) % 40);
                for (size_t j = 0; j < run; j++, slot++) {
                    int64_t s = (int64_t)(1000000 + (int64_t)slot * r.interval_ns / 1000);
                    sl_pace_claimed(&ms[k], &r, INT64_MIN, now, s, s);
                }
                k = 1 - k;
            }
            bool in[2];
            for (size_t m = 0; m < 2; m++) {
                /* in a fleet, late, 100 owed: the slack lets it go, -1 not */
                ms[m].fleet_until_us = INT64_MAX;
                ms[m].started = true;
                in[m] = sl_pace_allows_at(&ms[m], &r, owed_more(now, 100, 100, now + 1000)) <= now;
                turns[m] += in[m];
            }
            cr_assert(!(in[0] && in[1]), "%lld/s: both in a turn at %lld us",
                      (long long)rates[i] / 1000, (long long)now);
        }
        cr_assert_gt(turns[0], 0);
        cr_assert_gt(turns[1], 0);
        sl_pace_free(&ms[0]);
        sl_pace_free(&ms[1]);
    }
}

Test(pacing, in_a_fleet_at_100_per_s_a_late_process_keeps_its_debt)
{
    /* 11 in 10 intervals leaves a fleet no room to catch up: the others'
     * timers take the 1 above the schedule. A late process sends one job
     * per slot of its own that comes, and none between */
    sl_pace p = {0};
    sl_pace_rules r = sl_pace_rules_for(100000);
    cr_assert(sl_pace_reset(&p, &r));
    sl_pace_claimed(&p, &r, INT64_MIN, 980000, 1000000, 1000000);
    sl_pace_note(&p, &r, 1000000, owed(1000000, 1, 0));
    sl_pace_claimed(&p, &r, INT64_MIN, 1100000, 1200000, 1200000); /* others: 1,010..1,190 ms */
    sl_pace_note(&p, &r, 1200000, owed(1200000, 1, 0));
    sl_pace_note(&p, &r, 1210000, owed(1240000, 4, 3)); /* a 30 ms stall */
    sl_pace_due left = owed(1240000, 3, 3);
    left.next_us = 1250000;
    cr_assert_eq(sl_pace_allows_at(&p, &r, left), 1250000, "held until its slot comes");
    /* its slot at 1,250 ms came */
    cr_assert_leq(sl_pace_allows_at(&p, &r, owed(1250000, 4, 3)), 1250000);
    sl_pace_free(&p);
    /* on time, a job whose timer came up to 9.95 ms late is not held */
    in_a_fleet(&p, &r);
    sl_pace_due timer = owed(960000 + 9900, 1, 0);
    timer.next_us = 1000000;
    cr_assert_leq(sl_pace_allows_at(&p, &r, timer), timer.now_us);
    sl_pace_free(&p);
}

/* 2 and 4 processes, one of them stalling 20 ms once while the others
 * keep their slots. */
static const sim_machine fleet_machines[4] = {
    {.stall_at = 1490000, .stall_us = 20000, .max_late_us = 100, .send_us = 5},
    {.max_late_us = 100, .send_us = 5},
    {.max_late_us = 100, .send_us = 5},
    {.max_late_us = 100, .send_us = 5},
};

static sim_fleet fleet_of(double rate, size_t k, uint64_t seed)
{
    return (sim_fleet){.rate = rate, .n = (size_t)(rate * 3), .k = k, .seed = seed,
                       .machines = fleet_machines, .counted = true};
}

Test(pacing, a_fleet_keeps_the_bound_on_its_merged_departures)
{
    double rates[] = {60, 100, 1000, 5000};
    for (size_t i = 0; i < sizeof rates / sizeof *rates; i++)
        for (size_t k = 2; k <= 4; k += 2)
            for (uint64_t seed = 0; seed <= 3; seed++) {
                sim_fleet f = fleet_of(rates[i], k, seed * 7919);
                size_t most = fleet_most(&f);
                cr_assert_leq(most, bound_of(rates[i]), "%zu processes at %g/s (seed %llu): %zu "
                              "merged departures in %.0f us (at most %zu)", k, rates[i],
                              (unsigned long long)seed * 7919, most, window_of(rates[i]),
                              bound_of(rates[i]));
            }
}

Test(pacing, a_stalled_member_of_a_fleet_makes_up_its_debt_in_its_turns)
{
    /* 20 jobs owed after a 20 ms stall at 1,000/s; 2 a turn, and a member
     * owns about 1 in k of them, one every 150 ms: 12 s is enough */
    for (size_t k = 2; k <= 4; k += 2) {
        sim_fleet f = fleet_of(1000, k, 7919);
        f.n = 12000;
        f.made_up = true;
        size_t most = fleet_most(&f);
        cr_assert_leq(most, bound_of(1000), "%zu processes: %zu merged in 100 ms", k, most);
    }
}

Test(pacing, a_fleet_whose_processes_pace_alone_crowds_its_merged_departures)
{
    for (size_t k = 2; k <= 4; k += 2) {
        sim_fleet f = fleet_of(1000, k, 0);
        f.counted = false;
        size_t alone = fleet_most(&f);
        cr_assert_gt(alone, bound_of(1000), "%zu processes: %zu merged in 100 ms", k, alone);
    }
}

Test(pacing, a_fleet_keeps_the_bound_when_the_whole_machine_stalls)
{
    /* Each process counts only its own debt. Where the fleet's slack is
     * negative none sends beyond its own slots; above, each spends it in
     * its own turns only (each as if the others were on time, it would
     * take 2 processes to 105 in 100 ms at 1,000/s): stalls of all at
     * once cannot crowd the merged stream either. */
    double rates[] = {3, 10, 50, 60, 100, 1000, 5000, 20000};
    for (size_t i = 0; i < sizeof rates / sizeof *rates; i++)
        for (size_t k = 2; k <= 4; k += 2)
            for (int64_t stall = 20000; stall <= 170000; stall += 150000) {
                sim_machine all = {.stall_at = 1490000, .stall_us = stall, .max_late_us = 500,
                                   .send_us = 5};
                sim_machine machines[4] = {all, all, all, all};
                sim_fleet f = {.rate = rates[i], .n = (size_t)(rates[i] * 6), .k = k, .seed = 7919,
                               .machines = machines, .counted = true};
                size_t most = fleet_most(&f);
                cr_assert_leq(most, bound_of(rates[i]), "%zu processes at %g/s, all stalled %lld us: "
                              "%zu merged departures in %.0f us", k, rates[i], (long long)stall, most,
                              window_of(rates[i]));
            }
}

/* Every process stalls at once, late in the backlog: 2 or 4 of them at
 * 5 s of 7 s of slots, for stall_us: too late to make it up in their turns. */
static sim_fleet late_at_the_end(double rate, size_t k, int64_t stall_us, sim_machine *machines)
{
    sim_machine all = {.stall_at = 5000000 - (int64_t)(1e6 / rate), .stall_us = stall_us,
                       .max_late_us = 500, .send_us = 5};
    for (size_t i = 0; i < 4; i++)
        machines[i] = all;
    return (sim_fleet){.rate = rate, .n = (size_t)(rate * 6), .k = k, .seed = 7919,
                       .machines = machines, .counted = true};
}

Test(pacing, a_fleet_late_when_its_backlog_ends_keeps_the_bound)
{
    /* Nobody owns turns once nobody claims: each late member asks new
     * slots for what it owes (before each departure: one that kept its
     * level can leave the next with no slot of its own to come), and they
     * leave on the one schedule. */
    double rates[] = {3, 10, 100, 1000, 5000, 20000};
    for (size_t i = 0; i < sizeof rates / sizeof *rates; i++)
        for (size_t k = 2; k <= 4; k += 2)
            for (int64_t stall = 60000; stall <= 300000; stall += 120000) {
                sim_machine machines[4];
                sim_fleet f = late_at_the_end(rates[i], k, stall, machines);
                size_t most = fleet_most(&f);
                cr_assert_leq(most, bound_of(rates[i]), "%zu processes at %g/s, all stalled %lld us "
                              "at the end: %zu merged departures in %.0f us", k, rates[i],
                              (long long)stall, most, window_of(rates[i]));
            }
}

Test(pacing, a_fleet_late_when_its_backlog_ends_crowds_without_new_slots)
{
    /* what the bench found (bench.fleet_stall --all): each member late at
     * the end, pacing alone, sends beside the others */
    for (size_t k = 2; k <= 4; k += 2) {
        sim_machine machines[4];
        sim_fleet f = late_at_the_end(1000, k, 180000, machines);
        f.refused = true;
        size_t most = fleet_most(&f);
        cr_assert_gt(most, bound_of(1000), "%zu processes: %zu merged in 100 ms", k, most);
    }
}

/* 1,000/s: a member of a fleet that claimed the slots 1,041..1,060 ms,
 * after others held those from 951 ms. */
static void holding_slots_after_others(sl_pace *p, const sl_pace_rules *r)
{
    in_a_fleet(p, r);
    for (int64_t slot = 1041000; slot <= 1060000; slot += 1000)
        sl_pace_claimed(p, r, slot == 1041000 ? 950000 : slot - 1000, 950000, slot, slot);
}

Test(pacing, a_member_wants_new_slots_only_late_in_a_fleet_whose_backlog_is_over)
{
    /* 1,000/s: a member of a fleet, 20 jobs owed after a stall, outside
     * its turns (it owns none) */
    sl_pace p = {0};
    sl_pace_rules r = sl_pace_rules_for(1000000);
    holding_slots_after_others(&p, &r);
    sl_pace_due late = owed_more(1080000, 20, 20, INT64_MAX);
    cr_assert_not(sl_pace_wants_slots(&p, &r, late), "the backlog lasts: others may still claim");
    late.backlog = false;
    cr_assert(sl_pace_wants_slots(&p, &r, late), "the backlog is over: nobody owns turns");
    cr_assert_leq(sl_pace_allows_at(&p, &r, late), late.now_us,
                  "asked in vain, it goes as if alone");
    late.next_us = 1081000;
    cr_assert_not(sl_pace_wants_slots(&p, &r, late), "a slot of its own is to come");
    late.next_us = INT64_MAX;
    late.stale = 0;
    late.count = 1;
    cr_assert_not(sl_pace_wants_slots(&p, &r, late), "on time, nothing holds it");
    /* alone, never */
    sl_pace alone = {0};
    cr_assert(sl_pace_reset(&alone, &r));
    sl_pace_due alone_late = owed(1080000, 20, 20);
    cr_assert_not(sl_pace_wants_slots(&alone, &r, alone_late));
    sl_pace_free(&alone);
    sl_pace_free(&p);
}

Test(pacing, new_slots_forget_the_debt_they_took)
{
    /* Held by the level of its debt before a departure (17 owed), a
     * member given new slots for what it owes goes at the first of them:
     * the level counted jobs owed no more. */
    sl_pace p = {0};
    sl_pace_rules r = sl_pace_rules_for(1000000);
    holding_slots_after_others(&p, &r);
    sl_pace_due due = owed_more(1080000, 20, 20, INT64_MAX);
    due.backlog = false;
    sl_pace_note(&p, &r, 1041000, due);
    sl_pace_due after = owed_more(1081000, 19, 19, INT64_MAX);
    after.backlog = false;
    cr_assert(sl_pace_wants_slots(&p, &r, after));
    for (int64_t slot = 1090000; slot < 1109000; slot += 1000)
        sl_pace_claimed(&p, &r, slot == 1090000 ? INT64_MIN : slot - 1000, 1081000, slot, slot);
    sl_pace_due renewed = owed_more(1090000, 1, 0, 1091000);
    cr_assert_gt(sl_pace_allows_at(&p, &r, renewed), renewed.now_us, "before: held by its level");
    sl_pace_slots_renewed(&p);
    cr_assert_leq(sl_pace_allows_at(&p, &r, renewed), renewed.now_us, "after: on its new slot");
    sl_pace_free(&p);
}

Test(pacing, a_level_stands_for_the_windows_that_start_while_nothing_departs)
{
    /* 1,000/s: a member of a fleet holds slots 1,041..1,060 ms and one
     * drawn in the turn at 1,200 ms, which it owns. It sends the first
     * on time, then its machine stalls until 1,160 ms: 19 owed. The
     * windows W that start now meet its turn, but those that started
     * while it stalled do not, and its debt stood at 19 through most of
     * them: no departure noted that level, yet lowering it now would
     * lower it in them. It keeps it (found by the bench: 4 daemons all
     * stopped, 105 in 100 ms). */
    sl_pace p = {0};
    sl_pace_rules r = sl_pace_rules_for(1000000);
    holding_slots_after_others(&p, &r);
    int64_t drawn = sl_pace_turn_drawn_at(&r, 1200000);
    sl_pace_claimed(&p, &r, 1060000, 950000, drawn, drawn);
    sl_pace_note(&p, &r, 1041000, owed_since(1041000, 1, 0, 1042000, 1041000));
    sl_pace_due woke = owed_since(1160000, 19, 19, drawn - SL_SEND_EARLY_US, 1042000);
    cr_assert_gt(sl_pace_allows_at(&p, &r, woke), woke.now_us, "it keeps the level it had");
    /* owed only since 1,150 ms, the same debt stood only in windows that
     * meet its turn: it may lower it */
    woke.oldest_us = 1150000;
    cr_assert_leq(sl_pace_allows_at(&p, &r, woke), woke.now_us);
    sl_pace_free(&p);
}

Test(pacing, a_fleet_keeps_the_bound_whenever_the_whole_machine_stalls)
{
    /* the stalls of all members at once across a run of 7 s, from early
     * to its last 100 ms, short and long: found this way, a level of debt
     * that no departure noted while the machine stalled (4 members at
     * 1,000/s: 105 in W), and a member that sent beyond its level at the
     * backlog's end in the wake-up that found it over (5,000/s: 517) */
    double rates[] = {100, 1000, 5000, 20000};
    for (size_t i = 0; i < sizeof rates / sizeof *rates; i++)
        for (size_t k = 2; k <= 4; k += 2)
            for (int64_t at = 2000000; at <= 6900000; at += 700000)
                for (int64_t stall = 20000; stall <= 300000; stall += 140000) {
                    sim_machine all = {.stall_at = at, .stall_us = stall, .max_late_us = 500,
                                       .send_us = 5};
                    sim_machine machines[4] = {all, all, all, all};
                    sim_fleet f = {.rate = rates[i], .n = (size_t)(rates[i] * 6), .k = k,
                                   .seed = 7919, .machines = machines, .counted = true};
                    size_t most = fleet_most(&f);
                    cr_assert_leq(most, bound_of(rates[i]), "%zu processes at %g/s, all stalled "
                                  "%lld us at %lld us: %zu merged departures in %.0f us", k,
                                  rates[i], (long long)stall, (long long)at, most,
                                  window_of(rates[i]));
                }
}
