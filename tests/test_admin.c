/* test_admin.c - the admin endpoint of a real `sluice run` (metrics after
 * real traffic, readiness while Redis goes away and comes back) and
 * configuration reload by SIGHUP, against a real redis-server and a real
 * HTTP endpoint. */
#include <criterion/criterion.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <curl/curl.h>

#include "config_file.h"
#include "daemon_env.h"
#include "daemon_process.h"
#include "delivery_checks.h"
#include "redis_fixture.h"
#include "redis_server.h"
#include "sink_process.h"

static redis_fixture fx;
static sink_process sink;
static char dir[64];
static char config_path[128];
static char log_path[128];
static int admin_port;

static void setup(void)
{
    redis_fixture_start(&fx);
    daemon_env_start(&sink, dir, sizeof dir, "admin");
    snprintf(config_path, sizeof config_path, "%s/sluice.json", dir);
    snprintf(log_path, sizeof log_path, "%s/sluice.log", dir);
    admin_port = rs_free_port();
    cr_assert_gt(admin_port, 0);
}

static void teardown(void)
{
    daemon_env_stop(&sink, dir);
    redis_fixture_stop(&fx);
}

TestSuite(admin, .init = setup, .fini = teardown, .timeout = 120);

/* ---- helpers ---- */

/* Writes the config file: the admin endpoint on admin_port, `extra`
 * top-level members (may be ""), and the "tenants" object. */
static void write_config(const char *extra, const char *tenants_format, ...)
{
    char url[64], members[256];
    snprintf(url, sizeof url, "redis://127.0.0.1:%d/0", fx.server.port);
    snprintf(members, sizeof members,
             "\"workers\": 2, \"admin\": \"127.0.0.1:%d\", \"grace_ms\": 2000, %s", admin_port, extra);
    va_list ap;
    va_start(ap, tenants_format);
    config_file_vwrite(config_path, url, members, tenants_format, ap);
    va_end(ap);
}

static daemon_process start_daemon(void)
{
    daemon_process d = {0};
    char err[256];
    cr_assert(daemon_start(&d, config_path, log_path, NULL, err, sizeof err), "%s", err);
    return d;
}


typedef struct text {
    char *data;
    size_t len;
} text;

static size_t collect(char *data, size_t size, size_t n, void *arg)
{
    text *t = arg;
    char *more = realloc(t->data, t->len + size * n + 1);
    cr_assert_not_null(more);
    memcpy(more + t->len, data, size * n);
    t->data = more;
    t->len += size * n;
    t->data[t->len] = '\0';
    return size * n;
}

/* GETs path from the admin endpoint: the status (0 if no answer) and the
 * body in *body (caller frees; may be NULL). */
static long get(const char *path, char **body)
{
    char url[128];
    snprintf(url, sizeof url, "http://127.0.0.1:%d%s", admin_port, path);
    CURL *curl = curl_easy_init();
    text t = {calloc(1, 1), 0};
    curl_easy_setopt(curl, CURLOPT_URL, url);
    curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, collect);
    curl_easy_setopt(curl, CURLOPT_WRITEDATA, &t);
    curl_easy_setopt(curl, CURLOPT_TIMEOUT_MS, 2000L);
    long status = 0;
    if (curl_easy_perform(curl) == CURLE_OK)
        curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &status);
    curl_easy_cleanup(curl);
    if (body)
        *body = t.data;
    else
        free(t.data);
    return status;
}

/* The value of the sample `series` (name and labels exactly) in a
 * Prometheus text, or -1 if absent. */
static long long sample(const char *metrics, const char *series)
{
    size_t len = strlen(series);
    for (const char *p = metrics; (p = strstr(p, series)); p += len)
        if ((p == metrics || p[-1] == '\n') && p[len] == ' ')
            return strtoll(p + len + 1, NULL, 10);
    return -1;
}

/* Polls /metrics until series reaches want (at most timeout_ms); returns
 * the last value seen. */
