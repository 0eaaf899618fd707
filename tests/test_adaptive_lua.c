/* test_adaptive_lua.c - lua/ack.lua's adaptive rate against its C model
 * (job/adaptive.h): both driven by the same batches at the same times
 * must keep the same rate and window, step by step; and the fields and
 * events ack.lua writes. Needs redis-server. */
#include <cjson/cJSON.h>
#include <criterion/criterion.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "job/adaptive.h"
#include "job/backoff.h" /* sl_random_u64 */
#include "redis/claim.h"
#include "redis_fixture.h"

#define MS INT64_C(1000)
#define S INT64_C(1000000)

static redis_fixture fx;
static char ack_sha[41];
static sl_argv args;
static sl_tenant_keys keys;

static void setup(void)
{
    redis_fixture_start(&fx);
    redis_fixture_load(&fx, "ack", ack_sha);
    sl_argv_init(&args);
    cr_assert(sl_tenant_keys_init(&keys, "sluice", "acme"));
}

static void teardown(void)
{
    sl_tenant_keys_free(&keys);
    sl_argv_free(&args);
    redis_fixture_stop(&fx);
}

TestSuite(adaptive_lua, .init = setup, .fini = teardown, .timeout = 120);

/* One ack carrying batch b (split in `parts` adaptive ops, which add up):
 * the rate ack.lua answers. */
static int64_t lua_step(const sl_adaptive_params *p, const sl_adaptive_batch *b, int64_t now_us,
                        int64_t start, int parts)
{
    sl_ack_start(&args, ack_sha, &keys, "acme");
    sl_adaptive_batch rest = *b;
    for (int i = 1; i < parts; i++) {
        sl_adaptive_batch part = {rest.used / 2, rest.ok / 2, rest.limited / 2, rest.timeouts / 2,
                                  rest.errors_5xx / 2};
        rest.used -= part.used;
        rest.ok -= part.ok;
        rest.limited -= part.limited;
        rest.timeouts -= part.timeouts;
        rest.errors_5xx -= part.errors_5xx;
        sl_ack_adaptive(&args, &part, p, start, now_us);
    }
    sl_ack_adaptive(&args, &rest, p, start, now_us);
    const char **argv = sl_argv_finish(&args);
    redisReply *reply = redisCommandArgv(fx.conn, (int)args.count, argv, args.lengths);
    cr_assert(reply && reply->type == REDIS_REPLY_ARRAY && reply->elements == 3, "ack: %s",
              reply && reply->str ? reply->str : "not {applied, stale, rate}");
    int64_t rate = reply->element[2]->integer;
    freeReplyObject(reply);
    return rate;
}

static int64_t field(const char *name)
{
    redisReply *r = redisCommand(fx.conn, "HGET %s %s", keys.settings, name);
    cr_assert(r && r->type == REDIS_REPLY_STRING, "%s absent", name);
    int64_t v = strtoll(r->str, NULL, 10);
    freeReplyObject(r);
    return v;
}

static int64_t events(void)
{
    redisReply *r = redisCommand(fx.conn, "LLEN %s", keys.events);
    int64_t n = r->integer;
    freeReplyObject(r);
    return n;
}

static void same_state(const sl_adaptive_state *s, int64_t lua_rate, int step)
{
    cr_assert_eq(lua_rate, s->rate_milli, "step %d: lua %" PRId64 ", C %" PRId64, step, lua_rate,
                 s->rate_milli);
    cr_assert_eq(field("adaptive_rate"), s->rate_milli, "step %d", step);
    cr_assert_eq(field("adaptive_at"), s->at_us, "step %d", step);
    cr_assert_eq(field("adaptive_used"), s->used, "step %d", step);
    cr_assert_eq(field("adaptive_ok"), s->ok, "step %d", step);
    cr_assert_eq(field("adaptive_bad"), s->bad, "step %d", step);
}

