/* test_pacing.c - catching up after a stall without a burst (pacing.c):
 * simulated departures, time passed in. */
#include <criterion/criterion.h>
#include <stdint.h>

#include "pacing.h"

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
        sl_pace_note(p, at);
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
        sl_pace_note(&p, slot + lateness);
    }
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
        cr_assert_geq(out[i] - out[i - 1], 800, "gap %d: %lld us", i, (long long)(out[i] - out[i - 1]));
    /* 10% faster than the schedule: 280 jobs win back 25 of the 50 ms */
    int64_t late = out[299] - slots[299];
    cr_assert(late > 20000 && late < 30000, "still %lld us late", (long long)late);
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
        sl_pace_note(&p, now);
        out[i] = now;
        now += 30; /* as fast as the worker goes */
    }
    cr_assert_eq(out[99] - out[0], 99 * 30);
}
