/* test_cli.c - `sluice push`, `stats` and `dlq list|replay|purge`: the
 * real binary ($SLUICE_BIN) against a private redis-server, and an
 * operator's round trip through them against a real daemon ($SLUICE_BIN
 * run) and endpoint ($SLUICE_SINK). */
#include <criterion/criterion.h>
#include <cjson/cJSON.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cli_run.h"
#include "config_file.h"
#include "daemon_process.h"
#include "redis_fixture.h"
#include "daemon_env.h"
#include "sink_process.h"

#define OUT_MAX 65536

static redis_fixture fx;
static char url[64];
static char config_path[64];
static char out[OUT_MAX];

static void setup(void)
{
    signal(SIGPIPE, SIG_IGN); /* a child that exits before reading stdin */
    redis_fixture_start(&fx);
    snprintf(url, sizeof url, "redis://127.0.0.1:%d/0", fx.server.port);
    config_path[0] = '\0';
}

static void teardown(void)
{
    if (config_path[0])
        unlink(config_path);
    redis_fixture_stop(&fx);
}

TestSuite(cli, .init = setup, .fini = teardown, .timeout = 60);

#define RUN(in, ...) cli_run(out, sizeof out, in, (const char *const[]){__VA_ARGS__, NULL})

static void write_config(const char *tenants_json)
{
    snprintf(config_path, sizeof config_path, "/tmp/sluice-cli-XXXXXX");
    int fd = mkstemp(config_path);
    cr_assert(fd >= 0);
    close(fd);
    config_file_write(config_path, url, "", "%s", tenants_json);
}

static redisReply *cmd(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    redisReply *r = redisvCommand(fx.conn, fmt, ap);
    va_end(ap);
    cr_assert_not_null(r);
    cr_assert_neq(r->type, REDIS_REPLY_ERROR, "%s", r->str);
    return r;
}

static long long cmd_int(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    redisReply *r = redisvCommand(fx.conn, fmt, ap);
    va_end(ap);
    cr_assert_not_null(r);
    cr_assert_eq(r->type, REDIS_REPLY_INTEGER, "%s", r->str ? r->str : "");
    long long v = r->integer;
    freeReplyObject(r);
    return v;
}

/* RPOPs the queue of acme and expects `job`. */
static void expect_rpop(const char *key, const char *job)
{
    redisReply *r = cmd("RPOP %s", key);
    cr_assert_eq(r->type, REDIS_REPLY_STRING, "%s is empty, expected %s", key, job);
    cr_expect_str_eq(r->str, job);
    freeReplyObject(r);
}

static void dead_letter(const char *id, long long dead_at_ms, const char *job)
{
    char record[512];
    snprintf(record, sizeof record,
             "{\"tenant\":\"acme\",\"reason\":\"http_4xx\",\"job\":\"%s\",\"id\":\"%s\","
             "\"http_status\":404,\"error\":\"HTTP 404\",\"attempts\":1,"
             "\"first_seen_ms\":%lld,\"dead_at_ms\":%lld}",
             job, id, dead_at_ms - 5, dead_at_ms);
    freeReplyObject(cmd("LPUSH sluice:{acme}:dlq %s", record));
}

Test(cli, push_envelopes)
{
    int code = RUN(NULL, "push", "--redis", url, "acme", "{\"id\":\"a1\",\"body\":{\"n\":1}}",
                   "{\"body\":\"two\",\"headers\":{\"X-A\":\"b\"}}");
    cr_assert_eq(code, 0, "%s", out);
    cr_expect(strstr(out, "pushed 2 jobs to acme"), "%s", out);
    cr_expect_eq(cmd_int("LLEN sluice:{acme}:queue"), 2);
    expect_rpop("sluice:{acme}:queue", "{\"id\":\"a1\",\"body\":{\"n\":1}}");
    expect_rpop("sluice:{acme}:queue", "{\"body\":\"two\",\"headers\":{\"X-A\":\"b\"}}");
    cr_expect_eq(cmd_int("SISMEMBER sluice:tenants acme"), 1);
}

Test(cli, push_prefix_override)
{
    cr_assert_eq(RUN(NULL, "push", "--redis", url, "--prefix", "p2", "acme", "{}"), 0, "%s", out);
    cr_expect_eq(cmd_int("LLEN p2:{acme}:queue"), 1);
    cr_expect_eq(cmd_int("SISMEMBER p2:tenants acme"), 1);
    cr_expect_eq(cmd_int("EXISTS sluice:{acme}:queue"), 0);
}

Test(cli, push_from_stdin)
{
    int code = RUN("{\"body\":1}\n{\"body\":2}\r\n{\"body\":3}\n", "push", "--redis", url, "acme",
                   "-");
    cr_assert_eq(code, 0, "%s", out);
    cr_expect(strstr(out, "pushed 3 jobs to acme"), "%s", out);
    expect_rpop("sluice:{acme}:queue", "{\"body\":1}");
    expect_rpop("sluice:{acme}:queue", "{\"body\":2}");
    expect_rpop("sluice:{acme}:queue", "{\"body\":3}");
}

Test(cli, push_bad_job_pushes_nothing)
{
    int code = RUN(NULL, "push", "--redis", url, "acme", "{\"body\":1}", "{\"body\":2}",
                   "{\"body\":3,\"headers\":{\"Host\":\"evil\"}}", "{\"bdoy\":4}");
    cr_assert_eq(code, 2, "%s", out);
    cr_expect(strstr(out, "sluice push: job 3: bad_header: "), "%s", out);
    cr_expect(strstr(out, "sluice push: job 4: malformed: "), "%s", out);
    cr_expect_null(strstr(out, "job 1"), "%s", out);
    cr_expect_null(strstr(out, "pushed"), "%s", out);
    cr_expect_eq(cmd_int("EXISTS sluice:{acme}:queue"), 0);
    cr_expect_eq(cmd_int("EXISTS sluice:tenants"), 0);

    /* A job naming a full url is refused without allow_urls. */
    code = RUN("{\"url\":\"http://internal/x\"}\n", "push", "--redis", url, "acme", "-");
    cr_expect_eq(code, 2, "%s", out);
    cr_expect(strstr(out, "job 1: url_not_allowed: "), "%s", out);
}

Test(cli, push_raw_with_config_rules)
{
    write_config("{\"rawt\": {\"endpoint\": \"http://127.0.0.1:9/\", \"rate\": 5, "
                 "\"format\": \"raw\", \"max_job_bytes\": 16}}");
    int code = RUN(NULL, "push", "-c", config_path, "rawt", "not json at all");
    cr_assert_eq(code, 0, "%s", out);
    expect_rpop("sluice:{rawt}:queue", "not json at all");
    code = RUN(NULL, "push", "-c", config_path, "rawt", "short", "this one is longer than 16");
    cr_expect_eq(code, 2, "%s", out);
    cr_expect(strstr(out, "job 2: too_large: "), "%s", out);
    cr_expect_eq(cmd_int("EXISTS sluice:{rawt}:queue"), 0);
    /* Without the config the same job is an invalid envelope. */
    code = RUN(NULL, "push", "--redis", url, "rawt", "not json at all");
    cr_expect_eq(code, 2, "%s", out);
    cr_expect(strstr(out, "job 1: malformed: "), "%s", out);
    /* A tenant the config does not govern (no "*" template). */
    code = RUN(NULL, "push", "-c", config_path, "other", "x");
    cr_expect_eq(code, 2, "%s", out);
    cr_expect(strstr(out, "'other' is not in the config"), "%s", out);
}

