/* test_ack_batch.c - when one tenant's outcomes go to Redis, and what one
 * batch on the wire at a time means (src/daemon/ack_batch.c): a fake clock
 * that counts its reads, no Redis. */
#include <criterion/criterion.h>
#include <stdint.h>
#include <stdio.h>

#include "daemon/ack_batch.h"
#include "job/claim_policy.h"
#include "redis/claim.h"
#include "redis/keys.h"

#define T0 INT64_C(5000000) /* the fake monotonic clock at the first outcome */
#define DELAY INT64_C(10000)

static int64_t fake_now;
static int clock_reads;
static sl_ack_batch b;
static sl_tenant_keys keys;

static int64_t fake_clock(void)
{
    clock_reads++;
    return fake_now;
}

static void setup(void)
{
    sl_ack_batch_init(&b);
    b.delay_us = DELAY;
    cr_assert(sl_tenant_keys_init(&keys, "sluice", "acme"));
    fake_now = T0;
    clock_reads = 0;
}

static void teardown(void)
{
    sl_tenant_keys_free(&keys);
    sl_ack_batch_free(&b);
}

TestSuite(ack_batch, .init = setup, .fini = teardown);

/* One delivered job's outcome (3 arguments), then the batch's verdict. */
static sl_ack_step deliver(int n, bool draining)
{
    char id[32];
    snprintf(id, sizeof id, "p.%x", n);
    sl_ack_done(&b.filling, id, 1000 + n);
    return sl_ack_batch_added(&b, draining, fake_clock);
}

Test(ack_batch, nothing_added_nothing_happens)
{
    sl_ack_step s = sl_ack_batch_added(&b, false, fake_clock);
    cr_assert_not(s.flush);
    cr_assert_lt(s.arm_us, 0);
    cr_assert_eq(clock_reads, 0);
    cr_assert(sl_ack_batch_idle(&b));
}

Test(ack_batch, the_first_outcome_opens_the_batch_and_arms_its_delay)
{
    sl_ack_step s = deliver(0, false);
    cr_assert_not(s.flush);
    cr_assert_eq(s.arm_us, DELAY);
    cr_assert_eq(b.first_us, T0);
    cr_assert_eq(clock_reads, 1);
    cr_assert_not(sl_ack_batch_idle(&b));
}

Test(ack_batch, a_small_batch_costs_no_clock_read_per_outcome)
{
    deliver(0, false);
    fake_now = T0 + 5 * DELAY; /* long past the delay: only the timer acts */
    for (int i = 1; i < SL_ACK_BATCH_OPS - 1; i++) {
        sl_ack_step s = deliver(i, false);
        cr_assert_not(s.flush, "outcome %d", i);
        cr_assert_lt(s.arm_us, 0, "outcome %d re-armed the timer", i);
    }
    cr_assert_eq(clock_reads, 1, "the clock was read %d times", clock_reads);
}

Test(ack_batch, a_batch_opened_big_reads_the_clock_once)
{
    /* a pause hands many jobs back before the batch's verdict is asked */
    for (int i = 0; i < 2 * SL_ACK_BATCH_OPS; i++)
        sl_ack_done(&b.filling, "p.0", 1000);
    sl_ack_step s = sl_ack_batch_added(&b, false, fake_clock);
    cr_assert_not(s.flush, "it has not waited yet");
    cr_assert_eq(s.arm_us, DELAY);
    cr_assert_eq(clock_reads, 1);
}

Test(ack_batch, enough_outcomes_go_once_the_first_has_waited_its_delay)
{
    for (int i = 0; i < SL_ACK_BATCH_OPS - 1; i++)
        deliver(i, false);
    fake_now = T0 + DELAY - 1;
    cr_assert_not(deliver(100, false).flush, "too early");
    cr_assert_eq(b.filling.count, SL_ACK_BATCH_ARGS);
    fake_now = T0 + DELAY;
    cr_assert(deliver(101, false).flush);
}

Test(ack_batch, a_full_batch_goes_at_once)
{
    int i = 0;
    while (b.filling.count + 3 < SL_ACK_FLUSH_ARGS)
        cr_assert_not(deliver(i++, false).flush);
    cr_assert(deliver(i, false).flush, "at %zu arguments", b.filling.count);
}

Test(ack_batch, while_draining_nothing_waits)
{
    sl_ack_step s = deliver(0, true);
    cr_assert(s.flush);
}

Test(ack_batch, the_timer_at_the_delay_flushes_a_batch_big_enough)
{
    for (int i = 0; i < SL_ACK_BATCH_OPS; i++)
        deliver(i, false);
    cr_assert(sl_ack_batch_timer(&b, false, T0 + DELAY).flush);
    /* libevent reckons from its loop turn's start: a hair early by this
     * clock still counts as the delay passed */
    cr_assert(sl_ack_batch_timer(&b, false, T0 + DELAY - 50).flush);
}

