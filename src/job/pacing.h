/* pacing.h - how fast a late tenant may catch up with its schedule.
 *
 * Slots are spaced exactly 1/rate apart by the Redis schedule, and a job
 * never leaves before its slot (the caller's rule). When this process
 * stalled (a busy CPU, a slow reply), slots are already past and the late
 * jobs must not leave in a burst; nor may the time be forgotten, or the
 * tenant's rate would fall short. The pace is what SPEC §4 measures:
 *   - in every window W = max(10 intervals, 100 ms) at most
 *     floor(1.02 x rate x W) + 1 departures (the window bound);
 *   - late jobs catch up at most 2% above the rate, so lateness returns
 *     to 0: the slots never move, only how fast a late
 *     job may follow the previous departure.
 * Two rules keep it, both pure:
 *   - a log of the tenant's last departures (one mark per departure up to
 *     40,000/s, one per few above): a job leaves only when the departure
 *     `most_in_window` before it is at least W ago. This is the bound,
 *     exactly, however late any wake-up came;
 *   - a virtual scheduler (the GCRA of ATM cell pacing) paces a catch-up
 *     at most 2% above the rate: each departure moves the pace's due time
 *     one gap on from the later of its due time and the departure, and a
 *     job may leave up to a tolerance before it. A late wake-up sends at
 *     once what the tolerance allows (several jobs per wake-up where the
 *     interval is shorter than a wake-up costs), never more; a wake-up
 *     later than that slows the catch-up, never the slots.
 * The tolerance is 2 ms above 100/s (about one interval where that is
 * more), 0.78 of an interval up to 100/s (where W is 10 intervals).
 * This holds for one process. In a fleet each process paces only its own
 * departures: a member catching up after a stall can crowd the merged
 * stream while the others keep their slots (measured in bench/RESULTS.md).
 * Pure: times are passed in, microseconds on one clock. */
#ifndef SLUICE_PACING_H
#define SLUICE_PACING_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* A tenant's pace, from its rate alone (sl_pace_rules_for). */
typedef struct sl_pace_rules {
    int64_t window_us;      /* W = max(10 intervals, 100 ms), to the us above */
    int64_t most_in_window; /* floor(1.02 x rate x W) + 1 */
    int64_t gap_ns;         /* the least spacing of a catch-up: 1/(1.02 x rate) */
    int64_t tolerance_ns;   /* how far before its due time a departure may go */
} sl_pace_rules;

typedef struct sl_pace {
    int64_t due_ns; /* when the next departure is due on the pace */
    bool started;   /* a departure was noted */
    /* The log (see sl_pace_reset): marks[k % cap] is when departure k x
     * every left, for the last most / every of them. */
    int64_t *marks; /* owned; NULL: no log, the bound unchecked */
    size_t cap;
    int64_t every, most, window_us; /* the bound the log keeps */
    int64_t departed;               /* departures noted since the log began */
} sl_pace;

/* The pace of a tenant of rate_milli (jobs per 1,000 s, > 0). */
sl_pace_rules sl_pace_rules_for(int64_t rate_milli);

/* Gives p (zeroed, or reset before) the log that keeps r's window bound;
 * a log of the same bound is kept as it is, and the catch-up's pace is
 * kept either way. False when out of memory: p unchanged. */
bool sl_pace_reset(sl_pace *p, const sl_pace_rules *r);

/* Frees p's log; p is then zeroed. */
void sl_pace_free(sl_pace *p);

/* The earliest departure time of the next job (a job still never leaves
 * before its slot: the caller's rule). A zeroed sl_pace allows any time
 * (INT64_MIN). */
int64_t sl_pace_allows_at(const sl_pace *p, const sl_pace_rules *r);

/* Records a departure at departed_us, no earlier than sl_pace_allows_at. */
void sl_pace_note(sl_pace *p, const sl_pace_rules *r, int64_t departed_us);

/* The most departures so paced (with the log) in any window of window_us
 * (half-open): r->most_in_window in r->window_us. */
int64_t sl_pace_most_in(const sl_pace_rules *r, int64_t window_us);

/* The most departures in any 10 intervals of interval_us, the pace of the
 * rate with that interval (tests/test_daemon.c's bound). */
int sl_pace_most_in_10_intervals(int64_t interval_us);

#endif
