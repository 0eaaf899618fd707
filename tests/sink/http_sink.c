/* http_sink.c - sluice-sink: a local HTTP endpoint for tests, the demo and
 * benchmarks. It answers by path (sink_core.h; sluice-sink --help), plain
 * paths by the mode that requests to /_mode set, and appends one line per
 * request to a log that tests read back.
 *
 * One thread, one libevent loop. The log goes through a large buffer that
 * only ever holds whole lines and is written out at most 10 ms after a line
 * enters it, on exit, and whenever it is full: a reader never sees half a
 * line, and a line at most ~10 ms late. */
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>
#include <event2/http.h>
#include <event2/keyvalq_struct.h>

#include "sink_core.h"
#include "sink_io.h"

#define EXIT_USAGE 2
#define LOG_BUFFER_SIZE ((size_t)4 << 20)
#define LOG_FLUSH_MS 10
#define MAX_BODY_SIZE ((size_t)4 << 20)
#define MAX_HEADERS_SIZE ((size_t)64 << 10)
#define CONNECTION_TIMEOUT_S 120 /* longer than the longest /slow */

/* A /slow request waiting for its timer; linked so exit can free it. */
typedef struct sink sink;
typedef struct slow_request {
    sink *owner;
    struct evhttp_request *req;
    struct event *timer;
    struct slow_request *prev, *next;
} slow_request;

struct sink {
    struct event_base *base;
    struct evhttp *http;
    sl_sink_log log;
    struct event *flush_timer; /* pending while the log buffer holds lines */
    sl_flaky_map flaky;
    sl_sink_bucket bucket; /* /limit's hidden limit, whatever its rate */
    sl_sink_route mode; /* what plain paths answer; all-zero: 200 "ok" */
    struct event *sigterm, *sigint;
    slow_request *slow; /* list head */
    int exit_code;
};

static void stop(sink *s, int exit_code)
{
    if (exit_code > s->exit_code)
        s->exit_code = exit_code;
    event_base_loopbreak(s->base);
}

static void on_flush_timer(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    sink *s = arg;
    if (!sl_sink_log_flush(&s->log))
        stop(s, 1);
}

/* ---- requests ---- */

static const char *method_name(enum evhttp_cmd_type cmd)
{
    switch (cmd) {
    case EVHTTP_REQ_GET:
        return "GET";
    case EVHTTP_REQ_POST:
        return "POST";
    case EVHTTP_REQ_HEAD:
        return "HEAD";
    case EVHTTP_REQ_PUT:
        return "PUT";
    case EVHTTP_REQ_DELETE:
        return "DELETE";
    case EVHTTP_REQ_OPTIONS:
        return "OPTIONS";
    case EVHTTP_REQ_TRACE:
        return "TRACE";
    case EVHTTP_REQ_CONNECT:
        return "CONNECT";
    case EVHTTP_REQ_PATCH:
        return "PATCH";
    }
    return "?";
}

static void reply(struct evhttp_request *req, int status, const char *body)
{
    evbuffer_add(evhttp_request_get_output_buffer(req), body, strlen(body));
    evhttp_send_reply(req, status, NULL, NULL);
}

static void log_request(sink *s, struct evhttp_request *req, int64_t arrival_us,
                        struct evkeyvalq *headers, int status)
{
    struct evbuffer *in = evhttp_request_get_input_buffer(req);
    struct evbuffer_iovec vec[16];
    int parts = evbuffer_peek(in, -1, NULL, vec, 16);
    if (parts > 16) {
        evbuffer_pullup(in, -1);
        parts = evbuffer_peek(in, -1, NULL, vec, 16);
    }
    const void *body[16];
    size_t body_len[16];
    for (int i = 0; i < parts; i++) {
        body[i] = vec[i].iov_base;
        body_len[i] = vec[i].iov_len;
    }
    sl_sink_record r = {
        .arrival_us = arrival_us,
        .method = method_name(evhttp_request_get_command(req)),
        .uri = evhttp_request_get_uri(req),
        .key = evhttp_find_header(headers, "Idempotency-Key"),
        .tenant = evhttp_find_header(headers, "X-Tenant"),
        .status = status,
        .test = evhttp_find_header(headers, "X-Test"),
        .body_parts = parts > 0 ? (size_t)parts : 0,
        .body = body,
        .body_len = body_len,
    };
    char *line = sl_sink_log_reserve(&s->log, sl_sink_line_max(&r));
    if (!line) {
        stop(s, 1);
        return;
    }
    s->log.len += sl_sink_format_line(line, &r);
    if (!evtimer_pending(s->flush_timer, NULL)) {
        struct timeval tv = {0, LOG_FLUSH_MS * 1000};
        evtimer_add(s->flush_timer, &tv);
    }
}

