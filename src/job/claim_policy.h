/* claim_policy.h - the decisions of a tenant's pipeline between Redis and
 * its endpoint, and the tuned numbers behind them: how far ahead to claim,
 * when to claim again, when the jobs in hand run low, when the endpoint is
 * saturated, when a job may leave, when its lease is too short to send it,
 * and how long outcomes gather before an ack.
 *
 * Pure: times are passed in (microseconds; slots and `now` on this host's
 * CLOCK_REALTIME, Redis times on Redis's), so tenant.c only does the I/O.
 * Where a decision needs the time only in some cases, the caller reads the
 * clock only then (the comments say when): per job, nothing here may cost
 * a clock read the pipeline did not already make. */
#ifndef SLUICE_CLAIM_POLICY_H
#define SLUICE_CLAIM_POLICY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "job/pacing.h"

/* ---- the tuned numbers (microseconds unless named _MS) ---- */

/* Jobs one claim may return: the claim reply is parsed onto the stack in
 * one go, and 512 jobs per round trip is far below one call per job at
 * any rate a tenant runs at. */
#define SL_CLAIM_BATCH 512
/* Claimed jobs a tenant holds before claiming more: enough for the
 * schedule to run ahead of a late endpoint (claims go by time up to this),
 * few enough that a crash leaves little to wait out its lease. */
#define SL_CLAIM_MAX_WAITING (4 * SL_CLAIM_BATCH)
/* A shaped tenant claims again while the jobs it holds last
 * SL_CLAIM_REFILL_US more, and then what departs in the
 * SL_CLAIM_LOOKAHEAD_INTERVALS intervals after that: some 20 jobs per
 * claim. It acks at least SL_BATCH_INTERVALS jobs per round trip: under
 * 0.2 Redis calls per job at any rate where that fits in the ack bounds. */
#define SL_BATCH_INTERVALS 10
/* A claim reply may take this long: claiming only once the jobs in hand
 * had run out, a stall of this process or of Redis lost the schedule the
 * time it lasted. */
#define SL_CLAIM_REFILL_US 50000
#define SL_CLAIM_LOOKAHEAD_INTERVALS 20
/* Claim at most this far ahead: slots already given keep the old rate
 * after a reload, and jobs already claimed wait out a pause, so this
 * bounds how long either takes to show. */
#define SL_CLAIM_LOOKAHEAD_MAX_US 250000
/* A lease outlives slot + timeout by 10 s: room for a late departure and
 * a slow ack before another worker may claim the job again. */
#define SL_LEASE_MARGIN_US 10000000
/* Timers fire a little late; a job may leave this early so as not to add
 * to it (the pace still holds it to its rate exactly). */
#define SL_SEND_EARLY_US 20
/* A tenant's departure timer fires at most this often where its interval
 * is shorter: a wake-up costs about 100 us on a busy 2-core host (the
 * kernel's run queue, bench/RESULTS.md), and a worker waking for every
 * job at 20,000/s got half a CPU only to wait for it. What falls due
 * meanwhile leaves together, well within the pace's tolerance (2 ms), so
 * the rate loses nothing. */
#define SL_WAKE_EVERY_US 200
/* Flush an ack batch this large at once (a delivered job's outcome is 3
 * arguments: some 340 outcomes), whatever it waited: a bigger script call
 * would hold Redis longer than any wait saves. */
#define SL_ACK_FLUSH_ARGS 1024
/* An ack batch goes once its first outcome waited its delay and it holds
 * SL_ACK_BATCH_OPS outcomes (3 arguments each), or its longest wait
 * passed. Redis pays each ack call's round trip and setup whatever it
 * carries: 100 fast tenants acking about 12 jobs a call cost it some 10%
 * more CPU per job than acking about 40 (bench/RESULTS.md, issue 18). */
#define SL_ACK_BATCH_OPS 40
#define SL_ACK_BATCH_ARGS (3 * SL_ACK_BATCH_OPS)
/* Outcomes gather within SL_BATCH_INTERVALS intervals, but 2 to 100 ms:
 * a 10 ms floor was measured to make departures later at 100-10,000/s (up
 * to 19 ms at the p99 instead of under 1 ms, bench --only shaping), so
 * fast tenants ack every 2 ms. Longer than 100 ms would leave more
 * delivered jobs to be delivered again if this process died before acking
 * them, and tells an adaptive tenant's controller its outcomes later: at
 * 150 ms (0.135 Redis calls per job at 100/s instead of 0.165) the bench's
 * adaptive tenant took 12.5-13 s instead of 2-3 s to settle near 40/s in
 * two runs of six (bench/RESULTS.md, issue 18). */
#define SL_ACK_DELAY_MIN_US 2000
#define SL_ACK_DELAY_MAX_US 100000
/* An empty queue is polled after 10 ms, then twice as long each time. */
#define SL_IDLE_MIN_MS 10
/* SPEC: polling backs off to at most 1 s. */
#define SL_IDLE_MAX_MS 1000
/* With keyspace notifications a push wakes the tenant at once: polling is
 * only a safety net. */
#define SL_IDLE_NOTIFIED_MAX_MS 30000
/* A claim that failed (a bad reply, an error from the script) is tried
 * again after 1 s, not in a loop against a failing Redis. */
