/* stats_split.h - which of a tenant's claimed jobs still wait for their
 * departure slot, for `sluice stats`. Pure: time is an argument.
 *
 * Redis keeps one lease per claimed job (score: slot + timeout_ms + 10 s)
 * but not the slot itself. The tenant's slots are spaced exactly 1/rate
 * apart up to the schedule's next free point, and a worker claims them in
 * order, so the k-th slot before that point (k >= 1) lies ahead of now
 * exactly when k * 1/rate < next_free - now. Taking the claimed jobs to
 * hold the latest slots gives the estimate; it is exact while no pause
 * has moved the schedule (a 429/503 pause moves next_free to the end of
 * the pause, so the claimed jobs then count as scheduled).
 */
#ifndef SLUICE_STATS_SPLIT_H
#define SLUICE_STATS_SPLIT_H

#include <stdbool.h>
#include <stdint.h>

typedef struct sl_stats_split {
    int64_t scheduled; /* claimed, slot still ahead */
    int64_t in_flight; /* claimed, slot passed: being delivered */
} sl_stats_split;

/* Splits `claimed` (>= 0, the tenant's leases) at now_us. next_free_us
 * and frac are the shape hash's fields (both 0 when the key is absent:
 * nothing lies ahead); rate_milli is the tenant's rate in milli-jobs/s,
 * or < 0 if unknown. Returns false, leaving *out untouched, only when the
 * rate is unknown and next_free lies ahead (the split cannot be told). */
bool sl_stats_split_claimed(int64_t claimed, int64_t next_free_us, int64_t frac,
                            int64_t now_us, int64_t rate_milli, sl_stats_split *out);

#endif
