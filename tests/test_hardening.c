/* test_hardening.c - a real `sluice run` against a Redis that misbehaves
 * or holds work nobody pushes (issue 13): acks refused while Redis is
 * busy, tenants known only through the "*" template with work left in
 * retry or in flight, idle discovered tenants, and many reloads.
 * Tests run one at a time (--jobs=1): they time what Redis sees. */
#include <criterion/criterion.h>
#include <inttypes.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "daemon_env.h"
#include "daemon_process.h"
#include "delivery_checks.h"
#include "process.h"
#include "redis_fixture.h"
#include "sink_process.h"

static redis_fixture fx;
static sink_process sink;
static char dir[64];

static void setup(void)
{
    redis_fixture_start(&fx);
    daemon_env_start(&sink, dir, sizeof dir, "harden");
}

static void teardown(void)
{
    daemon_env_stop(&sink, dir);
    redis_fixture_stop(&fx);
}

TestSuite(hardening, .init = setup, .fini = teardown, .timeout = 120);

/* ---- helpers ---- */

/* Writes the config file: the given process-level fields (text ending in
 * a comma, or "") and "tenants" object text. */
static const char *write_config(const char *fields, const char *tenants_format, ...)
{
    static char path[128];
    snprintf(path, sizeof path, "%s/sluice.json", dir);
    static char tenants[1 << 20];
    va_list ap;
    va_start(ap, tenants_format);
    vsnprintf(tenants, sizeof tenants, tenants_format, ap);
    va_end(ap);
    FILE *f = fopen(path, "w");
    cr_assert_not_null(f);
    fprintf(f,
            "{\"redis\": \"redis://127.0.0.1:%d/0\", \"workers\": 2, \"admin\": null,\n"
            " \"grace_ms\": 5000, %s \"tenants\": %s}\n",
            fx.server.port, fields, tenants);
    fclose(f);
    return path;
}

static daemon_process start_daemon(const char *config)
{
    daemon_process d = {0};
    char log[128], err[256];
    snprintf(log, sizeof log, "%s/sluice.log", dir);
    cr_assert(daemon_start(&d, config, log, NULL, err, sizeof err), "%s", err);
    return d;
}

static int64_t wall_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

/* How many lines of the daemon's log contain text. */
static int log_count(const char *text)
{
    char path[128], line[4096];
    snprintf(path, sizeof path, "%s/sluice.log", dir);
    FILE *f = fopen(path, "r");
    if (!f)
        return 0;
    int n = 0;
    while (fgets(line, sizeof line, f))
        n += strstr(line, text) != NULL;
    fclose(f);
    return n;
}

/* Keeps Redis busy for busy_us in a child process: a Lua script that
 * spins, so that every other client gets BUSY error replies once the
 * busy-reply threshold (set low here) has passed. Returns the child. */
static pid_t redis_busy(int64_t busy_us)
{
    freeReplyObject(redisCommand(fx.conn, "CONFIG SET busy-reply-threshold 50"));
    pid_t pid = fork();
    cr_assert_geq(pid, 0);
    if (pid == 0) {
        redisContext *c = rs_connect(&fx.server);
        redisReply *r = c ? redisCommand(c,
                                         "EVAL %s 0 %lld",
                                         "local t = redis.call('TIME') "
                                         "local s = tonumber(t[1]) * 1000000 + tonumber(t[2]) "
                                         "while true do local n = redis.call('TIME') "
                                         "if tonumber(n[1]) * 1000000 + tonumber(n[2]) - s > tonumber(ARGV[1]) "
                                         "then break end end return 1",
                                         (long long)busy_us)
                          : NULL;
        _exit(r && r->type == REDIS_REPLY_INTEGER ? 0 : 1);
    }
    return pid;
}

/* ---- acks refused while Redis is busy (issue 13, item 6) ---- */

/* Acks answered BUSY used to be dropped: their jobs came back when their
 * leases ran out and were delivered a second time. Now the batch is sent
 * again once Redis answers, and no job that got a 2xx goes twice. */
