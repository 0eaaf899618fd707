/* stats_split.c - see stats_split.h. */
#include "admission/stats_split.h"

#include "admission/admission.h"

bool sl_stats_split_claimed(int64_t claimed, int64_t next_free_us, int64_t frac,
                            int64_t now_us, int64_t rate_milli, sl_stats_split *out)
{
    if (claimed < 0)
        claimed = 0;
    int64_t ahead = 0; /* slots before next_free that still lie ahead of now */
    if (next_free_us > now_us) {
        if (rate_milli <= 0)
            return false;
        if (frac < 0)
            frac = 0;
        if (frac >= rate_milli)
            frac = rate_milli - 1; /* as the shaping script reads it after a rate change */
        int64_t delta = next_free_us - now_us;
        if (delta > (INT64_MAX - SL_JOB) / rate_milli) {
            ahead = INT64_MAX; /* billions of slots: more than any ZSET holds */
        } else {
            /* The exact point is next_free - frac / R us, the k-th slot
             * before it k * 1e9 / R us earlier, and a slot (that point
             * rounded up to whole us) is ahead iff the point is: count
             * the k >= 1 with k * 1e9 < delta * R - frac. */
            int64_t span = delta * rate_milli - frac;
            ahead = span > 0 ? (span - 1) / SL_JOB : 0;
        }
    }
    out->scheduled = ahead < claimed ? ahead : claimed;
    out->in_flight = claimed - out->scheduled;
    return true;
}
