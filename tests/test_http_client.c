/* test_http_client.c - sluice's HTTP/1.1 client (http1_client.h) against
 * a scripted endpoint on a loopback port: what goes on the wire, keep-alive
 * reuse, framings, connections the endpoint drops (idle, or mid-request),
 * timeouts, refused connections, malformed answers, a host name. */
#include <fcntl.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <criterion/criterion.h>
#include <event2/event.h>

#include "http/http1_client.h"
#include "http/http_client.h"
#include "raw_http_server.h"

#define OK_EMPTY "HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n"

static struct event_base *base;
static sl_h1_client *client;
static raw_http_server server;

static void setup(void)
{
    base = event_base_new();
    cr_assert(base);
    char err[256];
    client = sl_h1_client_new(base, err, sizeof err);
    cr_assert(client, "%s", err);
}

static void teardown(void)
{
    sl_h1_client_free(client);
    event_base_free(base);
}

TestSuite(http_client, .init = setup, .fini = teardown, .timeout = 30);

typedef struct outcome {
    bool done;
    int calls;
    int status;
    char retry_after[64];
    char error[256];
    bool timed_out;
    bool has_ratelimit;
    sl_ratelimit_raw ratelimit;
} outcome;

static void on_done(void *arg, const sl_http_result *result)
{
    outcome *o = arg;
    o->done = true;
    o->calls++;
    o->status = result->status;
    snprintf(o->retry_after, sizeof o->retry_after, "%s", result->retry_after ? result->retry_after : "");
    snprintf(o->error, sizeof o->error, "%s", result->error ? result->error : "");
    o->timed_out = result->timed_out;
    o->has_ratelimit = result->ratelimit != NULL;
    if (result->ratelimit)
        o->ratelimit = *result->ratelimit;
    event_base_loopbreak(base);
}

static void on_give_up(evutil_socket_t fd, short kind, void *arg)
{
    (void)fd;
    (void)kind;
    (void)arg;
    event_base_loopbreak(base);
}

/* Runs the loop for up to ms milliseconds, or until a request ends. */
static void run_loop(int ms)
{
    struct event *give_up = evtimer_new(base, on_give_up, NULL);
    struct timeval tv = {ms / 1000, (ms % 1000) * 1000};
    evtimer_add(give_up, &tv);
    event_base_dispatch(base);
    event_free(give_up);
}

/* Sends one request and runs the loop until it ends (5 s at most). */
static outcome request(const char *method, const char *url, const char *body, int64_t timeout_ms)
{
    sl_h1_target target;
    cr_assert(sl_h1_target_parse(url, &target), "%s", url);
    const char *headers[] = {"Content-Type: text/plain", "Idempotency-Key: k1"};
    sl_http_request r = {
        .method = method,
        .url = url,
        .headers = headers,
        .header_count = 2,
        .body = body,
        .body_len = body ? strlen(body) : 0,
        .timeout_ms = timeout_ms,
    };
    outcome o = {0};
    cr_assert(sl_h1_send(client, &target, &r, on_done, &o));
    cr_assert_not(o.done, "done ran inside sl_h1_send");
    for (int i = 0; i < 50 && !o.done; i++)
        run_loop(100);
    cr_assert(o.done, "%s %s never ended", method, url);
    cr_assert_eq(o.calls, 1);
    return o;
}

static const char *url_of(const char *path)
{
    static char url[128];
    snprintf(url, sizeof url, "http://127.0.0.1:%d%s", server.port, path);
    return url;
}

static void start_server(const raw_reply *script, size_t n)
{
    cr_assert(raw_http_server_start(&server, script, n));
}

Test(http_client, sends_the_request_exactly_and_reuses_the_connection)
{
    static const raw_reply script[] = {
        {RAW_ANSWER, "HTTP/1.1 201 Created\r\nContent-Length: 3\r\n\r\nyes"},
        {RAW_ANSWER, "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n"},
        {RAW_ANSWER, OK_EMPTY},
    };
    start_server(script, 3);
    outcome o = request("POST", url_of("/hook?x=1"), "hello body", 2000);
    cr_assert_eq(o.status, 201, "error: %s", o.error);
    char expected[512];
    snprintf(expected, sizeof expected,
             "POST /hook?x=1 HTTP/1.1\r\nHost: 127.0.0.1:%d\r\nContent-Type: text/plain\r\n"
             "Idempotency-Key: k1\r\nContent-Length: 10\r\n\r\nhello body",
             server.port);
    cr_assert_eq(atomic_load(&server.last_request_len), strlen(expected));
    cr_assert_eq(memcmp(server.last_request, expected, strlen(expected)), 0, "sent:\n%.*s",
                 (int)atomic_load(&server.last_request_len), server.last_request);

    cr_assert_eq(request("GET", url_of("/a"), NULL, 2000).status, 200);
    cr_assert_eq(request("PUT", url_of("/b"), "x", 2000).status, 200);
    raw_http_server_stop(&server);
    cr_assert_eq(atomic_load(&server.accepted), 1, "one keep-alive connection carries all three");
    cr_assert_eq(sl_h1_connection_count(client), 1);
}

