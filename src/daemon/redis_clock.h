/* redis_clock.h - this host's estimate of Redis's clock.
 *
 * Slots come from Redis TIME; jobs depart on this host's CLOCK_REALTIME.
 * The offset between the two is learned like NTP: Redis read its clock
 * somewhere within a round trip, so a sample against the round trip's
 * midpoint is off by at most half of it. Of the last SL_CLOCK_SAMPLES
 * samples the one with the shortest round trip is trusted: a reply slowed
 * by a busy moment never moves the estimate, and old samples roll off, so
 * drift between the clocks is followed. After each connect, nothing is
 * scheduled until SL_CLOCK_PROBES TIME probes have been answered.
 *
 * Pure: every time is passed in (microseconds). One owner (a worker
 * thread); a zeroed sl_redis_clock is an empty estimate, not ready. */
#ifndef SLUICE_REDIS_CLOCK_H
#define SLUICE_REDIS_CLOCK_H

#include <stdbool.h>
#include <stdint.h>

/* Samples kept: enough that one busy moment among them never decides. */
#define SL_CLOCK_SAMPLES 16
/* TIME round trips after a connect before departures are scheduled:
 * several, so that one slowed round trip does not set the first offset. */
#define SL_CLOCK_PROBES 3

typedef struct sl_redis_clock {
    int64_t offset_us;                      /* Redis's time minus ours, best estimate */
    int64_t sample_offset[SL_CLOCK_SAMPLES]; /* the last samples, a ring */
    int64_t sample_rtt[SL_CLOCK_SAMPLES];
    int samples, next;
    int probes;                             /* TIME probes answered since the last connect */
} sl_redis_clock;

/* What a worker does after a TIME probe was answered. */
typedef enum sl_clock_probe_next {
    SL_CLOCK_PROBE_AGAIN,  /* not ready yet: send the next probe now */
    SL_CLOCK_BECAME_READY, /* this answer made it ready: resume the tenants */
    SL_CLOCK_STEADY,       /* ready before: a periodic sample, nothing to do */
} sl_clock_probe_next;

/* Learns from a reply that carried Redis's now (redis_now_us) for a
 * request sent at our sent_us and answered at our received_us. */
void sl_redis_clock_observe(sl_redis_clock *c, int64_t redis_now_us, int64_t sent_us,
                            int64_t received_us);
/* A TIME probe's answer: observes it, counts it, and says what to do. */
sl_clock_probe_next sl_redis_clock_probe_answered(sl_redis_clock *c, int64_t redis_now_us,
                                                  int64_t sent_us, int64_t received_us);
/* Connected (again): not ready until SL_CLOCK_PROBES more probes are
 * answered. The samples are kept: they still bound the offset. */
void sl_redis_clock_restart(sl_redis_clock *c);
/* True once the offset is known well enough to schedule departures. */
bool sl_redis_clock_ready(const sl_redis_clock *c);

#endif
