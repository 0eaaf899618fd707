/* test_delivery_limits.c - what bounds each tenant's requests, through the
 * real daemon: `concurrency` counted at the endpoint, and `timeout_ms`:
 * a request that takes too long is abandoned, retried, and finally
 * dead-lettered `exhausted`. */
#include <criterion/criterion.h>
#include <inttypes.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/monotonic.h"
#include "config_file.h"
#include "daemon_env.h"
#include "delivery_checks.h"
#include "redis_fixture.h"
#include "shaping_bound.h"
#include "sink_process.h"

static redis_fixture fx;
static sink_process sink;
static char dir[64];

static void setup(void)
{
    redis_fixture_start(&fx);
    daemon_env_start(&sink, dir, sizeof dir, "limits");
}

static void teardown(void)
{
    daemon_env_stop(&sink, dir);
    redis_fixture_stop(&fx);
}

TestSuite(delivery_limits, .init = setup, .fini = teardown, .timeout = 120);

/* The endpoint holds each request 300 ms (/slow/300) and the rate would
 * allow 200 a second: only `concurrency` bounds them. A request can start
 * only after an earlier one's answer, 300 ms after that one arrived, so no
 * window shorter than 300 ms holds more than `concurrency` arrivals; and
 * with 30 jobs waiting some window holds exactly that many (else the test
 * proved nothing). */
Test(delivery_limits, concurrency_bounds_requests_at_the_endpoint)
{
    const int concurrency = 3, jobs = 30;
    const char *config = config_file_daemon(dir, fx.server.port, 
        "{\"acme\": {\"endpoint\": \"http://127.0.0.1:%d/slow/300\", \"rate\": 200,"
        " \"concurrency\": %d, \"timeout_ms\": 5000}}",
        sink.port, concurrency);
    redis_fixture_push_jobs(&fx, "acme", "c", jobs);
    daemon_process d = daemon_env_run(dir, config, NULL);
    sink_request *reqs = NULL;
    size_t n = sink_wait_each(&sink, "c", jobs, 15000, &reqs);
    cr_assert_eq(daemon_stop(&d, SIGTERM, 10000), 0);
    assert_each_delivered(reqs, n, "c", jobs, false);
    int64_t *arrivals = malloc(n * sizeof *arrivals);
    for (size_t i = 0; i < n; i++)
        arrivals[i] = reqs[i].arrival_us;
    int64_sort(arrivals, n);
    size_t most = most_in_window(arrivals, n, 300000);
    cr_log_info("concurrency %d at /slow/300: at most %zu arrivals in 300 ms", concurrency, most);
    cr_assert_leq(most, (size_t)concurrency, "%zu requests within 300 ms", most);
    cr_assert_eq(most, (size_t)concurrency, "never %d at once: the bound was not reached", concurrency);
    free(arrivals);
    sink_requests_free(reqs, n);
    assert_tenant_drained(fx.conn, "acme");
}

/* The endpoint would answer after 3 s, the timeout is 300 ms: each of the
 * three attempts is abandoned at 300 ms and retried after a short backoff,
 * then the job is dead-lettered `exhausted` - all well before a single
 * answer could have come. */
Test(delivery_limits, timeout_ms_abandons_retries_then_exhausts)
{
    const char *config = config_file_daemon(dir, fx.server.port, 
        "{\"acme\": {\"endpoint\": \"http://127.0.0.1:%d/slow/3000\", \"rate\": 100,"
        " \"timeout_ms\": 300, \"retry\": {\"max_attempts\": 3, \"base_ms\": 10, \"max_ms\": 50}}}",
        sink.port);
    freeReplyObject(redisCommand(fx.conn, "LPUSH sluice:{acme}:queue {\"id\":\"slowpoke\"}"));
    int64_t start = sl_monotonic_us();
    daemon_process d = daemon_env_run(dir, config, NULL);
    bool dead = dlq_wait(fx.conn, "acme", 1, 10000);
    double seconds = (double)(sl_monotonic_us() - start) / 1e6;
    cr_assert_eq(daemon_stop(&d, SIGTERM, 10000), 0);
    cr_assert(dead, "not dead-lettered within 10 s");
    /* 3 x 300 ms and two backoffs, plus starting up: under 3 s, the time
     * one answer would have taken */
    if (timing_counts())
        cr_assert_lt(seconds, 2.9, "dead-lettered after %.2f s", seconds);

    sink_request *reqs = NULL;
    size_t n = sink_wait_log(&sink, 3, 1000, &reqs);
    cr_assert_eq(n, 3, "%zu attempts reached the endpoint", n);
    int64_t arrivals[3];
    for (size_t i = 0; i < n; i++) {
        cr_assert_str_eq(reqs[i].key, "slowpoke");
        arrivals[i] = reqs[i].arrival_us;
    }
    int64_sort(arrivals, n);
    for (size_t i = 1; i < n; i++) {
        int64_t gap = arrivals[i] - arrivals[i - 1];
        cr_assert(gap >= 300000 && gap < 1500000, "attempt %zu came %" PRId64 " ms after the last",
                  i + 1, gap / 1000);
    }
    sink_requests_free(reqs, n);
    char **records;
    size_t dead_n = dlq_read(fx.conn, "acme", &records);
    cr_log_info("timed out: %s", records[0]);
    cr_assert_eq(dead_n, 1);
    cr_assert_not_null(strstr(records[0], "\"reason\":\"exhausted\""), "%s", records[0]);
    cr_assert_not_null(strstr(records[0], "\"attempts\":3"), "%s", records[0]);
    cr_assert_null(strstr(records[0], "\"http_status\":200"), "%s", records[0]);
    strings_free(records, dead_n);
    assert_tenant_drained(fx.conn, "acme");
}
