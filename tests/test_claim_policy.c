/* test_claim_policy.c - a tenant's claim, departure, lease and ack timing
 * decisions (src/job/claim_policy.c): times passed in, no clock. */
#include <criterion/criterion.h>
#include <stdint.h>

#include "job/claim_policy.h"
#include "job/pacing.h"

#define PER_SECOND(n) ((int64_t)(n) * 1000) /* a rate in rate_milli */

Test(claim_policy, slots_are_one_interval_apart)
{
    cr_assert_eq(sl_claim_interval_us(PER_SECOND(1000)), 1000);
    cr_assert_eq(sl_claim_interval_us(PER_SECOND(3)), 333333); /* rounded down */
    cr_assert_eq(sl_claim_interval_us(1), INT64_C(1000000000)); /* one per 1000 s */
}

Test(claim_policy, lookahead_is_the_refill_time_and_twenty_intervals_at_most_250_ms)
{
    cr_assert_eq(sl_claim_lookahead_us(PER_SECOND(1000)), 50000 + 20 * 1000);
    cr_assert_eq(sl_claim_lookahead_us(PER_SECOND(100000)), 50000 + 20 * 10);
    cr_assert_eq(sl_claim_lookahead_us(PER_SECOND(100)), 250000, "20 intervals of 10 ms: capped");
    cr_assert_eq(sl_claim_lookahead_us(PER_SECOND(1)), 250000);
}

Test(claim_policy, a_fleet_s_backlog_lasts_a_lookahead_past_the_claim_that_drained_the_queue)
{
    int64_t rate = PER_SECOND(1000), lookahead = sl_claim_lookahead_us(rate);
    cr_assert_eq(sl_claim_backlog_until(false, 0, 5000000, rate), 0, "no backlog seen yet");
    int64_t until = sl_claim_backlog_until(true, 0, 5000000, rate);
    cr_assert_eq(until, INT64_MAX, "jobs left: more slots will come");
    /* the queue drained: others' slots claimed before still come */
    until = sl_claim_backlog_until(false, until, 6000000, rate);
    cr_assert_eq(until, 6000000 + lookahead);
    cr_assert_eq(sl_claim_backlog_until(false, until, 6100000, rate), 6000000 + lookahead,
                 "a later empty claim does not move it");
    cr_assert_eq(sl_claim_backlog_until(true, until, 6200000, rate), INT64_MAX, "pushed again");
}

Test(claim_policy, a_lease_outlives_the_request_by_ten_seconds)
{
    cr_assert_eq(sl_claim_lease_us(30000), INT64_C(40000000));
    cr_assert_eq(sl_claim_lease_us(1), INT64_C(10001000));
}

Test(claim_policy, outcomes_gather_ten_intervals_within_2_to_100_ms)
{
    cr_assert_eq(sl_ack_delay_us(PER_SECOND(1000)), 10000);
    cr_assert_eq(sl_ack_delay_us(PER_SECOND(200)), 50000);
    cr_assert_eq(sl_ack_delay_us(PER_SECOND(100000)), 2000, "fast tenants ack every 2 ms");
    cr_assert_eq(sl_ack_delay_us(PER_SECOND(10)), 100000, "1 s of outcomes: capped at 100 ms");
}

Test(claim_policy, a_push_during_a_claim_claims_again_at_once)
{
    sl_claim_next n = sl_claim_after_reply(640, true, 0, 0, 5000000, false);
    cr_assert_eq(n.delay_us, 0);
    cr_assert_eq(n.idle_ms, SL_IDLE_MIN_MS);
}

Test(claim_policy, an_empty_queue_is_polled_backing_off_to_one_second)
{
    int64_t idle = SL_IDLE_MIN_MS, waits[10];
    for (int i = 0; i < 10; i++) {
        sl_claim_next n = sl_claim_after_reply(idle, false, 0, 0, 5000000, false);
        waits[i] = n.delay_us;
        idle = n.idle_ms;
    }
    int64_t expect[10] = {10, 20, 40, 80, 160, 320, 640, 1000, 1000, 1000};
    for (int i = 0; i < 10; i++)
        cr_assert_eq(waits[i], expect[i] * 1000, "poll %d waited %lld us", i, (long long)waits[i]);
}

Test(claim_policy, with_notifications_polling_is_a_safety_net_up_to_30_s)
{
    sl_claim_next n = sl_claim_after_reply(640, false, 0, 0, 5000000, true);
    cr_assert_eq(n.delay_us, 640000);
    cr_assert_eq(n.idle_ms, 1280, "not held to the 1 s of a polled tenant");
    n = sl_claim_after_reply(20000, false, 0, 0, 5000000, true);
    cr_assert_eq(n.idle_ms, SL_IDLE_NOTIFIED_MAX_MS);
}

Test(claim_policy, the_next_claim_goes_when_the_script_says)
{
    /* next_us is on Redis's clock, like now_us */
    sl_claim_next n = sl_claim_after_reply(640, false, 20, 5070000, 5000000, false);
    cr_assert_eq(n.delay_us, 70000);
    cr_assert_eq(n.idle_ms, SL_IDLE_MIN_MS, "jobs came: the backoff starts over");
    /* a full batch: next_us is now, claim again at once */
    n = sl_claim_after_reply(10, false, SL_CLAIM_BATCH, 5000000, 5000000, false);
    cr_assert_eq(n.delay_us, 0);
    /* a rejection that waits (a limit) but no job: still by the script's time */
    n = sl_claim_after_reply(640, false, 0, 5300000, 5000000, false);
    cr_assert_eq(n.delay_us, 300000);
    /* jobs came and the queue is empty: look again at the shortest poll */
    n = sl_claim_after_reply(640, false, 3, 0, 5000000, false);
    cr_assert_eq(n.delay_us, SL_IDLE_MIN_MS * 1000);
    cr_assert_eq(n.idle_ms, SL_IDLE_MIN_MS);
}