Test(adaptive_lua, the_same_decisions_as_the_c_model)
{
    uint64_t rng = 42;
    int64_t changes = 0;
    for (int round = 0; round < 6; round++) {
        freeReplyObject(redisCommand(fx.conn, "DEL %s %s", keys.settings, keys.events));
        sl_adaptive_params p = {
            .min_milli = 1 + (int64_t)(sl_random_u64(&rng) % 50000),
            .decrease_permille = 1 + (int64_t)(sl_random_u64(&rng) % 999),
            .cooldown_us = (int64_t)(10 + sl_random_u64(&rng) % 3000) * MS,
            .on_timeout = round % 2 == 1,
            .on_5xx = round % 3 == 1,
        };
        p.max_milli = p.min_milli + (int64_t)(sl_random_u64(&rng) % 1000000000);
        if (round == 5)
            p.max_milli = INT64_C(1000000000); /* the largest rate */
        p.increase_milli = 1 + p.max_milli / (1 + (int64_t)(sl_random_u64(&rng) % 100));
        int64_t start = (int64_t)(sl_random_u64(&rng) % (2 * (uint64_t)p.max_milli)) + 1;
        sl_adaptive_state s = {0};
        int64_t now = INT64_C(1750000000) * S;
        for (int step = 0; step < 300; step++) {
            /* mostly short gaps, sometimes a long idle one or a clock step back */
            uint64_t r = sl_random_u64(&rng);
            int64_t gap = (int64_t)(r % (uint64_t)(p.cooldown_us / 2 + 1));
            if (r % 17 == 0)
                gap = (int64_t)(r % (7200 * S));
            if (r % 23 == 0)
                gap = -(int64_t)(r % S);
            now += gap;
            uint64_t kind = sl_random_u64(&rng) % 4;
            int64_t used = (int64_t)(sl_random_u64(&rng) % 3000);
            sl_adaptive_batch b = {.used = used, .ok = kind == 0 ? 0 : used};
            if (kind == 1 && used)
                b.limited = 1 + (int64_t)(sl_random_u64(&rng) % (uint64_t)used);
            if (kind == 2) {
                b.timeouts = (int64_t)(sl_random_u64(&rng) % 3);
                b.errors_5xx = (int64_t)(sl_random_u64(&rng) % 3);
            }
            int64_t old = s.rate_milli;
            sl_adaptive_change c = sl_adaptive_step(&p, &s, &b, now, start);
            if (old != 0 && c != SL_ADAPTIVE_SAME)
                changes++;
            int64_t lua = lua_step(&p, &b, now, start, 1 + step % 3);
            same_state(&s, lua, step);
        }
    }
    cr_assert_gt(changes, 100, "the sequences moved the rate (%" PRId64 " changes)", changes);
}

Test(adaptive_lua, each_change_is_an_event)
{
    sl_adaptive_params p = {.min_milli = 5000, .max_milli = 200000, .decrease_permille = 700,
                            .increase_milli = 5000, .cooldown_us = S};
    int64_t t0 = INT64_C(1750000000) * S;
    sl_adaptive_batch busy = {.used = 100, .ok = 100};
    sl_adaptive_batch refused = {.used = 100, .ok = 90, .limited = 10};
    cr_assert_eq(lua_step(&p, &busy, t0, 100000, 1), 100000, "starts at the file's rate");
    cr_assert_eq(events(), 0);
    cr_assert_eq(lua_step(&p, &busy, t0 + S / 2, 100000, 1), 100000);
    cr_assert_eq(lua_step(&p, &busy, t0 + S, 100000, 1), 105000);
    cr_assert_eq(events(), 1);
    cr_assert_eq(lua_step(&p, &refused, t0 + 2 * S + 1, 100000, 1), 73500);
    cr_assert_eq(events(), 2);
    redisReply *r = redisCommand(fx.conn, "LINDEX %s 0", keys.events);
    cJSON *e = cJSON_Parse(r->str);
    cr_assert_not_null(e, "%s", r->str);
    cr_assert_str_eq(cJSON_GetObjectItem(e, "what")->valuestring, "adaptive");
    cr_assert_str_eq(cJSON_GetObjectItem(e, "field")->valuestring, "adaptive_rate");
    cr_assert_str_eq(cJSON_GetObjectItem(e, "old")->valuestring, "105");
    cr_assert_str_eq(cJSON_GetObjectItem(e, "new")->valuestring, "73.5");
    cr_assert_str_eq(cJSON_GetObjectItem(e, "by")->valuestring, "sluice");
    cr_assert_eq((int64_t)cJSON_GetObjectItem(e, "at_ms")->valuedouble, (t0 + 2 * S + 1) / 1000);
    cJSON_Delete(e);
    freeReplyObject(r);
    /* the list stays capped */
    for (int i = 0; i < 150; i++)
        lua_step(&p, i % 2 ? &busy : &refused, t0 + (3 + i) * S, 100000, 1);
    cr_assert_eq(events(), 100);
}

Test(adaptive_lua, other_ops_keep_their_reply_without_it)
{
    sl_ack_start(&args, ack_sha, &keys, "acme");
    sl_ack_pause(&args, 1000);
    const char **argv = sl_argv_finish(&args);
    redisReply *reply = redisCommandArgv(fx.conn, (int)args.count, argv, args.lengths);
    cr_assert(reply && reply->type == REDIS_REPLY_ARRAY && reply->elements == 2);
    freeReplyObject(reply);
    redisReply *r = redisCommand(fx.conn, "EXISTS %s", keys.settings);
    cr_assert_eq(r->integer, 0, "no adaptive op: the settings are not touched");
    freeReplyObject(r);
}
