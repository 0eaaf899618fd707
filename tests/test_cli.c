/* test_cli.c - `sluice push`, `stats` and `dlq list|replay|purge`: the
 * real binary ($SLUICE_BIN) against a private redis-server. */
#include <criterion/criterion.h>
#include <cjson/cJSON.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "redis_fixture.h"

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

/* Runs sluice with args (NULL-terminated) and `in` on stdin; stdout and
 * stderr land together in `out`. Returns the exit code. */
static int run_args(const char *in, const char *const *args)
{
    const char *bin = getenv("SLUICE_BIN");
    cr_assert_not_null(bin, "SLUICE_BIN is not set");
    char *argv[64];
    size_t argc = 0;
    argv[argc++] = strdup(bin);
    for (; args[argc - 1] && argc < 63; argc++)
        argv[argc] = strdup(args[argc - 1]);
    argv[argc] = NULL;
    int to_child[2], from_child[2];
    cr_assert(pipe(to_child) == 0 && pipe(from_child) == 0);
    pid_t pid = fork();
    cr_assert(pid >= 0);
    if (pid == 0) {
        dup2(to_child[0], 0);
        dup2(from_child[1], 1);
        dup2(from_child[1], 2);
        close(to_child[0]);
        close(to_child[1]);
        close(from_child[0]);
        close(from_child[1]);
        execv(argv[0], argv);
        _exit(127);
    }
    for (size_t i = 0; i < argc; i++)
        free(argv[i]);
    close(to_child[0]);
    close(from_child[1]);
    if (in && write(to_child[1], in, strlen(in)) < 0)
        cr_log_warn("stdin: short write");
    close(to_child[1]);
    size_t used = 0;
    ssize_t n;
    char scratch[4096];
    while ((n = read(from_child[0], used < OUT_MAX - 1 ? out + used : scratch,
                     used < OUT_MAX - 1 ? OUT_MAX - 1 - used : sizeof scratch)) > 0)
        if (used < OUT_MAX - 1)
            used += (size_t)n;
    out[used] = '\0';
    close(from_child[0]);
    int status;
    cr_assert(waitpid(pid, &status, 0) == pid);
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

#define RUN(in, ...) run_args(in, (const char *const[]){__VA_ARGS__, NULL})

static void write_config(const char *tenants_json)
{
    snprintf(config_path, sizeof config_path, "/tmp/sluice-cli-XXXXXX");
    int fd = mkstemp(config_path);
    cr_assert(fd >= 0);
    FILE *f = fdopen(fd, "w");
    fprintf(f, "{\"redis\": \"%s\", \"tenants\": %s}\n", url, tenants_json);
    fclose(f);
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

static void stats_setup(void)
{
    freeReplyObject(cmd("LPUSH sluice:{acme}:queue a b c"));
    freeReplyObject(cmd("ZADD sluice:{acme}:inflight 1 x 2 y"));
    freeReplyObject(cmd("ZADD sluice:{acme}:retry 1 z"));
    for (int i = 0; i < 4; i++)
        dead_letter("d", 1700000000000LL + i, "j");
    freeReplyObject(cmd("HSET sluice:{acme}:shape next_free %lld", redis_now_us() + 5000000));
    freeReplyObject(cmd("SADD sluice:tenants beta"));
    freeReplyObject(cmd("LPUSH sluice:{delta}:queue q"));
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

Test(cli, stats_table)
{
    stats_setup();
    int code = RUN(NULL, "stats", "-c", config_path);
    cr_assert_eq(code, 0, "%s", out);
    cr_expect(strncmp(out, "TENANT ", 7) == 0, "%s", out);
    cr_expect(strstr(out, "QUEUED") && strstr(out, "SCHEDULED") && strstr(out, "DELAY_MS"));
    char *line = strstr(out, "\nacme ");
    cr_assert_not_null(line, "%s", out);
    long long queued, scheduled, retrying, dead, delay;
    char rate[16];
    cr_assert_eq(sscanf(line + 1, "acme %lld %lld %lld %lld %15s %lld", &queued, &scheduled,
                        &retrying, &dead, rate, &delay), 6, "%s", out);
    cr_expect_eq(queued, 3);
    cr_expect_eq(scheduled, 2);
    cr_expect_eq(retrying, 1);
    cr_expect_eq(dead, 4);
    cr_expect_str_eq(rate, "10");
    cr_expect(delay > 4000 && delay <= 5000, "delay %lld", delay);
    cr_expect(strstr(out, "\nbeta "), "%s", out);
    cr_expect(strstr(out, "\ndelta "), "%s", out);
    line = strstr(out, "\ngamma ");
    cr_assert_not_null(line, "%s", out);
    cr_assert_eq(sscanf(line + 1, "gamma %lld %lld %lld %lld %15s %lld", &queued, &scheduled,
                        &retrying, &dead, rate, &delay), 6, "%s", out);
    cr_expect_str_eq(rate, "0.5");
    cr_expect_eq(queued + scheduled + retrying + dead + delay, 0);
    /* The columns line up: every line as long as the header. */
    size_t header = strcspn(out, "\n");
    for (char *l = strchr(out, '\n'); l && l[1]; l = strchr(l + 1, '\n'))
        cr_expect_eq(strcspn(l + 1, "\n"), header, "%s", out);
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
    cr_expect_eq(num(acme, "scheduled"), 2);
    cr_expect_eq(num(acme, "retrying"), 1);
    cr_expect_eq(num(acme, "dead_lettered"), 4);
    cr_expect_eq(num(acme, "rate"), 10);
    cr_expect(num(acme, "delay_ms") > 4000 && num(acme, "delay_ms") <= 5000, "%s", out);
    const cJSON *beta = find_tenant(root, "beta");
    cr_assert_not_null(beta, "%s", out);
    cr_expect(cJSON_IsNull(cJSON_GetObjectItem(beta, "rate")), "%s", out);
    cr_expect_eq(num(beta, "delay_ms"), 0);
    cJSON_Delete(root);

    /* One tenant, by --redis: no rate known. */
    code = RUN(NULL, "stats", "--redis", url, "acme", "--json");
    cr_assert_eq(code, 0, "%s", out);
    root = cJSON_Parse(out);
    cr_assert_not_null(root, "%s", out);
    cr_expect_eq(cJSON_GetArraySize(cJSON_GetObjectItem(root, "tenants")), 1, "%s", out);
    acme = find_tenant(root, "acme");
    cr_assert_not_null(acme);
    cr_expect_eq(num(acme, "queued"), 3);
    cr_expect(cJSON_IsNull(cJSON_GetObjectItem(acme, "rate")), "%s", out);
    cJSON_Delete(root);
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
        int code = run_args(NULL, commands[i]);
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
    cr_expect_eq(cmd_int("DBSIZE"), 0);
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
        int code = run_args(NULL, commands[i]);
        cr_expect_eq(code, 1, "%s: %s", commands[i][0], out);
        cr_expect(strstr(out, expected), "%s", out);
        cr_expect_null(strstr(out, "s3cretpw"), "%s", out);
    }
}
