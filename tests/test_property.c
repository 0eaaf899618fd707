/* test_property.c - the scripts of lua/ and the models of src/ give the
 * same replies: 10,000 random arrival sequences per algorithm through both,
 * against a real redis-server.
 *
 * Times start in the year 2100 so that no key set by a script expires
 * during the test (PEXPIREAT is on the script's clock). Instead each step
 * checks PEXPIRETIME against the model, and a second model that forgets its
 * state exactly when Redis would drop the key must reply as the first:
 * expiry never changes a decision. The pause of ack.lua is checked the
 * same way, interleaved with the shaping script's admissions. */
#include <criterion/criterion.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "models.h"
#include "redis/lua_scripts.h"
#include "redis_fixture.h"
#include "script_client.h"

#define T0 INT64_C(4102444800000000)
#define SEQUENCES 10000
#define MAX_STEPS 40

static redis_fixture fx;

static void setup(void)
{
    redis_fixture_start(&fx);
}

static void teardown(void)
{
    redis_fixture_stop(&fx);
}

TestSuite(property, .init = setup, .fini = teardown, .timeout = 300);

/* xorshift64*: a small deterministic generator, seeded per algorithm so a
 * failure names a reproducible sequence. */
static uint64_t next_random(uint64_t *s)
{
    *s ^= *s >> 12;
    *s ^= *s << 25;
    *s ^= *s >> 27;
    return *s * UINT64_C(2685821657736338717);
}

static int64_t pick(uint64_t *s, int64_t n)
{
    return (int64_t)(next_random(s) % (uint64_t)n);
}

/* Parameters users pick (round rates, fractional, extreme) and odd ones. */
static void random_params(const model_ops *m, uint64_t *rng, int64_t *first, int64_t *second)
{
    static const int64_t rates[] = {1, 500, 1000, 3000, 7500, 10000, 333333, 25000000,
                                    100000000, 1000000000};
    static const int64_t windows[] = {1, 7, 100, 1000, 60000, 86400000};
    if (m->window) {
        *first = 1 + pick(rng, 12);
        *second = pick(rng, 3) ? windows[pick(rng, 6)] : 1 + pick(rng, 5000);
    } else {
        *first = 1 + pick(rng, pick(rng, 4) ? 8 : 200);
        *second = pick(rng, 3) ? rates[pick(rng, 10)] : 1 + pick(rng, 50000000);
    }
}

/* The time scale on which the algorithm's decisions change. */
static int64_t time_scale(const model_ops *m, int64_t second)
{
    return m->window ? second * 1000 : (SL_JOB + second - 1) / second;
}

/* Arrival gaps: bursts, fractions of the scale, around it, and far past it. */
static int64_t random_gap(uint64_t *rng, int64_t scale)
{
    switch (pick(rng, 6)) {
    case 0:
    case 1:
        return 0;
    case 2:
        return pick(rng, scale / 2 + 1);
    case 3:
        return scale - 1 + pick(rng, 3);
    case 4:
        return pick(rng, 4 * scale + 1);
    default:
        return pick(rng, 50 * scale + 1);
    }
}