Test(hardening, acks_refused_by_a_busy_redis_are_sent_again)
{
    /* The endpoint answers after 1.5 s: the jobs sent in the 1.5 s before
     * Redis turns busy are answered, and acked, while it is busy. */
    const char *config = write_config(
        "", "{\"acme\": {\"endpoint\": \"http://127.0.0.1:%d/slow/1500\", \"rate\": 20,"
            " \"concurrency\": 40, \"timeout_ms\": 3000}}",
        sink.port);
    redis_fixture_push_jobs(&fx, "acme", "b", 40);
    daemon_process d = start_daemon(config);
    sink_request *reqs = NULL;
    size_t n = sink_wait_log(&sink, 10, 10000, &reqs);
    sink_requests_free(reqs, n);
    int64_t busy_from = wall_us();
    pid_t busy = redis_busy(3000000);
    int status = 0;
    cr_assert_eq(waitpid(busy, &status, 0), busy);
    cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0, "the busy script failed");
    n = sink_wait_each(&sink, "b", 40, 30000, &reqs);
    sink_requests_free(reqs, n);
    /* The leases (timeout 3 s + a 10 s margin) of jobs whose acks were
     * lost would have run out by now and the jobs gone again. */
    sleep_ms(15000);
    n = sink_wait_log(&sink, 40, 1000, &reqs);
    size_t acked_while_busy = 0;
    for (size_t i = 0; i < n; i++)
        acked_while_busy += reqs[i].arrival_us > busy_from - 1400000 && reqs[i].arrival_us < busy_from;
    cr_assert_eq(daemon_stop(&d, SIGTERM, 10000), 0);
    cr_log_info("%zu requests, %zu of them answered while Redis was busy", n, acked_while_busy);
    cr_assert_gt(acked_while_busy, 0, "no job was answered while Redis was busy: the test proves nothing");
    /* BUSY is a passing state, not a fault (item 1): neither claims nor
     * acks log it as a failure. */
    cr_assert_eq(log_count("claim failed"), 0, "a BUSY claim was logged as a failure");
    cr_assert_eq(log_count("ack failed"), 0, "a BUSY ack was logged as a failure");
    assert_each_delivered(reqs, n, "b", 40, false);
    sink_requests_free(reqs, n);
    assert_tenant_drained(fx.conn, "acme");
}

/* ---- work left by another daemon, found through the template (item 5) ---- */

/* Writes a job of tenant as claim.lua leaves it: its record in the jobs
 * hash, and its id in retry (due at score) or in flight (lease ending at
 * score). */
static void leave_job(const char *tenant, const char *set, const char *id, int64_t score)
{
    char job[128];
    snprintf(job, sizeof job, "0:1:{\"id\":\"%s\"}", id);
    redisReply *r = redisCommand(fx.conn, "HSET sluice:{%s}:jobs %s %s", tenant, id, job);
    cr_assert(r && r->type == REDIS_REPLY_INTEGER);
    freeReplyObject(r);
    r = redisCommand(fx.conn, "ZADD sluice:{%s}:%s %lld %s", tenant, set, (long long)score, id);
    cr_assert(r && r->type == REDIS_REPLY_INTEGER);
    freeReplyObject(r);
}

