/* shaping_bound.h - SPEC §4's "what steady means", computed by the tests
 * themselves from the contract (not from the pacing code under test): in
 * every window W = max(10 intervals, 100 ms), at most
 * floor(1.02 x rate x W) + 1 departures. Pure, no clock. */
#ifndef SLUICE_TEST_SHAPING_BOUND_H
#define SLUICE_TEST_SHAPING_BOUND_H

#include <stddef.h>
#include <stdint.h>

/* W in microseconds for a tenant of `rate` jobs/s (rate > 0). */
int64_t spec_window_us(double rate);

/* The most departures SPEC §4 allows in any window of spec_window_us(rate). */
size_t spec_most_in_window(double rate);

/* The most of the ascending times t[0..n) in any half-open window
 * [x, x + window_us); 0 when n is 0. */
size_t most_in_window(const int64_t *t, size_t n, int64_t window_us);

#endif
