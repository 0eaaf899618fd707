/* intmath.h - integer division helpers shared by the admission models. */
#ifndef SLUICE_INTMATH_H
#define SLUICE_INTMATH_H

#include <stdint.h>

/* floor(a / b) for b > 0 and any sign of a (C division truncates). */
static inline int64_t sl_floordiv(int64_t a, int64_t b)
{
    int64_t q = a / b;
    return (a % b != 0 && a < 0) ? q - 1 : q;
}

/* ceil(a / b) for b > 0 and any sign of a. */
static inline int64_t sl_ceildiv(int64_t a, int64_t b)
{
    return -sl_floordiv(-a, b);
}

static inline int64_t sl_max64(int64_t a, int64_t b)
{
    return a > b ? a : b;
}

#endif
