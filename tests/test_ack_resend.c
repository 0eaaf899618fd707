/* test_ack_resend.c - an ack batch whose ack did not apply (connection
 * lost, Redis busy or loading) is sent again with backoff until shortly
 * before the leases of its jobs end, then left to the leases
 * (src/daemon/ack_batch.c). No clock, no Redis. */
#include <criterion/criterion.h>
#include <stdint.h>
#include <stdio.h>

#include "daemon/ack_batch.h"
#include "redis/claim.h"
#include "redis/keys.h"
#include "redis/redis_errors.h"

#define NOW INT64_C(1700000000000000) /* Redis's clock at the failure */
#define LEASE (NOW + INT64_C(30000000)) /* the jobs' leases end 30 s later */

static sl_ack_batch b;
static sl_tenant_keys keys;

static void setup(void)
{
    sl_ack_batch_init(&b);
    b.delay_us = 10000;
    cr_assert(sl_tenant_keys_init(&keys, "sluice", "acme"));
}

static void teardown(void)
{
    sl_tenant_keys_free(&keys);
    sl_ack_batch_free(&b);
}

TestSuite(ack_resend, .init = setup, .fini = teardown);

/* One delivered job holding lease, added to the batch. */
static void deliver(int n, int64_t lease)
{
    char id[32];
    snprintf(id, sizeof id, "p.%x", n);
    sl_ack_done(&b.filling, id, lease);
    sl_ack_batch_lease(&b, lease);
}

/* Takes what gathered and puts it on the wire. */
static void send_batch(void)
{
    cr_assert(sl_ack_batch_take(&b, "sha", &keys, "acme"));
    sl_ack_batch_sent(&b, true);
}

Test(ack_resend, a_failed_ack_is_sent_again_after_a_backoff)
{
    deliver(1, LEASE);
    send_batch();
    size_t args = b.sending.count;
    sl_ack_resend r = sl_ack_batch_failed(&b, NOW);
    cr_assert_not(r.give_up);
    cr_assert_eq(r.after_us, SL_REDIS_TRANSIENT_MIN_US);
    cr_assert_not(sl_ack_batch_idle(&b), "the batch is kept");
    /* not before the backoff is over */
    cr_assert_not(sl_ack_batch_take(&b, "sha", &keys, "acme"));
    sl_ack_batch_backoff_over(&b);
    cr_assert(sl_ack_batch_take(&b, "sha", &keys, "acme"), "the same batch goes again");
    cr_assert_eq(b.sending.count, args);
    sl_ack_batch_sent(&b, true);
    cr_assert_not(sl_ack_batch_replied(&b, true));
    cr_assert(sl_ack_batch_idle(&b));
}

Test(ack_resend, the_backoff_doubles_with_each_failure)
{
    deliver(1, LEASE);
    send_batch();
    int64_t expected = SL_REDIS_TRANSIENT_MIN_US;
    for (int i = 0; i < 4; i++) {
        sl_ack_resend r = sl_ack_batch_failed(&b, NOW);
        cr_assert_not(r.give_up);
        cr_assert_eq(r.after_us, expected, "failure %d: %lld", i + 1, (long long)r.after_us);
        expected *= 2;
        sl_ack_batch_backoff_over(&b);
        cr_assert(sl_ack_batch_take(&b, "sha", &keys, "acme"));
        sl_ack_batch_sent(&b, true);
    }
}

Test(ack_resend, a_new_batch_starts_its_backoff_afresh)
{
    deliver(1, LEASE);
    send_batch();
    for (int i = 0; i < 3; i++) {
        sl_ack_batch_failed(&b, NOW);
        sl_ack_batch_backoff_over(&b);
        cr_assert(sl_ack_batch_take(&b, "sha", &keys, "acme"));
        sl_ack_batch_sent(&b, true);
    }
    sl_ack_batch_replied(&b, true);
    deliver(2, LEASE);
    send_batch();
    cr_assert_eq(sl_ack_batch_failed(&b, NOW).after_us, SL_REDIS_TRANSIENT_MIN_US);
}

Test(ack_resend, gives_up_when_a_resend_could_not_beat_the_leases)
{
    deliver(1, NOW + SL_REDIS_TRANSIENT_MIN_US + SL_ACK_RESEND_MARGIN_US - 1);
    send_batch();
    sl_ack_resend r = sl_ack_batch_failed(&b, NOW);
    cr_assert(r.give_up);
    cr_assert(sl_ack_batch_idle(&b), "dropped: the leases return the jobs");
    cr_assert_not(sl_ack_batch_take(&b, "sha", &keys, "acme"), "nothing left to send");
}

Test(ack_resend, resends_until_just_before_the_latest_lease)
{
    /* Two jobs: the later lease decides (an op past its own lease is stale
     * and harmless in ack.lua; the other may still apply). */
    deliver(1, NOW + 200000);
    deliver(2, NOW + SL_REDIS_TRANSIENT_MIN_US + SL_ACK_RESEND_MARGIN_US);
    send_batch();
    cr_assert_not(sl_ack_batch_failed(&b, NOW).give_up);
    sl_ack_batch_backoff_over(&b);
    cr_assert(sl_ack_batch_take(&b, "sha", &keys, "acme"));
    sl_ack_batch_sent(&b, true);
    /* 50 ms later the next backoff (200 ms) would land past the margin */
    cr_assert(sl_ack_batch_failed(&b, NOW + 50000).give_up);
}

Test(ack_resend, the_lease_is_the_sent_batchs_not_what_gathers_after)
{
    deliver(1, NOW + 300000);
    send_batch();
    deliver(2, LEASE); /* gathers while the first batch is on the wire */
    sl_ack_resend r = sl_ack_batch_failed(&b, NOW);
    cr_assert(r.give_up, "the sent batch's leases end too soon");
    cr_assert(r.flush, "what gathered meanwhile is due");
    cr_assert(sl_ack_batch_take(&b, "sha", &keys, "acme"));
    cr_assert_eq(b.sending_lease, LEASE);
    sl_ack_batch_sent(&b, true);
    cr_assert_not(sl_ack_batch_failed(&b, NOW).give_up, "the new batch's lease is far");
}

Test(ack_resend, a_batch_without_leases_is_not_resent)
{
    sl_ack_pause(&b.filling, 1000000);
    send_batch();
    cr_assert(sl_ack_batch_failed(&b, NOW).give_up);
    cr_assert(sl_ack_batch_idle(&b));
}
