/* backoff.h - retry delays: exponential backoff with full jitter, and the
 * small PRNG that feeds it. Pure: randomness is an argument. */
#ifndef SLUICE_BACKOFF_H
#define SLUICE_BACKOFF_H

#include <stdint.h>

/* A delay uniform in [0, cap] ms, cap = min(max_ms, base_ms * 2^(n-1)) for
 * n = failed_attempts (the failures so far, counting the one just seen).
 * Never overflows, for any n. `random` is a uniformly random 64-bit value
 * (e.g. from sl_random_u64). failed_attempts < 1 is read as 1; base_ms or
 * max_ms <= 0 give 0. */
int64_t sl_backoff_ms(int failed_attempts, int64_t base_ms, int64_t max_ms, uint64_t random);

/* The failures to pass to sl_backoff_ms after a connection ended. One
 * that stayed usable at least stable_ms (up_ms >= stable_ms) was a
 * success: the count starts over at 1, so a restart is retried soon. One
 * that never became usable (up_ms < 0) or soon broke (a server that
 * accepts then drops) adds one to failed_attempts, so a flapping server
 * is retried ever more slowly instead of every base_ms forever. Stops
 * growing at 64 (sl_backoff_ms is at its max long before). */
int sl_backoff_failures(int failed_attempts, int64_t up_ms, int64_t stable_ms);

/* splitmix64: advances *state and returns the next value. Any seed works
 * (0 included); seed it once, e.g. from getrandom(). Not cryptographic. */
uint64_t sl_random_u64(uint64_t *state);

#endif