#define SL_CLAIM_RETRY_AFTER_ERROR_US 1000000
/* A head job this overdue with all concurrency busy means the endpoint
 * cannot keep up: long enough that timer lateness never counts. */
#define SL_SATURATED_AFTER_US 10000

/* ---- per tenant, from its configuration ---- */

/* The spacing of slots at rate_milli (jobs per 1000 s, > 0), rounded down. */
int64_t sl_claim_interval_us(int64_t rate_milli);
/* How far ahead a claim gives slots at rate_milli (> 0): SL_CLAIM_REFILL_US
 * and SL_CLAIM_LOOKAHEAD_INTERVALS intervals, at most
 * SL_CLAIM_LOOKAHEAD_MAX_US. */
int64_t sl_claim_lookahead_us(int64_t rate_milli);
/* Until when a fleet may hold slots of a tenant's schedule, after a claim
 * whose reply came at received_us (local) and said whether jobs are left
 * (queue_left), given the answer before (backlog_until_us; 0 before any):
 * INT64_MAX while jobs are left; once a claim finds the queue drained,
 * what others claimed before it still comes, up to a lookahead at
 * rate_milli after it (job/pacing.h's backlog). */
int64_t sl_claim_backlog_until(bool queue_left, int64_t backlog_until_us, int64_t received_us,
                               int64_t rate_milli);
/* The lease of a claimed job whose request may take timeout_ms. */
int64_t sl_claim_lease_us(int64_t timeout_ms);
/* How long outcomes gather before they are acked (at least: an ack batch
 * also waits for SL_ACK_BATCH_ARGS of them) at rate_milli (> 0):
 * SL_BATCH_INTERVALS intervals, within SL_ACK_DELAY_MIN_US and
 * SL_ACK_DELAY_MAX_US. */
int64_t sl_ack_delay_us(int64_t rate_milli);

/* ---- claiming ---- */

/* When to claim next, and the polling backoff after it. */
typedef struct sl_claim_next {
    int64_t delay_us; /* claim again this long from now */
    int64_t idle_ms;  /* the tenant's polling backoff from now on */
} sl_claim_next;

/* After a claim reply that returned job_count jobs and next_us (Redis's
 * time of the next slot the script would give; 0: none, the queue is
 * empty), at Redis's now_us: a push notified meanwhile (wake_pending)
 * claims at once; an empty queue is polled after idle_ms, which doubles up
 * to SL_IDLE_MAX_MS (SL_IDLE_NOTIFIED_MAX_MS when keyspace notifications
 * are on); else the next claim is at next_us. */
sl_claim_next sl_claim_after_reply(int64_t idle_ms, bool wake_pending, size_t job_count,
                                   int64_t next_us, int64_t now_us, bool notified);

/* Whether a tenant holding `waiting` jobs, the latest of which has its
 * slot at latest_slot_us (ignored when waiting is 0), should claim again
 * at now_us: while the schedule in Redis still runs ahead of now. A claim
 * after its last slot restarts it at Redis's now, and the time between is
 * lost to the rate; so when late departures leave many jobs waiting,
 * claims still go by time (up to SL_CLAIM_MAX_WAITING). */
bool sl_claim_running_low(size_t waiting, int64_t latest_slot_us, int64_t now_us);

/* Whether a tenant holding `waiting` jobs has room to claim more. */
bool sl_claim_has_room(size_t waiting);

/* Whether the endpoint cannot keep up: all of concurrency busy with
 * in_flight requests, and the head job (slot head_slot_us) overdue by more
 * than SL_SATURATED_AFTER_US at now_us. More claims would then only make
 * jobs wait under lease; they wait in the queue instead, and claims resume
 * as the backlog drains. Never true while in_flight < concurrency: the
 * caller need not read the clock then. */
bool sl_claim_saturated(size_t in_flight, size_t concurrency, int64_t head_slot_us,
                        int64_t now_us);

/* ---- departures ---- */

/* Whether the head job (slot slot_us) of a tenant paced by p under rules r
 * may leave at due.now_us, with `due` waiting (pacing.h; a job's slot has
 * come at due.now_us + SL_SEND_EARLY_US): at its slot (a timer may fire a
 * hair early: SL_SEND_EARLY_US) and as the pace allows (exactly). */
bool sl_departure_allowed(int64_t slot_us, const sl_pace *p, const sl_pace_rules *r,
                          sl_pace_due due);
/* When that head job leaves: the later of its slot and what the pace allows. */
int64_t sl_departure_at(int64_t slot_us, const sl_pace *p, const sl_pace_rules *r, sl_pace_due due);
/* How long the departure timer of a tenant whose slots are interval_us
 * apart waits at now_us for a departure at departure_us: until then, but
 * SL_WAKE_EVERY_US at least where the interval is shorter than that. */
int64_t sl_departure_wait_us(int64_t departure_us, int64_t now_us, int64_t interval_us);

/* Whether a request that may take timeout_us, sent at now_us, could
 * outlive its job's lease (ending at lease_end_us on this host's clock):
 * then the job goes back instead, since once the lease is gone another
 * worker may claim and send it too. */
bool sl_claim_lease_too_short(int64_t lease_end_us, int64_t timeout_us, int64_t now_us);

#endif
