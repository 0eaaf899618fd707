/* http_curl.c - libcurl multi-socket on libevent. See http_curl.h.
 *
 * Shape of curl's docs/examples/hiperfifo.c: libcurl tells us which
 * sockets to watch (socket_cb) and when to time out (timer_cb); we call
 * curl_multi_socket_action from libevent callbacks and then drain
 * curl_multi_info_read. Easy handles are pooled: reusing them keeps
 * allocations off the per-request path. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <curl/curl.h>

#include "http/close_later.h"
#include "http/http_curl.h"
#include "base/monotonic.h"

typedef struct transfer {
    sl_curl_client *client;
    CURL *easy;
    struct curl_slist *headers;
    sl_http_done_fn done;
    void *arg;
    int64_t started_us;
    char retry_after[128];
    bool has_retry_after;
    sl_ratelimit_raw ratelimit; /* the final response's rate-limit headers */
    char error[CURL_ERROR_SIZE];
    struct transfer *next_free;            /* in the pool */
    struct transfer *prev_active, *next_active; /* while in flight */
} transfer;

typedef struct socket_watch {
    struct event *ev;
    short kind; /* what ev watches */
} socket_watch;

struct sl_curl_client {
    struct event_base *base;
    CURLM *multi;
    struct event *timer;
    struct event *drain_soon; /* reports completions found while sending */
    transfer *active; /* in flight, so that free can cancel them */
    transfer *free_list;
    sl_close_later closer; /* the sockets libcurl closes (see close_later.h) */
    const char *system_cainfo, *system_capath; /* libcurl's built-in trust, or NULL */
};

static void link_active(sl_curl_client *client, transfer *t)
{
    t->prev_active = NULL;
    t->next_active = client->active;
    if (client->active)
        client->active->prev_active = t;
    client->active = t;
}

static void unlink_active(sl_curl_client *client, transfer *t)
{
    if (t->prev_active)
        t->prev_active->next_active = t->next_active;
    else
        client->active = t->next_active;
    if (t->next_active)
        t->next_active->prev_active = t->prev_active;
}

static void recycle(sl_curl_client *client, transfer *t)
{
    curl_slist_free_all(t->headers);
    t->headers = NULL;
    t->next_free = client->free_list;
    client->free_list = t;
}

/* Completed transfers: report them. Runs after socket_action returned, so
 * removing handles here is allowed. */
static void drain_completed(sl_curl_client *client)
{
    CURLMsg *msg;
    int left;
    while ((msg = curl_multi_info_read(client->multi, &left))) {
        if (msg->msg != CURLMSG_DONE)
            continue;
        CURL *easy = msg->easy_handle;
        CURLcode code = msg->data.result;
        transfer *t = NULL;
        curl_easy_getinfo(easy, CURLINFO_PRIVATE, (char **)&t);
        long status = 0;
        curl_easy_getinfo(easy, CURLINFO_RESPONSE_CODE, &status);
        curl_multi_remove_handle(client->multi, easy);
        unlink_active(client, t);

        /* The result's texts are copied out: the transfer is recycled
         * before done, which may start another request on it. */
        char retry_after[sizeof t->retry_after], error[CURL_ERROR_SIZE];
        snprintf(retry_after, sizeof retry_after, "%s", t->retry_after);
        sl_ratelimit_raw ratelimit = t->ratelimit;
        snprintf(error, sizeof error, "%s", t->error[0] ? t->error : curl_easy_strerror(code));
        sl_http_result result = {
            .status = code == CURLE_OK ? (int)status : 0,
            .retry_after = t->has_retry_after ? retry_after : NULL,
            .error = code == CURLE_OK ? NULL : error,
            .timed_out = code == CURLE_OPERATION_TIMEDOUT,
            .ratelimit = code == CURLE_OK && ratelimit.any ? &ratelimit : NULL,
            .elapsed_us = sl_monotonic_us() - t->started_us,
        };
        sl_http_done_fn done = t->done;
        void *arg = t->arg;
        recycle(client, t);
        done(arg, &result);
    }
}

