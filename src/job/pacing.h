/* pacing.h - how fast a late tenant may catch up with its schedule.
 *
 * Slots are spaced by the Redis schedule, but when this process stalled (a
 * busy CPU, a slow reply) several slots are already past, and the late jobs
 * must not leave in a burst. A tenant that keeps its schedule is never
 * slowed; a late one catches up at most 10% faster than its rate (4% at
 * least):
 *   - a departure counts at the time it was allowed (by the pace, or its
 *     slot if later; or when it left, if a timer fired a hair early),
 *     unless it left more than a slack later: then where it left, less the
 *     slack. Lateness within the slack is forgiven, and a longer stall is
 *     caught up at the pace, not at once;
 *   - the next departure is allowed a least gap after the last counted one.
 * Where an interval is 300 us or more (rates up to 3,333/s) the slack is
 * 150 us or a fifth of an interval, whichever is more (so a departure late
 * by that much does not hold the next one off its slot), and eleven gaps
 * span ten intervals and the slack: never more than 11 departures in any
 * 10 intervals. Shorter intervals cannot keep that
 * on a busy host: with Redis and the endpoint on the same 2 cores, 1% of a
 * sleeping thread's wake-ups come about 1 ms late (bench/RESULTS.md, the
 * stall probe), 20 intervals at 20,000/s, and with each lateness counted
 * as a loss the tenant ran 4 to 10% slow. There the slack is 2 ms, so
 * what a late wake-up finds overdue (up to 2 ms of jobs) leaves at once,
 * and the least gap is 10/11 of an interval.
 * This holds for one process. In a fleet each process paces only its own
 * departures, so a stalled member catching up can still crowd the merged
 * stream (measured in bench/RESULTS.md): pacing by a member's own slots
 * instead was tried and throttled a process that fell behind at full speed,
 * where each claim restarts the schedule at Redis's now.
 * Pure: times are passed in, microseconds on one clock. */
#ifndef SLUICE_PACING_H
#define SLUICE_PACING_H

#include <stdbool.h>
#include <stdint.h>

typedef struct sl_pace {
    int64_t counted; /* the time the last departure counts at */
    bool started;    /* a departure was noted */
} sl_pace;

/* The earliest departure time of the next job of a tenant whose slots are
 * interval_us apart (a job still never leaves before its slot: the
 * caller's rule). A zeroed sl_pace allows any time. */
int64_t sl_pace_allows_at(const sl_pace *p, int64_t interval_us);

/* Records a departure at departed_us of a job of a tenant whose slots are
 * interval_us apart, which was allowed (by the pace and its slot) at
 * allowed_us. */
void sl_pace_note(sl_pace *p, int64_t interval_us, int64_t allowed_us, int64_t departed_us);

/* The most departures of a tenant so paced in any 10 intervals: 11 where
 * an interval is 300 us or more, 55 at 20,000/s. */
int sl_pace_most_in_10_intervals(int64_t interval_us);

#endif