Test(ack_batch, the_timer_waits_for_more_outcomes_then_for_the_longest_wait)
{
    deliver(0, false);
    sl_ack_step s = sl_ack_batch_timer(&b, false, T0 + DELAY);
    cr_assert_not(s.flush);
    cr_assert_eq(s.arm_us, SL_ACK_DELAY_MAX_US - DELAY);
    s = sl_ack_batch_timer(&b, false, T0 + SL_ACK_DELAY_MAX_US - 5);
    cr_assert_not(s.flush);
    cr_assert_eq(s.arm_us, 5);
    cr_assert(sl_ack_batch_timer(&b, false, T0 + SL_ACK_DELAY_MAX_US).flush);
    cr_assert(sl_ack_batch_timer(&b, true, T0 + DELAY).flush, "draining");
}

Test(ack_batch, take_moves_what_gathered_into_one_ack_call)
{
    deliver(0, false);
    deliver(1, false);
    cr_assert(sl_ack_batch_take(&b, "sha1", &keys, "acme"));
    cr_assert_eq(b.filling.count, 0);
    cr_assert_eq(b.first_us, 0, "the next outcome opens a new batch");
    cr_assert_eq(sl_ack_op_count(&b.sending), 6);
    cr_assert_str_eq(b.sending.text + b.sending.offsets[0], "EVALSHA");
    cr_assert_str_eq(b.sending.text + b.sending.offsets[1], "sha1");
    /* an empty batch sends nothing */
    sl_ack_batch_sent(&b, true);
    cr_assert(sl_ack_batch_replied(&b, true) == false);
    cr_assert_not(sl_ack_batch_take(&b, "sha1", &keys, "acme"));
    cr_assert(sl_ack_batch_idle(&b));
}

Test(ack_batch, one_batch_on_the_wire_the_reply_flushes_the_next)
{
    deliver(0, false);
    cr_assert(sl_ack_batch_take(&b, "sha1", &keys, "acme"));
    sl_ack_batch_sent(&b, true);
    cr_assert_not(b.due);
    deliver(1, false);
    cr_assert_not(sl_ack_batch_take(&b, "sha1", &keys, "acme"), "one on the wire already");
    cr_assert(b.due);
    cr_assert_eq(b.filling.count, 3, "kept for the next batch");
    cr_assert_not(sl_ack_batch_idle(&b));
    cr_assert(sl_ack_batch_replied(&b, true), "the reply flushes what waited");
    cr_assert(sl_ack_batch_take(&b, "sha1", &keys, "acme"));
    cr_assert_eq(sl_ack_op_count(&b.sending), 3);
}

Test(ack_batch, outcomes_sent_meanwhile_are_due_at_the_reply)
{
    deliver(0, false);
    cr_assert(sl_ack_batch_take(&b, "sha1", &keys, "acme"));
    deliver(1, false); /* gathered between take and send */
    sl_ack_batch_sent(&b, true);
    cr_assert(b.due);
}

Test(ack_batch, before_the_scripts_are_loaded_readiness_flushes)
{
    deliver(0, false);
    cr_assert_not(sl_ack_batch_take(&b, NULL, &keys, "acme"));
    cr_assert(b.due);
    cr_assert_eq(b.filling.count, 3);
}

Test(ack_batch, a_batch_that_failed_is_sent_again_as_it_was)
{
    deliver(0, false);
    cr_assert(sl_ack_batch_take(&b, "sha1", &keys, "acme"));
    sl_ack_batch_sent(&b, false); /* could not be sent */
    cr_assert(b.resend);
    cr_assert_not(b.outstanding);
    cr_assert_not(sl_ack_batch_idle(&b));
    deliver(1, false);
    /* the resend goes alone; what gathered waits for its reply */
    cr_assert(sl_ack_batch_take(&b, "sha2", &keys, "acme"));
    cr_assert_eq(sl_ack_op_count(&b.sending), 3);
    cr_assert_str_eq(b.sending.text + b.sending.offsets[1], "sha1");
    sl_ack_batch_sent(&b, true);
    cr_assert_not(b.resend);
    cr_assert(b.due);
}

Test(ack_batch, no_reply_keeps_the_batch_to_send_again)
{
    deliver(0, false);
    cr_assert(sl_ack_batch_take(&b, "sha1", &keys, "acme"));
    sl_ack_batch_sent(&b, true);
    cr_assert_not(sl_ack_batch_replied(&b, false));
    cr_assert(b.resend);
    cr_assert_not(b.outstanding);
    cr_assert_not(sl_ack_batch_idle(&b));
    cr_assert(sl_ack_batch_take(&b, "sha1", &keys, "acme"));
    cr_assert_eq(sl_ack_op_count(&b.sending), 3);
}
