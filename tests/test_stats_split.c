/* test_stats_split.c - `sluice stats`' estimate of which claimed jobs are
 * scheduled (slot ahead) and which in flight (slot passed), checked
 * against the slots the shaping model really hands out. Pure: no Redis,
 * no clock. */
#include <criterion/criterion.h>
#include <inttypes.h>

#include "admission/admission.h"
#include "admission/stats_split.h"

#define T0 INT64_C(4102444800000000) /* 2100-01-01, epoch microseconds */
#define JOBS 24

/* Schedules jobs on the model: `burst` at `at`, appended to slots[*n]. */
static void admit(sl_shaping_state *state, int64_t rate_milli, int64_t at, int burst,
                  int64_t *slots, int *n)
{
    sl_bucket_params p = {.capacity = SL_CAPACITY_MAX, .rate_milli = rate_milli};
    for (int i = 0; i < burst; i++) {
        sl_verdict v = sl_shaping_admit(state, &p, at);
        cr_assert(v.allowed);
        slots[(*n)++] = at + v.wait_us;
    }
}

/* For every number of claimed jobs (the latest slots) and every now
 * around each slot and the next free point, the estimate equals the
 * number of claimed slots still ahead. */
static void check_exact(int64_t rate_milli, const sl_shaping_state *state, const int64_t *slots,
                        int n)
{
    int64_t probes[3 * JOBS + 6];
    int np = 0;
    for (int i = 0; i < n; i++)
        for (int64_t d = -1; d <= 1; d++)
            probes[np++] = slots[i] + d;
    for (int64_t d = -1; d <= 1; d++)
        probes[np++] = state->next_free + d;
    probes[np++] = slots[0] - 1000000;
    probes[np++] = state->next_free + 1000000;
    probes[np++] = slots[n - 1] + (state->next_free - slots[n - 1]) / 2;
    for (int claimed = 0; claimed <= n; claimed++) {
        for (int p = 0; p < np; p++) {
            int64_t now = probes[p], ahead = 0;
            for (int i = n - claimed; i < n; i++)
                ahead += slots[i] > now;
            sl_stats_split s = {-1, -1};
            cr_assert(sl_stats_split_claimed(claimed, state->next_free, state->frac, now,
                                             rate_milli, &s));
            cr_assert_eq(s.scheduled, ahead,
                         "rate %" PRId64 " mHz, %d claimed, now = slot[last] %+" PRId64
                         " us: %" PRId64 " scheduled, %" PRId64 " ahead",
                         rate_milli, claimed, now - slots[n - 1], s.scheduled, ahead);
            cr_assert_eq(s.scheduled + s.in_flight, claimed);
        }
    }
}

Test(stats_split, exact_on_a_burst_at_any_rate)
{
    /* 3/s and 7/1000 s leave a remainder (frac) on every slot. */
    const int64_t rates[] = {3000, 7, 10000, 25000000, 999999999};
    for (size_t r = 0; r < sizeof rates / sizeof rates[0]; r++) {
        sl_shaping_state state = {0};
        int64_t slots[JOBS];
        int n = 0;
        admit(&state, rates[r], T0, JOBS, slots, &n);
        check_exact(rates[r], &state, slots, n);
    }
}

Test(stats_split, exact_when_jobs_arrive_while_the_schedule_runs)
{
    /* 10/s: jobs trickle in while earlier ones wait, then a burst. */
    sl_shaping_state state = {0};
    int64_t slots[JOBS];
    int n = 0;
    for (int i = 0; i < 8; i++)
        admit(&state, 10000, T0 + i * 30000, 1, slots, &n);
    admit(&state, 10000, T0 + 250000, JOBS - 8, slots, &n);
    check_exact(10000, &state, slots, n);
}

Test(stats_split, a_slot_that_has_passed_is_in_flight)
{
    /* 1/s, an idle tenant: the job leaves at once (slot = now) and
     * next_free is a second later; half a second on it is being
     * delivered, not waiting. */
    sl_stats_split s;
    cr_assert(sl_stats_split_claimed(1, T0 + 1000000, 0, T0 + 500000, 1000, &s));
    cr_expect_eq(s.scheduled, 0);
    cr_expect_eq(s.in_flight, 1);
    /* Claimed ahead of its slot (the claim looks ahead): scheduled. */
    cr_assert(sl_stats_split_claimed(1, T0 + 1000000, 0, T0 - 1, 1000, &s));
    cr_expect_eq(s.scheduled, 1);
    cr_expect_eq(s.in_flight, 0);
}

Test(stats_split, without_a_schedule_everything_claimed_is_in_flight)
{
    sl_stats_split s;
    /* no shape key (it expires once next_free has passed) */
    cr_assert(sl_stats_split_claimed(5, 0, 0, T0, 1000, &s));
    cr_expect_eq(s.scheduled, 0);
    cr_expect_eq(s.in_flight, 5);
    /* the rate is not needed then */
    cr_assert(sl_stats_split_claimed(5, T0 - 1, 7, T0, -1, &s));
    cr_expect_eq(s.scheduled, 0);
    cr_expect_eq(s.in_flight, 5);
    cr_assert(sl_stats_split_claimed(0, 0, 0, T0, -1, &s));
    cr_expect_eq(s.scheduled + s.in_flight, 0);
}

Test(stats_split, unknown_rate_with_slots_ahead_cannot_be_told)
{
    sl_stats_split s = {42, 43};
    cr_expect_not(sl_stats_split_claimed(5, T0 + 1, 0, T0, -1, &s));
    cr_expect_eq(s.scheduled, 42, "untouched");
    cr_expect_eq(s.in_flight, 43, "untouched");
}

Test(stats_split, a_pause_shows_claimed_jobs_as_scheduled)
{
    /* A 429 with Retry-After: 60 moved next_free a minute ahead. */
    sl_stats_split s;
    cr_assert(sl_stats_split_claimed(16, T0 + 60000000, 0, T0, 10000, &s));
    cr_expect_eq(s.scheduled, 16);
    cr_expect_eq(s.in_flight, 0);
    /* Far ahead at the highest rate: no overflow (UBSan would say). */
    cr_assert(sl_stats_split_claimed(3, INT64_C(1) << 62, SL_RATE_MILLI_MAX - 1, 0,
                                     SL_RATE_MILLI_MAX, &s));
    cr_expect_eq(s.scheduled, 3);
    cr_expect_eq(s.in_flight, 0);
}

Test(stats_split, a_remainder_from_an_older_rate_is_read_as_the_script_does)
{
    /* frac >= rate: the rate changed since; the script reads frac as R - 1. */
    sl_stats_split a, b;
    cr_assert(sl_stats_split_claimed(9, T0 + 2000000, 5000000, T0, 1000, &a));
    cr_assert(sl_stats_split_claimed(9, T0 + 2000000, 999, T0, 1000, &b));
    cr_expect_eq(a.scheduled, b.scheduled);
    cr_expect_eq(a.scheduled, 1);
}
