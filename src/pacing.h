/* pacing.h - how fast a late tenant may catch up with its schedule.
 *
 * Slots are spaced by the Redis schedule, but when this process stalled (a
 * busy CPU, a slow reply) several slots are already past, and the late jobs
 * must not leave in a burst. The rules look at this process's own recent
 * departures and their slots, so they hold for one process alone (slots
 * one interval apart) and for each process of a fleet (its own slots a few
 * intervals apart, the others' in between), and they leave room for timer
 * lateness, so they never slow a process that keeps its schedule:
 *   - window: 11 departures span at least 10/11 of their slots' span (so at
 *     most 11 departures in any 10 intervals, catching up at most 10% fast);
 *   - gap: a departure follows the previous one by its slot gap less a
 *     fifth (at least 150 us of slack for timer lateness).
 * Pure: times are passed in, in microseconds. Only differences of slots
 * are used, so slots may be on another clock than departures (Redis's:
 * their spacing is exact there). */
#ifndef SLUICE_PACING_H
#define SLUICE_PACING_H

#include <stdint.h>

#define SL_PACE_JOBS 11 /* departures remembered: the window rule's span */

typedef struct sl_pace {
    int64_t departed[SL_PACE_JOBS]; /* a ring of the last departures */
    int64_t slot[SL_PACE_JOBS];     /* and their slots */
    int next;  /* the oldest entry, overwritten next */
    int count; /* entries filled, up to SL_PACE_JOBS */
} sl_pace;

/* The earliest departure time of a job with slot slot_us, given the
 * departures noted so far (the job still never leaves before its slot: the
 * caller's rule). A zeroed sl_pace is empty. */
int64_t sl_pace_allows_at(const sl_pace *p, int64_t slot_us);

/* Records that a job with slot slot_us left at departed_us. */
void sl_pace_note(sl_pace *p, int64_t slot_us, int64_t departed_us);

#endif
