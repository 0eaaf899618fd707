/* pacing.h - how fast a late tenant may catch up with its schedule.
 *
 * Slots are spaced exactly 1/rate apart by the Redis schedule, and a job
 * never leaves before its slot (the caller's rule). When this process
 * stalled (a busy CPU, a slow reply), slots are already past and the late
 * jobs must not leave in a burst; nor may the time be forgotten, or the
 * tenant's rate would fall short. The pace is what SPEC §4 measures:
 *   - in every window W = max(10 intervals, 100 ms) at most
 *     floor(1.02 x rate x W) + 1 departures (the window bound);
 *   - late jobs catch up at most 2% above the rate (1% at least), so
 *     lateness returns to 0: the slots never move, only how fast a late
 *     job may follow the previous departure.
 * It is a virtual scheduler (the GCRA of ATM cell pacing): each departure
 * moves the pace's due time one gap on from the later of its due time and
 * the departure; a job may leave up to a tolerance before the due time.
 * N + 1 departures then span at least N gaps less the tolerance, and the
 * gap and tolerance are chosen so that this is exactly W: the bound holds
 * however late any wake-up came. A wake-up late by less than the
 * tolerance loses nothing (what it finds due leaves at once, several jobs
 * per wake-up where intervals are short); one later than that slows the
 * catch-up, never the slots. The tolerance is 0.78 of an interval up to
 * 100/s (where W is 10 intervals), about one interval and at least 1 ms
 * above: the catch-up and the tolerance share the bound's 2% of W.
 * This holds for one process. In a fleet each process paces only its own
 * departures: a member catching up after a stall can crowd the merged
 * stream while the others keep their slots (measured in bench/RESULTS.md).
 * Pure: times are passed in, microseconds on one clock. */
#ifndef SLUICE_PACING_H
#define SLUICE_PACING_H

#include <stdbool.h>
#include <stdint.h>

/* A tenant's pace, from its rate alone (sl_pace_rules_for). */
typedef struct sl_pace_rules {
    int64_t window_us;      /* W = max(10 intervals, 100 ms), to the us below */
    int64_t most_in_window; /* floor(1.02 x rate x W) + 1 */
    int64_t gap_ns;         /* the least spacing of a catch-up: 1/(1.01..1.02 x rate) */
    int64_t tolerance_ns;   /* how far before its due time a departure may go */
} sl_pace_rules;

typedef struct sl_pace {
    int64_t due_ns; /* when the next departure is due on the pace */
    bool started;   /* a departure was noted */
} sl_pace;

/* The pace of a tenant of rate_milli (jobs per 1,000 s, > 0). */
sl_pace_rules sl_pace_rules_for(int64_t rate_milli);

/* The earliest departure time of the next job (a job still never leaves
 * before its slot: the caller's rule). A zeroed sl_pace allows any time
 * (INT64_MIN). */
int64_t sl_pace_allows_at(const sl_pace *p, const sl_pace_rules *r);

/* Records a departure at departed_us, no earlier than sl_pace_allows_at. */
void sl_pace_note(sl_pace *p, const sl_pace_rules *r, int64_t departed_us);

/* The most departures so paced in any window of window_us (half-open):
 * r->most_in_window in r->window_us. */
int64_t sl_pace_most_in(const sl_pace_rules *r, int64_t window_us);

/* The most departures in any 10 intervals of interval_us, the pace of the
 * rate with that interval (tests/test_daemon.c's bound). */
int sl_pace_most_in_10_intervals(int64_t interval_us);

#endif
