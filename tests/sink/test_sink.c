/* test_sink.c - sluice-sink, the local HTTP endpoint of the tests, the demo
 * and the benchmarks: every behaviour path answers as documented, the mode
 * set through /_mode decides what plain paths answer, the log records each
 * request whole, keep-alive works, and the process refuses a
 * non-loopback address and exits 0 on SIGTERM. Real HTTP over 127.0.0.1
 * with libcurl; the binary comes from meson as SLUICE_SINK. */
#include <criterion/criterion.h>
#include <curl/curl.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "sink_process.h"

static void suite_init(void)
{
    cr_assert_eq(curl_global_init(CURL_GLOBAL_DEFAULT), CURLE_OK);
}

static void suite_fini(void)
{
    curl_global_cleanup();
}

TestSuite(test_endpoint, .init = suite_init, .fini = suite_fini);

static void start(sink_process *s)
{
    char err[256];
    cr_assert(sink_start(s, getenv("SLUICE_SINK"), err, sizeof err), "sluice-sink: %s", err);
}

static int64_t now_us(clockid_t clock)
{
    struct timespec ts;
    clock_gettime(clock, &ts);
    return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

/* ---- a small libcurl client ---- */

typedef struct response {
    CURLcode code;
    long status;
    char body[256];
    size_t body_len;
    char retry_after[128]; /* "" when absent */
    char remaining[32], reset[32]; /* X-RateLimit-*, "" when absent */
    long new_connections;  /* CURLINFO_NUM_CONNECTS */
} response;

static size_t on_body(char *data, size_t size, size_t n, void *arg)
{
    response *r = arg;
    size_t len = size * n;
    size_t room = sizeof r->body - 1 - r->body_len;
    size_t take = len < room ? len : room;
    memcpy(r->body + r->body_len, data, take);
    r->body_len += take;
    r->body[r->body_len] = '\0';
    return len;
}

/* Keeps header `name` (lower case, with its colon) of data into out. */
static void keep_header(const char *data, size_t len, const char *name, char *out,
                        size_t out_size)
{
    size_t name_len = strlen(name);
    if (len > name_len && strncasecmp(data, name, name_len) == 0) {
        const char *v = data + name_len;
        size_t vlen = len - name_len;
        while (vlen && (*v == ' ' || *v == '\t'))
            v++, vlen--;
        while (vlen && (v[vlen - 1] == '\r' || v[vlen - 1] == '\n'))
            vlen--;
        snprintf(out, out_size, "%.*s", (int)vlen, v);
    }
}

static size_t on_header(char *data, size_t size, size_t n, void *arg)
{
    response *r = arg;
    size_t len = size * n;
    keep_header(data, len, "retry-after:", r->retry_after, sizeof r->retry_after);
    keep_header(data, len, "x-ratelimit-remaining:", r->remaining, sizeof r->remaining);
    keep_header(data, len, "x-ratelimit-reset:", r->reset, sizeof r->reset);
    return len;
}

/* Sets up c for one request to the sink; headers may be NULL. */
static void prepare(CURL *c, const sink_process *s, const char *method, const char *path,
                    const char *body, size_t body_len, struct curl_slist *headers,
                    response *r, char url[512])
{
    memset(r, 0, sizeof *r);
    snprintf(url, 512, "http://127.0.0.1:%d%s", s->port, path);
    curl_easy_setopt(c, CURLOPT_URL, url);
    curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, 10000L);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_body);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, r);
    curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, on_header);
    curl_easy_setopt(c, CURLOPT_HEADERDATA, r);
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, headers);
    if (body) {
        curl_easy_setopt(c, CURLOPT_POSTFIELDS, body);
        curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE, (long)body_len);
    } else {
        curl_easy_setopt(c, CURLOPT_HTTPGET, 1L);
    }
    curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, method);
}

static void finish(CURL *c, response *r)
{
    curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &r->status);
    curl_easy_getinfo(c, CURLINFO_NUM_CONNECTS, &r->new_connections);
}

