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
