/* realtime.h - this host's wall clock, on which slots are scheduled. */
#ifndef SLUICE_REALTIME_H
#define SLUICE_REALTIME_H

#include <stdint.h>
#include <time.h>

/* Microseconds of CLOCK_REALTIME: Redis's TIME is on a wall clock too, so
 * the offset between the two stays small and slow to drift. */
static inline int64_t sl_realtime_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

#endif