Test(cli, push_invalid_tenant_name)
{
    int code = RUN(NULL, "push", "--redis", url, "bad{name}", "{}");
    cr_assert_eq(code, 2, "%s", out);
    cr_expect(strstr(out, "invalid tenant name 'bad{name}'"), "%s", out);
    cr_expect_eq(cmd_int("DBSIZE"), 0);
}

/* Redis's clock in us. */
static long long redis_now_us(void)
{
    redisReply *r = cmd("TIME");
    long long now = atoll(r->element[0]->str) * 1000000 + atoll(r->element[1]->str);
    freeReplyObject(r);
    return now;
}

/* acme (10/s): 2 claimed, next_free 5 s ahead: both scheduled.
 * gamma (0.5/s): 3 claimed, next_free 3.5 s ahead: one slot (2 s apart)
 * still ahead, two passed. delta (not configured, so no rate): 1 claimed,
 * no schedule: in flight. beta: only in <prefix>:tenants. */
static void stats_setup(void)
{
    freeReplyObject(cmd("LPUSH sluice:{acme}:queue a b c"));
    freeReplyObject(cmd("ZADD sluice:{acme}:inflight 1 x 2 y"));
    freeReplyObject(cmd("ZADD sluice:{acme}:retry 1 z"));
    for (int i = 0; i < 4; i++)
        dead_letter("d", 1700000000000LL + i, "j");
    freeReplyObject(cmd("HSET sluice:{acme}:shape next_free %lld", redis_now_us() + 5000000));
    freeReplyObject(cmd("ZADD sluice:{gamma}:inflight 1 g1 2 g2 3 g3"));
    freeReplyObject(cmd("HSET sluice:{gamma}:shape next_free %lld frac 0",
                        redis_now_us() + 3500000));
    freeReplyObject(cmd("SADD sluice:tenants beta"));
    freeReplyObject(cmd("LPUSH sluice:{delta}:queue q"));
    freeReplyObject(cmd("ZADD sluice:{delta}:inflight 1 d1"));
    write_config("{\"acme\": {\"endpoint\": \"http://127.0.0.1:9/\", \"rate\": 10}, "
                 "\"gamma\": {\"endpoint\": \"http://127.0.0.1:9/\", \"rate\": 0.5}}");
}

static const cJSON *find_tenant(const cJSON *root, const char *name)
{
    const cJSON *t;
    cJSON_ArrayForEach(t, cJSON_GetObjectItem(root, "tenants"))
    {
        if (strcmp(cJSON_GetObjectItem(t, "tenant")->valuestring, name) == 0)
            return t;
    }
    return NULL;
}

static double num(const cJSON *o, const char *key)
{
    const cJSON *v = cJSON_GetObjectItem(o, key);
    cr_assert(cJSON_IsNumber(v), "%s is not a number", key);
    return v->valuedouble;
}

/* A table line "NAME QUEUED SCHEDULED IN_FLIGHT RETRYING DEAD RATE DELAY"
 * whose scheduled and in-flight counts are known. */
typedef struct table_row {
    long long queued, scheduled, in_flight, retrying, dead, delay;
    char rate[16];
} table_row;

static table_row table_line(const char *name)
{
    char prefix[32];
    snprintf(prefix, sizeof prefix, "\n%s ", name);
    const char *line = strstr(out, prefix);
    cr_assert_not_null(line, "no line for %s: %s", name, out);
    table_row r;
    int n = sscanf(line + strlen(prefix), "%lld %lld %lld %lld %lld %15s %lld", &r.queued,
                   &r.scheduled, &r.in_flight, &r.retrying, &r.dead, r.rate, &r.delay);
    cr_assert_eq(n, 7, "%s", out);
    return r;
}

Test(cli, stats_table)
{
    stats_setup();
    int code = RUN(NULL, "stats", "-c", config_path);
    cr_assert_eq(code, 0, "%s", out);
    cr_expect(strncmp(out, "TENANT ", 7) == 0, "%s", out);
    cr_expect(strstr(out, "QUEUED") && strstr(out, "SCHEDULED") && strstr(out, "IN_FLIGHT") &&
              strstr(out, "DELAY_MS"), "%s", out);
    table_row r = table_line("acme");
    cr_expect_eq(r.queued, 3);
    cr_expect_eq(r.scheduled, 2);
    cr_expect_eq(r.in_flight, 0);
    cr_expect_eq(r.retrying, 1);
    cr_expect_eq(r.dead, 4);
    cr_expect_str_eq(r.rate, "10");
    cr_expect(r.delay > 4000 && r.delay <= 5000, "delay %lld", r.delay);
    r = table_line("beta");
    cr_expect_eq(r.queued + r.scheduled + r.in_flight + r.retrying + r.dead + r.delay, 0);
    cr_expect_str_eq(r.rate, "-");
    r = table_line("delta");
    cr_expect_eq(r.queued, 1);
    cr_expect_eq(r.scheduled, 0);
    cr_expect_eq(r.in_flight, 1);
    cr_expect_str_eq(r.rate, "-");
    r = table_line("gamma");
    cr_expect_str_eq(r.rate, "0.5");
    cr_expect_eq(r.scheduled, 1);
    cr_expect_eq(r.in_flight, 2);
    cr_expect(r.delay > 3000 && r.delay <= 3500, "delay %lld", r.delay);
    cr_expect_eq(r.queued + r.retrying + r.dead, 0);
    /* The columns line up: every line as long as the header. */
    size_t header = strcspn(out, "\n");
    for (char *l = strchr(out, '\n'); l && l[1]; l = strchr(l + 1, '\n'))
        cr_expect_eq(strcspn(l + 1, "\n"), header, "%s", out);

    /* Without the config the rate is unknown: acme's split cannot be told
     * while its next free slot lies ahead; delta's can. */
    code = RUN(NULL, "stats", "--redis", url);
    cr_assert_eq(code, 0, "%s", out);
    const char *line = strstr(out, "\nacme ");
    cr_assert_not_null(line, "%s", out);
    long long queued;
    char scheduled[16], in_flight[16];
    cr_assert_eq(sscanf(line + 1, "acme %lld %15s %15s", &queued, scheduled, in_flight), 3);
    cr_expect_str_eq(scheduled, "-");
    cr_expect_str_eq(in_flight, "-");
    r = table_line("delta");
    cr_expect_eq(r.in_flight, 1);
}

