/* ack_batch.h - one tenant's outcomes on their way to Redis: they gather
 * in a batch, one ack.lua call carries the batch, and one batch is on the
 * wire at a time.
 *
 * Outcomes gather until the first has waited delay_us (sl_ack_delay_us)
 * and there are SL_ACK_BATCH_ARGS of them, or it has waited
 * SL_ACK_DELAY_MAX_US: a tenant far below its rate (bound by its
 * concurrency or a slow endpoint) then still acks what that longest wait
 * gathered per round trip, not one or two. A batch of SL_ACK_FLUSH_ARGS goes
 * at once; while draining, nothing waits.
 *
 * The batch decides; the tenant does the I/O (its timer, the Redis call)
 * as the returned sl_ack_step says. No I/O here, and time comes in from
 * the caller: a monotonic clock in microseconds. One owner (the tenant's
 * worker thread). */
#ifndef SLUICE_ACK_BATCH_H
#define SLUICE_ACK_BATCH_H

#include <stdbool.h>
#include <stdint.h>

#include "redis/keys.h"
#include "redis/redis_argv.h"

typedef struct sl_ack_batch {
    sl_argv filling;  /* ops gathered since the last flush: add them with
                         the sl_ack_* builders of claim.h */
    sl_argv sending;  /* the batch on the wire (or to send again) */
    int64_t first_us; /* when filling got its first op (0: empty) */
    int64_t delay_us; /* ops gather this long before an ack: set by the
                         owner (sl_ack_delay_us), again on a reload */
    bool outstanding; /* sending is on the wire */
    bool due;         /* a flush came while it could not go: the reply, or
                         readiness, flushes */
    bool resend;      /* sending failed: send it again when ready */
    bool backoff;     /* ... but not before the resend timer fires */
    int failures;     /* failed sends of sending in a row */
    int64_t filling_lease; /* the latest lease of an op in filling, and */
    int64_t sending_lease; /* in sending (Redis's clock, us; 0: none) */
} sl_ack_batch;

/* A batch whose ack failed is sent again after the backoff of transient
 * errors (sl_redis_transient_backoff_us), as long as the resend would
 * reach Redis SL_ACK_RESEND_MARGIN_US before the latest lease of its jobs
 * ends; after that the leases return the jobs (an ack that came later
 * would find them stale anyway). */
#define SL_ACK_RESEND_MARGIN_US 500000

/* What the tenant does with a batch whose ack did not apply. */
typedef struct sl_ack_resend {
    bool give_up;     /* dropped: the leases will return its jobs */
    int64_t after_us; /* else: arm the resend timer this far ahead, then
                         sl_ack_batch_backoff_over and flush */
    bool flush;       /* given up, and ops gathered meanwhile: send them now */
} sl_ack_resend;

/* What the tenant does next. */
typedef struct sl_ack_step {
    bool flush;     /* flush now (sl_ack_batch_take, then send) */
    int64_t arm_us; /* >= 0: (re)arm the ack timer this far ahead; < 0: leave it */
} sl_ack_step;

/* An empty batch (delay_us 0 until set); free it with sl_ack_batch_free. */
void sl_ack_batch_init(sl_ack_batch *b);
/* Frees the batch's buffers (what they held is dropped). */
void sl_ack_batch_free(sl_ack_batch *b);

/* An op holding lease (the job's lease token: its lease's end on Redis's
 * clock, us) was just added to b->filling: a failed ack of it is resent
 * until then. Ops without a lease (pause) need no call. */
void sl_ack_batch_lease(sl_ack_batch *b, int64_t lease);

/* Ops were just added to b->filling (calling again without new ops is
 * harmless). Opens the batch at now_us() if it was empty (then arm the
 * timer for its delay) and says whether it goes now. now_us is called only
 * when the time can decide: to open the batch, or once it holds
 * SL_ACK_BATCH_ARGS (below that, only the longest wait can make it due,
 * and the timer keeps that): most outcomes cost no clock read. */
sl_ack_step sl_ack_batch_added(sl_ack_batch *b, bool draining, int64_t (*now_us)(void));

/* The ack timer fired at now_us: flush, or re-arm it for the longest wait. */
sl_ack_step sl_ack_batch_timer(const sl_ack_batch *b, bool draining, int64_t now_us);

/* A flush: true if b->sending is to go on the wire now (what gathered was
 * moved into it, as an ack.lua call under sha for tenant with keys, unless
 * it is a resend). False if it must wait, an ack being outstanding, a
 * resend's backoff running or sha NULL (the scripts not loaded), and then
 * the reply, the resend timer or readiness flushes; or if there is
 * nothing to send. */
bool sl_ack_batch_take(sl_ack_batch *b, const char *sha, const sl_tenant_keys *keys,
                       const char *tenant);
/* After a true sl_ack_batch_take: whether b->sending went on the wire. */
void sl_ack_batch_sent(sl_ack_batch *b, bool sent);
/* The reply to b->sending came; answered false (no reply, or NOSCRIPT)
 * keeps it to send again once Redis is ready. True if a flush is due now. */
bool sl_ack_batch_replied(sl_ack_batch *b, bool answered);

/* The ack of b->sending did not apply: the connection was lost before its
 * reply, or the reply was a transient error (redis_errors.h: Redis busy,
 * loading, over maxmemory...). At redis_now_us (Redis's clock, as the
 * tenant knows it): resend after a backoff, or give the batch up when a
 * resend could no longer beat its latest lease. Either way b->sending is
 * no longer outstanding. */
sl_ack_resend sl_ack_batch_failed(sl_ack_batch *b, int64_t redis_now_us);
/* The resend timer fired: the batch to send again may go (flush). */
void sl_ack_batch_backoff_over(sl_ack_batch *b);

/* Nothing gathered, on the wire or to send again. */
bool sl_ack_batch_idle(const sl_ack_batch *b);

#endif
