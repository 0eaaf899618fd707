/* test_deadlines.c - when a job is too late to go, through the real
 * daemon: a job's `deadline` (unix ms) that passes before its slot, one
 * that does not, and the tenant's `max_wait_ms` on a fresh job stuck behind
 * a backlog. Each job is dead-lettered `expired` or delivered, never both. */
#include <criterion/criterion.h>
#include <inttypes.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "config_file.h"
#include "daemon_env.h"
#include "delivery_checks.h"
#include "redis_fixture.h"
#include "sink_process.h"

static redis_fixture fx;
static sink_process sink;
static char dir[64];

static void setup(void)
{
    redis_fixture_start(&fx);
    daemon_env_start(&sink, dir, sizeof dir, "deadlines");
}

static void teardown(void)
{
    daemon_env_stop(&sink, dir);
    redis_fixture_stop(&fx);
}

TestSuite(deadlines, .init = setup, .fini = teardown, .timeout = 120);

static int64_t wall_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void push(const char *tenant, const char *job)
{
    redisReply *reply = redisCommand(fx.conn, "LPUSH sluice:{%s}:queue %s", tenant, job);
    cr_assert(reply && reply->type == REDIS_REPLY_INTEGER, "LPUSH %s", job);
    freeReplyObject(reply);
}

/* Waits until the tenant has nothing queued, claimed, retrying or
 * recorded: every job was delivered or dead-lettered. */
static bool wait_drained(const char *tenant, int timeout_ms)
{
    for (int waited = 0; waited <= timeout_ms; waited += 50) {
        if (redis_count(fx.conn, "LLEN sluice:{%s}:queue", tenant) == 0 &&
            redis_count(fx.conn, "HLEN sluice:{%s}:jobs", tenant) == 0)
            return true;
        sleep_ms(50);
    }
    return false;
}

/* How many of reqs carry Idempotency-Key key. */
static int delivered(const sink_request *reqs, size_t n, const char *key)
{
    int count = 0;
    for (size_t i = 0; i < n; i++)
        count += strcmp(reqs[i].key, key) == 0;
    return count;
}

/* 2/s: slots 500 ms apart. "ontime" is first, its deadline 2.5 s ahead;
 * "late" is eighth (its slot some 3.5 s on), its deadline 1.5 s ahead.
 * Deadlines read as microseconds would expire both, as seconds neither. */
Test(deadlines, a_deadline_before_the_slot_expires_one_after_it_does_not)
{
    const char *config = config_file_daemon(dir, fx.server.port, 
        "{\"acme\": {\"endpoint\": \"http://127.0.0.1:%d/hook\", \"rate\": 2}}", sink.port);
    int64_t now = wall_ms();
    char job[128];
    snprintf(job, sizeof job, "{\"id\":\"ontime\",\"deadline\":%" PRId64 "}", now + 2500);
    push("acme", job);
    redis_fixture_push_jobs(&fx, "acme", "q", 6);
    snprintf(job, sizeof job, "{\"id\":\"late\",\"deadline\":%" PRId64 "}", now + 1500);
    push("acme", job);
    push("acme", "{\"id\":\"after\"}");
    daemon_process d = daemon_env_run(dir, config, NULL);
    bool drained = wait_drained("acme", 15000);
    cr_assert_eq(daemon_stop(&d, SIGTERM, 10000), 0);
    cr_assert(drained, "jobs left after 15 s");

    sink_request *reqs = NULL;
    size_t n = sink_read_log(&sink, &reqs);
    cr_assert_eq(delivered(reqs, n, "ontime"), 1, "the job with time to spare was not delivered");
    cr_assert_eq(delivered(reqs, n, "late"), 0, "the job past its deadline was delivered");
    cr_assert_eq(delivered(reqs, n, "after"), 1, "the job behind the expired one was not delivered");
    assert_each_delivered(reqs, n, "q", 6, false);
    cr_assert_eq(n, 8, "%zu requests", n);
    sink_requests_free(reqs, n);

    char **records;
    size_t dead = dlq_read(fx.conn, "acme", &records);
    cr_assert_eq(dead, 1, "%zu dead letters", dead);
    cr_assert_not_null(strstr(records[0], "\"reason\":\"expired\""), "%s", records[0]);
    /* the job as pushed, a JSON string inside the record */
    cr_assert_not_null(strstr(records[0], "{\\\"id\\\":\\\"late\\\""), "%s", records[0]);
    strings_free(records, dead);
    assert_tenant_drained(fx.conn, "acme");
}

/* What a user expects of max_wait_ms: a job that would leave more than
 * max_wait_ms after sluice first saw it queued is dead-lettered `expired`,
 * however far behind a backlog it waits (doc/shaping.md). 5/s, 1 s: of 20
 * jobs pushed at once, the first claim sees all of them, the first six
 * leave within 1 s of it and the rest expire. */
Test(deadlines, max_wait_ms_expires_a_fresh_job_stuck_behind_a_backlog)
{
    const char *config = config_file_daemon(dir, fx.server.port, 
        "{\"acme\": {\"endpoint\": \"http://127.0.0.1:%d/hook\", \"rate\": 5, \"max_wait_ms\": 1000}}",
        sink.port);
    int64_t pushed = wall_ms();
    redis_fixture_push_jobs(&fx, "acme", "w", 20);
    daemon_process d = daemon_env_run(dir, config, NULL);
    bool drained = wait_drained("acme", 15000);
    cr_assert_eq(daemon_stop(&d, SIGTERM, 10000), 0);
    cr_assert(drained, "jobs left after 15 s");

    sink_request *reqs = NULL;
    size_t n = sink_read_log(&sink, &reqs);
    cr_assert_gt(n, 0, "nothing was delivered");
    int64_t first = INT64_MAX, last = 0;
    for (size_t i = 0; i < n; i++) {
        int64_t at = reqs[i].arrival_us / 1000;
        first = at < first ? at : first;
        last = at > last ? at : last;
    }
    cr_log_info("max_wait_ms 1000: %zu of 20 delivered, the first %" PRId64
                " ms after the push, the last %" PRId64 " ms after the first",
                n, first - pushed, last - first);
    sink_requests_free(reqs, n);
    /* The first job leaves at the first claim (an idle tenant's slot is
     * now), which is when sluice first saw them all: the last may leave
     * 1,000 ms after it, plus what a request adds at the endpoint. */
    cr_assert_leq(last - first, 1250, "a job was delivered %" PRId64 " ms after the first claim",
                  last - first);
    char **records;
    size_t dead = dlq_read(fx.conn, "acme", &records);
    cr_assert_geq(dead, 12, "only %zu of 20 expired", dead);
    cr_assert_eq(dead + n, 20, "%zu delivered and %zu dead of 20", n, dead);
    for (size_t i = 0; i < dead; i++)
        cr_assert_not_null(strstr(records[i], "\"reason\":\"expired\""), "%s", records[i]);
    strings_free(records, dead);
}
