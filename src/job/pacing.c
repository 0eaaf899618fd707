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

/* a / b rounded up, for any sign of a (b > 0): C rounds toward zero. */
static int64_t ceil_div(int64_t a, int64_t b)
{
    return a / b + (a % b > 0);
}

static int64_t max64(int64_t a, int64_t b)
{
    return a > b ? a : b;
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
    return (sl_pace_rules){
        .window_us = ceil_div(window_ns, NS_PER_US),
        .most_in_window = most,
        .gap_ns = gap_ns,
        .tolerance_ns = long_intervals ? exact_ns : max64(exact_ns, TOLERANCE_NS),
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

int64_t sl_pace_allows_at(const sl_pace *p, const sl_pace_rules *r)
{
    if (!p->started)
        return INT64_MIN;
    /* rounded up: a microsecond early could break the bound */
    return max64(ceil_div(p->due_ns - r->tolerance_ns, NS_PER_US), log_allows_at(p));
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