static void on_socket_event(evutil_socket_t fd, short kind, void *arg)
{
    sl_curl_client *client = arg;
    int action = ((kind & EV_READ) ? CURL_CSELECT_IN : 0) | ((kind & EV_WRITE) ? CURL_CSELECT_OUT : 0);
    int running;
    curl_multi_socket_action(client->multi, fd, action, &running);
    drain_completed(client);
}

static void on_drain_soon(evutil_socket_t fd, short kind, void *arg)
{
    (void)fd;
    (void)kind;
    drain_completed(arg);
}

static void on_timeout(evutil_socket_t fd, short kind, void *arg)
{
    (void)fd;
    (void)kind;
    sl_curl_client *client = arg;
    int running;
    curl_multi_socket_action(client->multi, CURL_SOCKET_TIMEOUT, 0, &running);
    drain_completed(client);
}

/* libcurl: watch socket s for `what`, or stop watching it. */
static int socket_cb(CURL *easy, curl_socket_t s, int what, void *clientp, void *socketp)
{
    (void)easy;
    sl_curl_client *client = clientp;
    socket_watch *watch = socketp;
    if (what == CURL_POLL_REMOVE) {
        if (watch) {
            event_free(watch->ev);
            free(watch);
            curl_multi_assign(client->multi, s, NULL);
        }
        return 0;
    }
    short kind = (short)(((what & CURL_POLL_IN) ? EV_READ : 0) |
                         ((what & CURL_POLL_OUT) ? EV_WRITE : 0) | EV_PERSIST);
    if (!watch) {
        watch = calloc(1, sizeof *watch);
        if (!watch)
            return -1;
        watch->ev = event_new(client->base, s, kind, on_socket_event, client);
        if (!watch->ev) {
            free(watch);
            return -1;
        }
        curl_multi_assign(client->multi, s, watch);
    } else if (watch->kind == kind) {
        return 0;
    } else {
        /* The same event, re-aimed: no allocation per request. */
        event_del(watch->ev);
        event_assign(watch->ev, client->base, s, kind, on_socket_event, client);
    }
    watch->kind = kind;
    event_add(watch->ev, NULL);
    return 0;
}

/* libcurl: close socket fd, one loop turn later (see close_later.h). */
static int closesocket_cb(void *clientp, curl_socket_t fd)
{
    sl_curl_client *client = clientp;
    sl_close_later_add(&client->closer, fd);
    return 0;
}

/* libcurl: call us back in timeout_ms (-1: never). Never act from here. */
static int timer_cb(CURLM *multi, long timeout_ms, void *userp)
{
    (void)multi;
    sl_curl_client *client = userp;
    if (timeout_ms < 0) {
        evtimer_del(client->timer);
    } else {
        struct timeval tv = {timeout_ms / 1000, (timeout_ms % 1000) * 1000};
        evtimer_add(client->timer, &tv);
    }
    return 0;
}

static size_t discard_body(char *data, size_t size, size_t count, void *arg)
{
    (void)data;
    (void)arg;
    return size * count;
}

/* Keeps the Retry-After and rate-limit headers of the final response. */
static size_t read_header(char *data, size_t size, size_t count, void *arg)
{
    transfer *t = arg;
    size_t len = size * count;
    static const char name[] = "retry-after:";
    if (len > sizeof name - 1 && strncasecmp(data, name, sizeof name - 1) == 0) {
        size_t start = sizeof name - 1, end = len;
        while (start < end && (data[start] == ' ' || data[start] == '\t'))
            start++;
        while (end > start && (data[end - 1] == '\r' || data[end - 1] == '\n' || data[end - 1] == ' '))
            end--;
        size_t n = end - start < sizeof t->retry_after - 1 ? end - start : sizeof t->retry_after - 1;
        memcpy(t->retry_after, data + start, n);
        t->retry_after[n] = '\0';
        t->has_retry_after = true;
    } else if (len >= 5 && strncmp(data, "HTTP/", 5) == 0) {
        t->has_retry_after = false; /* a new response (after 100 Continue) */
        sl_ratelimit_clear(&t->ratelimit);
    } else {
        const char *colon = memchr(data, ':', len);
        if (colon)
            sl_ratelimit_capture(&t->ratelimit, data, (size_t)(colon - data), colon + 1,
                                 len - (size_t)(colon - data) - 1);
    }
    return len;
}

