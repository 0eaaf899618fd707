/* pacing.c - see pacing.h. */
#include "job/pacing.h"

#include <stdlib.h>

#define NS_PER_US 1000
#define WINDOW_FLOOR_NS 100000000 /* W is 100 ms at least */
#define WINDOW_INTERVALS 10       /* ... and 10 intervals */
/* A wake-up up to 2 ms late (1% of this 2-core machine's wake-ups come
 * about 1 ms late, bench/RESULTS.md) sends what it finds due at once and
 * loses nothing; the log keeps the bound whatever this is. */
#define TOLERANCE_NS 2000000
/* At most this many marks in a log: one per departure up to 40,000/s
 * (W of 100 ms), one per few departures above, which leaves a few
 * departures of room unused (0.05% of the bound). */
#define LOG_MARKS 4096
/* A process is in a fleet while the schedule gave others slots between
 * its own this recently: longer than a claim's lookahead (SL_CLAIM_*), so
 * that it stays in one between its claims. */
#define FLEET_MEMORY_WINDOWS 10

/* a / b rounded up, for any sign of a (b > 0): C rounds toward zero. */
static int64_t ceil_div(int64_t a, int64_t b)
{
    return a / b + (a % b > 0);
}

static int64_t max64(int64_t a, int64_t b)
{
    return a > b ? a : b;
}

static int64_t min64(int64_t a, int64_t b)
{
    return a < b ? a : b;
}

/* a / b rounded down, for any sign of a (b > 0). */
static int64_t floor_div(int64_t a, int64_t b)
{
    return a / b - (a % b < 0);
}

/* Members on time owe a job from SL_PACE_EARLY_US before its slot to
 * SL_PACE_FLEET_LATE_US after it: this span of the slots' grid. */
#define ON_TIME_NS ((SL_PACE_EARLY_US + SL_PACE_FLEET_LATE_US) * NS_PER_US)

/* How long a job of this process may be owed before it counts in the
 * fleet's rule (pacing.h): where members on time owe a job for less than
 * an interval, one of this process's owed for less than the rest of the
 * interval cannot be owed beside any other (the slots are an interval
 * apart); else any job owed can be, and it counts once owed longer than a
 * member on time would owe it. */
static int64_t fleet_fresh_ns(int64_t interval_ns)
{
    return ON_TIME_NS <= interval_ns ? interval_ns - SL_PACE_EARLY_US * NS_PER_US
                                     : SL_PACE_FLEET_LATE_US * NS_PER_US;
}

/* The fleet's slack (pacing.h): the bound, less the most slots of the
 * schedule in a window W (half-open), less the most jobs owed at once
 * that do not count (by members on time, or for less than fleet_fresh_ns:
 * those of an ON_TIME_NS span of the grid), less 1 (the job leaving); -1
 * when there is no room.
 * Slots are rounded to the microsecond on the schedule, so where the
 * interval is not a whole number of them a span may hold one more. */
static int64_t fleet_slack_for(int64_t rate_milli, int64_t interval_ns, int64_t window_us,
                               int64_t most)
{
    bool whole = INT64_C(1000000000000) % rate_milli == 0 && interval_ns % NS_PER_US == 0;
    int64_t rounding_ns = whole ? 0 : NS_PER_US;
    int64_t slots = ceil_div(window_us * NS_PER_US + rounding_ns, interval_ns);
    int64_t on_time =
        ON_TIME_NS <= interval_ns ? 1 : ceil_div(ON_TIME_NS + rounding_ns, interval_ns);
    /* -1 at least: a late member may always keep its level, one job for
     * each slot of its own that comes (a window of W, rounded up to the
     * microsecond, may hold as many slots as the bound) */
    return max64(most - slots - on_time - 1, -1);
}

