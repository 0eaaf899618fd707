/* worker_policy.h - a worker thread's own decisions, apart from its
 * tenants': when a drain is over (or given up), which ticks of the
 * discovery timer scan Redis for new tenants, when a discovered tenant is
 * forgotten and how many may be, and which configurations it still uses.
 * Pure: times are passed in (microseconds: the drain on this host's
 * monotonic clock, the rest on its CLOCK_REALTIME). */
#ifndef SLUICE_WORKER_POLICY_H
#define SLUICE_WORKER_POLICY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* After the grace period, acks get this long to be confirmed: a busy
 * Redis answers within it, and a dead one is not worth waiting for
 * (leases expire and the jobs are claimed again). */
#define SL_ACK_FLUSH_AFTER_GRACE_US 2000000
/* With keyspace notifications a push names its tenant at once, so the
 * scan is only a safety net (for pushes made while unsubscribed): every
 * 30 ticks of the discovery timer. */
#define SL_DISCOVER_NOTIFIED_EVERY_TICKS 30

/* What a drain does at one check. */
typedef struct sl_drain_verdict {
    bool done;      /* nothing under way: the loop may end, exit code 0 */
    bool hand_back; /* the grace period is over: free the HTTP client and
                       hand back the deliveries in flight */
    bool give_up;   /* the acks' extra time is over too: end, exit code 1 */
} sl_drain_verdict;

/* A drain check at now_us, with the grace period ending at deadline_us:
 * idle (no tenant holds a job or an ack, no scan is out), http_alive (the
 * HTTP client not yet freed). */
sl_drain_verdict sl_drain_check(bool idle, bool http_alive, int64_t deadline_us, int64_t now_us);

/* A tick of the discovery timer: whether to scan now. *ticks counts the
 * ticks seen while notified (advanced here); without notifications every
 * tick scans. */
bool sl_discover_on_tick(unsigned *ticks, bool notified);
/* The tick count that makes the next tick scan (notifications came on
 * again: pushes made meanwhile went unseen). */
unsigned sl_discover_next_tick(void);

/* A tenant found through the "*" template, at now_us: its keys may be
 * checked (and, if empty, the tenant forgotten) once it is idle (nothing
 * held, nothing pending) and no claim has found work for it since
 * busy_at_us for forget_after_us. */
bool sl_forget_due(bool idle, int64_t busy_at_us, int64_t forget_after_us, int64_t now_us);

/* Whether one more tenant may be discovered while discovered of them are
 * served in the whole process, at most max (max_discovered_tenants). */
bool sl_discover_allowed(int64_t discovered, int64_t max);

/* A tenant was refused at now_us by the cap: whether to log it, at most
 * once per SL_DISCOVER_CAP_LOG_EVERY_US (*last_log_us, 0 at first, is
 * advanced when it says yes). */
#define SL_DISCOVER_CAP_LOG_EVERY_US 60000000
bool sl_discover_cap_log_due(int64_t *last_log_us, int64_t now_us);

/* A tick of systemd's watchdog: whether every worker whose loop still
 * runs (finished[i] false) moved its heartbeat since the previous tick
 * (beats[i] now, last[i] then; last is updated). A worker that ended
 * (drained) is not stuck. */
bool sl_workers_alive(const unsigned *beats, unsigned *last, const bool *finished, size_t n);

/* The oldest configuration generation a worker still uses: its own
 * (current) and those its tenants' rules point into (generations[0..n)). */
unsigned sl_oldest_generation(unsigned current, const unsigned *generations, size_t n);

#endif
