/* script_client.c - see script_client.h. */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "redis/lua_scripts.h"
#include "script_client.h"

bool sc_load(redisContext *c, const char *name, char sha[41])
{
    const sl_lua_script *script = sl_lua_script_find(name);
    if (!script)
        return false;
    redisReply *reply = redisCommand(c, "SCRIPT LOAD %b", script->source, script->length);
    bool ok = reply && reply->type == REDIS_REPLY_STRING && reply->len == 40;
    if (ok)
        memcpy(sha, reply->str, 41);
    freeReplyObject(reply);
    return ok;
}

void sc_format_rate(int64_t rate_milli, char out[32])
{
    snprintf(out, 32, "%" PRId64 ".%03" PRId64, rate_milli / 1000, rate_milli % 1000);
}

void sc_format_second(bool window, int64_t second, char out[32])
{
    if (window)
        snprintf(out, 32, "%" PRId64, second);
    else
        sc_format_rate(second, out);
}

bool sc_parse_verdict(const redisReply *reply, sl_verdict *out, char *err, size_t err_size)
{
    if (!reply) {
        snprintf(err, err_size, "no reply (connection lost)");
        return false;
    }
    if (reply->type == REDIS_REPLY_ERROR) {
        snprintf(err, err_size, "error reply: %s", reply->str);
        return false;
    }
    if (reply->type != REDIS_REPLY_ARRAY || reply->elements != 3) {
        snprintf(err, err_size, "reply is not a 3-element array (type %d)", reply->type);
        return false;
    }
    for (size_t i = 0; i < 3; i++) {
        if (reply->element[i]->type != REDIS_REPLY_INTEGER) {
            snprintf(err, err_size, "reply element %zu is not an integer", i);
            return false;
        }
    }
    out->allowed = reply->element[0]->integer != 0;
    out->remaining = reply->element[1]->integer;
    out->wait_us = reply->element[2]->integer;
    return true;
}

redisReply *sc_call(redisContext *c, const char *sha, const char *key, const char *first,
                    const char *second, int64_t now_us)
{
    if (now_us < 0)
        return redisCommand(c, "EVALSHA %s 1 %s %s %s", sha, key, first, second);
    return redisCommand(c, "EVALSHA %s 1 %s %s %s %" PRId64, sha, key, first, second, now_us);
}