/* One request on handle c (which keeps its connection between calls). */
static response request_on(CURL *c, const sink_process *s, const char *method, const char *path,
                           const char *body, size_t body_len, struct curl_slist *headers)
{
    response r;
    char url[512];
    prepare(c, s, method, path, body, body_len, headers, &r, url);
    r.code = curl_easy_perform(c);
    finish(c, &r);
    return r;
}

/* One request on a fresh connection. */
static response request(const sink_process *s, const char *method, const char *path,
                        const char *body, size_t body_len, struct curl_slist *headers)
{
    CURL *c = curl_easy_init();
    cr_assert_not_null(c);
    response r = request_on(c, s, method, path, body, body_len, headers);
    curl_easy_cleanup(c);
    return r;
}

static response get(const sink_process *s, const char *path)
{
    return request(s, "GET", path, NULL, 0, NULL);
}

static struct curl_slist *key_header(const char *key)
{
    char line[160];
    snprintf(line, sizeof line, "Idempotency-Key: %s", key);
    return curl_slist_append(NULL, line);
}

/* ---- behaviour paths ---- */

Test(test_endpoint, status_paths_answer_their_status)
{
    sink_process s;
    start(&s);
    const int statuses[] = {200, 201, 204, 301, 400, 404, 429, 500, 502, 503, 599};
    for (size_t i = 0; i < sizeof statuses / sizeof statuses[0]; i++) {
        char path[64];
        snprintf(path, sizeof path, "/status/%d/tenant-a", statuses[i]);
        response r = get(&s, path);
        cr_assert_eq(r.code, CURLE_OK, "%s: %s", path, curl_easy_strerror(r.code));
        cr_expect_eq(r.status, statuses[i], "%s answered %ld", path, r.status);
        cr_expect_str_empty(r.retry_after, "%s: unasked Retry-After %s", path, r.retry_after);
    }
    response r = get(&s, "/status/404");
    cr_expect_eq(r.status, 404);
    cr_expect_str_eq(r.body, "status 404\n");

    r = get(&s, "/status/429?retry_after=7");
    cr_expect_eq(r.status, 429);
    cr_expect_str_eq(r.retry_after, "7");
    r = get(&s, "/status/503/t?x=1&retry_after=Wed%2C%2021%20Oct%202015%2007%3A28%3A00%20GMT");
    cr_expect_eq(r.status, 503);
    cr_expect_str_eq(r.retry_after, "Wed, 21 Oct 2015 07:28:00 GMT");

    /* Bad parameters are the test's mistake: 400 with the reason. */
    r = get(&s, "/status/99");
    cr_expect_eq(r.status, 400);
    cr_expect(strstr(r.body, "100 and 599") != NULL, "body: %s", r.body);
    cr_expect_eq(get(&s, "/status/600").status, 400);
    cr_expect_eq(get(&s, "/status/abc").status, 400);
    cr_expect_eq(get(&s, "/status/503?retry_after=%0d%0aX:%201").status, 400);
    cr_expect_eq(get(&s, "/slow/99999999").status, 400);

    r = get(&s, "/anything/else?q=1");
    cr_expect_eq(r.status, 200);
    cr_expect_str_eq(r.body, "ok");
    r = request(&s, "PUT", "/", "x", 1, NULL);
    cr_expect_eq(r.status, 200);
    r = get(&s, "/_health");
    cr_expect_eq(r.status, 200);
    cr_expect_str_eq(r.body, "ok");
    sink_stop(&s);
}

