/* event_wait.c - see event_wait.h. */
#include "event_wait.h"

bool event_wait(struct event_base *base, const bool *flag, int timeout_ms)
{
    for (int waited = 0; waited < timeout_ms && !*flag; waited += 10)
        event_run_for(base, 10);
    return *flag;
}

void event_run_for(struct event_base *base, int ms)
{
    struct timeval tv = {ms / 1000, (ms % 1000) * 1000};
    event_base_loopexit(base, &tv);
    event_base_dispatch(base);
}