sl_pace_rules sl_pace_rules_for(int64_t rate_milli)
{
    /* 1/rate in ns is 1e12 / rate_milli; 10 of them pass 100 ms below 100/s */
    int64_t ten_intervals_ns = ceil_div(WINDOW_INTERVALS * INT64_C(1000000000000), rate_milli);
    bool long_intervals = ten_intervals_ns >= WINDOW_FLOOR_NS;
    int64_t window_ns = long_intervals ? ten_intervals_ns : WINDOW_FLOOR_NS;
    /* floor(1.02 x rate x W) + 1: 10.2 intervals, or 0.102 s x rate */
    int64_t most = long_intervals ? 11 : 102 * rate_milli / 1000000 + 1;
    /* no more than 2% above the rate */
    int64_t gap_ns = ceil_div(INT64_C(100000000000000), 102 * rate_milli);
    /* `most` + 1 departures so paced span `most` gaps less the tolerance:
     * W with this one, so up to 100/s the pace alone keeps the bound */
    int64_t exact_ns = most * gap_ns - window_ns;
    int64_t interval_ns = INT64_C(1000000000000) / rate_milli;
    int64_t window_us = ceil_div(window_ns, NS_PER_US);
    return (sl_pace_rules){
        .window_us = window_us,
        .most_in_window = most,
        .gap_ns = gap_ns,
        .tolerance_ns = long_intervals ? exact_ns : max64(exact_ns, TOLERANCE_NS),
        .interval_ns = interval_ns,
        .fleet_slack = fleet_slack_for(rate_milli, interval_ns, window_us, most),
        .fleet_fresh_us = ceil_div(fleet_fresh_ns(interval_ns), NS_PER_US),
        .fleet_gap_us = ceil_div(3 * interval_ns, 2 * NS_PER_US),
    };
}

bool sl_pace_reset(sl_pace *p, const sl_pace_rules *r)
{
    if (p->marks && p->most == r->most_in_window && p->window_us == r->window_us)
        return true;
    int64_t every = ceil_div(r->most_in_window, LOG_MARKS);
    /* the marks from the one `most` departures back to the latest */
    size_t cap = (size_t)(r->most_in_window / every + 2);
    int64_t *marks = malloc(cap * sizeof *marks);
    if (!marks)
        return false;
    free(p->marks);
    p->marks = marks;
    p->cap = cap;
    p->every = every;
    p->most = r->most_in_window;
    p->window_us = r->window_us;
    p->departed = 0;
    p->bucket_us = ceil_div(r->window_us, SL_PACE_BUCKETS - 1);
    if (!p->started)
        p->fleet_until_us = INT64_MIN;
    for (size_t i = 0; i < SL_PACE_BUCKETS; i++)
        p->buckets[i] = (sl_pace_bucket){.index = 0, .most_level = 0}; /* 1970: long ago */
    for (size_t i = 0; i < SL_PACE_TURNS; i++)
        p->turn_periods[i] = INT64_MIN; /* periods are cut from the window: new ones */
    return true;
}

void sl_pace_free(sl_pace *p)
{
    free(p->marks);
    *p = (sl_pace){0};
}

/* When the log lets the next departure go: once the departure `most`
 * back (or, with a mark every few, the one before it) is W ago. */
static int64_t log_allows_at(const sl_pace *p)
{
    if (!p->marks || p->departed < p->most)
        return INT64_MIN;
    int64_t k = ceil_div(p->departed - p->most, p->every);
    return p->marks[(size_t)k % p->cap] + p->window_us;
}

/* The fleet's turns (pacing.h): periods of 1.5 W on the schedule's clock,
 * a turn the first W/2 of one. */
static int64_t turn_period_us(const sl_pace_rules *r)
{
    return r->window_us + r->window_us / 2;
}

/* Where in its turn a period's draw lies: a hash of the period, so that
 * a fleet whose claims fall into a steady pattern still gives each member
 * turns as it holds slots, not always to the same one. */
static int64_t turn_draw_us(const sl_pace_rules *r, int64_t period)
{
    uint64_t h = (uint64_t)period * UINT64_C(0x9E3779B97F4A7C15);
    return (int64_t)((h >> 32) % (uint64_t)(r->window_us / 2));
}

int64_t sl_pace_turn_drawn_at(const sl_pace_rules *r, int64_t at_us)
{
    int64_t period = floor_div(at_us, turn_period_us(r));
    return period * turn_period_us(r) + turn_draw_us(r, period);
}

/* Gives p the turn of slot_us's period if slot_us is the period's first
 * slot from its draw on. Slots are at least the interval, rounded down to
 * the microsecond, apart: only one can lie that close after the draw (and
 * when the rounding leaves none there, nobody takes that turn). The draw
 * lies in the turn, and slots are claimed up to a lookahead (50 ms or
 * more) before they come: the owner knows of its turn as it begins. */
static void turn_note(sl_pace *p, const sl_pace_rules *r, int64_t slot_us, int64_t local_slot_us)
{
    int64_t period = floor_div(slot_us, turn_period_us(r));
    int64_t begins_us = period * turn_period_us(r);
    int64_t draw_us = sl_pace_turn_drawn_at(r, slot_us);
    if (slot_us < draw_us || slot_us - r->interval_ns / NS_PER_US >= draw_us)
        return;
    size_t i = (size_t)(period % SL_PACE_TURNS + SL_PACE_TURNS) % SL_PACE_TURNS;
    p->turn_periods[i] = period;
    p->turns[i] = begins_us + (local_slot_us - slot_us);
}

