/* outcome.c - the delivery outcome table (see outcome.h). */
#include "job/outcome.h"

#include <stdbool.h>
#include <stddef.h>

#include "job/backoff.h"
#include "job/retry_after.h"

sl_outcome sl_outcome_decide(int http_status, const char *retry_after, int attempts_done,
                             int max_attempts, int64_t base_ms, int64_t max_ms, int64_t now_ms,
                             uint64_t random)
{
    if (attempts_done < 1)
        attempts_done = 1;
    if (max_attempts < 1)
        max_attempts = 1;
    int s = http_status;
    int64_t delay;
    if (s >= 200 && s <= 299)
        return (sl_outcome){.kind = SL_OUTCOME_DELIVERED};
    if (s >= 300 && s <= 399)
        return (sl_outcome){.kind = SL_OUTCOME_DEAD, .reason = "http_3xx"};
    bool pause = s == 429 || s == 503;
    if (s >= 400 && s <= 499 && s != 408 && s != 425 && !pause)
        return (sl_outcome){.kind = SL_OUTCOME_DEAD, .reason = "http_4xx"};
    if (attempts_done >= max_attempts)
        return (sl_outcome){.kind = SL_OUTCOME_DEAD, .reason = "exhausted"};
    if (pause && sl_retry_after_parse(retry_after, now_ms, &delay))
        return (sl_outcome){.kind = SL_OUTCOME_PAUSE_RETRY, .delay_ms = delay};
    delay = sl_backoff_ms(attempts_done, base_ms, max_ms, random);
    /* A 503 that names no time is a server error like any other: pausing
     * the whole tenant for it would leave its slots unused. A 429 always
     * asks the tenant to slow down. */
    return (sl_outcome){.kind = s == 429 ? SL_OUTCOME_PAUSE_RETRY : SL_OUTCOME_RETRY,
                        .delay_ms = delay};
}
