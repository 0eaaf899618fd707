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
 *
 * In a fleet the bound is on the merged departures, and each process
 * sees only its own: the others' slots lie between its own on the one
 * schedule, and they depart them on time while it catches up. So the
 * fleet's rule is about what a process owes. Its debt at a time x, D(x),
 * is how many of its jobs have their slot by x and have not left. The
 * merged departures in (a, a + W] are the schedule's slots there (S at
 * most) plus each member's D(a) - D(a + W): what a member sends beyond
 * its own slots in a window is what its debt fell. Members on time owe
 * at a only jobs whose slot came within SL_PACE_FLEET_LATE_US of it: 1
 * (the slots are an interval apart), or at high rates that many
 * intervals' worth (O). A late member keeps its debt level by sending one
 * job per slot of its own that comes; each job beyond that lowers the
 * level for good, in every window that starts before. So a process in a
 * fleet sends a job only if no level of its debt in the last W (before
 * each departure and now, counting only jobs owed long enough to be owed
 * beside another's: fleet_fresh_us) is above what it owes now by more
 * than the fleet's slack, floor(1.02 x rate x W) + 1 - S - O - 1. Its
 * catch-up spends the 2% of the merged stream, and while the others'
 * slots pass it waits for its own. Up to about 200/s that leaves nothing:
 * a member late by more than an interval less SL_PACE_FLEET_LATE_US
 * keeps that debt while the fleet's backlog lasts (the rate still holds:
 * the debt does not grow). A process is in a fleet while the schedule
 * gave others slots between its own in the last 10 W (sl_pace_claimed);
 * alone, the log and the pace above are exact, and the fleet's rule would
 * only slow it.
 * The slack assumes the others on time. When the whole machine stalls,
 * all are late at once, and each spending the slack would crowd the
 * merged stream (2 at 1,000/s: 105 in W). So members take turns: the
 * schedule's time is cut in periods of 1.5 W, and a period's turn is its
 * first W/2, owned by the one member that claimed the first slot from a
 * point drawn in it (the period's hash: d <= s < d + the interval,
 * rounded down; never two, and each member owns turns as it holds
 * slots). A level of the debt stands for the windows W that start with
 * it: those that meet a turn of this member's (less SL_PACE_TURN_GUARD_US
 * at each end, for the members' different estimates of Redis's clock)
 * may fall by the slack, the others by nothing (-1). No window meets two
 * members' turns, so the bound holds however many stall at once. A
 * fleet's catch-up is slower than a lone process's: slack + 1 jobs per
 * turn its member owns (at 1,000/s, 2 per 150 ms, shared by the members).
 * The debt only grows between departures, so the level at a departure
 * also stands for the windows that started since the last one (or since
 * the oldest job owed came due): a whole machine's stall notes no level.
 * When the backlog ends nobody claims, so nobody owns turns: a late
 * member then asks for new slots for what it owes (sl_pace_wants_slots)
 * and its jobs leave on the one schedule with the others'.
 * Pure: times are passed in, microseconds on one clock (the slots' gaps
 * on the schedule's own). */
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
    int64_t interval_ns;    /* 1/rate: the schedule's spacing of slots */
    int64_t fleet_slack;    /* in a fleet: the levels of debt allowed above what is owed */
    int64_t fleet_fresh_us; /* a job owed this long counts in the level */
    int64_t fleet_gap_us;   /* 1.5 intervals: claimed slots so far apart have others' between */
} sl_pace_rules;

/* A process of a fleet takes the others' departures to be at most this
 * late after their slots: their timers (1% of this machine's wake-ups come
 * 0.5 ms late, bench/RESULTS.md), and at high rates the jobs a wake-up
 * sends together (SL_WAKE_EVERY_US). Less than an interval at 1,000/s:
 * there, as at lower rates, members on time owe one job at a time. */
#define SL_PACE_FLEET_LATE_US 800
/* ... and never earlier than this before them (job/claim_policy.c checks
 * SL_SEND_EARLY_US against it). */
#define SL_PACE_EARLY_US 50

/* How far members' estimates of Redis's clock (daemon/redis_clock.c)
 * may differ: a turn is cut short by this at each end. */
#define SL_PACE_TURN_GUARD_US 1000

/* The turns a member owns that it remembers: a claim's lookahead reaches
 * fewer periods ahead (SL_CLAIM_*). */
#define SL_PACE_TURNS 4

/* The fleet rule's memory: the highest level of debt before a departure,
 * per W/8 of time (a departure is remembered for W to W + W/8). */
#define SL_PACE_BUCKETS 9

typedef struct sl_pace_bucket {
    int64_t index;    /* the departure time / bucket_us of this bucket */
    int64_t most_level; /* the highest level of debt before one of its departures */
} sl_pace_bucket;

