/* test_redis_clock.c - this host's estimate of Redis's clock
 * (src/daemon/redis_clock.c): samples and round trips passed in, no clock. */
#include <criterion/criterion.h>
#include <stdint.h>

#include "daemon/redis_clock.h"

/* A sample whose round trip took rtt_us around local time at_us, answered
 * by a Redis whose clock is offset_us ahead of ours and read at the
 * midpoint. */
static void sample(sl_redis_clock *c, int64_t at_us, int64_t rtt_us, int64_t offset_us)
{
    sl_redis_clock_observe(c, at_us + rtt_us / 2 + offset_us, at_us, at_us + rtt_us);
}

Test(redis_clock, the_offset_is_taken_against_the_round_trips_midpoint)
{
    sl_redis_clock c = {0};
    /* sent at 1000, answered at 1200: Redis read 5100 at our 1100 */
    sl_redis_clock_observe(&c, 5100, 1000, 1200);
    cr_assert_eq(c.offset_us, 4000);
}

Test(redis_clock, a_slow_reply_never_moves_the_estimate)
{
    sl_redis_clock c = {0};
    sample(&c, 0, 200, 4000);
    /* a busy moment: Redis answered late, the midpoint is 2 ms off */
    sl_redis_clock_observe(&c, 1000000 + 4000, 1000000, 1000000 + 4000);
    cr_assert_eq(c.offset_us, 4000);
    /* a faster round trip is trusted over the first */
    sample(&c, 2000000, 100, 4050);
    cr_assert_eq(c.offset_us, 4050);
}

Test(redis_clock, old_samples_roll_off_so_drift_is_followed)
{
    sl_redis_clock c = {0};
    sample(&c, 0, 50, 4000); /* the best round trip ever seen */
    for (int i = 1; i < SL_CLOCK_SAMPLES; i++)
        sample(&c, i * 1000000, 300, 4000 + i);
    cr_assert_eq(c.offset_us, 4000, "the best sample is still among the last");
    /* the clocks drifted apart; the 50 us sample rolls off, so a sample
     * slower than it but faster than the rest is trusted now */
    sample(&c, SL_CLOCK_SAMPLES * 1000000, 250, 9000);
    cr_assert_eq(c.offset_us, 9000);
}

Test(redis_clock, ready_after_three_probes_and_again_after_each_connect)
{
    sl_redis_clock c = {0};
    cr_assert_not(sl_redis_clock_ready(&c));
    for (int round = 0; round < 2; round++) {
        for (int i = 1; i < SL_CLOCK_PROBES; i++) {
            cr_assert_eq(sl_redis_clock_probe_answered(&c, 5000, 0, 100), SL_CLOCK_PROBE_AGAIN,
                         "probe %d of round %d", i, round);
            cr_assert_not(sl_redis_clock_ready(&c));
        }
        cr_assert_eq(sl_redis_clock_probe_answered(&c, 5000, 0, 100), SL_CLOCK_BECAME_READY);
        cr_assert(sl_redis_clock_ready(&c));
        /* the periodic samples after that change nothing */
        cr_assert_eq(sl_redis_clock_probe_answered(&c, 5000, 0, 100), SL_CLOCK_STEADY);
        cr_assert(sl_redis_clock_ready(&c));
        sl_redis_clock_restart(&c);
        cr_assert_not(sl_redis_clock_ready(&c));
    }
}

Test(redis_clock, a_reconnect_keeps_the_samples)
{
    sl_redis_clock c = {0};
    sample(&c, 0, 50, 7000);
    sl_redis_clock_restart(&c);
    cr_assert_eq(c.offset_us, 7000);
    sample(&c, 1000000, 400, 9000); /* slower than the kept one */
    cr_assert_eq(c.offset_us, 7000);
}
