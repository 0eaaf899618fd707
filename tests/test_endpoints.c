/* test_endpoints.c - the endpoints a user points sluice at, end to end
 * through the real daemon: https:// with a certificate made at test time
 * (and verified), an IPv6 endpoint [::1], a 503 whose Retry-After is an
 * HTTP date, and a 503 pause that two daemons of one fleet both honour. */
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
#include "loopback_endpoint.h"
#include "redis_fixture.h"
#include "sink_process.h"

static redis_fixture fx;
static sink_process sink;
static char dir[64];

static void setup(void)
{
    redis_fixture_start(&fx);
    daemon_env_start(&sink, dir, sizeof dir, "endpoints");
}

static void teardown(void)
{
    daemon_env_stop(&sink, dir);
    redis_fixture_stop(&fx);
}

TestSuite(endpoints, .init = setup, .fini = teardown, .timeout = 120);

/* ---- helpers ---- */

/* Writes DIR/sluice.json with the given "tenants" object; returns its path. */
/* Runs a shell command in DIR; fails the test unless it exits 0. */
static void run_in_dir(const char *command)
{
    char line[1024];
    snprintf(line, sizeof line, "cd %s && { %s; } >>openssl.log 2>&1", dir, command);
    cr_assert_eq(system(line), 0, "failed (see %s/openssl.log): %s", dir, command);
}

/* DIR/ca.pem, a CA made now, and DIR/server.pem (+ server.key), a
 * certificate it signed for the IP address 127.0.0.1. */
static void make_certificates(void)
{
    const char *ec = "-newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes";
    char command[512];
    snprintf(command, sizeof command,
             "openssl req -x509 %s -keyout ca.key -out ca.pem -days 1 -subj /CN=sluice-test-ca", ec);
    run_in_dir(command);
    snprintf(command, sizeof command,
             "openssl req %s -keyout server.key -out server.csr -subj /CN=127.0.0.1", ec);
    run_in_dir(command);
    run_in_dir("printf 'subjectAltName=IP:127.0.0.1\\nbasicConstraints=CA:FALSE\\n' > server.ext");
    run_in_dir("openssl x509 -req -in server.csr -CA ca.pem -CAkey ca.key -CAcreateserial"
               " -out server.pem -days 1 -extfile server.ext");
}

/* Waits until e has answered n requests (at most timeout_ms). */
static size_t wait_requests(loopback_endpoint *e, size_t n, int timeout_ms)
{
    size_t got = 0;
    for (int waited = 0; waited <= timeout_ms; waited += 50) {
        if ((got = loopback_endpoint_requests(e, NULL, 0)) >= n)
            break;
        sleep_ms(50);
    }
    return got;
}

/* Every key e-0..e-(n-1) among the endpoint's requests, exactly once. */
static void assert_keys(loopback_endpoint *e, const char *tag, size_t n)
{
    char keys[LOOPBACK_KEYS_MAX][64];
    size_t got = loopback_endpoint_requests(e, keys, LOOPBACK_KEYS_MAX);
    cr_assert_eq(got, n, "%zu requests for %zu jobs", got, n);
    for (size_t k = 0; k < n; k++) {
        char want[64];
        snprintf(want, sizeof want, "%s-%zu", tag, k);
        int seen = 0;
        for (size_t i = 0; i < got; i++)
            seen += strcmp(keys[i], want) == 0;
        cr_assert_eq(seen, 1, "%s arrived %d times", want, seen);
    }
}

/* ---- https ---- */

/* DIR's certificates made, and a TLS endpoint serving server.pem. */
static void start_tls_endpoint(loopback_endpoint *tls)
{
    make_certificates();
    char cert[128], key[128], err[256];
    snprintf(cert, sizeof cert, "%s/server.pem", dir);
    snprintf(key, sizeof key, "%s/server.key", dir);
    cr_assert(loopback_endpoint_start(tls, false, cert, key, err, sizeof err), "%s", err);
}

/* The daemon verifies the endpoint's certificate: one signed by a CA the
 * system does not know is refused, the job dead-lettered without a
 * request reaching the endpoint. */
