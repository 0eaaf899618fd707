/* test_pacing.c - catching up after a stall without a burst (pacing.c):
 * simulated departures, time passed in. */
#include <criterion/criterion.h>
#include <stdint.h>

#include "job/pacing.h"

/* Departs jobs with the given slots (interval_us apart in the schedule),
 * each at the latest of its slot, the pace, and `ready_at` (the end of a
 * stall: nothing leaves before it); writes the departures to out. Timers
 * are exact here. */
static void depart(sl_pace *p, int64_t interval_us, const int64_t *slots, size_t n,
                   int64_t ready_at, int64_t *out)
{
    for (size_t i = 0; i < n; i++) {
        int64_t at = sl_pace_allows_at(p, interval_us);
        if (at < slots[i])
            at = slots[i];
        if (at < ready_at)
            at = ready_at;
        sl_pace_note(p, interval_us, at, at);
        out[i] = at;
    }
}

/* The most departures in any half-open window of `window` us. */
static size_t most_in(const int64_t *t, size_t n, int64_t window)
{
    size_t most = 0;
    for (size_t i = 0, j = 0; i < n; i++) {
        while (j < n && t[j] - t[i] < window)
            j++;
        if (j - i > most)
            most = j - i;
    }
    return most;
}

Test(pacing, on_schedule_nobody_waits)
{
    sl_pace p = {0};
    int64_t slots[200], out[200];
    for (int i = 0; i < 200; i++)
        slots[i] = 1000000 + i * 1000; /* 1000/s */
    depart(&p, 1000, slots, 200, 0, out);
    for (int i = 0; i < 200; i++)
        cr_assert_eq(out[i], slots[i], "job %d held back", i);
}

Test(pacing, timer_lateness_within_an_interval_is_not_punished)
{
    sl_pace p = {0};
    for (int i = 0; i < 100; i++) {
        int64_t slot = i * 1000, lateness = (i % 2) ? 140 : 0; /* jittery timers */
        cr_assert_leq(sl_pace_allows_at(&p, 1000), slot + lateness, "job %d", i);
        sl_pace_note(&p, 1000, slot, slot + lateness);
    }
}

Test(pacing, a_stall_under_a_fifth_of_an_interval_does_not_hold_the_next_job)
{
    /* 100/s: one job leaves 1.9 ms late; the next still leaves at its slot */
    sl_pace p = {0};
    sl_pace_note(&p, 10000, 0, 0);
    sl_pace_note(&p, 10000, 10000, 11900);
    cr_assert_leq(sl_pace_allows_at(&p, 10000), 20000);
}

Test(pacing, one_process_catches_up_without_a_burst)
{
    sl_pace p = {0};
    int64_t slots[300], out[300];
    for (int i = 0; i < 300; i++)
        slots[i] = i * 1000;
    /* 20 on time, then a 50 ms stall: 50 jobs are late at once */
    depart(&p, 1000, slots, 20, 0, out);
    depart(&p, 1000, slots + 20, 280, 70000, out + 20);
    cr_assert_leq(most_in(out, 300, 10 * 1000), 11);
    for (int i = 21; i < 300; i++)
        cr_assert_geq(out[i] - out[i - 1], 900, "gap %d: %lld us", i, (long long)(out[i] - out[i - 1]));
    /* 8% faster than the schedule (a gap of 928 us): 280 jobs win back
     * about 20 of the 50 ms */
    int64_t late = out[299] - slots[299];
    cr_assert(late > 25000 && late < 32000, "still %lld us late", (long long)late);
}

Test(pacing, a_process_behind_at_full_speed_is_not_held)
{
    /* rate 1,000,000/s and the worker far behind (each claim restarts the
     * schedule at Redis's now, so slots jump ahead between batches): the
     * pace never holds a job that is due */
    sl_pace p = {0};
    int64_t out[100];
    int64_t now = 200000;
    for (int i = 0; i < 100; i++) {
        int64_t at = sl_pace_allows_at(&p, 1);
        cr_assert_leq(at, now, "job %d held until %lld, at %lld", i, (long long)at, (long long)now);
        sl_pace_note(&p, 1, at, now);
        out[i] = now;
        now += 30; /* as fast as the worker goes */
    }
    cr_assert_eq(out[99] - out[0], 99 * 30);
}