Test(cli, stats_json)
{
    stats_setup();
    int code = RUN(NULL, "stats", "-c", config_path, "--json");
    cr_assert_eq(code, 0, "%s", out);
    cJSON *root = cJSON_Parse(out);
    cr_assert_not_null(root, "%s", out);
    cr_expect_eq(cJSON_GetArraySize(cJSON_GetObjectItem(root, "tenants")), 4, "%s", out);
    const cJSON *acme = find_tenant(root, "acme");
    cr_assert_not_null(acme, "%s", out);
    cr_expect_eq(num(acme, "queued"), 3);
    cr_expect_eq(num(acme, "claimed"), 2);
    cr_expect_eq(num(acme, "scheduled"), 2);
    cr_expect_eq(num(acme, "in_flight"), 0);
    cr_expect_eq(num(acme, "retrying"), 1);
    cr_expect_eq(num(acme, "dead_lettered"), 4);
    cr_expect_eq(num(acme, "rate"), 10);
    cr_expect(num(acme, "delay_ms") > 4000 && num(acme, "delay_ms") <= 5000, "%s", out);
    const cJSON *gamma = find_tenant(root, "gamma");
    cr_assert_not_null(gamma, "%s", out);
    cr_expect_eq(num(gamma, "claimed"), 3);
    cr_expect_eq(num(gamma, "scheduled"), 1);
    cr_expect_eq(num(gamma, "in_flight"), 2);
    const cJSON *beta = find_tenant(root, "beta");
    cr_assert_not_null(beta, "%s", out);
    cr_expect(cJSON_IsNull(cJSON_GetObjectItem(beta, "rate")), "%s", out);
    cr_expect_eq(num(beta, "delay_ms"), 0);
    cr_expect_eq(num(beta, "scheduled"), 0);
    cr_expect_eq(num(beta, "in_flight"), 0);
    cJSON_Delete(root);

    /* One tenant, by --redis: no rate known, so no split while slots lie
     * ahead; the claimed jobs are still counted. */
    code = RUN(NULL, "stats", "--redis", url, "acme", "--json");
    cr_assert_eq(code, 0, "%s", out);
    root = cJSON_Parse(out);
    cr_assert_not_null(root, "%s", out);
    cr_expect_eq(cJSON_GetArraySize(cJSON_GetObjectItem(root, "tenants")), 1, "%s", out);
    acme = find_tenant(root, "acme");
    cr_assert_not_null(acme);
    cr_expect_eq(num(acme, "queued"), 3);
    cr_expect_eq(num(acme, "claimed"), 2);
    cr_expect(cJSON_IsNull(cJSON_GetObjectItem(acme, "scheduled")), "%s", out);
    cr_expect(cJSON_IsNull(cJSON_GetObjectItem(acme, "in_flight")), "%s", out);
    cr_expect(cJSON_IsNull(cJSON_GetObjectItem(acme, "rate")), "%s", out);
    cJSON_Delete(root);

    code = RUN(NULL, "stats", "--redis", url, "delta", "--json");
    cr_assert_eq(code, 0, "%s", out);
    root = cJSON_Parse(out);
    cr_assert_not_null(root, "%s", out);
    const cJSON *delta = find_tenant(root, "delta");
    cr_assert_not_null(delta, "%s", out);
    cr_expect_eq(num(delta, "scheduled"), 0);
    cr_expect_eq(num(delta, "in_flight"), 1);
    cJSON_Delete(root);
}

Test(cli, stats_help_explains_the_estimate)
{
    cr_assert_eq(RUN(NULL, "stats", "--help"), 0, "%s", out);
    cr_expect(strstr(out, "in flight"), "%s", out);
    cr_expect(strstr(out, "estimate"), "%s", out);
    cr_expect(strstr(out, "during a pause, claimed jobs show as scheduled"), "%s", out);
}

static int count_lines(const char *s)
{
    int n = 0;
    for (; *s; s++)
        n += *s == '\n';
    return n;
}

Test(cli, dlq_list)
{
    for (int i = 0; i < 25; i++) {
        char id[16];
        snprintf(id, sizeof id, "id-%02d", i);
        dead_letter(id, 1700000000000LL + i, i == 24 ? "0123456789012345678901234567890123456789"
                                                       "0123456789012345678901234567890123456789"
                                                     : "short job");
    }
    int code = RUN(NULL, "dlq", "list", "--redis", url, "acme");
    cr_assert_eq(code, 0, "%s", out);
    cr_expect_eq(count_lines(out), 21, "%s", out); /* header + the newest 20 */
    cr_expect(strstr(out, "DEAD_AT"), "%s", out);
    char *first = strchr(out, '\n') + 1;
    cr_expect(strncmp(first, "2023-11-14T22:13:20.024Z http_4xx", 33) == 0, "%s", first);
    cr_expect(strstr(first, " 404 ") && strstr(first, "id-24"), "%s", first);
    cr_expect(strstr(first, "01234567890123456789012345678901234567890123456...\n"), "%s", first);
    cr_expect_null(strstr(out, "id-04"), "%s", out);

    code = RUN(NULL, "dlq", "list", "--redis", url, "acme", "--limit", "3", "--json");
    cr_assert_eq(code, 0, "%s", out);
    cJSON *root = cJSON_Parse(out);
    cr_assert(cJSON_IsArray(root), "%s", out);
    cr_expect_eq(cJSON_GetArraySize(root), 3);
    const cJSON *newest = cJSON_GetArrayItem(root, 0);
    cr_expect_str_eq(cJSON_GetObjectItem(newest, "id")->valuestring, "id-24");
    cr_expect_eq(num(newest, "http_status"), 404);
    cr_expect_str_eq(cJSON_GetObjectItem(cJSON_GetArrayItem(root, 2), "id")->valuestring, "id-22");
    cJSON_Delete(root);

    code = RUN(NULL, "dlq", "list", "--redis", url, "empty", "--json");
    cr_assert_eq(code, 0, "%s", out);
    cr_expect_str_eq(out, "[]\n");
}

Test(cli, dlq_replay)
{
    freeReplyObject(cmd("LPUSH sluice:{acme}:queue q0"));
    dead_letter("r1", 1700000000001LL, "job1");
    freeReplyObject(cmd("LPUSH sluice:{acme}:dlq %s", "{not json"));
    dead_letter("r2", 1700000000002LL, "job2");
    dead_letter("r3", 1700000000003LL, "job3");
    int code = RUN(NULL, "dlq", "replay", "--redis", url, "acme", "--count", "1");
    cr_assert_eq(code, 0, "%s", out);
    cr_expect(strstr(out, "replayed 1 job to acme"), "%s", out);
    cr_expect_eq(cmd_int("LLEN sluice:{acme}:dlq"), 3);

    code = RUN(NULL, "dlq", "replay", "--redis", url, "acme");
    cr_assert_eq(code, 0, "%s", out);
    cr_expect(strstr(out, "replayed 2 jobs to acme"), "%s", out);
    cr_expect(strstr(out, "1 record could not be decoded"), "%s", out);
    expect_rpop("sluice:{acme}:queue", "q0");
    expect_rpop("sluice:{acme}:queue", "job1");
    expect_rpop("sluice:{acme}:queue", "job2");
    expect_rpop("sluice:{acme}:queue", "job3");
    cr_expect_eq(cmd_int("LLEN sluice:{acme}:queue"), 0);
    cr_expect_eq(cmd_int("LLEN sluice:{acme}:dlq"), 1);
    expect_rpop("sluice:{acme}:dlq", "{not json");
}

/* EVAL calls since the last CONFIG RESETSTAT. */
static long long eval_calls(void)
{
    redisReply *r = cmd("INFO commandstats");
    const char *at = strstr(r->str, "cmdstat_eval:calls=");
    long long calls = at ? atoll(at + strlen("cmdstat_eval:calls=")) : 0;
    freeReplyObject(r);
    return calls;
}