Test(hardening, template_tenants_with_work_only_in_retry_or_in_flight_are_served)
{
    int64_t now = redis_fixture_now_us(&fx);
    for (int i = 0; i < 3; i++) {
        char id[32];
        snprintf(id, sizeof id, "w-%d", i); /* handed back by a drain: due now */
        leave_job("drained", "retry", id, now);
        snprintf(id, sizeof id, "w-%d", 3 + i); /* claimed by a daemon SIGKILLed: lease over */
        leave_job("killed", "inflight", id, now - 1000000);
    }
    const char *config = write_config(
        "", "{\"*\": {\"endpoint\": \"http://127.0.0.1:%d/hook\", \"rate\": 50}}", sink.port);
    daemon_process d = start_daemon(config);
    sink_request *reqs = NULL;
    size_t n = sink_wait_each(&sink, "w", 6, 10000, &reqs);
    for (int i = 0; i < 50 && (redis_count(fx.conn, "HLEN sluice:{%s}:jobs", "drained") > 0 ||
                                redis_count(fx.conn, "HLEN sluice:{%s}:jobs", "killed") > 0); i++)
        sleep_ms(100);
    cr_assert_eq(daemon_stop(&d, SIGTERM, 10000), 0);
    assert_each_delivered(reqs, n, "w", 6, false);
    sink_requests_free(reqs, n);
    assert_tenant_drained(fx.conn, "drained");
    assert_tenant_drained(fx.conn, "killed");
}

/* ---- discovered tenants: forgotten when quiet, capped (item 8) ---- */

/* The calls of a command Redis has served (INFO commandstats). */
static long long redis_calls(const char *command)
{
    redisReply *r = redisCommand(fx.conn, "INFO commandstats");
    cr_assert(r && r->type == REDIS_REPLY_STRING);
    char needle[64];
    snprintf(needle, sizeof needle, "cmdstat_%s:calls=", command);
    const char *at = strstr(r->str, needle);
    long long calls = at ? atoll(at + strlen(needle)) : 0;
    freeReplyObject(r);
    return calls;
}

#define QUIET_FIELDS "\"forget_idle_ms\": 1000, \"max_discovered_tenants\": 5,"

Test(hardening, quiet_discovered_tenants_are_forgotten_and_capped)
{
    const char *config = write_config(
        QUIET_FIELDS, "{\"*\": {\"endpoint\": \"http://127.0.0.1:%d/hook\", \"rate\": 50}}", sink.port);
    for (int i = 0; i < 10; i++) {
        char tenant[16], job[64];
        snprintf(tenant, sizeof tenant, "t%d", i);
        snprintf(job, sizeof job, "{\"id\":\"f-%d\"}", i);
        freeReplyObject(redisCommand(fx.conn, "LPUSH sluice:{%s}:queue %s", tenant, job));
    }
    daemon_process d = start_daemon(config);
    /* Five at a time: the rest are served once the first are forgotten. */
    sink_request *reqs = NULL;
    size_t n = sink_wait_each(&sink, "f", 10, 30000, &reqs);
    assert_each_delivered(reqs, n, "f", 10, false);
    sink_requests_free(reqs, n);
    sleep_ms(3500); /* quiet for forget_idle_ms, then a tick to check their keys */
    long long before = redis_calls("evalsha");
    sleep_ms(3000);
    long long claims = redis_calls("evalsha") - before;
    cr_assert_eq(daemon_stop(&d, SIGTERM, 10000), 0);
    cr_log_info("claims in 3 s after the tenants went quiet: %lld", claims);
    cr_assert_eq(claims, 0, "forgotten tenants still cost %lld claims in 3 s", claims);
    cr_assert_geq(log_count("max_discovered_tenants reached"), 1, "the cap was never logged");
    cr_assert_geq(log_count("idle tenant forgotten"), 10);
}

/* ---- many reloads (item 10) ---- */

/* The daemon's resident memory, in KiB (0 if unknown). */
static long rss_kib(pid_t pid)
{
    char path[64], line[256];
    snprintf(path, sizeof path, "/proc/%d/status", (int)pid);
    FILE *f = fopen(path, "r");
    long kib = 0;
    while (f && fgets(line, sizeof line, f))
        if (strncmp(line, "VmRSS:", 6) == 0)
            kib = atol(line + 6);
    if (f)
        fclose(f);
    return kib;
}

/* Writes the config of the reload test to path: 40 tenants with a 4 KiB
 * header each (so that a kept configuration shows), "acme" and, if with,
 * "gone", both with requests that take 300 ms. */