/* The slack for a level of the debt noted at any time in [from_us,
 * until_us): a departure must leave no level of the last W above what it
 * owes by more than this (pacing.h). Each level stands for the windows W
 * that start then: the fleet's slack where they meet a turn of p's (no
 * other member's turn can lie in one), -1 where they do not. */
static int64_t slack_for(const sl_pace *p, const sl_pace_rules *r, int64_t from_us,
                         int64_t until_us)
{
    for (size_t i = 0; i < SL_PACE_TURNS; i++) {
        if (p->turn_periods[i] == INT64_MIN)
            continue;
        int64_t turn_from = p->turns[i] + SL_PACE_TURN_GUARD_US;
        int64_t turn_until = p->turns[i] + r->window_us / 2 - SL_PACE_TURN_GUARD_US;
        if (from_us > turn_from - p->window_us && until_us <= turn_until)
            return r->fleet_slack;
    }
    return -1;
}

/* After now_us, when the windows W that start then first meet a turn of
 * p's it knows of (INT64_MAX: none): the slack grows then. */
static int64_t next_turn_at(const sl_pace *p, int64_t now_us)
{
    int64_t next = INT64_MAX;
    for (size_t i = 0; i < SL_PACE_TURNS; i++) {
        int64_t at = p->turns[i] + SL_PACE_TURN_GUARD_US - p->window_us + 1;
        if (p->turn_periods[i] != INT64_MIN && at > now_us)
            next = min64(next, at);
    }
    return next;
}

void sl_pace_claimed(sl_pace *p, const sl_pace_rules *r, int64_t previous_us,
                     int64_t claim_now_us, int64_t slot_us, int64_t local_slot_us)
{
    if (!p->marks)
        return;
    if (r->fleet_slack >= 0)
        turn_note(p, r, slot_us, local_slot_us);
    int64_t from = previous_us != INT64_MIN ? previous_us : p->started ? p->slot_us : claim_now_us;
    /* More than half an interval past the next slot (they are rounded to
     * the microsecond): a slot or more of others' between; and past the
     * claim's now, or the schedule ran dry and restarted at now (an idle
     * tenant, or claims that fell behind: not a fleet). */
    if (slot_us - from < r->fleet_gap_us || slot_us - claim_now_us < r->fleet_gap_us)
        return;
    /* Others hold the slots between (or a job handed back left its slot
     * unused: a lone process then keeps the fleet's rule for 10 W, which
     * slows its catch-up, never sends a job early). */
    p->fleet_until_us =
        max64(p->fleet_until_us, local_slot_us + FLEET_MEMORY_WINDOWS * p->window_us);
}

/* Since when the level of the debt at due.now_us has stood, at most: the
 * debt only grows between departures (its own slots come), so the level
 * now bounds it at every time since the last departure, and stands for
 * the windows W that start then too (while a whole machine stalls no
 * departure notes a level). Before the oldest job owed counted in it,
 * nothing it owes now did. */
static int64_t level_since(const sl_pace *p, const sl_pace_rules *r, sl_pace_due due)
{
    int64_t oldest = due.now_us - p->window_us - p->bucket_us; /* the buckets remember no more */
    if (p->started)
        oldest = max64(oldest, p->departed_us + 1);
    if (due.oldest_us > 0)
        oldest = max64(oldest, due.oldest_us + r->fleet_fresh_us);
    return min64(oldest, due.now_us);
}

/* When the fleet's rule lets a job go with `due` waiting: once no level of
 * the debt in the last W is above due.count + its slack (slack_for). The
 * level now falls only when a slot of its own comes (due.next_us; with
 * none claimed yet, its next claim's reply wakes the tenant: W is only a
 * bound), and the slack grows W before a turn of its own. INT64_MIN: at
 * once. */
static int64_t fleet_rule_at(const sl_pace *p, const sl_pace_rules *r, sl_pace_due due)
{
    if (!p->marks || due.now_us >= p->fleet_until_us || due.count == 0)
        return INT64_MIN;
    int64_t next_us = min64(due.next_us, due.now_us + p->window_us);
    if (r->fleet_slack >= 0)
        next_us = min64(next_us, next_turn_at(p, due.now_us));
    if (due.stale > due.count + slack_for(p, r, level_since(p, r, due), due.now_us + 1))
        return next_us;
    int64_t at = INT64_MIN;
    for (size_t i = 0; i < SL_PACE_BUCKETS; i++) {
        const sl_pace_bucket *b = &p->buckets[i];
        int64_t from_us = b->index * p->bucket_us;
        if (b->most_level > due.count + slack_for(p, r, from_us, from_us + p->bucket_us))
            at = max64(at, from_us + p->bucket_us + p->window_us);
    }
    return at == INT64_MIN ? at : min64(at, next_us);
}