Test(test_endpoint, log_lines_carry_every_field)
{
    sink_process s;
    start(&s);
    struct curl_slist *h = key_header("key-1");
    h = curl_slist_append(h, "X-Tenant: acme");
    h = curl_slist_append(h, "X-Test: marker-1");
    static const char body[] = "a\tb\nc\\d\r\x01\xc3\xa9 end";
    int64_t before = now_us(CLOCK_REALTIME);
    response r = request(&s, "POST", "/jobs/x?y=1", body, sizeof body - 1, h);
    int64_t after = now_us(CLOCK_REALTIME);
    curl_slist_free_all(h);
    cr_assert_eq(r.status, 200);
    cr_assert_eq(get(&s, "/_health").status, 200); /* a control path: not logged */
    cr_assert_eq(get(&s, "/status/503/b").status, 503);

    sink_request *reqs;
    size_t n = sink_wait_log(&s, 2, 3000, &reqs);
    cr_assert_eq(n, 2, "%zu requests logged", n);
    sink_request *q = &reqs[0];
    cr_expect(q->arrival_us >= before && q->arrival_us <= after,
              "arrival %" PRId64 " outside [%" PRId64 ", %" PRId64 "]", q->arrival_us, before,
              after);
    cr_expect_str_eq(q->method, "POST");
    cr_expect_str_eq(q->path, "/jobs/x?y=1");
    cr_expect_str_eq(q->key, "key-1");
    cr_expect_str_eq(q->tenant, "acme");
    cr_expect_eq(q->status, 200);
    cr_expect_str_eq(q->test, "marker-1");
    cr_expect_eq(q->body_len, sizeof body - 1);
    cr_expect(memcmp(q->body, body, sizeof body - 1) == 0, "body: %s", q->body);

    q = &reqs[1];
    cr_expect_str_eq(q->method, "GET");
    cr_expect_str_eq(q->path, "/status/503/b");
    cr_expect_str_eq(q->key, "-");
    cr_expect_str_eq(q->tenant, "-");
    cr_expect_str_eq(q->test, "-");
    cr_expect_eq(q->status, 503);
    cr_expect_eq(q->body_len, 0);
    cr_expect(q->arrival_us >= reqs[0].arrival_us);
    sink_requests_free(reqs, n);

    /* The raw line: 8 tab-separated fields, the body escaped. */
    FILE *f = fopen(s.log_path, "r");
    cr_assert_not_null(f);
    char line[1024];
    cr_assert_not_null(fgets(line, sizeof line, f));
    fclose(f);
    const char *tail = strchr(line, '\t');
    cr_assert_not_null(tail);
    cr_expect_str_eq(tail, "\tPOST\t/jobs/x?y=1\tkey-1\tacme\t200\t"
                           "a\\tb\\nc\\\\d\\r\\x01\\xc3\\xa9 end\tmarker-1\n");
    sink_stop(&s);
}

Test(test_endpoint, flaky_fails_n_times_per_idempotency_key)
{
    sink_process s;
    start(&s);
    struct curl_slist *a = key_header("job-a");
    struct curl_slist *b = key_header("job-b");
    const long expect_a[] = {503, 503, 200, 200};
    for (int i = 0; i < 4; i++) {
        response r = request(&s, "POST", "/flaky/2/t1", "{}", 2, a);
        cr_expect_eq(r.status, expect_a[i], "key a, try %d: %ld", i + 1, r.status);
        if (i == 1) /* an independent key starts its own count */
            cr_expect_eq(request(&s, "POST", "/flaky/2/t1", "{}", 2, b).status, 503);
    }
    cr_expect_eq(request(&s, "POST", "/flaky/0/t1", "{}", 2, b).status, 200);
    curl_slist_free_all(a);
    curl_slist_free_all(b);

    sink_request *reqs;
    size_t n = sink_wait_log(&s, 6, 3000, &reqs);
    cr_assert_eq(n, 6);
    const char *keys[] = {"job-a", "job-a", "job-b", "job-a", "job-a", "job-b"};
    const int statuses[] = {503, 503, 503, 200, 200, 200};
    for (size_t i = 0; i < n; i++) {
        cr_expect_str_eq(reqs[i].key, keys[i], "line %zu", i);
        cr_expect_eq(reqs[i].status, statuses[i], "line %zu", i);
    }
    sink_requests_free(reqs, n);
    sink_stop(&s);
}