Test(http_client, retry_after_and_error_statuses_come_back)
{
    static const raw_reply script[] = {
        {RAW_ANSWER, "HTTP/1.1 429 Too Many Requests\r\nRetry-After: 3\r\nContent-Length: 0\r\n\r\n"},
        {RAW_ANSWER, "HTTP/1.1 500 Oops\r\nContent-Length: 4\r\n\r\noops"},
    };
    start_server(script, 2);
    outcome o = request("POST", url_of("/"), "{}", 2000);
    cr_assert_eq(o.status, 429);
    cr_assert_str_eq(o.retry_after, "3");
    o = request("POST", url_of("/"), "{}", 2000);
    cr_assert_eq(o.status, 500);
    cr_assert_str_eq(o.retry_after, "");
    cr_assert_str_eq(o.error, "");
    cr_assert_not(o.timed_out);
    cr_assert_not(o.has_ratelimit);
    raw_http_server_stop(&server);
}

Test(http_client, rate_limit_headers_come_back)
{
    static const raw_reply script[] = {
        {RAW_ANSWER, "HTTP/1.1 200 OK\r\nX-RateLimit-Remaining: 0\r\nx-ratelimit-reset: 12\r\n"
                     "RateLimit: \"default\";r=0;t=30\r\nContent-Length: 0\r\n\r\n"},
        {RAW_ANSWER, OK_EMPTY},
    };
    start_server(script, 2);
    outcome o = request("POST", url_of("/"), "{}", 2000);
    cr_assert_eq(o.status, 200);
    cr_assert(o.has_ratelimit);
    cr_assert_str_eq(o.ratelimit.x_remaining, "0");
    cr_assert_str_eq(o.ratelimit.x_reset, "12");
    cr_assert_str_eq(o.ratelimit.ratelimit, "\"default\";r=0;t=30");
    o = request("POST", url_of("/"), "{}", 2000);
    cr_assert_not(o.has_ratelimit, "the next response on the connection has none");
    raw_http_server_stop(&server);
}

Test(http_client, a_connection_the_endpoint_closed_while_idle_is_replaced)
{
    static const raw_reply script[] = {
        {RAW_ANSWER_AND_CLOSE, OK_EMPTY}, /* says nothing of closing: only the close tells */
        {RAW_ANSWER, OK_EMPTY},
    };
    start_server(script, 2);
    cr_assert_eq(request("POST", url_of("/"), "1", 2000).status, 200);
    run_loop(100); /* the close arrives while the connection is idle */
    cr_assert_eq(sl_h1_connection_count(client), 0, "the closed connection was not dropped");
    cr_assert_eq(request("POST", url_of("/"), "2", 2000).status, 200);
    raw_http_server_stop(&server);
    cr_assert_eq(atomic_load(&server.accepted), 2);
}

/* A server that writes past its response: the extra bytes arrive while the
 * connection is idle and the loop is not running, so only a check at reuse
 * can see them. Taken as the next request's answer, they would make one
 * job's 500 another job's result. */
Test(http_client, a_connection_with_unasked_bytes_is_not_reused)
{
    static const raw_reply script[] = {
        {RAW_ANSWER_THEN_EXTRA, OK_EMPTY},
        {RAW_ANSWER, "HTTP/1.1 201 Created\r\nContent-Length: 0\r\n\r\n"},
    };
    cr_assert(raw_http_server_start_with_extra(&server, script, 2,
                                               "HTTP/1.1 500 Internal Server Error\r\nContent-Length: 0\r\n\r\n"));
    cr_assert_eq(request("POST", url_of("/"), "1", 2000).status, 200);
    struct timespec pause = {0, 200 * 1000 * 1000}; /* the extra bytes land; the loop is not run */
    nanosleep(&pause, NULL);
    outcome second = request("POST", url_of("/"), "2", 2000);
    cr_assert_eq(second.status, 201, "the second request took the unasked bytes as its answer: %d %s",
                 second.status, second.error);
    raw_http_server_stop(&server);
    cr_assert_eq(atomic_load(&server.accepted), 2, "the dirty connection was reused");
}

