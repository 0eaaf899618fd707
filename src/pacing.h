/* pacing.h - how fast a late tenant may catch up with its schedule.
 *
 * Slots are spaced by the Redis schedule, but when this process stalled (a
 * busy CPU, a slow reply) several slots are already past, and the late jobs
 * must not leave in a burst. Two rules look at this process's own recent
 * departures and leave room for timer lateness, so they never slow a
 * process that keeps its schedule:
 *   - window: at most 11 departures in any 10 intervals (catching up at
 *     most 10% faster than the rate);
 *   - gap: a departure follows the previous one by at least four fifths of
 *     an interval (with at least 150 us of slack for timer lateness).
 * They hold for one process. In a fleet each process paces only its own
 * departures, so a stalled member catching up can still crowd the merged
 * stream (measured in bench/RESULTS.md): pacing by a member's own slots
 * instead was tried and throttled a process that fell behind at full speed,
 * where each claim restarts the schedule at Redis's now.
 * Pure: times are passed in, microseconds on one clock. */
#ifndef SLUICE_PACING_H
#define SLUICE_PACING_H

#include <stdint.h>

#define SL_PACE_JOBS 11 /* departures remembered: the window rule's span */

typedef struct sl_pace {
    int64_t departed[SL_PACE_JOBS]; /* a ring of the last departures */
    int next;  /* the oldest entry, overwritten next */
    int count; /* entries filled, up to SL_PACE_JOBS */
} sl_pace;

/* The earliest departure time of the next job of a tenant whose slots are
 * interval_us apart, given the departures noted so far (a job still never
 * leaves before its slot: the caller's rule). A zeroed sl_pace is empty. */
int64_t sl_pace_allows_at(const sl_pace *p, int64_t interval_us);

/* Records a departure at departed_us. */
void sl_pace_note(sl_pace *p, int64_t departed_us);

#endif