Test(claim_policy, running_low_by_count_or_by_time)
{
    int64_t now = 1000000;
    /* fewer than half of the most held: low, however far the slots reach */
    cr_assert(sl_claim_running_low(0, 0, now));
    cr_assert(sl_claim_running_low(SL_CLAIM_MAX_WAITING / 2 - 1, now + 10000000, now));
    /* many held, but the schedule runs out within a claim's round trip */
    cr_assert_not(sl_claim_running_low(SL_CLAIM_MAX_WAITING / 2, now + SL_CLAIM_REFILL_US, now));
    cr_assert(sl_claim_running_low(SL_CLAIM_MAX_WAITING / 2, now + SL_CLAIM_REFILL_US - 1, now));
    /* late departures left many waiting, all overdue: still claim by time */
    cr_assert(sl_claim_running_low(SL_CLAIM_MAX_WAITING - 1, now - 5000, now));
}

Test(claim_policy, room_to_claim_up_to_the_most_held)
{
    cr_assert(sl_claim_has_room(0));
    cr_assert(sl_claim_has_room(SL_CLAIM_MAX_WAITING - 1));
    cr_assert_not(sl_claim_has_room(SL_CLAIM_MAX_WAITING));
}

Test(claim_policy, saturated_only_with_all_concurrency_busy_and_the_head_overdue)
{
    int64_t slot = 1000000;
    cr_assert_not(sl_claim_saturated(3, 4, slot, slot + 60000000), "a free connection");
    cr_assert_not(sl_claim_saturated(4, 4, slot, slot + SL_SATURATED_AFTER_US), "timer lateness");
    cr_assert(sl_claim_saturated(4, 4, slot, slot + SL_SATURATED_AFTER_US + 1));
    cr_assert(sl_claim_saturated(5, 4, slot, slot + SL_SATURATED_AFTER_US + 1));
    cr_assert_not(sl_claim_saturated(4, 4, slot, slot - 1), "the head is not due yet");
}

Test(claim_policy, a_job_leaves_at_its_slot_a_hair_early_at_most)
{
    sl_pace fresh = {0};
    sl_pace_rules rules = sl_pace_rules_for(1000000); /* 1,000/s */
    int64_t slot = 1000000;
    sl_pace_due due = {.now_us = slot, .count = 1, .stale = 0, .next_us = INT64_MAX};
    cr_assert(sl_departure_allowed(slot, &fresh, &rules, due));
    due.now_us = slot - SL_SEND_EARLY_US;
    cr_assert(sl_departure_allowed(slot, &fresh, &rules, due));
    due.now_us = slot - SL_SEND_EARLY_US - 1;
    cr_assert_not(sl_departure_allowed(slot, &fresh, &rules, due));
    cr_assert_eq(sl_departure_at(slot, &fresh, &rules, due), slot);
}

Test(claim_policy, a_late_job_leaves_as_the_pace_allows_exactly)
{
    /* 100/s: a job may leave up to 0.78 of an interval before the pace
     * is due (a late wake-up loses nothing), which is less than a gap */
    sl_pace p = {0};
    sl_pace_rules rules = sl_pace_rules_for(100000);
    sl_pace_due due = {.now_us = 1000000, .count = 3, .stale = 3, .next_us = INT64_MAX};
    sl_pace_note(&p, &rules, 980000, due);
    due.count = 2;
    int64_t pace = sl_pace_allows_at(&p, &rules, due);
    cr_assert_gt(pace, 1000000);
    /* the next job's slot is long past (a stall), the pace holds it */
    int64_t slot = 990000;
    due.now_us = pace - 1;
    cr_assert_not(sl_departure_allowed(slot, &p, &rules, due), "no earliness for the pace");
    due.now_us = pace;
    cr_assert(sl_departure_allowed(slot, &p, &rules, due));
    cr_assert_eq(sl_departure_at(slot, &p, &rules, due), pace);
    /* a slot after the pace: the slot */
    cr_assert_eq(sl_departure_at(pace + 500, &p, &rules, due), pace + 500);
}

Test(claim_policy, a_short_interval_waits_a_wake_up_worth)
{
    /* 1,000/s: the timer waits for the departure, however near */
    cr_assert_eq(sl_departure_wait_us(1000050, 1000000, 1000), 50);
    cr_assert_eq(sl_departure_wait_us(1000001, 1000000, 1000), 1);
    /* 20,000/s: a wake-up per job would cost more than the interval */
    cr_assert_eq(sl_departure_wait_us(1000050, 1000000, 50), SL_WAKE_EVERY_US);
    cr_assert_eq(sl_departure_wait_us(1000000 + SL_WAKE_EVERY_US + 1, 1000000, 50),
                 SL_WAKE_EVERY_US + 1, "a later departure is waited for as it is");
    cr_assert_eq(sl_departure_wait_us(1000000 + SL_WAKE_EVERY_US, 1000000, SL_WAKE_EVERY_US),
                 SL_WAKE_EVERY_US);
    cr_assert_eq(sl_departure_wait_us(1000010, 1000000, SL_WAKE_EVERY_US), 10,
                 "an interval of a wake-up's worth is waited for as it is");
}

Test(claim_policy, a_job_goes_back_when_the_request_could_outlive_its_lease)
{
    int64_t lease_end = 40000000, timeout = 30000000;
    cr_assert_not(sl_claim_lease_too_short(lease_end, timeout, lease_end - timeout - 1));
    cr_assert(sl_claim_lease_too_short(lease_end, timeout, lease_end - timeout));
    cr_assert(sl_claim_lease_too_short(lease_end, timeout, lease_end + 1));
}
