/* redis_errors.c - see redis_errors.h. */
#include "redis/redis_errors.h"

#include <string.h>

/* The error codes (first word of the reply) of a server that will serve
 * the command again once it has loaded, finished a script, moved a slot,
 * freed memory or found its master; READONLY: a primary demoted by a
 * failover, whose connection redis_conn drops to find the new one, where
 * the command goes again. */
static const char *const transient_codes[] = {"LOADING", "BUSY",       "TRYAGAIN",
                                              "OOM",     "MASTERDOWN", "READONLY"};

bool sl_redis_error_transient(const char *text)
{
    if (!text)
        return false;
    size_t word = strcspn(text, " ");
    for (size_t i = 0; i < sizeof transient_codes / sizeof transient_codes[0]; i++)
        if (word == strlen(transient_codes[i]) && memcmp(text, transient_codes[i], word) == 0)
            return true;
    return false;
}

int64_t sl_redis_transient_backoff_us(int n)
{
    int64_t delay = SL_REDIS_TRANSIENT_MIN_US;
    for (int i = 1; i < n && delay < SL_REDIS_TRANSIENT_MAX_US; i++)
        delay *= 2;
    return delay < SL_REDIS_TRANSIENT_MAX_US ? delay : SL_REDIS_TRANSIENT_MAX_US;
}