Test(test_endpoint, slow_answers_after_the_delay_without_blocking)
{
    sink_process s;
    start(&s);
    int64_t t0 = now_us(CLOCK_MONOTONIC);
    response r = get(&s, "/slow/200/t");
    int64_t took = now_us(CLOCK_MONOTONIC) - t0;
    cr_assert_eq(r.code, CURLE_OK, "%s", curl_easy_strerror(r.code));
    cr_expect_eq(r.status, 200);
    cr_expect_str_eq(r.body, "ok");
    cr_expect(took >= 200000 && took < 5000000, "/slow/200 took %" PRId64 " us", took);

    /* While a slow request waits, others are served: the fast one, sent
     * after it, completes first. */
    CURLM *multi = curl_multi_init();
    CURL *slow = curl_easy_init(), *fast = curl_easy_init();
    response rs, rf;
    char url_slow[512], url_fast[512];
    prepare(slow, &s, "GET", "/slow/1500/x", NULL, 0, NULL, &rs, url_slow);
    prepare(fast, &s, "GET", "/status/201", NULL, 0, NULL, &rf, url_fast);
    curl_multi_add_handle(multi, slow);
    curl_multi_add_handle(multi, fast);
    CURL *first_done = NULL;
    int running = 1;
    while (running) {
        cr_assert_eq(curl_multi_perform(multi, &running), CURLM_OK);
        CURLMsg *m;
        int left;
        while ((m = curl_multi_info_read(multi, &left)))
            if (m->msg == CURLMSG_DONE && !first_done)
                first_done = m->easy_handle;
        if (running)
            curl_multi_poll(multi, NULL, 0, 100, NULL);
    }
    finish(slow, &rs);
    finish(fast, &rf);
    cr_expect_eq(first_done, fast, "the slow request blocked the sink");
    cr_expect_eq(rs.status, 200);
    cr_expect_eq(rf.status, 201);
    curl_multi_remove_handle(multi, slow);
    curl_multi_remove_handle(multi, fast);
    curl_easy_cleanup(slow);
    curl_easy_cleanup(fast);
    curl_multi_cleanup(multi);
    sink_stop(&s);
}

Test(test_endpoint, close_drops_the_connection_without_an_answer)
{
    sink_process s;
    start(&s);
    response r = get(&s, "/close");
    cr_expect_eq(r.code, CURLE_GOT_NOTHING, "curl: %s", curl_easy_strerror(r.code));
    cr_expect_eq(r.status, 0);
    cr_expect_eq(get(&s, "/after-close").status, 200, "the sink survives /close");
    sink_request *reqs;
    size_t n = sink_wait_log(&s, 2, 3000, &reqs);
    cr_assert_eq(n, 2);
    cr_expect_str_eq(reqs[0].path, "/close");
    cr_expect_eq(reqs[0].status, 0);
    sink_requests_free(reqs, n);
    sink_stop(&s);
}

Test(test_endpoint, reset_drops_the_connection_with_a_tcp_reset)
{
    sink_process s;
    start(&s);
    /* A reset, not the clean close of /close (CURLE_GOT_NOTHING). */
    for (int i = 0; i < 5; i++) {
        response r = request(&s, "POST", "/reset/t", "x", 1, NULL);
        cr_expect_eq(r.code, CURLE_RECV_ERROR, "try %d, curl: %s", i, curl_easy_strerror(r.code));
        cr_expect_eq(r.status, 0);
    }
    cr_expect_eq(get(&s, "/after-reset").status, 200, "the sink survives /reset");
    sink_request *reqs;
    size_t n = sink_wait_log(&s, 6, 3000, &reqs);
    cr_assert_eq(n, 6);
    cr_expect_str_eq(reqs[0].path, "/reset/t");
    cr_expect_eq(reqs[0].status, 0);
    cr_expect_eq(reqs[5].status, 200);
    sink_requests_free(reqs, n);
    sink_stop(&s);
}

/* ---- the mode ---- */