/* The fleet's backlog is over and no slot of its own is to come: nobody
 * claims, so nobody owns turns, and a level of debt could fall no more. */
static bool backlog_over(sl_pace_due due)
{
    return due.next_us == INT64_MAX && !due.backlog;
}

/* The fleet's rule, but where the backlog is over the jobs go as if alone:
 * what a process does whose owed jobs could not get new slots
 * (sl_pace_wants_slots), so that they do not wait out the rule, a level
 * each W. */
static int64_t fleet_allows_at(const sl_pace *p, const sl_pace_rules *r, sl_pace_due due)
{
    return backlog_over(due) ? INT64_MIN : fleet_rule_at(p, r, due);
}

bool sl_pace_wants_slots(const sl_pace *p, const sl_pace_rules *r, sl_pace_due due)
{
    return backlog_over(due) && fleet_rule_at(p, r, due) > due.now_us;
}

void sl_pace_slots_renewed(sl_pace *p)
{
    for (size_t i = 0; i < SL_PACE_BUCKETS; i++)
        p->buckets[i].most_level = 0;
}

int64_t sl_pace_allows_at(const sl_pace *p, const sl_pace_rules *r, sl_pace_due due)
{
    /* Before its first departure nothing of its own crowds the stream,
     * but in a fleet a first job that left late would lower its debt as
     * any other: the fleet's rule holds it too (the members of a fleet
     * that start late together would each send one beyond the bound). */
    if (!p->started)
        return fleet_allows_at(p, r, due);
    /* rounded up: a microsecond early could break the bound */
    int64_t at = max64(ceil_div(p->due_ns - r->tolerance_ns, NS_PER_US), log_allows_at(p));
    return max64(at, fleet_allows_at(p, r, due));
}

/* Remembers the level of debt (the jobs owed for fleet_fresh_us or more)
 * before a departure at departed_us, in the bucket of that time. */
static void bucket_note(sl_pace *p, int64_t departed_us, int64_t level)
{
    int64_t index = floor_div(departed_us, p->bucket_us);
    sl_pace_bucket *b = &p->buckets[(size_t)(index % SL_PACE_BUCKETS + SL_PACE_BUCKETS) %
                                    SL_PACE_BUCKETS];
    if (b->index != index)
        *b = (sl_pace_bucket){.index = index, .most_level = level};
    else if (level > b->most_level)
        b->most_level = level;
}

void sl_pace_note(sl_pace *p, const sl_pace_rules *r, int64_t slot_us, sl_pace_due due)
{
    int64_t departed_us = due.now_us;
    /* the level before it stood since the last departure (level_since):
     * each bucket of that time remembers it, the departure's own too */
    if (p->marks) {
        for (int64_t at = level_since(p, r, due); at < departed_us; at += p->bucket_us)
            bucket_note(p, at, due.stale);
        bucket_note(p, departed_us, due.stale);
    }
    p->departed_us = departed_us;
    if (!p->started || slot_us > p->slot_us)
        p->slot_us = slot_us;
    int64_t departed_ns = departed_us * NS_PER_US;
    /* A departure after its due time moves the pace on from when it left:
     * a late wake-up beyond the tolerance slows the catch-up (the slots
     * keep the time owed), it never makes room for a burst. */
    int64_t from = p->started && p->due_ns > departed_ns ? p->due_ns : departed_ns;
    p->due_ns = from + r->gap_ns;
    p->started = true;
    if (p->marks) {
        if (p->departed % p->every == 0)
            p->marks[(size_t)(p->departed / p->every) % p->cap] = departed_us;
        p->departed++;
    }
}

int64_t sl_pace_most_in(const sl_pace_rules *r, int64_t window_us)
{
    /* k + 1 departures span k gaps less the tolerance at least; they fit
     * in a half-open window only if that is shorter than it. The log
     * holds any window of W to the bound. */
    int64_t paced = ceil_div(window_us * NS_PER_US + r->tolerance_ns, r->gap_ns);
    int64_t logged = ceil_div(window_us, r->window_us) * r->most_in_window;
    return paced < logged ? paced : logged;
}

int sl_pace_most_in_10_intervals(int64_t interval_us)
{
    int64_t rate_milli = (INT64_C(1000000000) + interval_us / 2) / interval_us;
    sl_pace_rules r = sl_pace_rules_for(rate_milli > 0 ? rate_milli : 1);
    return (int)sl_pace_most_in(&r, WINDOW_INTERVALS * interval_us);
}
