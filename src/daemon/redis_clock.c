/* redis_clock.c - see redis_clock.h. */
#include "daemon/redis_clock.h"

void sl_redis_clock_observe(sl_redis_clock *c, int64_t redis_now_us, int64_t sent_us,
                            int64_t received_us)
{
    c->sample_offset[c->next] = redis_now_us - (sent_us + received_us) / 2;
    c->sample_rtt[c->next] = received_us - sent_us;
    c->next = (c->next + 1) % SL_CLOCK_SAMPLES;
    if (c->samples < SL_CLOCK_SAMPLES)
        c->samples++;
    int best = 0;
    for (int i = 1; i < c->samples; i++)
        if (c->sample_rtt[i] < c->sample_rtt[best])
            best = i;
    c->offset_us = c->sample_offset[best];
}

sl_clock_probe_next sl_redis_clock_probe_answered(sl_redis_clock *c, int64_t redis_now_us,
                                                  int64_t sent_us, int64_t received_us)
{
    sl_redis_clock_observe(c, redis_now_us, sent_us, received_us);
    if (++c->probes == SL_CLOCK_PROBES)
        return SL_CLOCK_BECAME_READY;
    return c->probes < SL_CLOCK_PROBES ? SL_CLOCK_PROBE_AGAIN : SL_CLOCK_STEADY;
}

void sl_redis_clock_restart(sl_redis_clock *c)
{
    c->probes = 0;
}

bool sl_redis_clock_ready(const sl_redis_clock *c)
{
    return c->probes >= SL_CLOCK_PROBES;
}