Test(test_endpoint, mode_sets_what_plain_paths_answer)
{
    sink_process s;
    start(&s);
    response r = get(&s, "/_mode");
    cr_expect_eq(r.status, 200);
    cr_expect_str_eq(r.body, "ok\n");

    r = request(&s, "PUT", "/_mode/status/429?retry_after=2", NULL, 0, NULL);
    cr_expect_eq(r.status, 200);
    cr_expect_str_eq(r.body, "status 429 retry_after=2\n");
    r = request(&s, "POST", "/hook/a", "{}", 2, NULL);
    cr_expect_eq(r.status, 429);
    cr_expect_str_eq(r.retry_after, "2");
    /* A behaviour path keeps its own behaviour whatever the mode. */
    r = get(&s, "/status/201");
    cr_expect_eq(r.status, 201);
    cr_expect_str_empty(r.retry_after);

    cr_expect_eq(get(&s, "/_mode/status/503").status, 200);
    r = request(&s, "POST", "/hook/b", "{}", 2, NULL);
    cr_expect_eq(r.status, 503);
    cr_expect_str_empty(r.retry_after, "the old mode's Retry-After stayed: %s", r.retry_after);

    cr_expect_eq(get(&s, "/_mode/close").status, 200);
    cr_expect_eq(request(&s, "POST", "/hook/c", "{}", 2, NULL).code, CURLE_GOT_NOTHING);
    cr_expect_eq(get(&s, "/_mode/reset").status, 200);
    cr_expect_eq(request(&s, "POST", "/hook/d", "{}", 2, NULL).code, CURLE_RECV_ERROR);

    cr_expect_eq(get(&s, "/_mode/slow/300").status, 200);
    int64_t t0 = now_us(CLOCK_MONOTONIC);
    r = request(&s, "POST", "/hook/e", "{}", 2, NULL);
    int64_t took = now_us(CLOCK_MONOTONIC) - t0;
    cr_expect_eq(r.status, 200);
    cr_expect(took >= 300000 && took < 5000000, "slow mode took %" PRId64 " us", took);

    struct curl_slist *k = key_header("job-f");
    cr_expect_eq(get(&s, "/_mode/flaky/1").status, 200);
    cr_expect_eq(request(&s, "POST", "/hook/f", "{}", 2, k).status, 503);
    cr_expect_eq(request(&s, "POST", "/hook/f", "{}", 2, k).status, 200);
    curl_slist_free_all(k);

    r = request(&s, "POST", "/_mode/ok", NULL, 0, NULL);
    cr_expect_str_eq(r.body, "ok\n");
    cr_expect_eq(request(&s, "POST", "/hook/g", "{}", 2, NULL).status, 200);

    /* Control requests are not logged; each answer under a mode is, with
     * the status the mode gave it (0: no answer). */
    sink_request *reqs;
    size_t n = sink_wait_log(&s, 9, 3000, &reqs);
    cr_assert_eq(n, 9, "%zu requests logged", n);
    const char *paths[] = {"/hook/a", "/status/201", "/hook/b", "/hook/c", "/hook/d",
                           "/hook/e", "/hook/f", "/hook/f", "/hook/g"};
    const int statuses[] = {429, 201, 503, 0, 0, 200, 503, 200, 200};
    for (size_t i = 0; i < n; i++) {
        cr_expect_str_eq(reqs[i].path, paths[i], "line %zu", i);
        cr_expect_eq(reqs[i].status, statuses[i], "line %zu (%s)", i, reqs[i].path);
    }
    sink_requests_free(reqs, n);
    sink_stop(&s);
}

Test(test_endpoint, limit_mode_is_a_hidden_token_bucket)
{
    sink_process s;
    start(&s);
    /* 50/s: a burst of 5, then 429 until tokens come back */
    response r = get(&s, "/_mode/limit/50?headers=1");
    cr_assert_eq(r.status, 200);
    cr_expect_str_eq(r.body, "limit 50 headers\n");
    int allowed = 0, refused = 0;
    for (int i = 0; i < 20; i++) {
        r = request(&s, "POST", "/hook/x", "{}", 2, NULL);
        cr_assert(r.status == 200 || r.status == 429, "status %ld", r.status);
        if (i == 0) {
            cr_expect_eq(r.status, 200);
            cr_expect_str_eq(r.remaining, "4");
            cr_expect_str_eq(r.reset, "0.000");
        }
        if (r.status == 429) {
            cr_expect_str_eq(r.remaining, "0");
            cr_expect_neq(strcmp(r.reset, "0.000"), 0, "a refusal says when to come back");
        }
        allowed += r.status == 200;
        refused += r.status == 429;
    }
    /* 20 requests take far less than a second: the burst and a few refills */
    cr_expect(allowed >= 5 && allowed <= 10, "%d allowed", allowed);
    cr_expect_eq(allowed + refused, 20);
    /* tokens come back at 50/s: 100 ms later, some pass again */
    struct timespec pause = {0, 100000000};
    nanosleep(&pause, NULL);
    cr_expect_eq(request(&s, "POST", "/hook/y", "{}", 2, NULL).status, 200);
    /* without headers=1 the answers carry none; a bad rate is refused */
    cr_expect_eq(get(&s, "/_mode/limit/1000000").status, 200);
    r = request(&s, "POST", "/hook/z", "{}", 2, NULL);
    cr_expect_str_empty(r.remaining);
    cr_expect_eq(get(&s, "/_mode/limit/0").status, 400);
    cr_expect_eq(get(&s, "/_mode/limit/1000001").status, 400);
    sink_stop(&s);
}

