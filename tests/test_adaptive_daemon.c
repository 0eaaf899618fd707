/* test_adaptive_daemon.c - a real `sluice run` against sluice-sink's hidden
 * token bucket (/limit/R): the endpoint's X-RateLimit-* headers pause the
 * tenant before the endpoint has to refuse (issue 16, item 5's last
 * point). One test at a time (--jobs=1): timing is measured. */
#include <criterion/criterion.h>
#include <inttypes.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "daemon_env.h"
#include "daemon_process.h"
#include "delivery_checks.h"
#include "redis_fixture.h"
#include "sink_process.h"

static redis_fixture fx;
static sink_process sink;
static char dir[64];

static void setup(void)
{
    redis_fixture_start(&fx);
    daemon_env_start(&sink, dir, sizeof dir, "adaptive");
}

static void teardown(void)
{
    daemon_env_stop(&sink, dir);
    redis_fixture_stop(&fx);
}

TestSuite(adaptive_daemon, .init = setup, .fini = teardown, .timeout = 120);

static const char *write_config(const char *tenants_format, ...)
{
    static char path[128];
    snprintf(path, sizeof path, "%s/sluice.json", dir);
    char tenants[2048];
    va_list ap;
    va_start(ap, tenants_format);
    vsnprintf(tenants, sizeof tenants, tenants_format, ap);
    va_end(ap);
    FILE *f = fopen(path, "w");
    cr_assert_not_null(f);
    fprintf(f,
            "{\"redis\": \"redis://127.0.0.1:%d/0\", \"workers\": 2, \"admin\": null,\n"
            " \"grace_ms\": 5000, \"tenants\": %s}\n",
            fx.server.port, tenants);
    fclose(f);
    return path;
}

static bool timing_counts(void)
{
    const char *sanitized = getenv("SLUICE_SANITIZED");
    return !sanitized || strcmp(sanitized, "1") != 0;
}

static int compare_arrival(const void *a, const void *b)
{
    int64_t x = ((const sink_request *)a)->arrival_us, y = ((const sink_request *)b)->arrival_us;
    return (x > y) - (x < y);
}

/* Waits until `want` requests were answered 200 (or timeout_ms passed);
 * the whole log so far in *out, sorted by arrival. */
static size_t wait_ok(size_t want, int timeout_ms, sink_request **out, size_t *ok)
{
    struct timespec pause = {0, 50000000};
    size_t n = 0;
    for (int waited = 0;; waited += 50) {
        sink_requests_free(*out, n);
        n = sink_read_log(&sink, out);
        *ok = 0;
        for (size_t i = 0; i < n; i++)
            *ok += (*out)[i].status == 200;
        if (*ok >= want || waited >= timeout_ms)
            break;
        nanosleep(&pause, NULL);
    }
    qsort(*out, n, sizeof **out, compare_arrival);
    return n;
}

/* A tenant whose file rate (100/s) is far above the endpoint's hidden
 * limit (40/s) that announces itself in X-RateLimit-Remaining/Reset: the
 * tenant pauses each time nothing remains, so the endpoint (nearly)
 * never refuses. Each pause hands the claimed jobs back and restarts the
 * schedule, which costs throughput: about 60% of the limit on this
 * machine (with "adaptive" the pauses also lower the rate, see
 * tenant.c's count_outcome, and they become rare). */
Test(adaptive_daemon, rate_limit_headers_keep_429s_near_zero)
{
    const int jobs = 400;
    const char *config = write_config(
        "{\"acme\": {\"endpoint\": \"http://127.0.0.1:%d/limit/40?headers=1\", \"rate\": 100,"
        " \"retry\": {\"max_attempts\": 50, \"base_ms\": 20, \"max_ms\": 200}}}",
        sink.port);
    redis_fixture_push_jobs(&fx, "acme", "h", jobs);
    daemon_process d = {0};
    char log[128], err[256];
    snprintf(log, sizeof log, "%s/sluice.log", dir);
    cr_assert(daemon_start(&d, config, log, NULL, err, sizeof err), "%s", err);
    sink_request *reqs = NULL;
    size_t ok = 0;
    size_t n = wait_ok((size_t)jobs, 40000, &reqs, &ok);
    cr_assert_eq(daemon_stop(&d, SIGTERM, 10000), 0, "clean exit");
    cr_assert_eq(ok, (size_t)jobs, "%zu of %d delivered", ok, jobs);
    size_t refused = 0;
    int64_t first_ok = 0, last_ok = 0;
    for (size_t i = 0; i < n; i++) {
        refused += reqs[i].status == 429;
        if (reqs[i].status == 200) {
            if (!first_ok)
                first_ok = reqs[i].arrival_us;
            last_ok = reqs[i].arrival_us;
        }
    }
    /* the bucket's burst (4) passes at once; the rest at the limit */
    double rate = (double)(jobs - 5) / ((double)(last_ok - first_ok) / 1e6);
    double fraction = (double)refused / (double)n;
    cr_log_info("hidden limit 40/s with X-RateLimit headers: %d delivered at %.1f/s, %zu 429s of "
                "%zu requests (%.2f%%)",
                jobs, rate, refused, n, 100 * fraction);
    if (timing_counts()) {
        /* A request already on the wire when a response says "none
         * left" can still be refused: a few per hundred, against ~15%
         * without the headers (the next test). */
        cr_assert_lt(fraction, 0.05, "%zu 429s of %zu requests", refused, n);
        cr_assert(rate > 16 && rate < 44, "delivered at %.1f/s", rate);
    }
    sink_requests_free(reqs, n);
    assert_tenant_drained(fx.conn, "acme");
}

/* The same endpoint without headers: the 429s the headers spare (the
 * baseline the first test is judged against). */
Test(adaptive_daemon, without_headers_the_endpoint_refuses)
{
    const int jobs = 200;
    const char *config = write_config(
        "{\"acme\": {\"endpoint\": \"http://127.0.0.1:%d/limit/40\", \"rate\": 100,"
        " \"retry\": {\"max_attempts\": 50, \"base_ms\": 20, \"max_ms\": 200}}}",
        sink.port);
    redis_fixture_push_jobs(&fx, "acme", "n", jobs);
    daemon_process d = {0};
    char log[128], err[256];
    snprintf(log, sizeof log, "%s/sluice.log", dir);
    cr_assert(daemon_start(&d, config, log, NULL, err, sizeof err), "%s", err);
    sink_request *reqs = NULL;
    size_t ok = 0;
    size_t n = wait_ok((size_t)jobs, 40000, &reqs, &ok);
    cr_assert_eq(daemon_stop(&d, SIGTERM, 10000), 0, "clean exit");
    cr_assert_eq(ok, (size_t)jobs);
    size_t refused = 0;
    for (size_t i = 0; i < n; i++)
        refused += reqs[i].status == 429;
    cr_log_info("hidden limit 40/s without headers: %zu 429s of %zu requests (%.2f%%)", refused, n,
                100.0 * (double)refused / (double)n);
    cr_assert_gt(refused, (size_t)jobs / 10, "a rate of 100/s against 40/s is refused often");
    sink_requests_free(reqs, n);
}
