/* reslot.c - see reslot.h. */
#include <stdio.h>

#include "redis/reslot.h"

void sl_reslot_build(sl_argv *a, const char *sha, const sl_tenant_keys *keys, int64_t rate_milli,
                     size_t count, int64_t now_us)
{
    sl_argv_reset(a);
    sl_argv_add_str(a, "EVALSHA");
    sl_argv_add_str(a, sha);
    sl_argv_add_int(a, 1);
    sl_argv_add_str(a, keys->shape);
    sl_argv_add_int(a, rate_milli);
    sl_argv_add_int(a, (int64_t)count);
    sl_argv_add_int(a, now_us);
}

bool sl_reslot_parse(const redisReply *reply, int64_t *now_us, size_t *count, char *err,
                     size_t err_size)
{
    if (!reply) {
        snprintf(err, err_size, "reslot: no reply");
        return false;
    }
    if (reply->type == REDIS_REPLY_ERROR) {
        snprintf(err, err_size, "reslot: %.200s", reply->str);
        return false;
    }
    if (reply->type != REDIS_REPLY_ARRAY || reply->elements < 2) {
        snprintf(err, err_size, "reslot: expected an array of now and slots");
        return false;
    }
    for (size_t i = 0; i < reply->elements; i++) {
        if (reply->element[i]->type != REDIS_REPLY_INTEGER) {
            snprintf(err, err_size, "reslot: element %zu is not an integer", i + 1);
            return false;
        }
        if (i > 1 && reply->element[i]->integer < reply->element[i - 1]->integer) {
            snprintf(err, err_size, "reslot: slot %zu comes before the one before it", i);
            return false;
        }
    }
    *now_us = reply->element[0]->integer;
    *count = reply->elements - 1;
    return true;
}

int64_t sl_reslot_slot(const redisReply *reply, size_t i)
{
    return reply->element[i + 1]->integer;
}