Test(test_endpoint, a_bad_mode_is_refused_and_changes_nothing)
{
    sink_process s;
    start(&s);
    cr_expect_eq(get(&s, "/_mode/status/502").status, 200);
    const char *bad[] = {"/_mode/", "/_mode/nope", "/_mode/okay", "/_mode/status/99",
                         "/_mode/slow/99999999", "/_mode/_health", "/_mode/_mode/ok",
                         "/_mode/status/503?retry_after=%0d%0a"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        response r = get(&s, bad[i]);
        cr_expect_eq(r.status, 400, "%s answered %ld", bad[i], r.status);
    }
    response r = get(&s, "/_mode");
    cr_expect_str_eq(r.body, "status 502\n");
    cr_expect_eq(get(&s, "/hook").status, 502);
    /* /_modes is a plain path, not a control one. */
    cr_expect_eq(get(&s, "/_modes").status, 502);
    sink_request *reqs;
    size_t n = sink_wait_log(&s, 2, 3000, &reqs);
    cr_expect_eq(n, 2, "control requests were logged: %zu lines", n);
    sink_requests_free(reqs, n);
    sink_stop(&s);
}

Test(test_endpoint, keep_alive_reuses_one_connection)
{
    sink_process s;
    start(&s);
    CURL *c = curl_easy_init();
    cr_assert_not_null(c);
    long opened = 0;
    for (int i = 0; i < 100; i++) {
        char path[32];
        snprintf(path, sizeof path, "/k/%d", i);
        response r = request_on(c, &s, "POST", path, "x", 1, NULL);
        cr_assert_eq(r.status, 200, "request %d: %s", i, curl_easy_strerror(r.code));
        if (i == 0)
            cr_expect_eq(r.new_connections, 1);
        else
            opened += r.new_connections;
    }
    curl_easy_cleanup(c);
    cr_expect_eq(opened, 0, "requests 2..100 opened %ld new connections", opened);
    sink_request *reqs;
    size_t n = sink_wait_log(&s, 100, 3000, &reqs);
    cr_expect_eq(n, 100);
    for (size_t i = 0; i < n; i++) {
        char path[32];
        snprintf(path, sizeof path, "/k/%zu", i);
        cr_expect_str_eq(reqs[i].path, path);
    }
    sink_requests_free(reqs, n);
    sink_stop(&s);
}

/* ---- the process ---- */

/* Runs the sink with args (NULL-terminated, after argv[0]) and waits at
 * most 5 s for it to exit; returns its wait status and its stderr. */
static int run_sink(const char *const *args, char *err_text, size_t err_size)
{
    char err_path[] = "/tmp/sluice-test-sink-err-XXXXXX";
    int err_fd = mkstemp(err_path);
    cr_assert_geq(err_fd, 0);
    const char *argv[16] = {"sluice-sink"};
    size_t argc = 1;
    while (*args && argc < 15)
        argv[argc++] = *args++;
    argv[argc] = NULL;
    pid_t pid = fork();
    cr_assert_geq(pid, 0);
    if (pid == 0) {
        dup2(err_fd, 2);
        execv(getenv("SLUICE_SINK"), (char *const *)(uintptr_t)argv);
        _exit(127);
    }
    int status = -1;
    for (int i = 0; i < 500 && waitpid(pid, &status, WNOHANG) == 0; i++)
        usleep(10000);
    if (!WIFEXITED(status) && !WIFSIGNALED(status)) {
        kill(pid, SIGKILL);
        waitpid(pid, &status, 0);
        cr_assert_fail("sluice-sink did not exit within 5 s");
    }
    ssize_t len = pread(err_fd, err_text, err_size - 1, 0);
    err_text[len > 0 ? len : 0] = '\0';
    close(err_fd);
    unlink(err_path);
    return status;
}