static long long wait_sample(const char *series, long long want, int timeout_ms)
{
    long long value = -1;
    for (int waited = 0; waited <= timeout_ms; waited += 50) {
        char *metrics = NULL;
        if (get("/metrics", &metrics) == 200)
            value = sample(metrics, series);
        free(metrics);
        if (value >= want)
            return value;
        sleep_ms(50);
    }
    return value;
}

static long wait_status(const char *path, long want, int timeout_ms)
{
    long status = 0;
    for (int waited = 0; waited <= timeout_ms; waited += 50) {
        if ((status = get(path, NULL)) == want)
            return status;
        sleep_ms(50);
    }
    return status;
}

/* The daemon's log so far (caller frees). */
static char *read_log(void)
{
    FILE *f = fopen(log_path, "r");
    cr_assert_not_null(f);
    text t = {calloc(1, 1), 0};
    char chunk[4096];
    size_t n;
    while ((n = fread(chunk, 1, sizeof chunk, f)) > 0)
        collect(chunk, 1, n, &t);
    fclose(f);
    return t.data;
}

static bool wait_log(const char *needle, int timeout_ms)
{
    for (int waited = 0; waited <= timeout_ms; waited += 50) {
        char *log = read_log();
        bool found = strstr(log, needle) != NULL;
        free(log);
        if (found)
            return true;
        sleep_ms(50);
    }
    return false;
}

/* ---- metrics ---- */

Test(admin, metrics_count_real_traffic_exactly)
{
    write_config("",
                 "{\"fine\": {\"endpoint\": \"http://127.0.0.1:%d/hook\", \"rate\": 500},"
                 " \"gone\": {\"endpoint\": \"http://127.0.0.1:%d/status/404\", \"rate\": 500},"
                 " \"flaky\": {\"endpoint\": \"http://127.0.0.1:%d/status/503\", \"rate\": 500,"
                 "   \"retry\": {\"max_attempts\": 2, \"base_ms\": 1, \"max_ms\": 2}},"
                 " \"idle\": {\"endpoint\": \"http://127.0.0.1:%d/hook\", \"rate\": 1}}",
                 sink.port, sink.port, sink.port, sink.port);
    redis_fixture_push_jobs(&fx, "fine", "job", 30);
    redis_fixture_push_jobs(&fx, "gone", "job", 10);
    redis_fixture_push_jobs(&fx, "flaky", "job", 5);
    daemon_process d = start_daemon();
    const char *delivered = "sluice_jobs_total{tenant=\"fine\",outcome=\"delivered\"}";
    cr_assert_eq(wait_sample(delivered, 30, 15000), 30);
    cr_assert_eq(wait_sample("sluice_jobs_total{tenant=\"gone\",outcome=\"dead_lettered\"}", 10, 15000), 10);
    cr_assert_eq(wait_sample("sluice_jobs_total{tenant=\"flaky\",outcome=\"dead_lettered\"}", 5, 15000), 5);
    char *m = NULL;
    cr_assert_eq(get("/metrics", &m), 200);
    cr_assert_eq(sample(m, "sluice_jobs_claimed_total{tenant=\"fine\"}"), 30);
    cr_assert_eq(sample(m, "sluice_http_responses_total{tenant=\"fine\",code=\"200\"}"), 30);
    cr_assert_eq(sample(m, "sluice_delivery_latency_seconds_count{tenant=\"fine\"}"), 30);
    cr_assert_eq(sample(m, "sluice_shaping_delay_seconds_count{tenant=\"fine\"}"), 30);
    cr_assert_eq(sample(m, "sluice_departure_lateness_seconds_count{tenant=\"fine\"}"), 30);
    cr_assert_eq(sample(m, "sluice_in_flight{tenant=\"fine\"}"), 0);
    cr_assert_eq(sample(m, "sluice_waiting{tenant=\"fine\"}"), 0);
    cr_assert_eq(sample(m, "sluice_queue_depth{tenant=\"fine\"}"), 0);
    cr_assert_eq(sample(m, "sluice_jobs_total{tenant=\"fine\",outcome=\"dead_lettered\"}"), 0);
    cr_assert_eq(sample(m, "sluice_dead_letters_total{tenant=\"gone\",reason=\"http_4xx\"}"), 10);
    cr_assert_eq(sample(m, "sluice_http_responses_total{tenant=\"gone\",code=\"404\"}"), 10);
    cr_assert_eq(sample(m, "sluice_jobs_total{tenant=\"gone\",outcome=\"delivered\"}"), 0);
    /* each flaky job: one retry, then out of attempts */
    cr_assert_eq(sample(m, "sluice_http_responses_total{tenant=\"flaky\",code=\"503\"}"), 10);
    cr_assert_eq(sample(m, "sluice_jobs_total{tenant=\"flaky\",outcome=\"retried\"}"), 5);
    cr_assert_eq(sample(m, "sluice_dead_letters_total{tenant=\"flaky\",reason=\"exhausted\"}"), 5);
    cr_assert_eq(sample(m, "sluice_jobs_claimed_total{tenant=\"flaky\"}"), 10, "claimed twice each");
    cr_assert_eq(sample(m, "sluice_tenants"), 4);
    cr_assert_eq(sample(m, "sluice_ready"), 1);
    cr_assert_null(strstr(m, "tenant=\"idle\""), "an idle tenant has no series");
    cr_assert_not_null(strstr(m, "# TYPE sluice_delivery_latency_seconds histogram\n"));
    free(m);
    cr_assert_eq(daemon_stop(&d, SIGTERM, 10000), 0);
}