/* 2,502 records, two of them undecodable (the 701st and 1,801st oldest):
 * replayed in atomic steps of 1,000 records, oldest first, the bad ones
 * left in order, across two invocations. */
Test(cli, dlq_replay_in_steps)
{
    enum { RECORDS = 2502, BAD_A = 700, BAD_B = 1800 };
    for (int i = 0; i < RECORDS; i++) {
        char record[256];
        if (i == BAD_A || i == BAD_B)
            snprintf(record, sizeof record, "{bad %d", i);
        else
            snprintf(record, sizeof record,
                     "{\"tenant\":\"acme\",\"reason\":\"http_4xx\",\"job\":\"job-%04d\","
                     "\"attempts\":1}", i);
        cr_assert_eq(redisAppendCommand(fx.conn, "LPUSH sluice:{acme}:dlq %s", record), REDIS_OK);
    }
    for (int i = 0; i < RECORDS; i++) {
        redisReply *r;
        cr_assert_eq(redisGetReply(fx.conn, (void **)&r), REDIS_OK);
        freeReplyObject(r);
    }
    freeReplyObject(cmd("CONFIG RESETSTAT"));
    int code = RUN(NULL, "dlq", "replay", "--redis", url, "acme", "--count", "1500");
    cr_assert_eq(code, 0, "%s", out);
    cr_expect(strstr(out, "replayed 1500 jobs to acme"), "%s", out);
    cr_expect(strstr(out, "1 record could not be decoded"), "%s", out);
    cr_expect_eq(eval_calls(), 2, "1,000 records, then the 501 that complete the count");
    cr_expect_eq(cmd_int("LLEN sluice:{acme}:queue"), 1500);
    cr_expect_eq(cmd_int("LLEN sluice:{acme}:dlq"), RECORDS - 1500);

    freeReplyObject(cmd("CONFIG RESETSTAT"));
    code = RUN(NULL, "dlq", "replay", "--redis", url, "acme");
    cr_assert_eq(code, 0, "%s", out);
    cr_expect(strstr(out, "replayed 1000 jobs to acme"), "%s", out);
    cr_expect(strstr(out, "2 records could not be decoded"), "%s", out);
    cr_expect_eq(eval_calls(), 2, "1,000 records, then the last 2");

    for (int i = 0; i < RECORDS; i++) {
        if (i == BAD_A || i == BAD_B)
            continue;
        char job[16];
        snprintf(job, sizeof job, "job-%04d", i);
        expect_rpop("sluice:{acme}:queue", job);
    }
    cr_expect_eq(cmd_int("LLEN sluice:{acme}:queue"), 0);
    expect_rpop("sluice:{acme}:dlq", "{bad 700");
    expect_rpop("sluice:{acme}:dlq", "{bad 1800");
    cr_expect_eq(cmd_int("LLEN sluice:{acme}:dlq"), 0);
}

Test(cli, dlq_purge)
{
    for (int i = 0; i < 4; i++)
        dead_letter("p", 1700000000000LL + i, "j");
    int code = RUN(NULL, "dlq", "purge", "--redis", url, "acme");
    cr_assert_eq(code, 0, "%s", out);
    cr_expect(strstr(out, "purged 4 records from acme"), "%s", out);
    cr_expect_eq(cmd_int("EXISTS sluice:{acme}:dlq"), 0);
    code = RUN(NULL, "dlq", "purge", "--redis", url, "acme");
    cr_assert_eq(code, 0, "%s", out);
    cr_expect(strstr(out, "purged 0 records from acme"), "%s", out);
}

Test(cli, help_everywhere)
{
    const char *const commands[][4] = {
        {"push", "--help", NULL},         {"stats", "--help", NULL},
        {"dlq", "--help", NULL},          {"dlq", "list", "--help"},
        {"dlq", "replay", "--help"},      {"dlq", "purge", "-h"},
    };
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++) {
        int code = cli_run(out, sizeof out, NULL, commands[i]);
        cr_expect_eq(code, 0, "%s %s: %s", commands[i][0], commands[i][1], out);
        cr_expect(strncmp(out, "Usage: sluice ", 14) == 0, "%s", out);
    }
    RUN(NULL, "dlq", "--help");
    cr_expect(strstr(out, "behind the jobs already queued"), "%s", out);
}

Test(cli, bad_usage)
{
    cr_expect_eq(RUN(NULL, "push"), 2, "%s", out);
    cr_expect_eq(RUN(NULL, "push", "--redis", url, "acme"), 2, "%s", out);
    cr_expect_eq(RUN(NULL, "push", "acme", "{}"), 2, "%s", out);
    cr_expect(strstr(out, "exactly one of -c FILE and --redis URL"), "%s", out);
    cr_expect_eq(RUN(NULL, "stats", "--redis", url, "-c", "/nonexistent"), 2, "%s", out);
    cr_expect_eq(RUN(NULL, "stats", "--bogus"), 2, "%s", out);
    cr_expect_eq(RUN(NULL, "stats", "--redis", "http://x"), 2, "%s", out);
    cr_expect_eq(RUN(NULL, "stats", "--redis", url, "--prefix", "a b"), 2, "%s", out);
    cr_expect_eq(RUN(NULL, "stats", "-c", "/nonexistent/sluice.json"), 2, "%s", out);
    cr_expect_eq(RUN(NULL, "dlq"), 2, "%s", out);
    cr_expect_eq(RUN(NULL, "dlq", "frob", "acme"), 2, "%s", out);
    cr_expect_eq(RUN(NULL, "dlq", "list", "--redis", url), 2, "%s", out);
    cr_expect_eq(RUN(NULL, "dlq", "list", "--redis", url, "acme", "--limit", "0"), 2, "%s", out);
    cr_expect_eq(RUN(NULL, "dlq", "purge", "--redis", url, "acme", "--json"), 2, "%s", out);
    cr_expect_eq(RUN(NULL, "dlq", "list", "--redis", url, "acme", "--count", "2"), 2, "%s", out);
    cr_expect_eq(RUN(NULL, "dlq", "replay", "--redis", url, "acme", "--count", "x"), 2, "%s", out);
    cr_expect_eq(RUN(NULL, "dlq", "purge", "--redis", url, "a}b"), 2, "%s", out);
    cr_expect_eq(RUN(NULL, "stats", "--redis", url, "--limit", "3"), 2, "%s", out);
    cr_expect(strstr(out, "sluice stats: --limit does not apply here"), "%s", out);
    cr_expect_eq(RUN(NULL, "push", "--redis", url, "--json", "acme", "{}"), 2, "%s", out);
    cr_expect(strstr(out, "sluice push: --json does not apply here"), "%s", out);
    cr_expect_eq(cmd_int("DBSIZE"), 0);
}

/* The commands `sluice --help` lists, each of which must answer --help. */
static size_t listed_commands(char names[][32], size_t max)
{
    cr_assert_eq(RUN(NULL, "--help"), 0, "%s", out);
    const char *p = strstr(out, "Commands:\n");
    cr_assert_not_null(p, "%s", out);
    size_t n = 0;
    for (p = strchr(p, '\n') + 1; *p && *p != '\n' && n < max; p = strchr(p, '\n') + 1) {
        /* "  NAME ARGS   text"; continuation lines are indented further */
        if (p[0] == ' ' && p[1] == ' ' && p[2] != ' ')
            sscanf(p, "%31s", names[n++]);
        if (!strchr(p, '\n'))
            break;
    }
    return n;
}