sl_curl_client *sl_curl_client_new(struct event_base *base, char *err, size_t err_size)
{
    sl_curl_client *client = calloc(1, sizeof *client);
    if (!client) {
        snprintf(err, err_size, "http client: out of memory");
        return NULL;
    }
    client->base = base;
    /* What a request without a tenant CA goes back to: the handles are
     * reused, and a CA set for one tenant must not linger for the next. */
    const curl_version_info_data *version = curl_version_info(CURLVERSION_NOW);
    client->system_cainfo = version->cainfo;
    client->system_capath = version->capath;
    client->multi = curl_multi_init();
    client->timer = evtimer_new(base, on_timeout, client);
    client->drain_soon = event_new(base, -1, 0, on_drain_soon, client);
    bool closer = sl_close_later_init(&client->closer, base);
    if (!client->multi || !client->timer || !client->drain_soon || !closer) {
        snprintf(err, err_size, "http client: curl_multi_init or evtimer_new failed");
        sl_curl_client_free(client);
        return NULL;
    }
    curl_multi_setopt(client->multi, CURLMOPT_SOCKETFUNCTION, socket_cb);
    curl_multi_setopt(client->multi, CURLMOPT_SOCKETDATA, client);
    curl_multi_setopt(client->multi, CURLMOPT_TIMERFUNCTION, timer_cb);
    curl_multi_setopt(client->multi, CURLMOPT_TIMERDATA, client);
    /* libcurl's default keeps 4 idle connections per transfer under way, so
     * a lull in traffic closed connections the next burst had to open
     * again. Idle ones still close after CURLOPT_MAXAGE_CONN (118 s). */
    curl_multi_setopt(client->multi, CURLMOPT_MAXCONNECTS, (long)SL_HTTP_IDLE_CONNECTIONS_MAX);
    return client;
}

void sl_curl_client_free(sl_curl_client *client)
{
    if (!client)
        return;
    /* Outstanding transfers: remove them without calling back. */
    while (client->active) {
        transfer *t = client->active;
        curl_multi_remove_handle(client->multi, t->easy);
        unlink_active(client, t);
        recycle(client, t);
    }
    while (client->free_list) {
        transfer *t = client->free_list;
        client->free_list = t->next_free;
        curl_easy_cleanup(t->easy);
        free(t);
    }
    if (client->multi)
        curl_multi_cleanup(client->multi); /* closes idle connections */
    sl_close_later_free(&client->closer);
    if (client->timer)
        event_free(client->timer);
    if (client->drain_soon)
        event_free(client->drain_soon);
    free(client);
}

static transfer *take_transfer(sl_curl_client *client)
{
    transfer *t = client->free_list;
    if (t) {
        client->free_list = t->next_free;
        return t;
    }
    t = calloc(1, sizeof *t);
    if (!t)
        return NULL;
    t->easy = curl_easy_init();
    if (!t->easy) {
        free(t);
        return NULL;
    }
    t->client = client;
    /* What every request of this handle shares, set once: a pooled handle
     * is not reset between requests (curl_easy_reset costs more than the
     * options a request sets, see sl_http_send). */
    CURL *e = t->easy;
    curl_easy_setopt(e, CURLOPT_PRIVATE, t);
    curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(e, CURLOPT_ERRORBUFFER, t->error);
    curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, discard_body);
    curl_easy_setopt(e, CURLOPT_HEADERFUNCTION, read_header);
    curl_easy_setopt(e, CURLOPT_HEADERDATA, t);
    curl_easy_setopt(e, CURLOPT_PROTOCOLS_STR, "http,https");
    curl_easy_setopt(e, CURLOPT_TCP_KEEPALIVE, 1L);
    curl_easy_setopt(e, CURLOPT_CLOSESOCKETFUNCTION, closesocket_cb);
    curl_easy_setopt(e, CURLOPT_CLOSESOCKETDATA, client);
    return t;
}