Test(http_client, a_request_a_reused_connection_lost_unanswered_is_sent_again_once)
{
    static const raw_reply script[] = {
        {RAW_ANSWER, OK_EMPTY},
        {RAW_CLOSE, NULL}, /* the second request, on the kept connection: dropped */
        {RAW_ANSWER, OK_EMPTY},
        {RAW_CLOSE, NULL},
    };
    start_server(script, 4);
    cr_assert_eq(request("POST", url_of("/"), "1", 2000).status, 200);
    outcome o = request("POST", url_of("/"), "2", 2000);
    cr_assert_eq(o.status, 200, "error: %s", o.error);
    cr_assert_eq(atomic_load(&server.accepted), 2);
    cr_assert_eq(memcmp(server.last_request + atomic_load(&server.last_request_len) - 1, "2", 1), 0);

    /* Dropped again (the kept connection), then on the fresh one it is
     * sent on: no third try. */
    run_loop(50);
    o = request("POST", url_of("/"), "3", 2000);
    cr_assert_eq(o.status, 0);
    cr_assert_str_eq(o.error, "connection closed before a response");
    raw_http_server_stop(&server);
}

Test(http_client, a_silent_endpoint_times_out_and_its_connection_closes)
{
    static const raw_reply script[] = {{RAW_SILENCE, NULL}, {RAW_ANSWER, OK_EMPTY}};
    start_server(script, 2);
    outcome o = request("POST", url_of("/"), "x", 200);
    cr_assert_eq(o.status, 0);
    cr_assert(strstr(o.error, "Operation timed out after"), "error: %s", o.error);
    cr_assert(o.timed_out);
    cr_assert_eq(sl_h1_connection_count(client), 0);
    cr_assert_eq(request("POST", url_of("/"), "y", 2000).status, 200);
    raw_http_server_stop(&server);
}

Test(http_client, a_refused_connection_names_host_port_and_reason)
{
    static const raw_reply script[] = {{RAW_ANSWER, OK_EMPTY}};
    start_server(script, 1);
    raw_http_server_stop(&server); /* the port is free again: nothing listens */
    char expected[128];
    snprintf(expected, sizeof expected, "Failed to connect to 127.0.0.1 port %d: Connection refused",
             server.port);
    outcome o = request("POST", url_of("/"), "x", 2000);
    cr_assert_eq(o.status, 0);
    cr_assert_str_eq(o.error, expected);
}

Test(http_client, a_malformed_answer_is_an_error_and_the_connection_goes)
{
    static const raw_reply script[] = {
        {RAW_ANSWER, "HTTP/1.1 200 OK\r\nContent-Length: nope\r\n\r\n"},
        {RAW_ANSWER, OK_EMPTY},
    };
    start_server(script, 2);
    outcome o = request("POST", url_of("/"), "x", 2000);
    cr_assert_eq(o.status, 0);
    cr_assert_str_eq(o.error, "Bad HTTP response: bad Content-Length");
    cr_assert_eq(request("POST", url_of("/"), "y", 2000).status, 200);
    raw_http_server_stop(&server);
    cr_assert_eq(atomic_load(&server.accepted), 2, "the bad response's connection was reused");
}

Test(http_client, a_body_to_the_close_ends_with_the_connection)
{
    static const raw_reply script[] = {
        {RAW_ANSWER_AND_CLOSE, "HTTP/1.1 202 Accepted\r\n\r\nuntil the end"},
        {RAW_ANSWER, "HTTP/1.0 200 OK\r\nContent-Length: 0\r\n\r\n"},
        {RAW_ANSWER, OK_EMPTY},
    };
    start_server(script, 3);
    cr_assert_eq(request("POST", url_of("/"), "x", 2000).status, 202);
    cr_assert_eq(request("POST", url_of("/"), "x", 2000).status, 200);
    cr_assert_eq(sl_h1_connection_count(client), 0, "an HTTP/1.0 answer closes its connection");
    cr_assert_eq(request("POST", url_of("/"), "x", 2000).status, 200);
    raw_http_server_stop(&server);
    cr_assert_eq(atomic_load(&server.accepted), 3);
}