Test(cli, help_and_version_on_every_command)
{
    char names[32][32];
    size_t n = listed_commands(names, 32);
    cr_assert_geq(n, 8, "only %zu commands listed: %s", n, out);
    for (size_t i = 0; i < n; i++) {
        int code = RUN(NULL, names[i], "--help");
        cr_expect_eq(code, 0, "%s --help: exit %d: %s", names[i], code, out);
        char usage[64];
        snprintf(usage, sizeof usage, "Usage: sluice %s", names[i]);
        if (strcmp(names[i], "help") != 0)
            cr_expect(strncmp(out, usage, strlen(usage)) == 0, "%s --help: %s", names[i], out);
        else
            cr_expect(strstr(out, "Commands:"), "help --help: %s", out);
    }
    cr_assert_eq(RUN(NULL, "version"), 0, "%s", out);
    cr_assert(strncmp(out, "sluice ", 7) == 0 && out[7] >= '0' && out[7] <= '9', "version: %s", out);
    char version[64] = {0};
    memcpy(version, out, strlen(out) < sizeof version ? strlen(out) : sizeof version - 1);
    cr_assert_eq(RUN(NULL, "--version"), 0, "%s", out);
    cr_assert_str_eq(out, version);
    cr_assert_eq(RUN(NULL, "help"), 0, "%s", out);
    cr_assert(strstr(out, "Commands:"), "%s", out);
    cr_assert_eq(RUN(NULL, "frobnicate"), 2, "an unknown command: %s", out);
}

/* A file with five mistakes: check-config and run -c both exit 2 and name
 * every one by its path, not only the first. */
static const char *const five_mistakes =
    "{\"redis\": \"http://nope\", \"tenants\": {"
    "\"acme\": {\"endpoint\": \"http://127.0.0.1:9/x\", \"rate\": -1, \"concurency\": 4},"
    " \"beta\": {\"rate\": 5},"
    " \"gamma\": {\"endpoint\": \"http://127.0.0.1:9/\", \"rate\": 1, \"retry\": {\"max_attempts\": 0}}}}";

static void expect_every_mistake(const char *command)
{
    const char *paths[] = {"redis: ", "tenants.acme.rate: ", "tenants.acme.concurency: ",
                           "tenants.beta.endpoint: ", "tenants.gamma.retry.max_attempts: "};
    for (size_t i = 0; i < sizeof paths / sizeof *paths; i++)
        cr_expect(strstr(out, paths[i]), "%s did not name %s: %s", command, paths[i], out);
}

Test(cli, a_bad_config_is_refused_with_every_mistake)
{
    snprintf(config_path, sizeof config_path, "/tmp/sluice-cli-XXXXXX");
    int fd = mkstemp(config_path);
    cr_assert(fd >= 0);
    cr_assert_eq(write(fd, five_mistakes, strlen(five_mistakes)), (ssize_t)strlen(five_mistakes));
    close(fd);
    cr_assert_eq(RUN(NULL, "check-config", config_path), 2, "%s", out);
    expect_every_mistake("check-config");
    cr_assert_eq(RUN(NULL, "run", "-c", config_path), 2, "%s", out);
    expect_every_mistake("run -c");
    cr_assert_eq(RUN(NULL, "check-config", "/nonexistent/sluice.json"), 2, "%s", out);
    cr_assert_eq(RUN(NULL, "run", "-c", "/nonexistent/sluice.json"), 2, "%s", out);
    cr_assert_eq(RUN(NULL, "run"), 2, "run without -c: %s", out);
    /* and a good file passes */
    write_config("{\"acme\": {\"endpoint\": \"http://127.0.0.1:9/\", \"rate\": 5}}");
    cr_assert_eq(RUN(NULL, "check-config", config_path), 0, "%s", out);
}

Test(cli, unreachable_redis)
{
    int port = rs_free_port();
    cr_assert(port > 0);
    char dead_url[96];
    snprintf(dead_url, sizeof dead_url, "redis://app:s3cretpw@127.0.0.1:%d/0", port);
    const char *const commands[][6] = {
        {"stats", "--redis", dead_url, NULL},
        {"push", "--redis", dead_url, "acme", "{}", NULL},
        {"dlq", "list", "--redis", dead_url, "acme", NULL},
    };
    char expected[96];
    snprintf(expected, sizeof expected, "cannot connect to Redis at redis://app:***@127.0.0.1:%d/0",
             port);
    for (size_t i = 0; i < 3; i++) {
        int code = cli_run(out, sizeof out, NULL, commands[i]);
        cr_expect_eq(code, 1, "%s: %s", commands[i][0], out);
        cr_expect(strstr(out, expected), "%s", out);
        cr_expect_null(strstr(out, "s3cretpw"), "%s", out);
    }
}

/* A password the server refuses: one attempt, and the server's words. */
Test(cli, a_refused_password_is_named)
{
    freeReplyObject(cmd("ACL SETUSER app on >right ~* +@all"));
    char bad_url[96];
    snprintf(bad_url, sizeof bad_url, "redis://app:wrong@127.0.0.1:%d/0", fx.server.port);
    int code = RUN(NULL, "push", "--redis", bad_url, "acme", "{}");
    cr_assert_eq(code, 1, "%s", out);
    cr_expect(strstr(out, "cannot connect to Redis at redis://app:***@127.0.0.1:"), "%s", out);
    cr_expect(strstr(out, "AUTH failed: WRONGPASS"), "%s", out);
    cr_expect_null(strstr(out, "level="), "no log line of the connection: %s", out);
    cr_expect_eq(cmd_int("LLEN sluice:{acme}:queue"), 0);
}

/* The CLI loads none of the daemon's scripts: a user allowed to push,
 * list and read but not to load scripts can use push, stats and dlq. */
Test(cli, a_user_without_scripts_can_push_and_read)
{
    freeReplyObject(cmd("ACL SETUSER producer on >pw ~sluice:* resetchannels +@all -script "
                        "-eval -evalsha"));
    char producer_url[96];
    snprintf(producer_url, sizeof producer_url, "redis://producer:pw@127.0.0.1:%d/0",
             fx.server.port);
    int code = RUN(NULL, "push", "--redis", producer_url, "acme", "{\"body\":1}");
    cr_assert_eq(code, 0, "%s", out);
    cr_expect_eq(cmd_int("LLEN sluice:{acme}:queue"), 1);
    code = RUN(NULL, "stats", "--redis", producer_url, "--json");
    cr_assert_eq(code, 0, "%s", out);
    cr_expect(strstr(out, "\"acme\""), "%s", out);
    code = RUN(NULL, "dlq", "list", "--redis", producer_url, "acme");
    cr_assert_eq(code, 0, "%s", out);
}

/* ---- the operator's round trip against a real daemon and endpoint ---- */

static sink_process sink;
static char op_dir[64];

static void operate_setup(void)
{
    setup();
    daemon_env_start(&sink, op_dir, sizeof op_dir, "operate");
}

static void operate_teardown(void)
{
    daemon_env_stop(&sink, op_dir);
    teardown();
}

TestSuite(operate, .init = operate_setup, .fini = operate_teardown, .timeout = 90);

