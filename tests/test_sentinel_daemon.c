/* test_sentinel_daemon.c - redis-sentinel:// end to end: the real daemon
 * and CLI against a primary, a replica and three real sentinels
 * (support/redis_sentinel.h), through a SENTINEL FAILOVER mid-run; and
 * the clear, bounded failures of a wrong name, a stale address and no
 * sentinel at all. */
#include <criterion/criterion.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli_run.h"
#include "config_file.h"
#include "daemon_env.h"
#include "daemon_process.h"
#include "delivery_checks.h"
#include "redis_sentinel.h"
#include "sink_process.h"

#define OUT_MAX 16384
#define JOBS 150

static rsn_group group;
static sink_process sink;
static char dir[64];
static char out[OUT_MAX];

static void setup(void)
{
    signal(SIGPIPE, SIG_IGN);
    char err[256];
    cr_assert(rsn_start(&group, err, sizeof err), "%s", err);
    daemon_env_start(&sink, dir, sizeof dir, "sentinel");
}

static void teardown(void)
{
    daemon_env_stop(&sink, dir);
    rsn_stop(&group);
}

TestSuite(sentinel_daemon, .init = setup, .fini = teardown, .timeout = 180);

#define RUN(in, ...) cli_run(out, sizeof out, in, (const char *const[]){__VA_ARGS__, NULL})

/* "{"id":"TAG-0",...}\n..." for `sluice push TENANT -`. */
static char *jobs_text(const char *tag, int n)
{
    size_t size = (size_t)n * 64 + 1, used = 0;
    char *text = malloc(size);
    cr_assert_not_null(text);
    for (int i = 0; i < n; i++)
        used += (size_t)snprintf(text + used, size - used, "{\"id\":\"%s-%d\",\"body\":\"%s %d\"}\n",
                                 tag, i, tag, i);
    return text;
}

/* True once the node on port has a pattern subscription (notify.c's). */
static bool wait_subscribed(int port, int timeout_ms)
{
    redisContext *c = rsn_connect(port);
    cr_assert_not_null(c);
    bool subscribed = false;
    for (int waited = 0; !subscribed && waited <= timeout_ms; waited += 100) {
        redisReply *r = redisCommand(c, "PUBSUB NUMPAT");
        subscribed = r && r->type == REDIS_REPLY_INTEGER && r->integer > 0;
        freeReplyObject(r);
        if (!subscribed)
            sleep_ms(100);
    }
    redisFree(c);
    return subscribed;
}

/* sluice run with tenant acme (20/s) against the Redis at url. */
static daemon_process run_acme(const char *url)
{
    static char config[128];
    snprintf(config, sizeof config, "%s/sluice.json", dir);
    config_file_write(config, url, CONFIG_DAEMON_MEMBERS,
                      "{\"acme\": {\"endpoint\": \"http://127.0.0.1:%d/hook\", \"rate\": 20}}",
                      sink.port);
    return daemon_env_run(dir, config, NULL);
}

Test(sentinel_daemon, delivers_every_job_through_a_failover)
{
    int first = group.nodes[0].port, second = group.nodes[1].port;
    /* the producer side: the CLI finds the primary through the sentinels */
    char *jobs = jobs_text("f", JOBS);
    int code = RUN(jobs, "push", "--redis", group.url, "acme", "-");
    free(jobs);
    cr_assert_eq(code, 0, "%s", out);
    cr_assert(strstr(out, "pushed 150 jobs to acme"), "%s", out);
    /* on the replica too, so the failover loses no job (a write the
     * replica had not seen could be lost: Redis replicates asynchronously) */
    cr_assert(rsn_replicated(&group, first, 5000), "the replica did not acknowledge the jobs");

    /* keyspace notifications on both nodes: the subscriber must follow too */
    for (int i = 0; i < 2; i++) {
        redisContext *node = rsn_connect(group.nodes[i].port);
        cr_assert_not_null(node);
        redisReply *r = redisCommand(node, "CONFIG SET notify-keyspace-events Kl");
        cr_assert(r && r->type == REDIS_REPLY_STATUS);
        freeReplyObject(r);
        redisFree(node);
    }
    daemon_process d = run_acme(group.url);
    cr_assert(wait_subscribed(first, 10000), "no keyspace subscription on the primary");
    char needle[128];
    snprintf(needle, sizeof needle, "primary=127.0.0.1:%d", first);
    cr_assert(daemon_env_wait_log(dir, needle, 10000), "the daemon did not find the primary");

    /* mid-run: some delivered, most not */
    redisContext *c = rsn_connect(first);
    cr_assert_not_null(c);
    cr_assert(wait_under_way(c, "acme", &sink, 10, 20000), "nothing delivered before the failover");
    redisFree(c);
    char err[256];
    cr_assert(rsn_failover(&group, 30000, err, sizeof err), "%s", err);
    sink_request *before = NULL;
    size_t n_before = sink_read_log(&sink, &before);
    sink_requests_free(before, n_before);
    cr_assert_lt(n_before, JOBS, "every job was delivered before the failover: it proved nothing");

    sink_request *reqs = NULL;
    size_t n = sink_wait_each(&sink, "f", JOBS, 60000, &reqs);
    /* every job, each under its own Idempotency-Key (a redelivery after the
     * failover carries the same key: it is a job of the same id) */
    assert_each_delivered(reqs, n, "f", JOBS, true);
    cr_log_info("%zu requests for %d jobs through the failover (%zu before it)", n, JOBS,
                n_before);
    sink_requests_free(reqs, n);

    /* the daemon ends on the new primary: it named it, and acked there */
    snprintf(needle, sizeof needle, "primary=127.0.0.1:%d", second);
    cr_assert(daemon_env_wait_log(dir, needle, 10000), "the daemon did not follow the failover");
    cr_assert(wait_subscribed(second, 10000), "the keyspace subscription stayed behind");
    redisContext *now = rsn_connect(second);
    cr_assert_not_null(now);
    bool drained = false;
    for (int i = 0; i < 200 && !drained; i++) {
        drained = redis_count(now, "ZCARD sluice:{%s}:inflight", "acme") == 0 &&
                  redis_count(now, "LLEN sluice:{%s}:queue", "acme") == 0;
        if (!drained)
            sleep_ms(100);
    }
    cr_assert_eq(daemon_stop(&d, SIGTERM, 10000), 0, "still running, exits cleanly");
    assert_tenant_drained(now, "acme");
    redisFree(now);

    /* the CLI after the failover reads the new primary */
    code = RUN(NULL, "stats", "--redis", group.url, "acme", "--json");
    cr_assert_eq(code, 0, "%s", out);
    cr_assert(strstr(out, "\"queued\":0"), "%s", out);
}