static void check_algorithm(const char *name)
{
    const model_ops *m = model_find(name);
    cr_assert_not_null(m);
    char sha[41];
    redis_fixture_load(&fx, name, sha);
    uint64_t rng = UINT64_C(0x9e3779b97f4a7c15) ^ (uint64_t)name[0] ^ ((uint64_t)name[1] << 8);
    int64_t nows[MAX_STEPS];
    long calls = 0, denials = 0, expiries = 0;

    for (int seq = 0; seq < SEQUENCES; seq++) {
        int64_t first, second;
        random_params(m, &rng, &first, &second);
        char first_text[32], second_text[32];
        snprintf(first_text, sizeof first_text, "%" PRId64, first);
        sc_format_second(m->window, second, second_text);
        int64_t scale = time_scale(m, second);
        int steps = 1 + (int)pick(&rng, MAX_STEPS);
        int64_t now = T0 + pick(&rng, INT64_C(86400000000));

        redisAppendCommand(fx.conn, "DEL prop");
        for (int i = 0; i < steps; i++) {
            now += random_gap(&rng, scale);
            nows[i] = now;
            redisAppendCommand(fx.conn, "EVALSHA %s 1 prop %s %s %" PRId64, sha, first_text,
                               second_text, now);
            redisAppendCommand(fx.conn, "PEXPIRETIME prop");
        }

        void *kept = model_create(m, first);
        void *dropped = model_create(m, first);
        redisReply *reply;
        cr_assert_eq(redisGetReply(fx.conn, (void **)&reply), REDIS_OK);
        freeReplyObject(reply);
        for (int i = 0; i < steps; i++) {
            sl_verdict script, model, forgetful;
            char err[256];
            cr_assert_eq(redisGetReply(fx.conn, (void **)&reply), REDIS_OK);
            cr_assert(sc_parse_verdict(reply, &script, err, sizeof err), "%s: %s", name, err);
            freeReplyObject(reply);

            /* Redis drops a key once its time is past: mimic that. */
            int64_t expire_at = model_expire_at_ms(m, dropped);
            if (expire_at != 0 && nows[i] / 1000 > expire_at) {
                model_reset(m, dropped);
                expiries++;
            }
            model = m->admit(kept, first, second, nows[i]);
            forgetful = m->admit(dropped, first, second, nows[i]);
            calls++;
            denials += !model.allowed;

            cr_assert(script.allowed == model.allowed && script.remaining == model.remaining &&
                          script.wait_us == model.wait_us,
                      "%s seq %d step %d (ARGV %s %s now T0+%" PRId64 "): script {%d, %" PRId64
                      ", %" PRId64 "} model {%d, %" PRId64 ", %" PRId64 "}",
                      name, seq, i, first_text, second_text, nows[i] - T0, script.allowed,
                      script.remaining, script.wait_us, model.allowed, model.remaining,
                      model.wait_us);
            cr_assert(forgetful.allowed == model.allowed &&
                          forgetful.remaining == model.remaining &&
                          forgetful.wait_us == model.wait_us,
                      "%s seq %d step %d: dropping the expired state changed the reply", name,
                      seq, i);

            cr_assert_eq(redisGetReply(fx.conn, (void **)&reply), REDIS_OK);
            cr_assert_eq(reply->type, REDIS_REPLY_INTEGER);
            cr_assert_eq(reply->integer, model_expire_at_ms(m, kept),
                         "%s seq %d step %d: PEXPIRETIME %lld, model %" PRId64, name, seq, i,
                         reply->integer, model_expire_at_ms(m, kept));
            freeReplyObject(reply);
        }
        model_destroy(m, kept);
        model_destroy(m, dropped);
    }
    /* The random sequences must exercise both outcomes and expiry. */
    cr_assert_gt(denials, calls / 20, "%s: only %ld denials in %ld calls", name, denials, calls);
    cr_assert_gt(denials, 0);
    cr_assert_gt(expiries, SEQUENCES / 10, "%s: only %ld expiries", name, expiries);
    cr_log_info("%s: %ld calls, %ld denials, %ld expiries", name, calls, denials, expiries);
}

Test(property, shaping) { check_algorithm("shaping"); }
Test(property, policing) { check_algorithm("policing"); }
Test(property, token_bucket) { check_algorithm("token_bucket"); }
Test(property, fixed_window) { check_algorithm("fixed_window"); }
Test(property, sliding_window_log) { check_algorithm("sliding_window_log"); }
Test(property, sliding_window_counter) { check_algorithm("sliding_window_counter"); }

/* ack.lua's "pause" op is shaping_pause of the shaping model section.
 * Loads that section with a driver that applies it at an explicit time
 * (ack.lua takes its time from Redis, which a test cannot choose):
 * EVALSHA sha 1 key until_us -> 1 if the schedule moved, else 0. */
static void load_pause_driver(char sha[41])
{
    static const char driver[] =
        "local paused = shaping_pause(shaping_load(KEYS[1]), tonumber(ARGV[1]))\n"
        "if paused then shaping_store(KEYS[1], paused) end\n"
        "return paused and 1 or 0\n";
    const sl_lua_script *shaping = sl_lua_script_find("shaping");
    cr_assert_not_null(shaping);
    const char *begin = strstr(shaping->source, "-- sluice:model begin");
    const char *end = begin ? strstr(begin, "-- sluice:model end") : NULL;
    cr_assert(begin && end, "lua/shaping.lua has no model section");
    size_t len = (size_t)(end - begin);
    char *text = malloc(len + sizeof driver);
    cr_assert_not_null(text);
    memcpy(text, begin, len);
    memcpy(text + len, driver, sizeof driver);
    redisReply *reply = redisCommand(fx.conn, "SCRIPT LOAD %s", text);
    cr_assert(reply && reply->type == REDIS_REPLY_STRING && reply->len == 40,
              "SCRIPT LOAD of the pause driver: %s", reply && reply->str ? reply->str : "no reply");
    memcpy(sha, reply->str, 41);
    freeReplyObject(reply);
    free(text);
}

/* Reads the schedule back: HMGET next_free frac, PEXPIRETIME, against the model. */
static void expect_schedule(const sl_shaping_state *model, int seq, int step)
{
    redisReply *reply;
    cr_assert_eq(redisGetReply(fx.conn, (void **)&reply), REDIS_OK);
    cr_assert(reply->type == REDIS_REPLY_ARRAY && reply->elements == 2);
    int64_t next_free = reply->element[0]->str ? strtoll(reply->element[0]->str, NULL, 10) : 0;
    int64_t frac = reply->element[1]->str ? strtoll(reply->element[1]->str, NULL, 10) : 0;
    cr_assert(next_free == model->next_free && frac == model->frac,
              "seq %d step %d: stored {%" PRId64 ", %" PRId64 "} model {%" PRId64 ", %" PRId64 "}",
              seq, step, next_free, frac, model->next_free, model->frac);
    freeReplyObject(reply);
    cr_assert_eq(redisGetReply(fx.conn, (void **)&reply), REDIS_OK);
    cr_assert_eq(reply->type, REDIS_REPLY_INTEGER);
    cr_assert_eq(reply->integer, model->expire_at_ms ? model->expire_at_ms : -2,
                 "seq %d step %d: PEXPIRETIME %lld, model %" PRId64, seq, step, reply->integer,
                 model->expire_at_ms);
    freeReplyObject(reply);
}