static void write_reload_config(const char *path, bool with)
{
    static char tenants[1 << 20];
    size_t len = 0;
    char big[4097];
    memset(big, 'x', 4096);
    big[4096] = '\0';
    len += (size_t)snprintf(tenants + len, sizeof tenants - len,
                            "{\"acme\": {\"endpoint\": \"http://127.0.0.1:%d/slow/300\", \"rate\": 40,"
                            " \"concurrency\": 20}",
                            sink.port);
    if (with)
        len += (size_t)snprintf(tenants + len, sizeof tenants - len,
                                ", \"gone\": {\"endpoint\": \"http://127.0.0.1:%d/slow/300\", \"rate\": 40,"
                                " \"concurrency\": 20}",
                                sink.port);
    for (int i = 0; i < 40; i++)
        len += (size_t)snprintf(tenants + len, sizeof tenants - len,
                                ", \"pad%d\": {\"endpoint\": \"http://127.0.0.1:%d/hook\", \"rate\": 1,"
                                " \"headers\": {\"X-Pad\": \"%s\"}}",
                                i, sink.port, big);
    snprintf(tenants + len, sizeof tenants - len, "}");
    char tmp[160];
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    FILE *f = fopen(tmp, "w");
    cr_assert_not_null(f);
    fprintf(f,
            "{\"redis\": \"redis://127.0.0.1:%d/0\", \"workers\": 2, \"admin\": null,\n"
            " \"grace_ms\": 5000, \"tenants\": %s}\n",
            fx.server.port, tenants);
    fclose(f);
    cr_assert_eq(rename(tmp, path), 0); /* a reload never reads half a file */
}

/* Every reload used to keep its configuration until exit. Now one is
 * freed once no worker, tenant or request uses it: memory stays flat, and
 * (run under ASan) nothing reads a freed one, even with requests in
 * flight and a tenant leaving and coming back at every reload. */
Test(hardening, many_reloads_with_requests_in_flight_keep_memory_flat, .timeout = 180)
{
    char path[128];
    snprintf(path, sizeof path, "%s/sluice.json", dir);
    write_reload_config(path, true);
    redis_fixture_push_jobs(&fx, "acme", "a", 200);
    redis_fixture_push_jobs(&fx, "gone", "g", 200);
    daemon_process d = start_daemon(path);
    sink_request *reqs = NULL;
    size_t n = sink_wait_log(&sink, 20, 10000, &reqs);
    sink_requests_free(reqs, n);
    long rss_start = 0;
    int reloads = 300;
    for (int i = 0; i < reloads; i++) {
        write_reload_config(path, i % 2 == 1);
        kill(d.pid, SIGHUP);
        sleep_ms(15);
        if (i == 30)
            rss_start = rss_kib(d.pid);
    }
    sleep_ms(2500); /* the workers take the last, the old ones are freed */
    long rss_end = rss_kib(d.pid);
    int reloaded = log_count("configuration reloaded");
    /* the last file lists "gone": its jobs go too */
    n = sink_wait_each(&sink, "g", 200, 60000, &reqs);
    sink_requests_free(reqs, n);
    n = sink_wait_each(&sink, "a", 200, 60000, &reqs);
    cr_assert_eq(daemon_stop(&d, SIGTERM, 20000), 0, "a clean exit (under ASan: no use after free)");
    assert_each_delivered(reqs, n, "a", 200, true);
    sink_requests_free(reqs, n);
    cr_log_info("%d reloads; resident memory %ld KiB after 30, %ld KiB at the end", reloaded,
                rss_start, rss_end);
    cr_assert_geq(reloaded, reloads / 2, "only %d reloads happened", reloaded);
    const char *sanitized = getenv("SLUICE_SANITIZED");
    if (sanitized && *sanitized)
        return; /* ASan keeps freed memory in quarantine: RSS says nothing */
    cr_assert_lt(rss_end - rss_start, 32 * 1024, "memory grew by %ld KiB over %d reloads",
                 rss_end - rss_start, reloaded);
}
