/* test_property.c - the scripts of lua/ and the models of src/ give the
 * same replies: 10,000 random arrival sequences per algorithm through both,
 * against a real redis-server.
 *
 * Times start in the year 2100 so that no key set by a script expires
 * during the test (PEXPIREAT is on the script's clock). Instead each step
 * checks PEXPIRETIME against the model, and a second model that forgets its
 * state exactly when Redis would drop the key must reply as the first:
 * expiry never changes a decision. The pause of ack.lua is checked the
 * same way, interleaved with the shaping script's admissions.
 *
 * claim.lua's stacked limits are held to tests/support/claim_model.c the
 * same way, job by job.
 *
 * Every run draws new sequences: the seed comes from SLUICE_PROPERTY_SEED
 * or the clock, and each test logs it (replay a failure with
 * SLUICE_PROPERTY_SEED=N). One sequence in 8 takes parameters at the ends
 * of the exact ranges (edge_params). */
#include <cjson/cJSON.h>
#include <criterion/criterion.h>
#include <criterion/hooks.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "claim_model.h"
#include "models.h"
#include "redis/claim.h"
#include "redis/keys.h"
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

/* The run's seed: SLUICE_PROPERTY_SEED (decimal or 0x-hex) replays a run;
 * without it the clock picks one, so every run tries new sequences. */
#define SEED_ENV "SLUICE_PROPERTY_SEED"

/* Before any test starts, the runner fixes one seed for the whole run in
 * the environment, which the test processes inherit: every test of a run
 * then prints the same seed. */
ReportHook(PRE_ALL)(struct criterion_test_set *set)
{
    (void)set;
    const char *given = getenv(SEED_ENV);
    if (given && *given)
        return;
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    char text[32];
    snprintf(text, sizeof text, "%" PRIu64,
             (uint64_t)ts.tv_sec * UINT64_C(1000000000) + (uint64_t)ts.tv_nsec);
    setenv(SEED_ENV, text, 1);
}

/* The seed of this run, from the environment (set by the hook above, or by
 * whoever replays), else from the clock. */
static uint64_t run_seed(void)
{
    const char *text = getenv(SEED_ENV);
    if (text && *text) {
        char *end;
        errno = 0;
        unsigned long long seed = strtoull(text, &end, 0);
        cr_assert(errno == 0 && *end == '\0', "%s=%s: not an unsigned integer", SEED_ENV, text);
        return (uint64_t)seed;
    }
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (uint64_t)ts.tv_sec * UINT64_C(1000000000) + (uint64_t)ts.tv_nsec;
}

