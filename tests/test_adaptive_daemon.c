/* test_adaptive_daemon.c - real `sluice run`s against sluice-sink's hidden
 * token bucket (/limit/R), issue 16 item 5: the endpoint's X-RateLimit-*
 * headers pause the tenant before the endpoint has to refuse; an adaptive
 * tenant of two daemons follows a hidden limit that moves (100/s, 40/s,
 * 80/s) at one rate. One test at a time (--jobs=1): timing is measured,
 * and judged only outside the sanitizers (timing_counts); under them the
 * moving limit runs 3 s a phase instead of 45 s in all. */
#include <criterion/criterion.h>
#include <curl/curl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "config_file.h"
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
    sink_requests_sort_by_arrival(*out, n);
    return n;
}

/* A tenant whose file rate (100/s) is far above the endpoint's hidden
 * limit (40/s) that announces itself in X-RateLimit-Remaining/Reset: the
 * tenant pauses each time nothing remains, so the endpoint (nearly)
 * never refuses, and delivers close to the limit: a pause hands back only
 * the jobs whose slots fall inside it (with "adaptive" a pause longer
 * than the tenant's interval also lowers the rate, see tenant.c's
 * count_outcome, and they become rare). */
Test(adaptive_daemon, rate_limit_headers_keep_429s_near_zero)
{
    const int jobs = 200;
    const char *config = config_file_daemon(dir, fx.server.port,
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
         * left" can still be refused: a few per hundred, against ~40%
         * without the headers (the next test). */
        cr_assert_lt(fraction, 0.05, "%zu 429s of %zu requests", refused, n);
        /* Each pause waits for the next token and a round trip more: a
         * little under the limit (39.8/s on an idle machine; 24/s when a
         * pause handed back every claimed job and its slot). */
        cr_assert(rate > 34 && rate < 44, "delivered at %.1f/s", rate);
    }
    sink_requests_free(reqs, n);
    assert_tenant_drained(fx.conn, "acme");
}

/* The same endpoint without headers: the 429s the headers spare (the
 * baseline the first test is judged against). */