static void expect_exit(const char *const *args, int code, const char *message_part)
{
    char err[1024];
    int status = run_sink(args, err, sizeof err);
    cr_expect(WIFEXITED(status) && WEXITSTATUS(status) == code,
              "%s ...: wait status %#x, expected exit %d; stderr: %s", args[0], status, code,
              err);
    cr_expect(strstr(err, message_part) != NULL, "stderr lacks '%s': %s", message_part, err);
}

Test(test_endpoint, refuses_a_non_loopback_address)
{
    char dir[] = "/tmp/sluice-test-sink-XXXXXX";
    cr_assert_not_null(mkdtemp(dir));
    char port_file[64], log[64];
    snprintf(port_file, sizeof port_file, "%s/port", dir);
    snprintf(log, sizeof log, "%s/log", dir);
    const char *binds[] = {"10.0.0.1", "0.0.0.0", "::", "localhost", "192.168.1.1"};
    for (size_t i = 0; i < sizeof binds / sizeof binds[0]; i++) {
        const char *args[] = {"--port-file", port_file, "--log", log, "--bind", binds[i], NULL};
        expect_exit(args, 2, binds[i]);
        cr_expect_neq(access(port_file, F_OK), 0, "--bind %s: a port file appeared", binds[i]);
    }
    unlink(log);
    rmdir(dir);
}

Test(test_endpoint, bad_arguments_exit_2)
{
    const char *no_log[] = {"--port-file", "/tmp/x", NULL};
    expect_exit(no_log, 2, "--log is required");
    const char *bad_port[] = {"--port-file", "/tmp/x", "--log", "/tmp/y", "--port", "70000", NULL};
    expect_exit(bad_port, 2, "70000");
    const char *unknown[] = {"--nope", NULL};
    expect_exit(unknown, 2, "usage");
}

Test(test_endpoint, a_taken_port_exits_1_naming_the_address)
{
    sink_process s;
    start(&s);
    char port[16], port_file[128], log[128];
    snprintf(port, sizeof port, "%d", s.port);
    snprintf(port_file, sizeof port_file, "%s/port2", s.dir);
    snprintf(log, sizeof log, "%s/log2", s.dir);
    const char *args[] = {"--port-file", port_file, "--log", log, "--port", port, NULL};
    char expect[64];
    snprintf(expect, sizeof expect, "127.0.0.1 port %d: Address already in use", s.port);
    expect_exit(args, 1, expect);
    unlink(log);
    sink_stop(&s);
}

Test(test_endpoint, sigterm_exits_0_and_flushes_the_log)
{
    sink_process s;
    start(&s);
    struct curl_slist *h = curl_slist_append(NULL, "X-Test: last-words");
    cr_assert_eq(request(&s, "POST", "/bye", "x", 1, h).status, 200);
    curl_slist_free_all(h);
    /* Right away: the line may still sit in the sink's buffer. */
    cr_assert_eq(kill(s.pid, SIGTERM), 0);
    int status = -1;
    for (int i = 0; i < 500 && waitpid(s.pid, &status, WNOHANG) == 0; i++)
        usleep(10000);
    cr_assert(WIFEXITED(status) || WIFSIGNALED(status), "no exit within 5 s after SIGTERM");
    s.pid = 0;
    cr_expect(WIFEXITED(status) && WEXITSTATUS(status) == 0, "wait status %#x", status);
    sink_request *reqs;
    size_t n = sink_read_log(&s, &reqs);
    cr_expect_eq(n, 1);
    if (n == 1)
        cr_expect_str_eq(reqs[0].test, "last-words");
    sink_requests_free(reqs, n);
    sink_stop(&s);
}
