/* backoff.c - exponential backoff with full jitter (see backoff.h). */
#include "job/backoff.h"

/* The high 64 bits of a * b, portably (no __int128). */
static uint64_t mul_high(uint64_t a, uint64_t b)
{
    uint64_t a_lo = a & 0xffffffffu, a_hi = a >> 32;
    uint64_t b_lo = b & 0xffffffffu, b_hi = b >> 32;
    uint64_t lo_lo = a_lo * b_lo, hi_lo = a_hi * b_lo, lo_hi = a_lo * b_hi;
    uint64_t cross = (lo_lo >> 32) + (hi_lo & 0xffffffffu) + lo_hi;
    return a_hi * b_hi + (hi_lo >> 32) + (cross >> 32);
}

int64_t sl_backoff_ms(int failed_attempts, int64_t base_ms, int64_t max_ms, uint64_t random)
{
    if (base_ms <= 0 || max_ms <= 0)
        return 0;
    int shift = failed_attempts < 1 ? 0 : failed_attempts - 1;
    /* base << shift <= max exactly when base <= max >> shift. */
    int64_t cap = shift < 63 && base_ms <= (max_ms >> shift) ? base_ms << shift : max_ms;
    /* floor(random * (cap + 1) / 2^64): uniform on [0, cap] without the
     * bias of a modulo; cap + 1 <= 2^63 cannot overflow. */
    return (int64_t)mul_high(random, (uint64_t)cap + 1);
}

int sl_backoff_failures(int failed_attempts, int64_t up_ms, int64_t stable_ms)
{
    if (up_ms >= 0 && up_ms >= stable_ms)
        return 1;
    if (failed_attempts < 0)
        failed_attempts = 0;
    return failed_attempts < 64 ? failed_attempts + 1 : 64;
}

uint64_t sl_random_u64(uint64_t *state)
{
    uint64_t z = (*state += UINT64_C(0x9e3779b97f4a7c15));
    z = (z ^ (z >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
    z = (z ^ (z >> 27)) * UINT64_C(0x94d049bb133111eb);
    return z ^ (z >> 31);
}