Test(endpoints, https_refuses_a_certificate_it_cannot_verify)
{
    loopback_endpoint tls;
    start_tls_endpoint(&tls);
    const char *config = config_file_daemon(dir, fx.server.port, 
        "{\"acme\": {\"endpoint\": \"https://127.0.0.1:%d/hook\", \"rate\": 50,"
        " \"retry\": {\"max_attempts\": 1}}}",
        tls.port);
    redis_fixture_push_jobs(&fx, "acme", "untrusted", 1);
    daemon_process d = daemon_env_run(dir, config, NULL);
    bool dead = dlq_wait(fx.conn, "acme", 1, 10000);
    cr_assert_eq(daemon_stop(&d, SIGTERM, 10000), 0);
    size_t requests = loopback_endpoint_requests(&tls, NULL, 0);
    loopback_endpoint_stop(&tls);
    cr_assert(dead, "a job to an unverifiable certificate was not dead-lettered");
    cr_assert_eq(requests, 0, "a request passed an unverified certificate");
    char **records;
    size_t n = dlq_read(fx.conn, "acme", &records);
    cr_log_info("untrusted certificate: %s", records[0]);
    cr_assert_not_null(strstr(records[0], "certificate"), "%s", records[0]);
    strings_free(records, n);
}

/* Delivery over https:// (libcurl) to a certificate of a private CA made at
 * test time, which the tenant's "tls": {"ca_file"} trusts: verified, every
 * job exactly once. */
Test(endpoints, delivers_over_https_to_a_trusted_private_ca)
{
    loopback_endpoint tls;
    start_tls_endpoint(&tls);
    const char *config = config_file_daemon(dir, fx.server.port, 
        "{\"acme\": {\"endpoint\": \"https://127.0.0.1:%d/hook\", \"rate\": 50,"
        " \"retry\": {\"max_attempts\": 1}, \"tls\": {\"ca_file\": \"%s/ca.pem\"}}}",
        tls.port, dir);
    redis_fixture_push_jobs(&fx, "acme", "tls", 20);
    daemon_process d = daemon_env_run(dir, config, NULL);
    size_t got = wait_requests(&tls, 20, 10000);
    cr_assert_eq(daemon_stop(&d, SIGTERM, 10000), 0);
    loopback_endpoint_stop(&tls);
    cr_assert_eq(got, 20, "%zu of 20 delivered over https (%lld dead letters)", got,
                 redis_count(fx.conn, "LLEN sluice:{%s}:dlq", "acme"));
    assert_keys(&tls, "tls", 20);
    assert_tenant_drained(fx.conn, "acme");
}

/* ---- IPv6 ---- */

Test(endpoints, delivers_to_an_ipv6_endpoint)
{
    char err[256];
    loopback_endpoint v6;
    cr_assert(loopback_endpoint_start(&v6, true, NULL, NULL, err, sizeof err), "%s", err);
    const char *config = config_file_daemon(dir, fx.server.port, 
        "{\"acme\": {\"endpoint\": \"http://[::1]:%d/hook\", \"rate\": 100,"
        " \"retry\": {\"max_attempts\": 1}}}",
        v6.port);
    redis_fixture_push_jobs(&fx, "acme", "v6", 20);
    daemon_process d = daemon_env_run(dir, config, NULL);
    size_t got = wait_requests(&v6, 20, 10000);
    cr_assert_eq(daemon_stop(&d, SIGTERM, 10000), 0);
    loopback_endpoint_stop(&v6);
    cr_assert_eq(got, 20, "%zu of 20 delivered to [::1] (dead letters: %lld)", got,
                 redis_count(fx.conn, "LLEN sluice:{%s}:dlq", "acme"));
    assert_keys(&v6, "v6", 20);
    assert_tenant_drained(fx.conn, "acme");
}

/* ---- Retry-After ---- */

/* "Wed, 21 Oct 2015 07:28:00 GMT" for unix time t, percent-encoded for the
 * sink's retry_after parameter. */
static void http_date_param(time_t t, char *out, size_t size)
{
    char date[64];
    struct tm tm;
    gmtime_r(&t, &tm);
    strftime(date, sizeof date, "%a, %d %b %Y %H:%M:%S GMT", &tm);
    size_t used = 0;
    for (const char *p = date; *p && used + 4 < size; p++) {
        if (*p == ' ' || *p == ',' || *p == ':')
            used += (size_t)snprintf(out + used, size - used, "%%%02X", (unsigned char)*p);
        else
            out[used++] = *p;
    }
    out[used] = '\0';
}

/* A 503 with Retry-After: <a date 3 s ahead> holds the job's retry for
 * 2 to 3 s (the date has whole seconds), where the backoff alone would
 * retry within 50 ms. A date read as seconds, or not at all, fails. */