/* splitmix64's finalizer: spreads every bit of x over the result. */
static uint64_t mix(uint64_t x)
{
    x += UINT64_C(0x9e3779b97f4a7c15);
    x = (x ^ (x >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
    x = (x ^ (x >> 27)) * UINT64_C(0x94d049bb133111eb);
    return x ^ (x >> 31);
}

/* The random stream of one test: the run's seed and the test's name
 * (FNV-1a), mixed, so no two tests share a stream. Prints the seed so a
 * failure can be replayed. Never 0 (xorshift's fixed point). */
static uint64_t stream_for(const char *name)
{
    uint64_t seed = run_seed();
    uint64_t h = UINT64_C(0xcbf29ce484222325);
    for (const char *c = name; *c; c++)
        h = (h ^ (unsigned char)*c) * UINT64_C(0x100000001b3);
    uint64_t s = mix(seed ^ mix(h));
    cr_log_info("property %s: seed %" PRIu64 " (replay: %s=%" PRIu64 ")", name, seed, SEED_ENV,
                seed);
    return s ? s : 1;
}

/* xorshift64*: a small deterministic generator; its state comes from
 * stream_for. */
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

/* Parameters at the ends of the scripts' exact ranges: capacity up to
 * SL_CAPACITY_MAX (a full token bucket holds 9e15 nano-jobs, just under
 * 2^53), rates of 0.001/s and 1,000,000/s, and the sliding counter's
 * (max + 1) * window_ms just under 2^52. The log keeps its max small: the
 * model allocates max admission times. */
static void edge_params(const model_ops *m, uint64_t *rng, int64_t *first, int64_t *second)
{
    static const int64_t long_windows[] = {1, 1000, 86400000, 1000000007, SL_WINDOW_MS_MAX};
    if (m->window) {
        *second = pick(rng, 2) ? long_windows[pick(rng, 5)] : 1 + pick(rng, SL_WINDOW_MS_MAX);
        int64_t most = SL_WINDOW_MAX_MAX;
        if (strcmp(m->script, "sliding_window_counter") == 0)
            most = SL_COUNTER_PRODUCT_MAX / *second - 1; /* (max + 1) * window <= 2^52 */
        else if (strcmp(m->script, "sliding_window_log") == 0)
            most = 1000;
        if (most > SL_WINDOW_MAX_MAX)
            most = SL_WINDOW_MAX_MAX;
        *first = pick(rng, 2) ? most - pick(rng, 3) : 1 + pick(rng, most);
        if (*first < 1)
            *first = 1;
    } else {
        *first = pick(rng, 2) ? SL_CAPACITY_MAX - pick(rng, 3) : 1 + pick(rng, SL_CAPACITY_MAX);
        switch (pick(rng, 4)) {
        case 0:
            *second = SL_RATE_MILLI_MIN + pick(rng, 3);
            break;
        case 1:
            *second = SL_RATE_MILLI_MAX - pick(rng, 3);
            break;
        default:
            *second = pick(rng, 2) ? SL_RATE_MILLI_MIN : SL_RATE_MILLI_MAX;
        }
    }
    const char *error = m->window
        ? sl_window_params_error(&(sl_window_params){*first, *second},
                                 strcmp(m->script, "sliding_window_counter") == 0)
        : sl_bucket_params_error(&(sl_bucket_params){*first, *second});
    cr_assert_null(error, "%s (%" PRId64 ", %" PRId64 "): %s", m->script, *first, *second, error);
}

/* Parameters users pick (round rates, fractional, extreme) and odd ones;
 * one sequence in 8 at the ends of the exact ranges (then returns true). */
static bool random_params(const model_ops *m, uint64_t *rng, int64_t *first, int64_t *second)
{
    static const int64_t rates[] = {1, 500, 1000, 3000, 7500, 10000, 333333, 25000000,
                                    100000000, 1000000000};
    static const int64_t windows[] = {1, 7, 100, 1000, 60000, 86400000};
    if (pick(rng, 8) == 0) {
        edge_params(m, rng, first, second);
        return true;
    }
    if (m->window) {
        *first = 1 + pick(rng, 12);
        *second = pick(rng, 3) ? windows[pick(rng, 6)] : 1 + pick(rng, 5000);
    } else {
        *first = 1 + pick(rng, pick(rng, 4) ? 8 : 200);
        *second = pick(rng, 3) ? rates[pick(rng, 10)] : 1 + pick(rng, 50000000);
    }
    return false;
}

/* The time scale on which the algorithm's decisions change, at most
 * SCALE_MAX: MAX_STEPS gaps of up to 50 scales from T0 + 1 day stay below
 * SL_NOW_US_MAX, where the scripts' times stop being exact. */
#define SCALE_MAX INT64_C(2000000000000) /* 23 days */
static int64_t time_scale(const model_ops *m, int64_t second)
{
    int64_t scale = m->window ? second * 1000 : (SL_JOB + second - 1) / second;
    return scale < SCALE_MAX ? scale : SCALE_MAX;
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
    uint64_t rng = stream_for(name);
    int64_t nows[MAX_STEPS];
    long calls = 0, denials = 0, expiries = 0, edges = 0;

    for (int seq = 0; seq < SEQUENCES; seq++) {
        int64_t first, second;
        edges += random_params(m, &rng, &first, &second);
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
    cr_assert_gt(edges, SEQUENCES / 20, "%s: only %ld sequences at the exact ranges' ends", name,
                 edges);
    cr_log_info("%s: %ld calls, %ld denials, %ld expiries, %ld sequences at the ends of the ranges",
                name, calls, denials, expiries, edges);
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
    uint64_t rng = stream_for("shaping_with_pauses");
    int64_t whens[MAX_STEPS];
    bool pauses[MAX_STEPS];
    long moved = 0, kept = 0, admitted = 0;

    for (int seq = 0; seq < PAUSE_SEQUENCES; seq++) {
        int64_t capacity, rate_milli;
        (void)random_params(m, &rng, &capacity, &rate_milli);
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

/* ---- claim.lua's stacked limits against tests/support/claim_model.c ---- */

#define CLAIM_SEQUENCES 400
#define CLAIM_STEPS 30

/* The limit types of claim.lua (shaping is the schedule itself). */
static const char *const limit_types[] = {"policing", "token_bucket", "fixed_window",
                                          "sliding_window_log", "sliding_window_counter"};
static const char *const rule_names[CLAIM_MODEL_RULES_MAX] = {"r0", "r1", "r2"};

/* A random stack of 1-3 rules, each tight enough around the schedule's
 * interval that it denies now and then; on_deny at random. */
static int random_rules(uint64_t *rng, int64_t interval_us, claim_model_rule rules[],
                        sl_claim_limit limits[])
{
    int count = 1 + (int)pick(rng, CLAIM_MODEL_RULES_MAX);
    for (int i = 0; i < count; i++) {
        const char *type = limit_types[pick(rng, 5)];
        const model_ops *ops = model_find(type);
        cr_assert_not_null(ops);
        int64_t first = 1 + pick(rng, 4), second;
        int64_t factor = 2 + pick(rng, 14); /* tenths of the schedule's pace */
        if (ops->window) {
            second = interval_us * first * factor / 10 / 1000; /* window_ms */
            second = second < 1 ? 1 : second;
        } else {
            second = SL_JOB / interval_us * 10 / factor; /* rate_milli */
            second = second < 1 ? 1 : second;
        }
        bool dead_letter = pick(rng, 2) == 0;
        rules[i] = (claim_model_rule){rule_names[i], ops, first, second, dead_letter, NULL};
        limits[i] = (sl_claim_limit){rule_names[i], type, first, second, dead_letter};
    }
    return count;
}

/* Empties every key of the tenant and of its rules. */
static void clear_tenant(const sl_tenant_keys *k)
{
    freeReplyObject(redisCommand(fx.conn, "DEL %s %s %s %s %s %s %s", k->queue, k->shape,
                                 k->inflight, k->jobs, k->retry, k->dlq, k->settings));
    for (int i = 0; i < CLAIM_MODEL_RULES_MAX; i++) {
        char key[SL_KEY_MAX];
        sl_limit_key(key, "prop", "t", rule_names[i]);
        freeReplyObject(redisCommand(fx.conn, "DEL %s", key));
    }
}

/* The job number of a job text "jN". */
static int64_t job_number(const char *text, size_t len)
{
    cr_assert(len > 1 && text[0] == 'j', "not a test job: %.*s", (int)len, text);
    return strtoll(text + 1, NULL, 10);
}

/* The dead letters of the last claim, oldest first: job numbers and
 * reasons (reasons[i] the caller frees); empties the dlq. */
static size_t take_dead_letters(const sl_tenant_keys *k, int64_t jobs[], char *reasons[],
                                size_t max)
{
    redisReply *reply = redisCommand(fx.conn, "LRANGE %s 0 -1", k->dlq);
    cr_assert(reply && reply->type == REDIS_REPLY_ARRAY);
    cr_assert_leq(reply->elements, max);
    size_t n = reply->elements;
    for (size_t i = 0; i < n; i++) { /* LPUSHed: the newest first */
        cJSON *record = cJSON_Parse(reply->element[n - 1 - i]->str);
        cr_assert_not_null(record);
        const cJSON *job = cJSON_GetObjectItemCaseSensitive(record, "job");
        const cJSON *reason = cJSON_GetObjectItemCaseSensitive(record, "reason");
        cr_assert(cJSON_IsString(job) && cJSON_IsString(reason));
        jobs[i] = job_number(job->valuestring, strlen(job->valuestring));
        reasons[i] = strdup(reason->valuestring);
        cJSON_Delete(record);
    }
    freeReplyObject(reply);
    freeReplyObject(redisCommand(fx.conn, "DEL %s", k->dlq));
    return n;
}

/* One claim through claim.lua at now_us, checked job by job against the
 * model: which jobs were claimed, at which slot; which were dead-lettered,
 * by which rule; how many stay queued; when to claim again. */
static void check_claim(const char *sha, sl_argv *args, const sl_tenant_keys *k,
                        const sl_claim_params *p, claim_model *cm, int seq, int step,
                        claim_model_result *expected)
{
    char prefix[32];
    snprintf(prefix, sizeof prefix, "s%d.%d-", seq, step);
    sl_claim_build(args, sha, k, p, prefix);
    const char **argv = sl_argv_finish(args);
    cr_assert_not_null(argv);
    redisReply *reply = redisCommandArgv(fx.conn, (int)args->count, argv, args->lengths);
    sl_claim_result got;
    sl_claimed_job jobs[CLAIM_MODEL_BATCH_MAX];
    char err[256];
    cr_assert(sl_claim_parse(reply, prefix, p->lease_us, &got, jobs, CLAIM_MODEL_BATCH_MAX, err,
                             sizeof err),
              "seq %d step %d: %s", seq, step, err);
    claim_model_claim(cm, p->now_us, expected);

    int64_t dead_jobs[4 * CLAIM_MODEL_BATCH_MAX];
    char *dead_reasons[4 * CLAIM_MODEL_BATCH_MAX];
    size_t dead = take_dead_letters(k, dead_jobs, dead_reasons, 4 * CLAIM_MODEL_BATCH_MAX);
    size_t claimed = 0, rejected = 0;
    for (size_t i = 0; i < expected->count; i++) {
        const claim_model_outcome *o = &expected->outcomes[i];
        if (o->claimed) {
            cr_assert_lt(claimed, got.job_count, "seq %d step %d (now T0+%" PRId64
                         "): job %" PRId64 " claimed by the model at %" PRId64 ", not by the script",
                         seq, step, p->now_us - T0, o->job, o->slot - T0);
            int64_t job = job_number(jobs[claimed].job, jobs[claimed].job_len);
            cr_assert(job == o->job && jobs[claimed].slot_us == o->slot,
                      "seq %d step %d (now T0+%" PRId64 "): script claimed job %" PRId64
                      " at T0+%" PRId64 ", model job %" PRId64 " at T0+%" PRId64,
                      seq, step, p->now_us - T0, job, jobs[claimed].slot_us - T0, o->job,
                      o->slot - T0);
            claimed++;
        } else {
            cr_assert_lt(rejected, dead, "seq %d step %d: job %" PRId64
                         " dead-lettered by the model (limit:%s), not by the script",
                         seq, step, o->job, o->denied_by);
            char reason[64];
            snprintf(reason, sizeof reason, "limit:%s", o->denied_by);
            cr_assert(dead_jobs[rejected] == o->job && strcmp(dead_reasons[rejected], reason) == 0,
                      "seq %d step %d: script dead-lettered job %" PRId64 " (%s), model job %"
                      PRId64 " (%s)", seq, step, dead_jobs[rejected], dead_reasons[rejected],
                      o->job, reason);
            rejected++;
        }
    }
    cr_assert_eq(claimed, got.job_count, "seq %d step %d (now T0+%" PRId64 "): script claimed %zu,"
                 " model %zu", seq, step, p->now_us - T0, got.job_count, claimed);
    cr_assert_eq(rejected, dead, "seq %d step %d: script dead-lettered %zu, model %zu", seq, step,
                 dead, rejected);
    cr_assert_eq(got.queue_len, (int64_t)expected->queue_len, "seq %d step %d: queue %" PRId64
                 ", model %zu", seq, step, got.queue_len, expected->queue_len);
    cr_assert_eq(got.next_us, expected->next_us, "seq %d step %d: next_us T0+%" PRId64
                 ", model T0+%" PRId64 "%s", seq, step, got.next_us - T0,
                 expected->next_us - T0, expected->held ? " (held)" : "");
    for (size_t i = 0; i < dead; i++)
        free(dead_reasons[i]);
    freeReplyObject(reply);
}

/* Random arrivals of jobs under a random stack of rules (none when
 * with_rules is false: claim.lua's plain run, the schedule alone), claimed
 * at random times and at the times the script asks to be called again
 * (where a held queue is released): claim.lua and the model decide the
 * same for every job. */
static void check_claim_sequences(const char *stream, bool with_rules)
{
    static const int64_t rates[] = {1000, 10000, 100000, 1000000, 7000};
    uint64_t rng = stream_for(stream);
    char sha[41];
    redis_fixture_load(&fx, "claim", sha);
    sl_argv args;
    sl_argv_init(&args);
    sl_tenant_keys keys;
    cr_assert(sl_tenant_keys_init(&keys, "prop", "t"));
    long claimed = 0, dead = 0, held = 0, stacked_dead = 0, released = 0;

    for (int seq = 0; seq < CLAIM_SEQUENCES; seq++) {
        int64_t rate_milli = pick(&rng, 4) ? rates[pick(&rng, 5)] : 1000 + pick(&rng, 2000000);
        int64_t interval = (SL_JOB + rate_milli - 1) / rate_milli;
        claim_model_rule rules[CLAIM_MODEL_RULES_MAX];
        sl_claim_limit limits[CLAIM_MODEL_RULES_MAX];
        int rule_count = with_rules ? random_rules(&rng, interval, rules, limits) : 0;
        sl_claim_params p = {
            .prefix = "prop", .tenant = "t", .capacity = 1000, .rate_milli = rate_milli,
            .raw = true, .lookahead_us = pick(&rng, 8 * interval + 1),
            .lease_us = INT64_C(1000000000000), /* no lease expires: no retries */
            .batch = 1 + (int)pick(&rng, 8), .limits = limits, .limit_count = (size_t)rule_count,
        };
        p.refill_us = pick(&rng, p.lookahead_us + 1);
        claim_model cm;
        claim_model_init(&cm, rate_milli, p.lookahead_us, p.refill_us, p.batch, rules,
                         rule_count);
        clear_tenant(&keys);

        int64_t now = T0 + pick(&rng, INT64_C(86400000000)), pushed = 0;
        bool was_held = false;
        for (int step = 0; step < CLAIM_STEPS; step++) {
            for (int64_t n = pick(&rng, 4); n > 0; n--, pushed++) {
                freeReplyObject(redisCommand(fx.conn, "LPUSH %s j%" PRId64, keys.queue, pushed));
                claim_model_push(&cm, pushed);
            }
            p.now_us = now;
            claim_model_result r;
            check_claim(sha, &args, &keys, &p, &cm, seq, step, &r);
            for (size_t i = 0; i < r.count; i++) {
                claimed += r.outcomes[i].claimed;
                dead += !r.outcomes[i].claimed;
                stacked_dead += !r.outcomes[i].claimed && rule_count > 1;
                released += was_held && r.outcomes[i].claimed && i == 0;
            }
            held += r.held;
            was_held = r.held;
            /* Next: when the script asked to be called again, or at random. */
            if (r.next_us > now && pick(&rng, 2))
                now = r.next_us;
            else
                now += random_gap(&rng, interval);
        }
        claim_model_free(&cm);
    }
    sl_argv_free(&args);
    sl_tenant_keys_free(&keys);
    cr_assert_gt(claimed, CLAIM_SEQUENCES, "only %ld claimed", claimed);
    if (!with_rules) {
        cr_log_info("claim without limits: %ld claimed", claimed);
        return;
    }
    /* Every outcome, and holds released on time, must have happened. */
    cr_assert_gt(dead, CLAIM_SEQUENCES / 4, "only %ld dead-lettered", dead);
    cr_assert_gt(stacked_dead, 0, "no dead letter under a stack of rules");
    cr_assert_gt(held, CLAIM_SEQUENCES / 4, "only %ld claims held", held);
    cr_assert_gt(released, CLAIM_SEQUENCES / 20, "only %ld holds released", released);
    cr_log_info("claim with stacked limits: %ld claimed, %ld dead-lettered (%ld under a stack), "
                "%ld claims held, %ld released", claimed, dead, stacked_dead, held, released);
}

Test(property, claim_stacked_limits) { check_claim_sequences("claim_stacked_limits", true); }
Test(property, claim_schedule_alone) { check_claim_sequences("claim_schedule_alone", false); }
