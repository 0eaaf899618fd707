/* pacing.c - see pacing.h. */
#include "job/pacing.h"

#define TIMER_SLACK_US 150  /* lateness forgiven where an interval has room for it */
#define SHORT_SLACK_US 2000 /* lateness forgiven at shorter intervals */

/* Whether timer lateness of TIMER_SLACK_US fits in half an interval: then
 * 11 departures in 10 intervals can be kept exactly, and still caught up. */
static bool room_for_timers(int64_t interval_us)
{
    return interval_us >= 2 * TIMER_SLACK_US;
}

/* At long intervals a fifth of one: a departure late by that much does not
 * hold the next, which keeps its slot (a stall spoils one gap, not three). */
static int64_t slack(int64_t interval_us)
{
    if (!room_for_timers(interval_us))
        return SHORT_SLACK_US;
    return interval_us / 5 > TIMER_SLACK_US ? interval_us / 5 : TIMER_SLACK_US;
}

/* Eleven gaps span ten intervals and the slack (rounded up): 12 departures
 * then never fit in 10 intervals however the slack falls. At short
 * intervals they span ten intervals: the most catch-up (10%) and no bound. */
static int64_t least_gap(int64_t interval_us)
{
    int64_t room = room_for_timers(interval_us) ? slack(interval_us) : 0;
    return (10 * interval_us + room + 10) / 11;
}

int64_t sl_pace_allows_at(const sl_pace *p, int64_t interval_us)
{
    return p->started ? p->counted + least_gap(interval_us) : INT64_MIN;
}

void sl_pace_note(sl_pace *p, int64_t interval_us, int64_t allowed_us, int64_t departed_us)
{
    /* never after it left (a timer may release a job a hair early) */
    int64_t counted = allowed_us < departed_us ? allowed_us : departed_us;
    int64_t stall_end = departed_us - slack(interval_us);
    p->counted = counted > stall_end ? counted : stall_end;
    p->started = true;
}

int sl_pace_most_in_10_intervals(int64_t interval_us)
{
    /* Departures counted least_gap apart, each leaving up to the slack
     * after it counts: a window of 10 intervals holds those counted within
     * 10 intervals and the slack. */
    int64_t span = 10 * interval_us + slack(interval_us), gap = least_gap(interval_us);
    return (int)((span + gap - 1) / gap);
}
