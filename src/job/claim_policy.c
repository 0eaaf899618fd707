/* claim_policy.c - see claim_policy.h. */
#include "job/claim_policy.h"

#include "admission/admission.h"

/* The fleet's pace counts a job as owed from SL_PACE_EARLY_US before its
 * slot (job/pacing.h): no departure may come earlier. */
_Static_assert(SL_SEND_EARLY_US <= SL_PACE_EARLY_US, "a departure earlier than the pace allows for");

static int64_t clamp(int64_t v, int64_t low, int64_t high)
{
    return v < low ? low : v > high ? high : v;
}

int64_t sl_claim_interval_us(int64_t rate_milli)
{
    return SL_JOB / rate_milli;
}

int64_t sl_claim_lookahead_us(int64_t rate_milli)
{
    int64_t lookahead = SL_CLAIM_REFILL_US + SL_CLAIM_LOOKAHEAD_INTERVALS * SL_JOB / rate_milli;
    return lookahead < SL_CLAIM_LOOKAHEAD_MAX_US ? lookahead : SL_CLAIM_LOOKAHEAD_MAX_US;
}

int64_t sl_claim_backlog_until(bool queue_left, int64_t backlog_until_us, int64_t received_us,
                               int64_t rate_milli)
{
    if (queue_left)
        return INT64_MAX;
    /* slots are claimed only within a lookahead of the claim's now, and a
     * claim after the queue drained takes none */
    if (backlog_until_us == INT64_MAX)
        return received_us + sl_claim_lookahead_us(rate_milli);
    return backlog_until_us;
}

int64_t sl_claim_lease_us(int64_t timeout_ms)
{
    return timeout_ms * 1000 + SL_LEASE_MARGIN_US;
}

int64_t sl_ack_delay_us(int64_t rate_milli)
{
    return clamp(SL_BATCH_INTERVALS * SL_JOB / rate_milli, SL_ACK_DELAY_MIN_US,
                 SL_ACK_DELAY_MAX_US);
}

sl_claim_next sl_claim_after_reply(int64_t idle_ms, bool wake_pending, size_t job_count,
                                   int64_t next_us, int64_t now_us, bool notified)
{
    if (wake_pending) /* the reply may predate the push */
        return (sl_claim_next){0, SL_IDLE_MIN_MS};
    if (job_count == 0 && next_us == 0) { /* idle: poll, backing off */
        int64_t idle_max = notified ? SL_IDLE_NOTIFIED_MAX_MS : SL_IDLE_MAX_MS;
        return (sl_claim_next){idle_ms * 1000, idle_ms * 2 > idle_max ? idle_max : idle_ms * 2};
    }
    /* Jobs came, but the queue is empty now (next_us 0): look again
     * soon, at the shortest poll, since the tenant is not idle. */
    return (sl_claim_next){next_us == 0 ? SL_IDLE_MIN_MS * 1000 : next_us - now_us,
                           SL_IDLE_MIN_MS};
}

bool sl_claim_running_low(size_t waiting, int64_t latest_slot_us, int64_t now_us)
{
    return waiting < SL_CLAIM_MAX_WAITING / 2 || latest_slot_us - now_us < SL_CLAIM_REFILL_US;
}

bool sl_claim_has_room(size_t waiting)
{
    return waiting < SL_CLAIM_MAX_WAITING;
}

bool sl_claim_saturated(size_t in_flight, size_t concurrency, int64_t head_slot_us,
                        int64_t now_us)
{
    return in_flight >= concurrency && head_slot_us + SL_SATURATED_AFTER_US < now_us;
}

bool sl_departure_allowed(int64_t slot_us, const sl_pace *p, const sl_pace_rules *r,
                          sl_pace_due due)
{
    return slot_us <= due.now_us + SL_SEND_EARLY_US && sl_pace_allows_at(p, r, due) <= due.now_us;
}

int64_t sl_departure_at(int64_t slot_us, const sl_pace *p, const sl_pace_rules *r, sl_pace_due due)
{
    int64_t pace = sl_pace_allows_at(p, r, due);
    return slot_us > pace ? slot_us : pace;
}

int64_t sl_departure_wait_us(int64_t departure_us, int64_t now_us, int64_t interval_us)
{
    int64_t wait = departure_us - now_us;
    if (interval_us < SL_WAKE_EVERY_US && wait < SL_WAKE_EVERY_US)
        return SL_WAKE_EVERY_US;
    return wait;
}

bool sl_claim_lease_too_short(int64_t lease_end_us, int64_t timeout_us, int64_t now_us)
{
    return now_us + timeout_us >= lease_end_us;
}