static int64_t monotonic_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* A config for tenant acme at 50/s with `endpoint`; retries twice, fast. */
static void write_operate_config(char *path, size_t size, const char *name, const char *endpoint)
{
    snprintf(path, size, "%s/%s", op_dir, name);
    config_file_write(path, url, "\"workers\": 1, \"admin\": null, \"grace_ms\": 5000,",
                      "{\"acme\": {\"endpoint\": \"http://127.0.0.1:%d%s\", \"rate\": 50,\n"
                      "   \"retry\": {\"max_attempts\": 2, \"base_ms\": 10, \"max_ms\": 20}}}",
                      sink.port, endpoint);
}

typedef struct op_counts {
    long long queued, claimed, scheduled, in_flight, retrying, dead;
} op_counts;

/* `sluice stats -c config acme --json`, read back. */
static op_counts stats_of_acme(const char *config)
{
    int code = RUN(NULL, "stats", "-c", config, "acme", "--json");
    cr_assert_eq(code, 0, "%s", out);
    cJSON *root = cJSON_Parse(out);
    cr_assert_not_null(root, "%s", out);
    const cJSON *t = find_tenant(root, "acme");
    cr_assert_not_null(t, "%s", out);
    cr_assert_eq(num(t, "rate"), 50, "%s", out);
    op_counts c = {
        .queued = (long long)num(t, "queued"),
        .claimed = (long long)num(t, "claimed"),
        .scheduled = (long long)num(t, "scheduled"),
        .in_flight = (long long)num(t, "in_flight"),
        .retrying = (long long)num(t, "retrying"),
        .dead = (long long)num(t, "dead_lettered"),
    };
    cJSON_Delete(root);
    cr_assert_eq(c.scheduled + c.in_flight, c.claimed, "%s", out);
    return c;
}

static void expect_counts(const op_counts *c, long long queued, long long claimed,
                          long long retrying, long long dead, const char *when)
{
    cr_expect_eq(c->queued, queued, "%s: queued %lld", when, c->queued);
    cr_expect_eq(c->claimed, claimed, "%s: claimed %lld", when, c->claimed);
    cr_expect_eq(c->scheduled, 0, "%s: scheduled %lld", when, c->scheduled);
    cr_expect_eq(c->in_flight, claimed, "%s: in flight %lld", when, c->in_flight);
    cr_expect_eq(c->retrying, retrying, "%s: retrying %lld", when, c->retrying);
    cr_expect_eq(c->dead, dead, "%s: dead %lld", when, c->dead);
}

/* Polls stats (at most timeout_ms) until nothing is queued, claimed or
 * retrying, `dead` are dead-lettered and the sink logged `requests`;
 * false at once if either count goes past what is expected. */
static bool wait_settled(const char *config, long long dead, size_t requests, int timeout_ms)
{
    int64_t deadline = monotonic_ms() + timeout_ms;
    for (;;) {
        op_counts c = stats_of_acme(config);
        sink_request *reqs = NULL;
        size_t n = sink_read_log(&sink, &reqs);
        sink_requests_free(reqs, n);
        if (c.queued == 0 && c.claimed == 0 && c.retrying == 0 && c.dead == dead && n == requests)
            return true;
        if (c.dead > dead || n > requests || monotonic_ms() >= deadline) {
            cr_log_error("not settled: queued %lld claimed %lld retrying %lld dead %lld, "
                         "%zu requests", c.queued, c.claimed, c.retrying, c.dead, n);
            return false;
        }
        sleep_ms(100);
    }
}

#define OP_JOBS 10
/* Jobs 0, 3, 6 and 9 go to a path the first endpoint refuses with 400. */
static bool op_refused(int i)
{
    return i % 3 == 0;
}

/* push -> stats (queued) -> the daemon dead-letters the 400s -> stats
 * (dead) -> dlq list shows why -> the endpoint is fixed (a new config) ->
 * dlq replay -> stats (queued again) -> delivered, each replayed job with
 * its attempts counted afresh -> stats all zero. */
Test(operate, push_dead_letter_list_replay_deliver)
{
    /* Before: the endpoint's base is /status, and a job's path picks the
     * answer (/status/200 or /status/400). After: /flaky/1/status, which
     * answers each Idempotency-Key 503 once, then 200; with max_attempts
     * 2 a replayed job is delivered only if its first attempt there is
     * its first attempt at all: had it kept the attempt of its dead
     * letter, the 503 would exhaust it. */
    char before[128], after[128];
    write_operate_config(before, sizeof before, "before.json", "/status");
    write_operate_config(after, sizeof after, "after.json", "/flaky/1/status");
    char jobs[OP_JOBS * 64] = "", job_text[OP_JOBS][64];
    for (int i = 0; i < OP_JOBS; i++) {
        snprintf(job_text[i], sizeof job_text[i], "{\"id\":\"op-%d\",\"path\":\"/%d\",\"body\":%d}",
                 i, op_refused(i) ? 400 : 200, i);
        strcat(jobs, job_text[i]);
        strcat(jobs, "\n");
    }
    int code = RUN(jobs, "push", "-c", before, "acme", "-");
    cr_assert_eq(code, 0, "%s", out);
    cr_assert(strstr(out, "pushed 10 jobs to acme"), "%s", out);
    op_counts c = stats_of_acme(before);
    expect_counts(&c, OP_JOBS, 0, 0, 0, "pushed");

    char log[128], err[256];
    snprintf(log, sizeof log, "%s/sluice.log", op_dir);
    daemon_process d = {0};
    cr_assert(daemon_start(&d, before, log, NULL, err, sizeof err), "%s", err);
    bool settled = wait_settled(before, 4, OP_JOBS, 30000);
    cr_assert_eq(daemon_stop(&d, SIGTERM, 10000), 0, "clean exit");
    cr_assert(settled, "the first run did not settle within 30 s");
    c = stats_of_acme(before);
    expect_counts(&c, 0, 0, 0, 4, "dead-lettered");
    sink_request *reqs = NULL;
    size_t n = sink_read_log(&sink, &reqs);
    cr_assert_eq(n, OP_JOBS);
    for (size_t i = 0; i < n; i++) {
        int k = atoi(reqs[i].key + 3);
        cr_assert(strncmp(reqs[i].key, "op-", 3) == 0 && k >= 0 && k < OP_JOBS, "%s",
                  reqs[i].key);
        char path[32];
        snprintf(path, sizeof path, "/status/%d", op_refused(k) ? 400 : 200);
        cr_expect_str_eq(reqs[i].path, path, "%s", reqs[i].key);
        cr_expect_eq(reqs[i].status, op_refused(k) ? 400 : 200, "%s", reqs[i].key);
    }
    sink_requests_free(reqs, n);

    /* Why they were dead-lettered, newest first. */
    code = RUN(NULL, "dlq", "list", "-c", before, "acme", "--json");
    cr_assert_eq(code, 0, "%s", out);
    cJSON *records = cJSON_Parse(out);
    cr_assert(cJSON_IsArray(records), "%s", out);
    cr_assert_eq(cJSON_GetArraySize(records), 4, "%s", out);
    bool listed[OP_JOBS] = {false};
    const cJSON *r;
    cJSON_ArrayForEach(r, records)
    {
        /* "id" is sluice's claim id; the job is the element as pushed. */
        const cJSON *id = cJSON_GetObjectItem(r, "id"), *job = cJSON_GetObjectItem(r, "job");
        cr_assert(cJSON_IsString(id) && id->valuestring[0] && cJSON_IsString(job), "%s", out);
        int k = 0;
        while (k < OP_JOBS && strcmp(job->valuestring, job_text[k]) != 0)
            k++;
        cr_assert(k < OP_JOBS && op_refused(k) && !listed[k], "%s", out);
        listed[k] = true;
        cr_expect_str_eq(cJSON_GetObjectItem(r, "reason")->valuestring, "http_4xx");
        cr_expect_str_eq(cJSON_GetObjectItem(r, "tenant")->valuestring, "acme");
        cr_expect_eq(num(r, "http_status"), 400);
        cr_expect_eq(num(r, "attempts"), 1);
    }
    cJSON_Delete(records);

    /* The endpoint is fixed; the jobs go back to the queue. */
    code = RUN(NULL, "dlq", "replay", "-c", after, "acme");
    cr_assert_eq(code, 0, "%s", out);
    cr_assert(strstr(out, "replayed 4 jobs to acme"), "%s", out);
    c = stats_of_acme(after);
    expect_counts(&c, 4, 0, 0, 0, "replayed");

    cr_assert(daemon_start(&d, after, log, NULL, err, sizeof err), "%s", err);
    settled = wait_settled(after, 0, OP_JOBS + 8, 30000);
    cr_assert_eq(daemon_stop(&d, SIGTERM, 10000), 0, "clean exit");
    cr_assert(settled, "the replay did not settle within 30 s");
    c = stats_of_acme(after);
    expect_counts(&c, 0, 0, 0, 0, "delivered");
    cr_expect_eq(cmd_int("HLEN sluice:{acme}:jobs"), 0, "no claim records left");

    /* Each replayed job: a 503, then a 200, at the new endpoint; nothing
     * else was sent again. */
    n = sink_read_log(&sink, &reqs);
    cr_assert_eq(n, OP_JOBS + 8);
    int seen[OP_JOBS] = {0};
    for (size_t i = OP_JOBS; i < n; i++) {
        int k = atoi(reqs[i].key + 3);
        cr_assert(k >= 0 && k < OP_JOBS && op_refused(k), "%s sent again", reqs[i].key);
        cr_expect_str_eq(reqs[i].path, "/flaky/1/status/400", "%s", reqs[i].key);
        cr_expect_eq(reqs[i].status, seen[k] == 0 ? 503 : 200, "%s, request %d", reqs[i].key,
                     seen[k] + 1);
        seen[k]++;
    }
    for (int k = 0; k < OP_JOBS; k++)
        cr_expect_eq(seen[k], op_refused(k) ? 2 : 0, "op-%d: %d requests", k, seen[k]);
    sink_requests_free(reqs, n);
}

