/* ack_batch.c - see ack_batch.h. */
#include "daemon/ack_batch.h"

#include "job/claim_policy.h"
#include "redis/claim.h"
#include "redis/redis_errors.h"

void sl_ack_batch_init(sl_ack_batch *b)
{
    *b = (sl_ack_batch){.first_us = 0};
    sl_argv_init(&b->filling);
    sl_argv_init(&b->sending);
}

void sl_ack_batch_free(sl_ack_batch *b)
{
    sl_argv_free(&b->filling);
    sl_argv_free(&b->sending);
}

/* The one rule: whether a batch whose first op has waited waited_us goes. */
static bool due(const sl_ack_batch *b, bool draining, int64_t waited_us)
{
    size_t args = b->filling.count;
    return draining || args >= SL_ACK_FLUSH_ARGS ||
           (args >= SL_ACK_BATCH_ARGS && waited_us >= b->delay_us) ||
           waited_us >= SL_ACK_DELAY_MAX_US;
}

sl_ack_step sl_ack_batch_added(sl_ack_batch *b, bool draining, int64_t (*now_us)(void))
{
    sl_ack_step step = {false, -1};
    if (b->filling.count == 0)
        return step;
    int64_t now = 0;
    bool known = false;
    if (b->first_us == 0) {
        now = now_us();
        known = true;
        b->first_us = now;
        step.arm_us = b->delay_us;
    }
    if (draining || b->filling.count >= SL_ACK_FLUSH_ARGS)
        step.flush = true;
    else if (b->filling.count >= SL_ACK_BATCH_ARGS)
        step.flush = due(b, false, (known ? now : now_us()) - b->first_us);
    return step;
}

sl_ack_step sl_ack_batch_timer(const sl_ack_batch *b, bool draining, int64_t now_us)
{
    int64_t waited = now_us - b->first_us;
    /* The timer was armed for the delay, so the delay has passed, even
     * when by this clock it fired a hair early (libevent reckons from the
     * time its loop turn began). */
    if (due(b, draining, waited > b->delay_us ? waited : b->delay_us))
        return (sl_ack_step){true, -1};
    return (sl_ack_step){false, SL_ACK_DELAY_MAX_US - waited}; /* for more ops, or the longest wait */
}

bool sl_ack_batch_take(sl_ack_batch *b, const char *sha, const sl_tenant_keys *keys,
                       const char *tenant)
{
    if (b->outstanding || b->backoff || !sha) {
        b->due = true; /* the reply, or readiness, flushes again */
        return false;
    }
    b->due = false;
    if (b->resend)
        return true;
    if (b->filling.count == 0)
        return false;
    sl_ack_start(&b->sending, sha, keys, tenant);
    for (size_t i = 0; i < b->filling.count; i++)
        sl_argv_add(&b->sending, b->filling.text + b->filling.offsets[i], b->filling.lengths[i]);
    sl_argv_reset(&b->filling);
    b->first_us = 0;
    b->sending_lease = b->filling_lease;
    b->filling_lease = 0;
    b->failures = 0;
    return true;
}

void sl_ack_batch_sent(sl_ack_batch *b, bool sent)
{
    b->resend = !sent;
    b->outstanding = sent;
    /* a resend leaves what gathered meanwhile (its timer is gone) to the reply */
    b->due = b->filling.count > 0;
}

bool sl_ack_batch_replied(sl_ack_batch *b, bool answered)
{
    b->outstanding = false;
    if (!answered) {
        b->resend = true; /* sent again by the tenant once Redis is ready */
        return false;
    }
    b->failures = 0;
    return b->due;
}

void sl_ack_batch_lease(sl_ack_batch *b, int64_t lease)
{
    if (lease > b->filling_lease)
        b->filling_lease = lease;
}

sl_ack_resend sl_ack_batch_failed(sl_ack_batch *b, int64_t redis_now_us)
{
    b->outstanding = false;
    int64_t delay = sl_redis_transient_backoff_us(b->failures + 1);
    if (redis_now_us + delay > b->sending_lease - SL_ACK_RESEND_MARGIN_US) {
        /* Too late to matter: the leases return the jobs (at least once). */
        b->resend = false;
        b->backoff = false;
        b->failures = 0;
        sl_argv_reset(&b->sending);
        return (sl_ack_resend){.give_up = true, .after_us = -1,
                                .flush = b->due || b->filling.count > 0};
    }
    b->failures++;
    b->resend = true;
    b->backoff = true;
    return (sl_ack_resend){.give_up = false, .after_us = delay, .flush = false};
}

void sl_ack_batch_backoff_over(sl_ack_batch *b)
{
    b->backoff = false;
}

bool sl_ack_batch_idle(const sl_ack_batch *b)
{
    return !b->outstanding && !b->resend && b->filling.count == 0;
}