/* ---- health and readiness ---- */

Test(admin, readiness_follows_redis)
{
    write_config("", "{\"acme\": {\"endpoint\": \"http://127.0.0.1:%d/hook\", \"rate\": 10}}",
                 sink.port);
    daemon_process d = start_daemon();
    cr_assert_eq(wait_status("/readyz", 200, 5000), 200);
    cr_assert_eq(get("/healthz", NULL), 200);
    cr_assert_eq(get("/nothing-here", NULL), 404);

    redis_fixture_shutdown(&fx, false);
    cr_assert_eq(wait_status("/readyz", 503, 5000), 503, "Redis is gone");
    cr_assert_eq(get("/healthz", NULL), 200, "alive all the same");
    cr_assert_eq(wait_sample("sluice_ready", 0, 1000), 0);

    redis_fixture_restart(&fx);
    cr_assert_eq(wait_status("/readyz", 200, 15000), 200, "Redis is back");
    cr_assert_geq(wait_sample("sluice_redis_reconnects_total", 1, 1000), 1);
    cr_assert_eq(daemon_stop(&d, SIGTERM, 10000), 0);
}

Test(admin, an_address_in_use_stops_the_daemon)
{
    write_config("", "{\"acme\": {\"endpoint\": \"http://127.0.0.1:%d/hook\", \"rate\": 10}}",
                 sink.port);
    daemon_process first = start_daemon();
    cr_assert_eq(wait_status("/healthz", 200, 5000), 200);
    daemon_process second = start_daemon();
    int code = daemon_stop(&second, 0, 10000); /* waits for it to end by itself */
    cr_assert_eq(code, 1, "the second daemon cannot listen: exit 1, not %d", code);
    cr_assert(wait_log("admin: cannot listen on 127.0.0.1", 1000));
    cr_assert_eq(daemon_stop(&first, SIGTERM, 10000), 0);
}

/* ---- reload ---- */

/* The gaps between arrivals at path, in ms, in arrival order (at most max). */
static size_t gaps_at(const char *path, int64_t *gaps_ms, size_t max)
{
    sink_request *reqs = NULL;
    size_t n = sink_read_log(&sink, &reqs), found = 0;
    int64_t last = 0;
    for (size_t i = 0; i < n; i++) {
        if (strncmp(reqs[i].path, path, strlen(path)) != 0)
            continue;
        if (last && found < max)
            gaps_ms[found++] = (reqs[i].arrival_us - last) / 1000;
        last = reqs[i].arrival_us;
    }
    sink_requests_free(reqs, n);
    return found;
}

static int64_t median(int64_t *v, size_t n)
{
    int64_sort(v, n);
    return v[n / 2];
}

