/* worker_policy.c - see worker_policy.h. */
#include "daemon/worker_policy.h"

sl_drain_verdict sl_drain_check(bool idle, bool http_alive, int64_t deadline_us, int64_t now_us)
{
    if (idle)
        return (sl_drain_verdict){.done = true};
    return (sl_drain_verdict){
        .hand_back = http_alive && now_us > deadline_us,
        .give_up = now_us > deadline_us + SL_ACK_FLUSH_AFTER_GRACE_US,
    };
}

bool sl_discover_on_tick(unsigned *ticks, bool notified)
{
    return !notified || ++*ticks % SL_DISCOVER_NOTIFIED_EVERY_TICKS == 0;
}

unsigned sl_discover_next_tick(void)
{
    return SL_DISCOVER_NOTIFIED_EVERY_TICKS - 1;
}

bool sl_forget_due(bool idle, int64_t busy_at_us, int64_t forget_after_us, int64_t now_us)
{
    return idle && now_us - busy_at_us >= forget_after_us;
}

bool sl_discover_allowed(int64_t discovered, int64_t max)
{
    return discovered < max;
}

bool sl_discover_cap_log_due(int64_t *last_log_us, int64_t now_us)
{
    if (*last_log_us != 0 && now_us - *last_log_us < SL_DISCOVER_CAP_LOG_EVERY_US)
        return false;
    *last_log_us = now_us;
    return true;
}

bool sl_workers_alive(const unsigned *beats, unsigned *last, const bool *finished, size_t n)
{
    bool alive = true;
    for (size_t i = 0; i < n; i++) {
        if (!finished[i] && beats[i] == last[i])
            alive = false;
        last[i] = beats[i];
    }
    return alive;
}

unsigned sl_oldest_generation(unsigned current, const unsigned *generations, size_t n)
{
    unsigned oldest = current;
    for (size_t i = 0; i < n; i++)
        if (generations[i] < oldest)
            oldest = generations[i];
    return oldest;
}
