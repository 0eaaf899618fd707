/* monotonic.h - this host's monotonic clock, for timeouts and elapsed times. */
#ifndef SLUICE_MONOTONIC_H
#define SLUICE_MONOTONIC_H

#include <stdint.h>
#include <time.h>

/* Microseconds of CLOCK_MONOTONIC (never steps with the wall clock). */
static inline int64_t sl_monotonic_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

#endif
