/* pacing.c - see pacing.h. */
#include "job/pacing.h"

#define NS_PER_US 1000
#define WINDOW_FLOOR_NS 100000000 /* W is 100 ms at least */
#define WINDOW_INTERVALS 10       /* ... and 10 intervals */
/* The tolerance is W/100 at least: a wake-up up to 1 ms late (1% of this
 * 2-core machine's wake-ups, bench/RESULTS.md) costs nothing at any rate
 * above 100/s, and what it finds due leaves at once; the catch-up stays
 * 1% or more above the rate (a 5 ms stall is made up within half a
 * second). The two share the bound's 2%: the gaps fill W less the
 * tolerance, so a larger one would slow the catch-up. */
#define TOLERANCE_PER_WINDOW 100

/* a / b rounded up, for any sign of a (b > 0): C rounds toward zero. */
static int64_t ceil_div(int64_t a, int64_t b)
{
    return a / b + (a % b > 0);
}

sl_pace_rules sl_pace_rules_for(int64_t rate_milli)
{
    /* 1/rate in ns is 1e12 / rate_milli; 10 of them pass 100 ms below 100/s */
    int64_t ten_intervals_ns = ceil_div(WINDOW_INTERVALS * INT64_C(1000000000000), rate_milli);
    bool long_intervals = ten_intervals_ns >= WINDOW_FLOOR_NS;
    int64_t window_ns = long_intervals ? ten_intervals_ns : WINDOW_FLOOR_NS;
    /* floor(1.02 x rate x W) + 1: 10.2 intervals, or 0.102 s x rate */
    int64_t most = long_intervals ? 11 : 102 * rate_milli / 1000000 + 1;
    /* The gap: no more than 2% above the rate, and short enough that `most`
     * of them span W and the least tolerance. */
    int64_t fastest_ns = ceil_div(INT64_C(100000000000000), 102 * rate_milli);
    int64_t fill_ns = ceil_div(window_ns + window_ns / TOLERANCE_PER_WINDOW, most);
    int64_t gap_ns = fastest_ns > fill_ns ? fastest_ns : fill_ns;
    return (sl_pace_rules){
        .window_us = window_ns / NS_PER_US,
        .most_in_window = most,
        .gap_ns = gap_ns,
        /* `most` + 1 departures span `most` gaps less this: W */
        .tolerance_ns = most * gap_ns - window_ns,
    };
}

int64_t sl_pace_allows_at(const sl_pace *p, const sl_pace_rules *r)
{
    if (!p->started)
        return INT64_MIN;
    /* rounded up: a microsecond early would break the bound */
    return ceil_div(p->due_ns - r->tolerance_ns, NS_PER_US);
}

void sl_pace_note(sl_pace *p, const sl_pace_rules *r, int64_t departed_us)
{
    int64_t departed_ns = departed_us * NS_PER_US;
    /* A departure after its due time moves the pace on from when it left:
     * a late wake-up beyond the tolerance slows the catch-up (the slots
     * keep the time owed), it never makes room for a burst. */
    int64_t from = p->started && p->due_ns > departed_ns ? p->due_ns : departed_ns;
    p->due_ns = from + r->gap_ns;
    p->started = true;
}

int64_t sl_pace_most_in(const sl_pace_rules *r, int64_t window_us)
{
    /* k + 1 departures span k gaps less the tolerance at least; they fit
     * in a half-open window only if that is shorter than it */
    return ceil_div(window_us * NS_PER_US + r->tolerance_ns, r->gap_ns);
}

int sl_pace_most_in_10_intervals(int64_t interval_us)
{
    int64_t rate_milli = (INT64_C(1000000000) + interval_us / 2) / interval_us;
    sl_pace_rules r = sl_pace_rules_for(rate_milli > 0 ? rate_milli : 1);
    return (int)sl_pace_most_in(&r, WINDOW_INTERVALS * interval_us);
}