/* ---- sluice tenant (issue 16 item 2) ---- */

/* The settings hash's field of acme, as a number; -1 if absent. */
static long long setting(const char *field)
{
    redisReply *r = cmd("HGET sluice:{acme}:settings %s", field);
    long long v = r->type == REDIS_REPLY_STRING ? atoll(r->str) : -1;
    freeReplyObject(r);
    return v;
}

/* The newest event of acme, parsed (caller deletes). */
static cJSON *newest_event(void)
{
    redisReply *r = cmd("LINDEX sluice:{acme}:events 0");
    cr_assert_eq(r->type, REDIS_REPLY_STRING, "no event");
    cJSON *e = cJSON_Parse(r->str);
    freeReplyObject(r);
    cr_assert_not_null(e);
    return e;
}

static const char *str_of(const cJSON *o, const char *key)
{
    const cJSON *v = cJSON_GetObjectItem(o, key);
    cr_assert(cJSON_IsString(v), "%s is not a string", key);
    return v->valuestring;
}

Test(cli, tenant_set_unset_round_trip_with_events)
{
    int code = RUN(NULL, "tenant", "set", "acme", "rate=20", "concurrency=8", "capacity=1000",
                   "--redis", url, "--by", "alice");
    cr_assert_eq(code, 0, "%s", out);
    cr_expect_eq(setting("rate"), 20000, "rates are stored in milli-jobs/s");
    cr_expect_eq(setting("concurrency"), 8);
    cr_expect_eq(setting("capacity"), 1000);
    cr_expect_eq(cmd_int("LLEN sluice:{acme}:events"), 3, "one event per field");
    cJSON *e = newest_event();
    cr_expect_str_eq(str_of(e, "what"), "set");
    cr_expect_str_eq(str_of(e, "by"), "alice");
    cr_expect(cJSON_IsNull(cJSON_GetObjectItem(e, "old")));
    cr_expect(num(e, "at_ms") > 1.7e12);
    cJSON_Delete(e);

    code = RUN(NULL, "tenant", "set", "acme", "rate=0.5", "--redis", url);
    cr_assert_eq(code, 0, "%s", out);
    e = newest_event();
    cr_expect_str_eq(str_of(e, "field"), "rate");
    cr_expect_eq(num(e, "old"), 20000);
    cr_expect_eq(num(e, "new"), 500);
    cr_expect(strchr(str_of(e, "by"), '@'), "by defaults to user@host: %s", str_of(e, "by"));
    cJSON_Delete(e);

    code = RUN(NULL, "tenant", "unset", "acme", "rate", "--redis", url, "--by", "bob");
    cr_assert_eq(code, 0, "%s", out);
    cr_expect_eq(setting("rate"), -1);
    cr_expect_eq(setting("concurrency"), 8, "unset touches only its field");
    e = newest_event();
    cr_expect_str_eq(str_of(e, "what"), "unset");
    cr_expect(cJSON_IsNull(cJSON_GetObjectItem(e, "new")));
    cJSON_Delete(e);
}