static void slow_unlink(sink *s, slow_request *w)
{
    if (w->prev)
        w->prev->next = w->next;
    else
        s->slow = w->next;
    if (w->next)
        w->next->prev = w->prev;
    event_free(w->timer);
    free(w);
}

static void on_slow_timer(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    slow_request *w = arg;
    /* Replying to a request whose client has gone is safe: libevent then
     * only frees it. */
    reply(w->req, 200, "ok");
    slow_unlink(w->owner, w);
}

/* Drops the request's connection with a TCP reset. Setting SO_LINGER to
 * zero is not enough: libevent shuts the socket down for writing (a FIN)
 * before it closes it, and a client that reads that FIN first sees a clean
 * close. So a placeholder descriptor takes the socket's number (dup2
 * closes the socket there and then, and with linger zero that close is a
 * reset), and libevent's shutdown and close later land on the placeholder. */
static void reset_connection(struct evhttp_request *req)
{
    struct evhttp_connection *conn = evhttp_request_get_connection(req);
    struct bufferevent *bev = evhttp_connection_get_bufferevent(conn);
    evutil_socket_t fd = bev ? bufferevent_getfd(bev) : -1;
    if (fd >= 0) {
        struct linger now = {.l_onoff = 1, .l_linger = 0};
        int placeholder = open("/dev/null", O_RDONLY | O_CLOEXEC);
        if (placeholder >= 0 && setsockopt(fd, SOL_SOCKET, SO_LINGER, &now, sizeof now) == 0)
            dup2(placeholder, fd);
        if (placeholder >= 0)
            close(placeholder);
    }
    evhttp_connection_free(conn);
}

/* GET /_mode answers the mode; /_mode/BEHAVIOUR (any method) sets it.
 * Neither is logged: they are the test's, not the client's. */
static void on_mode_request(sink *s, struct evhttp_request *req, const sl_sink_route *route)
{
    if (route->mode_path[0]) {
        sl_sink_route next;
        const char *err = sl_sink_mode_parse(route->mode_path, &next);
        if (err) {
            char body[256];
            snprintf(body, sizeof body, "%s\n", err);
            reply(req, 400, body);
            return;
        }
        s->mode = next;
    }
    char body[192];
    int n = sl_sink_route_describe(&s->mode, body, sizeof body - 1);
    if (n < 0 || (size_t)n >= sizeof body - 1)
        n = (int)strlen(body);
    body[n] = '\n';
    body[n + 1] = '\0';
    reply(req, 200, body);
}