Test(sentinel_daemon, an_unknown_name_is_said_and_retried_with_backoff)
{
    char url[192];
    snprintf(url, sizeof url, "redis-sentinel://127.0.0.1:%d,127.0.0.1:%d/nosuch",
             group.sentinels[0].port, group.sentinels[1].port);
    int code = RUN(NULL, "stats", "--redis", url);
    cr_assert_eq(code, 1, "%s", out);
    char expected[128];
    snprintf(expected, sizeof expected, "sentinel 127.0.0.1:%d does not know primary 'nosuch'",
             group.sentinels[0].port);
    cr_assert(strstr(out, expected), "%s", out);
    cr_assert(strstr(out, "no sentinel named the primary"), "%s", out);

    /* the daemon says so and keeps asking, after a growing wait */
    daemon_process d = run_acme(url);
    cr_assert(daemon_env_wait_log(dir, "failures=3", 10000), "no growing backoff in the log");
    cr_assert(daemon_env_wait_log(dir, expected, 1000), "the log does not name the cause");
    cr_assert_eq(daemon_stop(&d, SIGTERM, 10000), 0);
}

Test(sentinel_daemon, a_stale_address_is_refused_by_role)
{
    /* A name whose "primary" is the replica: what a sentinel says when its
     * view is stale. */
    redisContext *s = rsn_connect(group.sentinels[0].port);
    cr_assert_not_null(s);
    redisReply *r = redisCommand(s, "SENTINEL MONITOR stale 127.0.0.1 %d 2", group.nodes[1].port);
    cr_assert(r && r->type == REDIS_REPLY_STATUS, "SENTINEL MONITOR: %s", r ? r->str : "no reply");
    freeReplyObject(r);
    redisFree(s);
    char url[128];
    snprintf(url, sizeof url, "redis-sentinel://127.0.0.1:%d/stale", group.sentinels[0].port);
    int code = RUN(NULL, "push", "--redis", url, "acme", "{}");
    cr_assert_eq(code, 1, "%s", out);
    char expected[128];
    snprintf(expected, sizeof expected, "127.0.0.1:%d is a replica, not the primary",
             group.nodes[1].port);
    cr_assert(strstr(out, expected), "%s", out);

    daemon_process d = run_acme(url);
    cr_assert(daemon_env_wait_log(dir, expected, 10000), "the log does not say why");
    cr_assert(daemon_env_wait_log(dir, "failures=3", 10000), "no growing backoff in the log");
    cr_assert_eq(daemon_stop(&d, SIGTERM, 10000), 0);
}

/* No sentinel at all: ports nobody listens on. */
Test(sentinel_cli, no_sentinel_answering_is_a_clear_error, .timeout = 60)
{
    int a = rs_free_port(), b = rs_free_port();
    char url[128];
    snprintf(url, sizeof url, "redis-sentinel://127.0.0.1:%d,127.0.0.1:%d/mymaster", a, b);
    int code = RUN(NULL, "stats", "--redis", url);
    cr_assert_eq(code, 1, "%s", out);
    cr_assert(strstr(out, "no sentinel answered"), "%s", out);
    char each[64];
    snprintf(each, sizeof each, "127.0.0.1:%d: ", b);
    cr_assert(strstr(out, each), "the second sentinel was not asked: %s", out);
}
