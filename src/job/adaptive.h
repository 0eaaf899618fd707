/* adaptive.h - the adaptive rate controller (issue 16, SPEC section 9):
 * one AIMD step per ack batch, from the batch's outcomes.
 *
 * Pure: time is an argument and the state is the caller's. lua/ack.lua
 * makes the same decision on the state it keeps in the tenant's settings
 * hash (adaptive_rate, adaptive_at, adaptive_used, adaptive_ok,
 * adaptive_bad); the arithmetic is integer and identical on both sides,
 * which tests/test_adaptive.c checks by driving both on the same batches.
 *
 * The rule, evaluated once per window of cooldown_us:
 * - a window is open from `at` (the last evaluation) and sums the
 *   batches acked in it: slots used (requests sent), successes (2xx) and
 *   refusals (429/503, plus timeouts and 5xx when enabled);
 * - the first batch acked once the window is cooldown_us old closes it:
 *   any refusal in it -> rate * decrease_permille / 1000 (down);
 *   no refusal, some success, and at least 4/5 of the window's slots used
 *   (rate x window length) -> rate + increase_milli (up);
 *   else (an idle or a half-idle tenant) the rate stays;
 * - the result is clamped to [min_milli, max_milli] and a new window opens.
 * So the rate changes at most once per cooldown, a tenant without work
 * never rises, and the echoes of a decrease (refusals of requests sent at
 * the old rate, acked just after it) fall in the next window. */
#ifndef SLUICE_ADAPTIVE_H
#define SLUICE_ADAPTIVE_H

#include <stdbool.h>
#include <stdint.h>

/* The parameters' defaults are config/config_types.h's SL_ADAPTIVE_*.
 * A window longer than this counts as this long (an idle hour): keeps the
 * slot arithmetic below 2^53, where Lua's doubles are exact. */
#define SL_ADAPTIVE_WINDOW_MAX_US INT64_C(3600000000)

typedef struct sl_adaptive_params {
    int64_t min_milli, max_milli; /* bounds, milli-jobs/s, 1 <= min <= max <= 10^9 */
    int64_t decrease_permille;    /* 1..999: the rate is multiplied by this / 1000 */
    int64_t increase_milli;       /* >= 1: added per window */
    int64_t cooldown_us;          /* >= 1: the window */
    bool on_timeout;              /* timeouts count as refusals */
    bool on_5xx;                  /* 5xx other than 503 count as refusals */
} sl_adaptive_params;

/* What the controller keeps between batches (in Redis: the settings hash). */
typedef struct sl_adaptive_state {
    int64_t rate_milli; /* 0: not started (sl_adaptive_step starts it) */
    int64_t at_us;      /* the window's start */
    int64_t used;       /* requests sent in the window */
    int64_t ok;         /* 2xx in the window */
    int64_t bad;        /* refusals in the window */
} sl_adaptive_state;

/* One ack batch's outcomes. */
typedef struct sl_adaptive_batch {
    int64_t used;      /* requests sent (every attempt that reached the wire) */
    int64_t ok;        /* 2xx */
    int64_t limited;   /* 429 and 503 */
    int64_t timeouts;  /* no answer in time */
    int64_t errors_5xx; /* 5xx other than 503 */
} sl_adaptive_batch;

typedef enum sl_adaptive_change {
    SL_ADAPTIVE_SAME, /* the rate did not change */
    SL_ADAPTIVE_DOWN,
    SL_ADAPTIVE_UP,
} sl_adaptive_change;

/* Whether a refusal of a request paced at sent_rate_milli (the tenant's
 * rate when it was claimed) is an echo: the rate has since come down
 * below it (rate_now_milli), so the controller already stepped down for
 * this excess. Requests claimed ahead (a lookahead of slots) keep leaving
 * at the old pace for a while after a decrease, and their refusals, acked
 * into the next window, would step the rate down a second time for one
 * excess (88/s -> 75 -> 64 against 80/s). The caller leaves echoes out of
 * the batch's refusals. */
bool sl_adaptive_echo(int64_t sent_rate_milli, int64_t rate_now_milli);

/* Whether a rate-limit header's pause of pause_us, on a request that left
 * at sent_rate_milli, counts as a refusal: only when it is longer than one
 * interval at that rate, so that it holds the tenant below its rate. A
 * token bucket says "none remains" after each request that takes its last
 * token, also while the tenant sends below the bucket's rate; the pause,
 * up to the next token, is then shorter than the tenant's own interval
 * and says nothing about the rate (counted, it sawed the rate 31-45/s
 * against a bucket of 40/s). */
bool sl_adaptive_pause_slows(int64_t pause_us, int64_t sent_rate_milli);

/* The rate a tenant starts at: its file's rate within [min, max]. */
int64_t sl_adaptive_start_rate(const sl_adaptive_params *p, int64_t file_rate_milli);

/* Applies batch b acked at now_us to s (a state with rate_milli 0 starts at
 * start_rate_milli, its window at now_us) and returns whether the rate
 * moved. s->rate_milli always ends within [min, max]. */
sl_adaptive_change sl_adaptive_step(const sl_adaptive_params *p, sl_adaptive_state *s,
                                    const sl_adaptive_batch *b, int64_t now_us,
                                    int64_t start_rate_milli);

#endif