typedef struct sl_pace {
    int64_t due_ns; /* when the next departure is due on the pace */
    bool started;   /* a departure was noted */
    /* The log (see sl_pace_reset): marks[k % cap] is when departure k x
     * every left, for the last most / every of them. */
    int64_t *marks; /* owned; NULL: no log, the bound unchecked */
    size_t cap;
    int64_t every, most, window_us; /* the bound the log keeps */
    int64_t departed;               /* departures noted since the log began */
    /* The fleet's rule (with the log only) */
    int64_t slot_us;           /* the schedule's slot of the last departure (started) */
    int64_t departed_us;       /* ... and when it left */
    int64_t fleet_until_us;    /* others' slots were seen: in a fleet until then */
    int64_t bucket_us;
    sl_pace_bucket buckets[SL_PACE_BUCKETS];
    /* the turns it owns: turns[period % SL_PACE_TURNS] is when the
     * period's turn begins on this host's clock, turn_periods[] which
     * period that is (INT64_MIN: none) */
    int64_t turns[SL_PACE_TURNS];
    int64_t turn_periods[SL_PACE_TURNS];
} sl_pace;

/* A tenant's waiting jobs at now_us, as a departure counts them. */
typedef struct sl_pace_due {
    int64_t now_us;
    int64_t count;   /* whose slot has come (the one to leave included) */
    int64_t stale;   /* of them, whose slot came rules.fleet_fresh_us ago or more */
    int64_t next_us; /* when the next one's slot comes; INT64_MAX: none claimed */
    int64_t oldest_us; /* when the oldest one's slot came (0: not known) */
    bool backlog;    /* the fleet may hold more slots to come: the queue had more at the
                      * last claim, or others' slots claimed before it drained */
} sl_pace_due;

/* The pace of a tenant of rate_milli (jobs per 1,000 s, > 0). */
sl_pace_rules sl_pace_rules_for(int64_t rate_milli);

/* Gives p (zeroed, or reset before) the log that keeps r's window bound;
 * a log of the same bound is kept as it is, and the catch-up's pace is
 * kept either way. False when out of memory: p unchanged. */
bool sl_pace_reset(sl_pace *p, const sl_pace_rules *r);

/* Frees p's log; p is then zeroed. */
void sl_pace_free(sl_pace *p);

/* The earliest departure time of the next job, with `due` waiting (a job
 * still never leaves before its slot: the caller's rule); later than
 * due.now_us when it may not leave then. Held by the fleet's rule, it is
 * no later than due.next_us, when the debt grows and the answer may
 * change. Before the first departure only the fleet's rule holds a job.
 * With the backlog over and no slot of its own to come, the fleet's rule
 * holds nothing: ask sl_pace_wants_slots first.
 * A zeroed sl_pace allows any time (INT64_MIN). */
int64_t sl_pace_allows_at(const sl_pace *p, const sl_pace_rules *r, sl_pace_due due);

/* Records the departure at due.now_us (no earlier than sl_pace_allows_at)
 * of the job of slot_us on the schedule's clock (Redis's: the gaps between
 * a process's slots are exact there, whatever this host's estimate of
 * Redis's clock did), `due` waiting, itself included. */
void sl_pace_note(sl_pace *p, const sl_pace_rules *r, int64_t slot_us, sl_pace_due due);

/* Notes the claim of the job of schedule slot slot_us (local_slot_us on
 * this host's clock), claimed at claim_now_us (both on Redis's clock),
 * after the job of slot previous_us (INT64_MIN: none waits; then after the
 * last departure, or before any, after the claim's now). A gap between
 * them while the schedule ran ahead of now holds others' slots: this
 * process is in a fleet. A period's first slot gives it that turn. */
void sl_pace_claimed(sl_pace *p, const sl_pace_rules *r, int64_t previous_us,
                     int64_t claim_now_us, int64_t slot_us, int64_t local_slot_us);

/* Whether the jobs this process owes should get new slots on the
 * schedule (redis/reslot.h): it is in a fleet, the fleet's backlog is
 * over, no slot of its own is to come, and the fleet's rule holds a job.
 * Nobody claims then, so nobody owns turns: its debt would stay, and
 * catching up alone beside the other late members would crowd the merged
 * departures. Given new slots (after every slot given before) its jobs
 * leave on the one schedule with the others'. Until they come, or if they
 * cannot, sl_pace_allows_at lets the jobs go as if alone. */
bool sl_pace_wants_slots(const sl_pace *p, const sl_pace_rules *r, sl_pace_due due);

/* Notes that the jobs this process owed were given new slots (each also
 * passed to sl_pace_claimed): the levels of debt noted before counted
 * jobs that are owed no more, and are forgotten. */
void sl_pace_slots_renewed(sl_pace *p);

/* The point drawn in the period (of the fleet's turns) that holds at_us,
 * on the schedule's clock: the member that claims the first slot from it
 * owns the period's turn. */
int64_t sl_pace_turn_drawn_at(const sl_pace_rules *r, int64_t at_us);

/* The most departures so paced (with the log) in any window of window_us
 * (half-open): r->most_in_window in r->window_us. */
int64_t sl_pace_most_in(const sl_pace_rules *r, int64_t window_us);

/* The most departures in any 10 intervals of interval_us, the pace of the
 * rate with that interval (tests/test_daemon.c's bound). */
int sl_pace_most_in_10_intervals(int64_t interval_us);

#endif
