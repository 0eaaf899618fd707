/* pacing.c - see pacing.h. */
#include "pacing.h"

#define TIMER_SLACK_US 150 /* what timer lateness may take from a gap here */

/* The least gap after a departure whose slot was slot_gap before this one's:
 * four fifths of it, leaving at least TIMER_SLACK_US, or else lateness
 * would add up from job to job at short intervals. */
static int64_t least_gap(int64_t slot_gap)
{
    int64_t room = slot_gap / 5 > TIMER_SLACK_US ? slot_gap / 5 : TIMER_SLACK_US;
    return slot_gap > room ? slot_gap - room : 0;
}

int64_t sl_pace_allows_at(const sl_pace *p, int64_t slot_us)
{
    if (p->count == 0)
        return INT64_MIN;
    int newest = (p->next + SL_PACE_JOBS - 1) % SL_PACE_JOBS;
    int64_t at = p->departed[newest] + least_gap(slot_us - p->slot[newest]);
    if (p->count == SL_PACE_JOBS) {
        int oldest = p->next;
        int64_t window = p->departed[oldest] + (slot_us - p->slot[oldest]) * 10 / 11;
        if (window > at)
            at = window;
    }
    return at;
}

void sl_pace_note(sl_pace *p, int64_t slot_us, int64_t departed_us)
{
    p->departed[p->next] = departed_us;
    p->slot[p->next] = slot_us;
    p->next = (p->next + 1) % SL_PACE_JOBS;
    if (p->count < SL_PACE_JOBS)
        p->count++;
}