static void on_request(struct evhttp_request *req, void *arg)
{
    sink *s = arg;
    struct timespec now;
    clock_gettime(CLOCK_REALTIME, &now);
    int64_t arrival_us = (int64_t)now.tv_sec * 1000000 + now.tv_nsec / 1000;

    sl_sink_route own;
    sl_sink_route_parse(evhttp_request_get_uri(req), &own);
    if (own.kind == SL_SINK_HEALTH && evhttp_request_get_command(req) == EVHTTP_REQ_GET) {
        reply(req, 200, "ok");
        return;
    }
    if (own.kind == SL_SINK_MODE) {
        on_mode_request(s, req, &own);
        return;
    }
    const sl_sink_route *route = sl_sink_route_under_mode(&own, &s->mode);
    struct evkeyvalq *headers = evhttp_request_get_input_headers(req);
    int status = 200;
    sl_sink_verdict verdict = {0};
    switch (route->kind) {
    case SL_SINK_STATUS:
        status = route->status;
        break;
    case SL_SINK_FLAKY: {
        const char *key = evhttp_find_header(headers, "Idempotency-Key");
        uint64_t seen = sl_flaky_hit(&s->flaky, key ? key : "", key ? strlen(key) : 0);
        status = seen == 0 ? 500 : seen <= (uint64_t)route->param ? 503 : 200;
        break;
    }
    case SL_SINK_LIMIT: {
        struct timespec mono;
        clock_gettime(CLOCK_MONOTONIC, &mono);
        verdict = sl_sink_bucket_take(&s->bucket, route->param,
                                      (int64_t)mono.tv_sec * 1000000 + mono.tv_nsec / 1000);
        status = verdict.allowed ? 200 : 429;
        break;
    }
    case SL_SINK_CLOSE:
    case SL_SINK_RESET:
        status = 0;
        break;
    case SL_SINK_BAD:
        status = 400;
        break;
    default:
        break;
    }
    log_request(s, req, arrival_us, headers, status);

    switch (route->kind) {
    case SL_SINK_STATUS: {
        if (route->retry_after[0])
            evhttp_add_header(evhttp_request_get_output_headers(req), "Retry-After",
                              route->retry_after);
        char body[32];
        snprintf(body, sizeof body, "status %d\n", status);
        reply(req, status, body);
        break;
    }
    case SL_SINK_SLOW: {
        slow_request *w = calloc(1, sizeof *w);
        if (w)
            w->timer = evtimer_new(s->base, on_slow_timer, w);
        if (!w || !w->timer) {
            free(w);
            reply(req, 500, "sluice-sink: out of memory\n");
            break;
        }
        w->owner = s;
        w->req = req;
        w->next = s->slow;
        if (s->slow)
            s->slow->prev = w;
        s->slow = w;
        /* From now, not from when this loop turn began. */
        event_base_update_cache_time(s->base);
        struct timeval tv = {route->param / 1000, (route->param % 1000) * 1000};
        evtimer_add(w->timer, &tv);
        break;
    }
    case SL_SINK_FLAKY:
        reply(req, status, status == 200 ? "ok" : status == 503 ? "flaky\n" : "out of memory\n");
        break;
    case SL_SINK_LIMIT:
        if (route->headers) {
            struct evkeyvalq *out = evhttp_request_get_output_headers(req);
            char value[32];
            snprintf(value, sizeof value, "%lld", (long long)verdict.remaining);
            evhttp_add_header(out, "X-RateLimit-Remaining", value);
            /* seconds, to the millisecond, rounded up */
            int64_t ms = (verdict.reset_us + 999) / 1000;
            snprintf(value, sizeof value, "%lld.%03lld", (long long)(ms / 1000),
                     (long long)(ms % 1000));
            evhttp_add_header(out, "X-RateLimit-Reset", value);
        }
        reply(req, status, status == 200 ? "ok" : "limited\n");
        break;
    case SL_SINK_CLOSE:
        /* Frees the request with its connection: libevent's read path
         * allows that from this callback and touches neither afterwards. */
        evhttp_connection_free(evhttp_request_get_connection(req));
        break;
    case SL_SINK_RESET:
        reset_connection(req); /* frees the request with its connection, as above */
        break;
    case SL_SINK_BAD:
        reply(req, 400, route->error);
        break;
    default:
        reply(req, 200, "ok");
        break;
    }
}

/* ---- main ---- */

static void on_signal(evutil_socket_t sig, short what, void *arg)
{
    (void)sig;
    (void)what;
    stop(arg, 0);
}

/* Releases what `s` holds: answers nothing more, frees /slow requests that
 * libevent no longer owns (their client left), then the server. */
static void sink_free(sink *s)
{
    while (s->slow) {
        slow_request *w = s->slow;
        if (evhttp_request_get_connection(w->req) == NULL)
            evhttp_request_free(w->req);
        slow_unlink(s, w);
    }
    if (s->http)
        evhttp_free(s->http);
    struct event *events[] = {s->flush_timer, s->sigterm, s->sigint};
    for (size_t i = 0; i < sizeof events / sizeof events[0]; i++)
        if (events[i])
            event_free(events[i]);
    if (s->base)
        event_base_free(s->base);
    sl_flaky_clear(&s->flaky);
}

