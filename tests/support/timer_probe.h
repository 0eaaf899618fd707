/* timer_probe.h - what this machine gives a bare timer while a test runs:
 * a thread that sleeps to absolute deadlines a fixed interval apart and
 * records when it woke. SPEC §4 judges sluice's gap jitter against it
 * ("what the same machine gives a bare timer in the same run"), so a
 * loaded machine is not blamed on sluice. */
#ifndef SLUICE_TEST_TIMER_PROBE_H
#define SLUICE_TEST_TIMER_PROBE_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct timer_probe {
    pthread_t thread;
    atomic_bool stop;
    int64_t interval_us;
    int64_t *woke;   /* wake-up times, us (CLOCK_MONOTONIC) */
    size_t n, cap;
} timer_probe;

/* Starts the probe's thread, waking every interval_us (> 0); false if it
 * cannot. */
bool timer_probe_start(timer_probe *p, int64_t interval_us);

/* What the probe saw: of |gap - interval| between its wake-ups, in us. */
typedef struct timer_probe_result {
    int64_t p95;
    int64_t max; /* the machine's longest stall, as this thread felt it */
} timer_probe_result;

/* Stops the probe and returns the 95th percentile and the maximum of
 * |gap - interval| of its wake-ups (the statistics the shaping tests take
 * of sluice's departures), zeros if it woke fewer than twice; frees what
 * it holds. */
timer_probe_result timer_probe_stop(timer_probe *p);

#endif