/* Appends one "Name: value" line. libcurl reads "Name:" with nothing after
 * the colon as "remove the header", where sluice's own client sends an
 * empty value; "Name;" is libcurl's way to send it empty, so both clients
 * put the same header on the wire. */
static struct curl_slist *append_header(struct curl_slist *list, const char *line)
{
    const char *colon = strchr(line, ':');
    if (!colon || colon[strspn(colon + 1, " \t") + 1] != '\0')
        return curl_slist_append(list, line);
    size_t name_len = (size_t)(colon - line);
    char *empty = malloc(name_len + 2);
    if (!empty)
        return NULL;
    memcpy(empty, line, name_len);
    memcpy(empty + name_len, ";", 2);
    struct curl_slist *more = curl_slist_append(list, empty);
    free(empty);
    return more;
}

bool sl_curl_send(sl_curl_client *client, const sl_http_request *request, sl_http_done_fn done,
                  void *arg)
{
    transfer *t = take_transfer(client);
    if (!t)
        return false;
    t->done = done;
    t->arg = arg;
    t->has_retry_after = false;
    sl_ratelimit_clear(&t->ratelimit);
    t->error[0] = '\0';
    t->started_us = sl_monotonic_us();
    t->headers = NULL;
    for (size_t i = 0; i < request->header_count; i++) {
        struct curl_slist *more = append_header(t->headers, request->headers[i]);
        if (!more) {
            recycle(client, t);
            return false;
        }
        t->headers = more;
    }
    /* No 100-continue round trip before large bodies. */
    struct curl_slist *more = curl_slist_append(t->headers, "Expect:");
    if (!more) {
        recycle(client, t);
        return false;
    }
    t->headers = more;

    /* Every option a request sets is set on every request (the handle is
     * reused without a reset): method options included, so none lingers
     * from the handle's previous request. */
    CURL *e = t->easy;
    curl_easy_setopt(e, CURLOPT_URL, request->url);
    curl_easy_setopt(e, CURLOPT_HTTPHEADER, t->headers);
    curl_easy_setopt(e, CURLOPT_TIMEOUT_MS, (long)request->timeout_ms);
    /* A tenant's private CA is the only one trusted for it (the system's
     * directory too would widen what "verified" means); certificate and
     * host name are always verified. libcurl copies the strings. */
    curl_easy_setopt(e, CURLOPT_CAINFO, request->ca_file ? request->ca_file : client->system_cainfo);
    curl_easy_setopt(e, CURLOPT_CAPATH, request->ca_file ? NULL : client->system_capath);
    curl_easy_setopt(e, CURLOPT_SSLCERT, request->cert_file);
    curl_easy_setopt(e, CURLOPT_SSLKEY, request->key_file);
    /* A GET with a body sends it (as the job asked) like any other method. */
    bool head = strcmp(request->method, "HEAD") == 0;
    bool bodiless_get = strcmp(request->method, "GET") == 0 && request->body_len == 0;
    if (head || bodiless_get) {
        curl_easy_setopt(e, CURLOPT_HTTPGET, 1L); /* also undoes a previous POST */
    } else {
        curl_easy_setopt(e, CURLOPT_POSTFIELDS, request->body ? request->body : "");
        curl_easy_setopt(e, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)request->body_len);
    }
    curl_easy_setopt(e, CURLOPT_NOBODY, head ? 1L : 0L);
    bool custom = !head && !bodiless_get && strcmp(request->method, "POST") != 0;
    curl_easy_setopt(e, CURLOPT_CUSTOMREQUEST, custom ? request->method : NULL);
    if (curl_multi_add_handle(client->multi, e) != CURLM_OK) {
        recycle(client, t);
        return false;
    }
    link_active(client, t);
    /* Write the request now, not on the next loop turn: the departure time
     * is the point of shaping. Completions are reported from the loop. */
    int running;
    curl_multi_socket_action(client->multi, CURL_SOCKET_TIMEOUT, 0, &running);
    event_active(client->drain_soon, EV_READ, 0);
    return true;
}
