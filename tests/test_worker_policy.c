/* test_worker_policy.c - a worker's drain checks and discovery ticks
 * (src/daemon/worker_policy.c): times passed in, no clock. */
#include <criterion/criterion.h>
#include <stdint.h>

#include "daemon/worker_policy.h"

#define DEADLINE INT64_C(30000000)

Test(worker_policy, an_idle_worker_is_done_at_once_whatever_the_time)
{
    sl_drain_verdict v = sl_drain_check(true, true, DEADLINE, DEADLINE + 60000000);
    cr_assert(v.done);
    cr_assert_not(v.hand_back);
    cr_assert_not(v.give_up);
}

Test(worker_policy, within_the_grace_period_deliveries_go_on)
{
    sl_drain_verdict v = sl_drain_check(false, true, DEADLINE, DEADLINE);
    cr_assert_not(v.done);
    cr_assert_not(v.hand_back, "the deadline itself is still within it");
    cr_assert_not(v.give_up);
}

Test(worker_policy, after_the_grace_period_deliveries_are_handed_back_once)
{
    sl_drain_verdict v = sl_drain_check(false, true, DEADLINE, DEADLINE + 1);
    cr_assert(v.hand_back);
    cr_assert_not(v.give_up, "the acks get their extra time");
    v = sl_drain_check(false, false, DEADLINE, DEADLINE + 2); /* the client is freed */
    cr_assert_not(v.hand_back);
}

Test(worker_policy, acks_get_two_seconds_more_then_the_worker_gives_up)
{
    sl_drain_verdict v = sl_drain_check(false, false, DEADLINE, DEADLINE + SL_ACK_FLUSH_AFTER_GRACE_US);
    cr_assert_not(v.give_up);
    v = sl_drain_check(false, false, DEADLINE, DEADLINE + SL_ACK_FLUSH_AFTER_GRACE_US + 1);
    cr_assert(v.give_up);
    cr_assert_not(v.done, "exit code 1, not a clean drain");
    /* one check may both hand back and give up (a stuck loop woke late) */
    v = sl_drain_check(false, true, DEADLINE, DEADLINE + SL_ACK_FLUSH_AFTER_GRACE_US + 1);
    cr_assert(v.hand_back);
    cr_assert(v.give_up);
}

Test(worker_policy, without_notifications_every_tick_scans)
{
    unsigned ticks = 0;
    for (int i = 0; i < 5; i++)
        cr_assert(sl_discover_on_tick(&ticks, false));
    cr_assert_eq(ticks, 0, "ticks count only while notified");
}

Test(worker_policy, with_notifications_one_tick_in_thirty_scans)
{
    unsigned ticks = 0;
    int scans = 0, first = -1;
    for (int i = 1; i <= 3 * SL_DISCOVER_NOTIFIED_EVERY_TICKS; i++)
        if (sl_discover_on_tick(&ticks, true)) {
            scans++;
            if (first < 0)
                first = i;
        }
    cr_assert_eq(scans, 3);
    cr_assert_eq(first, SL_DISCOVER_NOTIFIED_EVERY_TICKS);
}

Test(worker_policy, subscribed_again_the_next_tick_scans)
{
    unsigned ticks = 7;
    ticks = sl_discover_next_tick();
    cr_assert(sl_discover_on_tick(&ticks, true));
    cr_assert_not(sl_discover_on_tick(&ticks, true));
}

Test(watchdog, a_worker_whose_loop_ended_is_not_stuck)
{
    unsigned last[3] = {5, 7, 9};
    const bool running[3] = {false, false, false};
    const bool second_ended[3] = {false, true, false};
    unsigned moved[3] = {6, 8, 10};
    cr_assert(sl_workers_alive(moved, last, running, 3), "every heartbeat moved");
    cr_assert_eq(last[0], 6, "the tick's beats are kept for the next");
    unsigned second_still[3] = {7, 8, 11};
    cr_assert_not(sl_workers_alive(second_still, last, running, 3),
                  "a running worker whose heartbeat stood still is stuck");
    unsigned again[3] = {8, 8, 12};
    cr_assert(sl_workers_alive(again, last, second_ended, 3),
              "the same stillness after its loop ended (a drain) is not");
}