Test(property, shaping_with_pauses)
{
    enum { PAUSE_SEQUENCES = 2000 };
    const model_ops *m = model_find("shaping");
    cr_assert_not_null(m);
    char admit_sha[41], pause_sha[41];
    redis_fixture_load(&fx, "shaping", admit_sha);
    load_pause_driver(pause_sha);
    uint64_t rng = UINT64_C(0x2545f4914f6cdd1d);
    int64_t whens[MAX_STEPS];
    bool pauses[MAX_STEPS];
    long moved = 0, kept = 0, admitted = 0;

    for (int seq = 0; seq < PAUSE_SEQUENCES; seq++) {
        int64_t capacity, rate_milli;
        random_params(m, &rng, &capacity, &rate_milli);
        char capacity_text[32], rate_text[32];
        snprintf(capacity_text, sizeof capacity_text, "%" PRId64, capacity);
        sc_format_rate(rate_milli, rate_text);
        int64_t scale = time_scale(m, rate_milli);
        int steps = 1 + (int)pick(&rng, MAX_STEPS);
        int64_t now = T0 + pick(&rng, INT64_C(86400000000));

        redisAppendCommand(fx.conn, "DEL prop");
        for (int i = 0; i < steps; i++) {
            now += random_gap(&rng, scale);
            pauses[i] = pick(&rng, 4) == 0;
            if (pauses[i]) {
                /* until: now, within the schedule, or past it by up to 10 intervals */
                whens[i] = now + random_gap(&rng, scale * (1 + pick(&rng, 10)));
                redisAppendCommand(fx.conn, "EVALSHA %s 1 prop %" PRId64, pause_sha, whens[i]);
            } else {
                whens[i] = now;
                redisAppendCommand(fx.conn, "EVALSHA %s 1 prop %s %s %" PRId64, admit_sha,
                                   capacity_text, rate_text, now);
            }
            redisAppendCommand(fx.conn, "HMGET prop next_free frac");
            redisAppendCommand(fx.conn, "PEXPIRETIME prop");
        }

        sl_shaping_state model = {0};
        sl_bucket_params p = {capacity, rate_milli};
        redisReply *reply;
        cr_assert_eq(redisGetReply(fx.conn, (void **)&reply), REDIS_OK);
        freeReplyObject(reply);
        for (int i = 0; i < steps; i++) {
            cr_assert_eq(redisGetReply(fx.conn, (void **)&reply), REDIS_OK);
            if (pauses[i]) {
                cr_assert_eq(reply->type, REDIS_REPLY_INTEGER, "pause driver: %s",
                             reply->str ? reply->str : "not an integer");
                bool model_moved = sl_shaping_pause(&model, whens[i]);
                cr_assert_eq(reply->integer != 0, model_moved,
                             "seq %d step %d: pause until T0+%" PRId64 ": script %lld model %d",
                             seq, i, whens[i] - T0, reply->integer, model_moved);
                model_moved ? moved++ : kept++;
            } else {
                sl_verdict script, expected;
                char err[256];
                cr_assert(sc_parse_verdict(reply, &script, err, sizeof err), "%s", err);
                expected = sl_shaping_admit(&model, &p, whens[i]);
                cr_assert(script.allowed == expected.allowed &&
                              script.remaining == expected.remaining &&
                              script.wait_us == expected.wait_us,
                          "seq %d step %d: script {%d, %" PRId64 ", %" PRId64
                          "} model {%d, %" PRId64 ", %" PRId64 "}",
                          seq, i, script.allowed, script.remaining, script.wait_us,
                          expected.allowed, expected.remaining, expected.wait_us);
                admitted += expected.allowed;
            }
            freeReplyObject(reply);
            expect_schedule(&model, seq, i);
        }
    }
    /* Both kinds of pause, and admissions after them, must have happened. */
    cr_assert_gt(moved, PAUSE_SEQUENCES / 2, "only %ld pauses moved the schedule", moved);
    cr_assert_gt(kept, PAUSE_SEQUENCES / 20, "only %ld pauses left it alone", kept);
    cr_assert_gt(admitted, PAUSE_SEQUENCES);
    cr_log_info("shaping with pauses: %ld moved, %ld kept, %ld admitted", moved, kept, admitted);
}