Test(endpoints, retry_after_as_an_http_date_holds_the_retry)
{
    char date[128];
    http_date_param(time(NULL) + 3, date, sizeof date);
    const char *config = config_file_daemon(dir, fx.server.port, 
        "{\"acme\": {\"endpoint\": \"http://127.0.0.1:%d/status/503?retry_after=%s\", \"rate\": 100,"
        " \"retry\": {\"max_attempts\": 2, \"base_ms\": 10, \"max_ms\": 50}}}",
        sink.port, date);
    freeReplyObject(redisCommand(fx.conn, "LPUSH sluice:{acme}:queue {\"id\":\"dated\"}"));
    daemon_process d = daemon_env_run(dir, config, NULL);
    bool dead = dlq_wait(fx.conn, "acme", 1, 15000);
    cr_assert_eq(daemon_stop(&d, SIGTERM, 10000), 0);
    cr_assert(dead, "never retried to exhaustion");
    sink_request *reqs = NULL;
    size_t n = sink_wait_log(&sink, 2, 1000, &reqs);
    cr_assert_eq(n, 2, "%zu attempts", n);
    sink_requests_sort_by_arrival(reqs, n);
    int64_t gap = reqs[1].arrival_us - reqs[0].arrival_us;
    cr_log_info("Retry-After date %s: retried %" PRId64 " ms later", date, gap / 1000);
    cr_assert(gap >= 1900000 && gap <= 4000000, "retried %" PRId64 " ms after the 503", gap / 1000);
    sink_requests_free(reqs, n);
    char **records;
    size_t dead_n = dlq_read(fx.conn, "acme", &records);
    cr_assert_eq(dead_n, 1);
    cr_assert_not_null(strstr(records[0], "\"reason\":\"exhausted\""), "%s", records[0]);
    strings_free(records, dead_n);
}

/* ---- a fleet-wide pause ---- */

/* Two daemons serve one tenant. One job's URL answers 503 with
 * Retry-After: 2; the pause is the tenant's, kept in Redis: neither daemon
 * sends anything from shortly after that answer (what was already on its
 * way aside) until the pause ends, and both send again afterwards. */
Test(endpoints, a_503_pause_holds_both_daemons)
{
    const char *config = config_file_daemon(dir, fx.server.port, 
        "{\"acme\": {\"endpoint\": \"http://127.0.0.1:%d/hook\", \"rate\": 40,"
        " \"allow_urls\": [\"http://127.0.0.1:%d/status/\"],"
        " \"retry\": {\"max_attempts\": 2, \"base_ms\": 10, \"max_ms\": 50}}}",
        sink.port, sink.port);
    char trace[2][128];
    for (int i = 0; i < 2; i++)
        snprintf(trace[i], sizeof trace[i], "%s/departures-%d.tsv", dir, i);
    redis_fixture_push_jobs(&fx, "acme", "a", 20);
    char job[256];
    snprintf(job, sizeof job,
             "{\"id\":\"pause\",\"url\":\"http://127.0.0.1:%d/status/503?retry_after=2\"}", sink.port);
    freeReplyObject(redisCommand(fx.conn, "LPUSH sluice:{acme}:queue %s", job));
    redis_fixture_push_jobs(&fx, "acme", "b", 80);
    daemon_process d[2];
    for (int i = 0; i < 2; i++)
        d[i] = daemon_env_run(dir, config, trace[i]);
    sink_request *reqs = NULL;
    size_t n = sink_wait_each(&sink, "b", 80, 20000, &reqs);
    for (int i = 0; i < 2; i++)
        cr_assert_eq(daemon_stop(&d[i], SIGTERM, 10000), 0);
    assert_each_delivered(reqs, n, "a", 20, false);
    assert_each_delivered(reqs, n, "b", 80, false);
    int64_t paused_at = 0;
    for (size_t i = 0; i < n && !paused_at; i++)
        if (strcmp(reqs[i].key, "pause") == 0)
            paused_at = reqs[i].arrival_us;
    cr_assert_gt(paused_at, 0, "the 503 job never reached the endpoint");
    sink_requests_free(reqs, n);

    /* 300 ms for what was already under way, then 1.5 s of silence */
    int64_t from = paused_at + 300000, to = paused_at + 1800000;
    for (int i = 0; i < 2; i++) {
        int64_t *t;
        size_t departed = departures_read(trace[i], &t);
        size_t during = 0, after = 0;
        for (size_t k = 0; k < departed; k++) {
            during += t[k] >= from && t[k] < to;
            after += t[k] >= to;
        }
        free(t);
        cr_log_info("daemon %d: %zu departures, %zu during the pause, %zu after it", i, departed,
                    during, after);
        cr_assert_eq(during, 0, "daemon %d sent %zu jobs during the pause", i, during);
        cr_assert_gt(after, 0, "daemon %d sent nothing after the pause: it proved nothing", i);
    }
}