Test(http_client, a_host_name_is_resolved)
{
    static const raw_reply script[] = {{RAW_ANSWER, OK_EMPTY}, {RAW_ANSWER, OK_EMPTY}};
    start_server(script, 2);
    char url[128];
    snprintf(url, sizeof url, "http://localhost:%d/named", server.port);
    outcome o = request("POST", url, "x", 2000);
    cr_assert_eq(o.status, 200, "error: %s", o.error);
    char host[64];
    snprintf(host, sizeof host, "\r\nHost: localhost:%d\r\n", server.port);
    cr_assert(memmem(server.last_request, atomic_load(&server.last_request_len), host, strlen(host)));
    cr_assert_eq(request("POST", url, "y", 2000).status, 200);
    raw_http_server_stop(&server);
    cr_assert_eq(atomic_load(&server.accepted), 1);
}

Test(http_client, free_with_requests_under_way_calls_nobody)
{
    static const raw_reply script[] = {{RAW_SILENCE, NULL}};
    start_server(script, 1);
    sl_h1_target target;
    cr_assert(sl_h1_target_parse(url_of("/"), &target));
    sl_http_request r = {.method = "POST", .url = url_of("/"), .body = "x", .body_len = 1,
                         .timeout_ms = 5000};
    outcome o = {0};
    cr_assert(sl_h1_send(client, &target, &r, on_done, &o));
    run_loop(50);
    sl_h1_client_free(client);
    client = NULL;
    run_loop(50);
    cr_assert_eq(o.calls, 0);
    raw_http_server_stop(&server);
}

/* A header with an empty value: sluice's own client sends it empty, and
 * libcurl (which takes a URL with credentials) must too, not drop it. */
static bool has_empty_header(const char *request, size_t len, const char *name)
{
    char line[64];
    snprintf(line, sizeof line, "\r\n%s:", name);
    const char *at = memmem(request, len, line, strlen(line));
    if (!at)
        return false;
    at += strlen(line);
    while (*at == ' ')
        at++;
    return at[0] == '\r' && at[1] == '\n';
}

Test(http_client, both_clients_send_a_header_with_an_empty_value)
{
    /* one connection at a time: the first closes, so libcurl's gets served */
    static const raw_reply script[] = {{RAW_ANSWER_AND_CLOSE, OK_EMPTY}, {RAW_ANSWER, OK_EMPTY}};
    start_server(script, 2);
    const char *headers[] = {"X-Empty: ", "X-Full: yes"};
    sl_http_request r = {.method = "POST", .url = url_of("/"), .headers = headers,
                         .header_count = 2, .body = "b", .body_len = 1, .timeout_ms = 2000};
    sl_h1_target target;
    cr_assert(sl_h1_target_parse(r.url, &target));
    outcome own = {0};
    cr_assert(sl_h1_send(client, &target, &r, on_done, &own));
    for (int i = 0; i < 50 && !own.done; i++)
        run_loop(100);
    cr_assert_eq(own.status, 200, "%s", own.error);
    cr_assert(has_empty_header(server.last_request, atomic_load(&server.last_request_len), "X-Empty"),
              "own client: %.*s", (int)atomic_load(&server.last_request_len), server.last_request);

    char err[256];
    sl_http_client *chooser = sl_http_client_new(base, err, sizeof err);
    cr_assert_not_null(chooser, "%s", err);
    char url[128]; /* credentials in the URL: the chooser hands it to libcurl */
    snprintf(url, sizeof url, "http://user:pw@127.0.0.1:%d/", server.port);
    r.url = url;
    outcome curl = {0};
    cr_assert(sl_http_send(chooser, &r, on_done, &curl));
    for (int i = 0; i < 50 && !curl.done; i++)
        run_loop(100);
    cr_assert_eq(curl.status, 200, "%s", curl.error);
    size_t len = atomic_load(&server.last_request_len);
    cr_assert(memmem(server.last_request, len, "Authorization: Basic", 20), "not libcurl's request");
    cr_assert(has_empty_header(server.last_request, len, "X-Empty"), "libcurl: %.*s", (int)len,
              server.last_request);
    cr_assert(has_empty_header(server.last_request, len, "X-Full") == false);
    sl_http_client_free(chooser);
    raw_http_server_stop(&server);
}