Test(adaptive_daemon, without_headers_the_endpoint_refuses)
{
    const int jobs = 200;
    const char *config = config_file_daemon(dir, fx.server.port, 
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

/* ---- the adaptive rate against a hidden limit that moves ---- */

/* GET path on the sink (a /_mode control request); its status. */
static long sink_get(const char *path)
{
    char url[256];
    snprintf(url, sizeof url, "http://127.0.0.1:%d%s", sink.port, path);
    CURL *c = curl_easy_init();
    cr_assert_not_null(c);
    curl_easy_setopt(c, CURLOPT_URL, url);
    curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, 5000L);
    curl_easy_setopt(c, CURLOPT_NOBODY, 0L);
    FILE *devnull = fopen("/dev/null", "w");
    curl_easy_setopt(c, CURLOPT_WRITEDATA, devnull);
    long status = 0;
    if (curl_easy_perform(c) == CURLE_OK)
        curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
    curl_easy_cleanup(c);
    fclose(devnull);
    return status;
}

static int64_t now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

/* The hidden limit's phases (issue 16 item 5: 100/s, then 40/s, then
 * 80/s). Each phase's rates are judged over [settle_s, length_s) from its
 * change: settle_s is at most the 10 s, and the window is long
 * enough to hold a whole sawtooth of the rate (x0.85 down, +5/s a second
 * up: 68-85/s at 80/s, about 3 s a tooth). */
typedef struct phase {
    int limit;    /* jobs/s the endpoint allows */
    int length_s; /* until the next change */
    int settle_s; /* judged from here */
} phase;

static const phase PHASES[] = {
    /* from the file's 50/s at +5/s a second: 90/s after 8 s */
    {100, 15, 10},
    /* the bucket caps what is delivered at once, and the rate comes down
     * x0.85 a second (85/s to 38/s in 5 s): the next phase starts from
     * about 40/s, as it would after a long phase */
    {40, 8, 4},
    /* back up at +5/s a second from about 40/s: 72/s after 6.5 s. Judged
     * over 12 s (four teeth); and the 429s, 70-90 of them at the fall to
     * 40/s and a few more, are a share of some 3,200 requests */
    {80, 22, 10},
};
#define PHASE_COUNT 3

/* Under the sanitizers nothing is timed: each phase runs this long, enough
 * to go through every path (429s, decreases, increases) without waiting. */
#define UNTIMED_PHASE_S 3

/* The effective rate the fleet shares (the settings hash's adaptive_rate,
 * in jobs/s; 0 before the first ack set it). */
static double effective_rate(void)
{
    redisReply *r = redisCommand(fx.conn, "HGET sluice:{acme}:settings adaptive_rate");
    cr_assert_not_null(r);
    double rate = r->type == REDIS_REPLY_STRING ? strtod(r->str, NULL) / 1000 : 0;
    freeReplyObject(r);
    return rate;
}

/* Two daemons of one adaptive tenant (min 5, max 200, file rate 50), each
 * with an endpoint path of its own on the same hidden limit, through
 * PHASES. Per phase, from its settle_s: the delivered rate within 10% of
 * the limit, and the fleet's requests at the one effective rate in Redis
 * (the sum of two daemons' rates would be twice it). Over the run: 429s
 * under 3% of requests, and each daemon sent a real share. */
Test(adaptive_daemon, two_daemons_follow_a_moving_hidden_limit_at_one_rate, .timeout = 100)
{
    const bool timed = timing_counts();
    int64_t length_us[PHASE_COUNT], settle_us[PHASE_COUNT];
    int jobs = 500;
    for (int k = 0; k < PHASE_COUNT; k++) {
        length_us[k] = (timed ? PHASES[k].length_s : UNTIMED_PHASE_S) * INT64_C(1000000);
        settle_us[k] = timed ? PHASES[k].settle_s * INT64_C(1000000) : 0;
        jobs += (int)(PHASES[k].limit * length_us[k] / 1000000);
    }
    redis_fixture_push_jobs(&fx, "acme", "a", jobs);
    char mode[64];
    snprintf(mode, sizeof mode, "/_mode/limit/%d", PHASES[0].limit);
    cr_assert_eq(sink_get(mode), 200);
    char url[64];
    snprintf(url, sizeof url, "redis://127.0.0.1:%d/0", fx.server.port);
    daemon_process d[2] = {{0}};
    for (int i = 0; i < 2; i++) {
        char config[128], log[128], err[256];
        snprintf(config, sizeof config, "%s/sluice-%d.json", dir, i);
        config_file_write(config, url, CONFIG_DAEMON_MEMBERS,
                          "{\"acme\": {\"endpoint\": \"http://127.0.0.1:%d/hook/%d\", \"rate\": 50,"
                          " \"concurrency\": 32, \"adaptive\": {\"min\": 5, \"max\": 200},"
                          " \"retry\": {\"max_attempts\": 100, \"base_ms\": 50, \"max_ms\": 1000}}}",
                          sink.port, i);
        snprintf(log, sizeof log, "%s/sluice-%d.log", dir, i);
        cr_assert(daemon_start(&d[i], config, log, NULL, err, sizeof err), "%s", err);
    }
    /* The effective rate, sampled every 100 ms over each phase's window. */
    double rate_sum[PHASE_COUNT] = {0};
    int rate_samples[PHASE_COUNT] = {0};
    int64_t phase_start[PHASE_COUNT];
    struct timespec sample_every = {0, 100000000};
    int64_t start = now_us(), at = start;
    for (int k = 0; k < PHASE_COUNT; k++) {
        if (k) {
            snprintf(mode, sizeof mode, "/_mode/limit/%d", PHASES[k].limit);
            cr_assert_eq(sink_get(mode), 200);
        }
        phase_start[k] = at;
        at += length_us[k];
        for (int64_t now = now_us(); now < at; now = now_us()) {
            double rate = effective_rate();
            if (now >= phase_start[k] + settle_us[k] && rate > 0) {
                rate_sum[k] += rate;
                rate_samples[k]++;
            }
            nanosleep(&sample_every, NULL);
        }
    }
    for (int i = 0; i < 2; i++)
        cr_assert_eq(daemon_stop(&d[i], SIGTERM, 10000), 0, "clean exit");
    sink_request *reqs = NULL;
    size_t n = sink_read_log(&sink, &reqs);
    size_t refused = 0, sent = 0, by_daemon[2] = {0};
    int64_t ok_in[PHASE_COUNT] = {0}, sent_in[PHASE_COUNT] = {0}, refused_in[PHASE_COUNT] = {0};
    for (size_t i = 0; i < n; i++) {
        if (reqs[i].arrival_us < start || reqs[i].arrival_us >= at)
            continue;
        sent++;
        refused += reqs[i].status == 429;
        by_daemon[strcmp(reqs[i].path, "/hook/1") == 0]++;
        int k = PHASE_COUNT - 1;
        while (reqs[i].arrival_us < phase_start[k])
            k--;
        refused_in[k] += reqs[i].status == 429;
        if (reqs[i].arrival_us >= phase_start[k] + settle_us[k]) {
            sent_in[k]++;
            ok_in[k] += reqs[i].status == 200;
        }
    }
    sink_requests_free(reqs, n);
    for (int k = 0; k < PHASE_COUNT; k++) {
        double seconds = (double)(length_us[k] - settle_us[k]) / 1e6;
        double delivered = (double)ok_in[k] / seconds, requested = (double)sent_in[k] / seconds;
        double effective = rate_samples[k] ? rate_sum[k] / rate_samples[k] : 0;
        cr_log_info("hidden limit %d/s: %" PRId64 " 429s; from %.0f s after the change: delivered "
                    "%.1f/s, requests %.1f/s at an effective rate of %.1f/s",
                    PHASES[k].limit, refused_in[k], (double)settle_us[k] / 1e6, delivered,
                    requested, effective);
        if (!timed)
            continue;
        double limit = PHASES[k].limit;
        cr_expect(delivered >= 0.9 * limit && delivered <= 1.1 * limit,
                  "limit %d/s: delivered %.1f/s", PHASES[k].limit, delivered);
        /* One rate for the fleet: what both daemons sent together follows
         * it (the pace lags a change by at most a lookahead); each at the
         * shared rate would send twice it. */
        cr_expect(requested >= 0.8 * effective && requested <= 1.25 * effective,
                  "limit %d/s: the fleet requested %.1f/s at an effective rate of %.1f/s",
                  PHASES[k].limit, requested, effective);
    }
    double fraction = (double)refused / (double)sent;
    cr_log_info("2 daemons: %zu 429s of %zu requests (%.2f%%); %zu and %zu requests each", refused,
                sent, 100 * fraction, by_daemon[0], by_daemon[1]);
    if (timed) {
        cr_expect_lt(fraction, 0.03, "%zu 429s of %zu requests", refused, sent);
        /* both took part: one daemon doing everything proves nothing (the
         * shares vary with who claims first: 24-34% the smaller one here) */
        cr_expect(by_daemon[0] >= sent / 10 && by_daemon[1] >= sent / 10, "%zu and %zu requests",
                  by_daemon[0], by_daemon[1]);
    }
}
