/* pacing.c - see pacing.h. */
#include "pacing.h"

#define TIMER_SLACK_US 150 /* what timer lateness may take from a gap here */

/* The least gap between departures: four fifths of an interval, leaving at
 * least TIMER_SLACK_US, or else lateness would add up from job to job at
 * short intervals (below 150 us only the window rule bounds bursts). */
static int64_t least_gap(int64_t interval_us)
{
    int64_t room = interval_us / 5 > TIMER_SLACK_US ? interval_us / 5 : TIMER_SLACK_US;
    return interval_us > room ? interval_us - room : 0;
}

int64_t sl_pace_allows_at(const sl_pace *p, int64_t interval_us)
{
    if (p->count == 0)
        return INT64_MIN;
    int newest = (p->next + SL_PACE_JOBS - 1) % SL_PACE_JOBS;
    int64_t at = p->departed[newest] + least_gap(interval_us);
    if (p->count == SL_PACE_JOBS) {
        int64_t window = p->departed[p->next] + 10 * interval_us;
        if (window > at)
            at = window;
    }
    return at;
}

void sl_pace_note(sl_pace *p, int64_t departed_us)
{
    p->departed[p->next] = departed_us;
    p->next = (p->next + 1) % SL_PACE_JOBS;
    if (p->count < SL_PACE_JOBS)
        p->count++;
}