/* An event loop: jobs with slots interval_us apart, the first `stalled_us`
 * late (a stall: they are all overdue at once); every wake-up comes 0 to
 * max_lateness_us late, and departs what the pace allows then. Writes the
 * departures to out; returns the last job's lateness. */
static int64_t event_loop(int64_t interval_us, int64_t stalled_us, int64_t max_lateness_us,
                          int64_t *out, int n)
{
    sl_pace p = {0};
    int64_t now = stalled_us;
    int i = 0;
    for (int wake = 0; i < n; wake++) {
        while (i < n) {
            int64_t allowed = sl_pace_allows_at(&p, interval_us);
            if (allowed < i * interval_us)
                allowed = i * interval_us;
            if (allowed > now)
                break;
            sl_pace_note(&p, interval_us, allowed, now);
            out[i++] = now;
        }
        if (i < n) {
            int64_t next = sl_pace_allows_at(&p, interval_us);
            if (next < i * interval_us)
                next = i * interval_us;
            now = next + (wake * 7919) % (max_lateness_us + 1); /* spread over 0..max */
        }
    }
    return out[n - 1] - (int64_t)(n - 1) * interval_us;
}

Test(pacing, timers_late_by_the_slack_never_allow_12_in_10_intervals)
{
    /* 1,000/s: after a 50 ms stall, every wake-up late by up to 150 us */
    static int64_t out[1000];
    int64_t late = event_loop(1000, 50000, 150, out, 1000);
    size_t most = most_in(out, 1000, 10 * 1000);
    cr_assert_eq(most, 11, "%zu in 10 intervals", most);
    cr_assert_lt(late, 1000, "still %lld us late after 1,000 jobs", (long long)late);
}

Test(pacing, late_timers_at_short_intervals_still_catch_up)
{
    /* 20,000/s: wake-ups up to 500 us late, ten intervals (this machine's
     * scheduler, measured in bench/RESULTS.md), and a 20 ms stall first.
     * Counting departures where they happened, this fell further behind. */
    static int64_t out[8000];
    int64_t late = event_loop(50, 20000, 500, out, 8000);
    cr_assert_lt(late, 1000, "still %lld us late after 8,000 jobs", (long long)late);
}

Test(pacing, short_intervals_burst_no_more_than_the_slack_allows)
{
    /* wake-ups up to 2 ms late send what is overdue at once: at 20,000/s
     * up to 55 in 10 intervals */
    static int64_t out[8000];
    event_loop(50, 20000, 2000, out, 8000);
    size_t most = most_in(out, 8000, 10 * 50);
    cr_assert_eq(sl_pace_most_in_10_intervals(50), 55);
    cr_assert_leq(most, 55, "%zu in 10 intervals", most);
    cr_assert_geq(most, 30, "%zu in 10 intervals: late wake-ups are sent at once", most);
}

Test(pacing, the_bound_is_11_where_intervals_have_room_for_timers)
{
    cr_assert_eq(sl_pace_most_in_10_intervals(300), 11);
    cr_assert_eq(sl_pace_most_in_10_intervals(1000), 11);
    cr_assert_eq(sl_pace_most_in_10_intervals(1000000000), 11);
    cr_assert_gt(sl_pace_most_in_10_intervals(299), 11);
    static int64_t out[4000];
    for (int64_t interval = 300; interval <= 3000; interval += 100) {
        event_loop(interval, 50 * interval, 150, out, 4000);
        size_t most = most_in(out, 4000, 10 * interval);
        cr_assert_leq(most, 11, "%zu in 10 intervals of %lld us", most, (long long)interval);
    }
    for (int64_t interval = 20; interval < 300; interval += 20) {
        event_loop(interval, 20000, 2000, out, 4000);
        size_t most = most_in(out, 4000, 10 * interval);
        int bound = sl_pace_most_in_10_intervals(interval);
        cr_assert_leq(most, (size_t)bound, "%zu in 10 intervals of %lld us", most, (long long)interval);
    }
}