/* Sets up the loop and the server on a listening socket (which it then
 * owns); false, with a message, on failure. */
static bool sink_init(sink *s, int listen_fd)
{
    /* The changelist folds the read/write interest toggling evhttp does
     * per request into one epoll_ctl per loop turn: those kernel calls were
     * most of the cost of a keep-alive request. The precise timer keeps
     * /slow from answering a few ms early (the default clock is coarse). */
    struct event_config *cfg = event_config_new();
    if (cfg) {
        event_config_set_flag(cfg, EVENT_BASE_FLAG_NOLOCK | EVENT_BASE_FLAG_EPOLL_USE_CHANGELIST |
                                     EVENT_BASE_FLAG_PRECISE_TIMER);
        s->base = event_base_new_with_config(cfg);
        event_config_free(cfg);
    }
    if (s->base) {
        s->http = evhttp_new(s->base);
        s->flush_timer = evtimer_new(s->base, on_flush_timer, s);
        s->sigterm = evsignal_new(s->base, SIGTERM, on_signal, s);
        s->sigint = evsignal_new(s->base, SIGINT, on_signal, s);
    }
    if (!s->http || !s->flush_timer || !s->sigterm || !s->sigint ||
        evsignal_add(s->sigterm, NULL) != 0 || evsignal_add(s->sigint, NULL) != 0) {
        fprintf(stderr, "sluice-sink: cannot set up libevent (out of memory?)\n");
        close(listen_fd);
        return false;
    }
    evhttp_set_allowed_methods(s->http, EVHTTP_REQ_GET | EVHTTP_REQ_POST | EVHTTP_REQ_HEAD |
                                            EVHTTP_REQ_PUT | EVHTTP_REQ_DELETE |
                                            EVHTTP_REQ_OPTIONS | EVHTTP_REQ_PATCH);
    evhttp_set_max_body_size(s->http, MAX_BODY_SIZE);
    evhttp_set_max_headers_size(s->http, MAX_HEADERS_SIZE);
    evhttp_set_timeout(s->http, CONNECTION_TIMEOUT_S);
    evhttp_set_default_content_type(s->http, "text/plain");
    evhttp_set_gencb(s->http, on_request, s);
    if (!evhttp_accept_socket_with_handle(s->http, listen_fd)) {
        fprintf(stderr, "sluice-sink: cannot accept on the listening socket\n");
        close(listen_fd);
        return false;
    }
    return true;
}

int main(int argc, char **argv)
{
    sl_sink_options o;
    switch (sl_sink_parse_options(argc, argv, &o)) {
    case SL_SINK_PARSE_HELP:
        return 0;
    case SL_SINK_PARSE_BAD:
        return EXIT_USAGE;
    case SL_SINK_PARSE_OK:
        break;
    }
    struct sockaddr_storage addr;
    socklen_t addr_len;
    if (!sl_sink_loopback_address(&o, &addr, &addr_len)) {
        fprintf(stderr,
                "sluice-sink: --bind: '%s' is not a loopback address "
                "(only numeric 127.0.0.0/8 or ::1 are allowed)\n",
                o.bind);
        return EXIT_USAGE;
    }
    signal(SIGPIPE, SIG_IGN); /* a client that leaves is not our death */

    sink s = {0};
    if (!sl_sink_log_open(&s.log, o.log_path, LOG_BUFFER_SIZE))
        return 1;
    int fd = sl_sink_listen(&o, &addr, addr_len);
    bool ok = fd >= 0 && sink_init(&s, fd) &&
              sl_sink_write_port_file(o.port_file, sl_sink_bound_port(fd));
    if (ok && event_base_dispatch(s.base) < 0) {
        fprintf(stderr, "sluice-sink: the event loop failed\n");
        ok = false;
    }
    if (!sl_sink_log_flush(&s.log))
        ok = false;
    sink_free(&s);
    sl_sink_log_close(&s.log);
    return ok ? s.exit_code : 1;
}