Test(cli, tenant_set_validates_like_the_config)
{
    struct {
        const char *arg, *message;
    } bad[] = {
        {"rate=0", "rate: must be > 0"},
        {"rate=fast", "rate: must be a number (jobs per second), not a string"},
        {"rate=0.0001", "rate: must be a multiple of 0.001"},
        {"rate=2000000", "rate: must be at most"},
        {"capacity=0", "capacity: must be an integer between 1 and"},
        {"concurrency=10001", "concurrency: must be an integer between 1 and 10000"},
        {"concurrency=2.5", "concurrency: must be an integer"},
        {"speed=3", "unknown field 'speed'"},
        {"rate", "expects FIELD=VALUE"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        int code = RUN(NULL, "tenant", "set", "acme", bad[i].arg, "--redis", url);
        cr_expect_eq(code, 2, "%s: %s", bad[i].arg, out);
        cr_expect(strstr(out, bad[i].message), "%s: %s", bad[i].arg, out);
    }
    /* The config file says the same of the same value. */
    write_config("{\"acme\": {\"endpoint\": \"http://127.0.0.1:9/\", \"rate\": 10, "
                 "\"concurrency\": 10001}}");
    RUN(NULL, "check-config", config_path);
    cr_expect(strstr(out, "concurrency: must be an integer between 1 and 10000"), "%s", out);
    cr_expect_eq(cmd_int("EXISTS sluice:{acme}:settings"), 0, "nothing written");
    cr_expect_eq(RUN(NULL, "tenant", "set", "acme", "--redis", url), 2, "%s", out);
    cr_expect_eq(RUN(NULL, "tenant", "set", "acme", "rate=1", "rate=2", "--redis", url), 2);
    cr_expect_eq(RUN(NULL, "tenant", "frobnicate", "acme", "--redis", url), 2);
    cr_expect_eq(RUN(NULL, "tenant", "show", "bad name", "--redis", url), 2);
    cr_expect_eq(RUN(NULL, "tenant", "show", "acme", "--for", "1m", "--redis", url), 2);
    cr_expect_eq(RUN(NULL, "tenant", "set", "acme", "rate=1", "--redis", "redis://127.0.0.1:1"),
                 1, "%s", out);
    for (size_t i = 0; i < 5; i++) {
        const char *actions[] = {"show", "set", "unset", "pause", "resume"};
        cr_expect_eq(RUN(NULL, "tenant", actions[i], "--help"), 0);
        cr_expect(strstr(out, "Usage: sluice tenant"), "%s", out);
    }
}

Test(cli, tenant_pause_for_and_resume)
{
    long long before = redis_now_us() / 1000;
    int code = RUN(NULL, "tenant", "pause", "acme", "--for", "10m", "--redis", url);
    cr_assert_eq(code, 0, "%s", out);
    long long until = setting("paused_until");
    cr_expect(until >= before + 600000 && until <= before + 600000 + 5000, "until %lld", until);
    cJSON *e = newest_event();
    cr_expect_str_eq(str_of(e, "what"), "pause");
    cr_expect_eq(num(e, "new"), (double)until);
    cJSON_Delete(e);

    cr_assert_eq(RUN(NULL, "tenant", "pause", "acme", "--for", "90s", "--redis", url), 0);
    cr_expect_leq(setting("paused_until"), before + 95000);
    cr_assert_eq(RUN(NULL, "tenant", "pause", "acme", "--for", "2h", "--redis", url), 0);
    cr_expect_geq(setting("paused_until"), before + 7200000);
    cr_assert_eq(RUN(NULL, "tenant", "pause", "acme", "--redis", url), 0);
    cr_expect_gt(setting("paused_until"), before + 100LL * 365 * 86400000, "until resumed");
    cr_expect(strstr(out, "until resumed"), "%s", out);
    cr_expect_eq(RUN(NULL, "tenant", "pause", "acme", "--for", "10", "--redis", url), 2);
    cr_expect_eq(RUN(NULL, "tenant", "pause", "acme", "--for", "0m", "--redis", url), 2);

    cr_assert_eq(RUN(NULL, "tenant", "resume", "acme", "--redis", url), 0, "%s", out);
    cr_expect_eq(setting("paused_until"), -1);
    e = newest_event();
    cr_expect_str_eq(str_of(e, "what"), "resume");
    cJSON_Delete(e);
}

Test(cli, tenant_show_names_each_source_and_the_last_events)
{
    write_config("{\"acme\": {\"endpoint\": \"http://127.0.0.1:9/\", \"rate\": 10, "
                 "\"concurrency\": 4}}");
    cr_assert_eq(RUN(NULL, "tenant", "show", "acme", "-c", config_path, "--json"), 0, "%s", out);
    cJSON *root = cJSON_Parse(out);
    cr_assert_not_null(root, "%s", out);
    const cJSON *rate = cJSON_GetObjectItem(root, "rate");
    cr_expect_eq(num(rate, "effective"), 10);
    cr_expect_str_eq(str_of(rate, "source"), "file");
    cr_expect_eq(num(cJSON_GetObjectItem(root, "concurrency"), "effective"), 4);
    cJSON_Delete(root);

    for (int i = 0; i < 12; i++) {
        char arg[32];
        snprintf(arg, sizeof arg, "capacity=%d", 100 + i);
        cr_assert_eq(RUN(NULL, "tenant", "set", "acme", arg, "--redis", url), 0, "%s", out);
    }
    cr_assert_eq(RUN(NULL, "tenant", "set", "acme", "rate=20", "--redis", url), 0);
    cr_assert_eq(RUN(NULL, "tenant", "pause", "acme", "--for", "1h", "--redis", url), 0);
    cr_assert_eq(RUN(NULL, "tenant", "show", "acme", "-c", config_path, "--json"), 0, "%s", out);
    root = cJSON_Parse(out);
    cr_assert_not_null(root, "%s", out);
    rate = cJSON_GetObjectItem(root, "rate");
    cr_expect_eq(num(rate, "effective"), 20);
    cr_expect_eq(num(rate, "file"), 10);
    cr_expect_str_eq(str_of(rate, "source"), "override");
    const cJSON *capacity = cJSON_GetObjectItem(root, "capacity");
    cr_expect_eq(num(capacity, "effective"), 111);
    cr_expect_str_eq(str_of(capacity, "source"), "override");
    cr_expect_str_eq(str_of(cJSON_GetObjectItem(root, "concurrency"), "source"), "file");
    cr_expect(cJSON_IsTrue(cJSON_GetObjectItem(root, "paused")), "%s", out);
    const cJSON *events = cJSON_GetObjectItem(root, "events");
    cr_expect_eq(cJSON_GetArraySize(events), 10, "the last 10 events");
    cr_expect_str_eq(str_of(cJSON_GetArrayItem(events, 0), "what"), "pause", "newest first");
    cJSON_Delete(root);

    cr_assert_eq(RUN(NULL, "tenant", "show", "acme", "-c", config_path), 0, "%s", out);
    cr_expect(strstr(out, "override") && strstr(out, "paused") && strstr(out, "EVENTS"), "%s", out);
    /* Without the file its values are unknown; overrides still show. */
    cr_assert_eq(RUN(NULL, "tenant", "show", "acme", "--redis", url), 0, "%s", out);
    const char *line = strstr(out, "\nconcurrency ");
    cr_assert_not_null(line, "%s", out);
    cr_expect(strncmp(line + 1, "concurrency   -", 15) == 0, "%s", out);

    /* stats shows the effective rate and where it comes from. */
    cr_assert_eq(RUN(NULL, "tenant", "resume", "acme", "--redis", url), 0);
    cr_assert_eq(RUN(NULL, "stats", "acme", "-c", config_path, "--json"), 0, "%s", out);
    root = cJSON_Parse(out);
    const cJSON *t = find_tenant(root, "acme");
    cr_assert_not_null(t, "%s", out);
    cr_expect_eq(num(t, "rate"), 20);
    cr_expect_str_eq(str_of(t, "rate_source"), "override");
    cJSON_Delete(root);
    cr_assert_eq(RUN(NULL, "tenant", "unset", "acme", "rate", "--redis", url), 0);
    cr_assert_eq(RUN(NULL, "stats", "acme", "-c", config_path), 0, "%s", out);
    table_row r = table_line("acme");
    cr_expect_str_eq(r.rate, "10");
    cr_expect(strstr(out, " file    \n"), "%s", out);
}

Test(cli, tenant_events_are_capped_at_100)
{
    for (int i = 0; i < 105; i++)
        freeReplyObject(cmd("LPUSH sluice:{acme}:events {}"));
    cr_assert_eq(RUN(NULL, "tenant", "set", "acme", "rate=3", "--redis", url), 0, "%s", out);
    cr_expect_eq(cmd_int("LLEN sluice:{acme}:events"), 100);
}