static size_t arrivals_at(const char *path)
{
    int64_t gaps[4096];
    size_t n = gaps_at(path, gaps, 4096);
    return n ? n + 1 : 0;
}

Test(admin, sighup_applies_a_valid_file_at_once)
{
    write_config("", "{\"acme\": {\"endpoint\": \"http://127.0.0.1:%d/before\", \"rate\": 5}}",
                 sink.port);
    redis_fixture_push_jobs(&fx, "acme", "job", 300);
    daemon_process d = start_daemon();
    sleep_ms(1500);
    write_config("", "{\"acme\": {\"endpoint\": \"http://127.0.0.1:%d/after\", \"rate\": 100},"
                     " \"newcomer\": {\"endpoint\": \"http://127.0.0.1:%d/new\", \"rate\": 100}}",
                 sink.port, sink.port);
    redis_fixture_push_jobs(&fx, "newcomer", "job", 5);
    cr_assert_eq(kill(d.pid, SIGHUP), 0);
    cr_assert(wait_log("configuration reloaded", 5000));
    sleep_ms(1500);
    int64_t before[64], after[512];
    size_t n_before = gaps_at("/before", before, 64);
    size_t n_after = gaps_at("/after", after, 512);
    cr_assert_geq(n_before, 4, "5/s for 1.5 s: %zu gaps", n_before);
    cr_assert_geq(n_after, timing_counts() ? 50 : 10, "100/s for most of 1.5 s: only %zu gaps", n_after);
    int64_t slow = median(before, n_before), fast = median(after, n_after);
    cr_log_info("median gap before the reload %lld ms, after %lld ms", (long long)slow, (long long)fast);
    if (timing_counts()) {
        cr_assert(slow >= 180 && slow <= 220, "median gap before: %lld ms", (long long)slow);
        cr_assert(fast >= 7 && fast <= 13, "median gap after: %lld ms", (long long)fast);
    } else { /* slowed, the new rate is still far above the old one */
        cr_assert(fast * 4 < slow, "median gap before %lld ms, after %lld ms", (long long)slow,
                  (long long)fast);
    }
    cr_assert_eq(arrivals_at("/new"), 5, "a tenant added by the reload is served");
    cr_assert_eq(daemon_stop(&d, SIGTERM, 10000), 0);
}

Test(admin, sighup_keeps_the_running_config_when_the_file_is_bad)
{
    write_config("", "{\"acme\": {\"endpoint\": \"http://127.0.0.1:%d/before\", \"rate\": 20}}",
                 sink.port);
    redis_fixture_push_jobs(&fx, "acme", "job", 200);
    daemon_process d = start_daemon();
    sleep_ms(500);
    /* two mistakes: both are logged */
    write_config("", "{\"acme\": {\"endpoint\": \"http://127.0.0.1:%d/after\", \"rate\": -1,"
                     " \"concurency\": 4}}", sink.port);
    cr_assert_eq(kill(d.pid, SIGHUP), 0);
    cr_assert(wait_log("reload failed: keeping the running configuration", 5000));
    char *log = read_log();
    cr_assert_not_null(strstr(log, "tenants.acme.rate: "), "%s", log);
    cr_assert_not_null(strstr(log, "tenants.acme.concurency: "), "%s", log);
    free(log);
    /* a valid file that changes what only a restart can */
    write_config("\"prefix\": \"elsewhere\",",
                 "{\"acme\": {\"endpoint\": \"http://127.0.0.1:%d/after\", \"rate\": 20}}", sink.port);
    cr_assert_eq(kill(d.pid, SIGHUP), 0);
    cr_assert(wait_log("changed=\"prefix\"", 5000));
    size_t before = arrivals_at("/before");
    sleep_ms(1000);
    cr_assert_gt(arrivals_at("/before"), before + (timing_counts() ? 10 : 3),
                 "still delivering with the old config");
    cr_assert_eq(arrivals_at("/after"), 0, "the bad file was not applied");
    cr_assert_eq(get("/readyz", NULL), 200);
    cr_assert_eq(daemon_stop(&d, SIGTERM, 10000), 0);
}
