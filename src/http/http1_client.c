/* http1_client.c - the HTTP/1.1 client for http:// URLs. See http1_client.h.
 *
 * A request (an exchange) runs on one connection at a time. Connections
 * live in the client's list; an idle one also sits on its origin's stack
 * (the most recently used is reused first, so the rest age out). Every
 * connection is watched for reading all the time: an idle one that turns
 * readable was closed by the peer (or sent what nobody asked for) and is
 * closed, and one is reused only while it has nothing unread, so a request
 * rarely meets a dead connection and never takes another's answer; when one does
 * (nothing came back on a reused connection), it is sent again, once, on
 * a fresh one, as libcurl does. Completions are reported from an event of
 * their own, so that done() never runs inside sl_h1_send. */
#include <errno.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include <event2/dns.h>
#include <event2/util.h>

#include "http/close_later.h"
#include "http/http1_client.h"
#include "http/http1_response.h"
#include "base/monotonic.h"

/* The longest line of a response head this client reads. */
#define READ_BUFFER_SIZE 8192
/* libcurl's defaults, kept: an idle connection closes after 118 s, a
 * resolved name is reused for 60 s. */
#define IDLE_CLOSE_US (118 * INT64_C(1000000))
#define DNS_KEEP_US (60 * INT64_C(1000000))
#define SWEEP_INTERVAL_S 10

typedef struct origin origin;
typedef struct conn conn;
typedef struct exchange exchange;

/* What a name lookup calls back with. libevent reports a cancelled lookup
 * (and those of a freed resolver) a loop turn later, when the origin may
 * be gone: sl_h1_client_free then clears o, and the late callback only
 * frees the ticket. */
typedef struct dns_ticket {
    origin *o;
} dns_ticket;

struct exchange {
    sl_h1_client *client;
    origin *origin;
    conn *conn; /* while on one */
    sl_http_done_fn done;
    void *arg;
    char *head; /* the request's head; the buffer is kept across requests */
    size_t head_len, head_cap;
    const char *body;
    size_t body_len; /* 0 when no body goes */
    size_t sent;     /* of head and body */
    size_t received; /* bytes of response */
    bool head_request;
    bool retried;    /* sent again once already */
    int64_t started_us;
    struct event *timeout;
    sl_h1_response response;
    char error[256]; /* why it failed; "" if it did not */
    bool timed_out;  /* error is the timeout's */
    exchange *next; /* in the origin's wait, the report queue or the free list */
};

struct conn {
    sl_h1_client *client;
    origin *origin;
    int fd;
    struct event *ev;
    short watching;      /* what ev is added for, 0 when not added */
    bool connecting;
    bool reused;         /* carried a response already */
    bool idle;           /* on the origin's idle stack */
    size_t address;      /* the origin's address being connected to */
    exchange *exchange;  /* NULL while idle */
    int64_t idle_since_us;
    conn *prev, *next;           /* the client's connections */
    conn *prev_idle, *next_idle; /* the origin's idle stack */
    size_t in_len;
    char in[READ_BUFFER_SIZE];
};

struct origin {
    sl_h1_client *client;
    char host[256];
    char port[6];
    struct evutil_addrinfo *addresses;
    bool numeric; /* an address, not a name: never resolved again */
    int64_t resolved_us;
    dns_ticket *lookup; /* while a lookup is under way */
    struct evdns_getaddrinfo_request *dns_request; /* its handle, to cancel it */
    conn *idle;                 /* stack */
    exchange *waiting, *waiting_tail; /* for addresses */
    origin *next;               /* hash chain */
};

struct sl_h1_client {
    struct event_base *base;
    struct evdns_base *dns; /* made for the first host name */
    origin **buckets;
    size_t bucket_count, origin_count;
    conn *conns;
    size_t conn_count, idle_count;
    exchange *free_exchanges;
    exchange *reports, *reports_tail;
    struct event *report_soon;
    struct event *sweep;
    sl_close_later closer;
};

static void dispatch(exchange *ex);

/* ---- completions ---- */

/* Ends ex: with its response, or (error not NULL) with a transport error.
 * Reported from report_soon. */
static void finish(exchange *ex, const char *error)
{
    sl_h1_client *client = ex->client;
    evtimer_del(ex->timeout);
    ex->conn = NULL;
    if (error) {
        /* cut to fit: the text is for a log line and the caller's error
         * (snprintf's "%s" here makes gcc -O3 warn of the cut it is for) */
        const char *text = error[0] ? error : "failed";
        size_t n = strnlen(text, sizeof ex->error - 1);
        memcpy(ex->error, text, n);
        ex->error[n] = '\0';
    }
    ex->next = NULL;
    if (client->reports_tail)
        client->reports_tail->next = ex;
    else
        client->reports = ex;
    client->reports_tail = ex;
    event_active(client->report_soon, EV_READ, 0);
}

static void recycle(exchange *ex)
{
    ex->next = ex->client->free_exchanges;
    ex->client->free_exchanges = ex;
}

static void on_report_soon(evutil_socket_t fd, short kind, void *arg)
{
    (void)fd;
    (void)kind;
    sl_h1_client *client = arg;
    while (client->reports) {
        exchange *ex = client->reports;
        client->reports = ex->next;
        if (!client->reports)
            client->reports_tail = NULL;
        bool failed = ex->error[0] != '\0';
        sl_http_result result = {
            .status = failed ? 0 : ex->response.status,
            .retry_after = !failed && ex->response.has_retry_after ? ex->response.retry_after : NULL,
            .error = failed ? ex->error : NULL,
            .timed_out = failed && ex->timed_out,
            .ratelimit = !failed && ex->response.ratelimit.any ? &ex->response.ratelimit : NULL,
            .elapsed_us = sl_monotonic_us() - ex->started_us,
        };
        /* Recycled only after done: the texts above are ex's, and a
         * request done starts takes another exchange. */
        ex->done(ex->arg, &result);
        recycle(ex);
    }
}

/* ---- connections ---- */

static void on_conn_event(evutil_socket_t fd, short kind, void *arg);

static void watch(conn *c, short kind)
{
    if (c->watching == kind)
        return;
    if (c->watching)
        event_del(c->ev);
    event_assign(c->ev, c->client->base, c->fd, (short)(kind | EV_PERSIST), on_conn_event, c);
    c->watching = kind;
    event_add(c->ev, NULL);
}

/* Closes c's socket (later if the base knew of it), not c. */
static void drop_socket(conn *c)
{
    if (c->fd < 0)
        return;
    if (c->watching) {
        event_del(c->ev);
        c->watching = 0;
        sl_close_later_add(&c->client->closer, c->fd);
    } else {
        close(c->fd);
    }
    c->fd = -1;
}

static void unlink_idle(conn *c)
{
    origin *o = c->origin;
    if (c->prev_idle)
        c->prev_idle->next_idle = c->next_idle;
    else
        o->idle = c->next_idle;
    if (c->next_idle)
        c->next_idle->prev_idle = c->prev_idle;
    c->prev_idle = c->next_idle = NULL;
    c->idle = false;
    c->client->idle_count--;
}

static void close_conn(conn *c)
{
    sl_h1_client *client = c->client;
    if (c->idle)
        unlink_idle(c);
    drop_socket(c);
    event_free(c->ev);
    if (c->prev)
        c->prev->next = c->next;
    else
        client->conns = c->next;
    if (c->next)
        c->next->prev = c->prev;
    client->conn_count--;
    free(c);
}

static void make_idle(conn *c)
{
    sl_h1_client *client = c->client;
    if (client->idle_count >= SL_HTTP_IDLE_CONNECTIONS_MAX) {
        close_conn(c);
        return;
    }
    c->reused = true;
    c->idle = true;
    c->idle_since_us = sl_monotonic_us();
    c->prev_idle = NULL;
    c->next_idle = c->origin->idle;
    if (c->next_idle)
        c->next_idle->prev_idle = c;
    c->origin->idle = c;
    client->idle_count++;
}

/* The connection failed (why: what happened). Its request is sent again
 * on a fresh connection if nothing came back on this reused one, else it
 * ends with the error. */
static void conn_failed(conn *c, const char *why)
{
    exchange *ex = c->exchange;
    bool again = ex && c->reused && ex->received == 0 && !ex->retried;
    c->exchange = NULL;
    close_conn(c);
    if (!ex)
        return;
    if (again) {
        ex->retried = true;
        ex->conn = NULL;
        dispatch(ex);
    } else {
        finish(ex, why);
    }
}

static void describe_connect_error(char *why, size_t size, const origin *o, int err)
{
    snprintf(why, size, "Failed to connect to %s port %s: %s", o->host, o->port, strerror(err));
}

static void connect_failed(conn *c, int err)
{
    char why[256 + 64];
    describe_connect_error(why, sizeof why, c->origin, err);
    conn_failed(c, why);
}

/* Starts connecting c to the origin's addresses from c->address on: 0, or
 * the errno of the last attempt if none could start (err if none was left). */
static int start_connect(conn *c, int err)
{
    struct evutil_addrinfo *ai = c->origin->addresses;
    for (size_t i = 0; ai && i < c->address; i++)
        ai = ai->ai_next;
    for (; ai; ai = ai->ai_next, c->address++) {
        int fd = socket(ai->ai_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, IPPROTO_TCP);
        if (fd < 0) {
            err = errno;
            continue;
        }
        int on = 1;
        setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &on, sizeof on);
        setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &on, sizeof on);
        if (connect(fd, ai->ai_addr, ai->ai_addrlen) == 0 || errno == EINPROGRESS) {
            c->fd = fd;
            c->connecting = true;
            watch(c, EV_READ | EV_WRITE);
            return 0;
        }
        err = errno;
        close(fd); /* never watched: may close at once */
    }
    return err;
}

typedef enum connect_step { CONNECTED, STILL_CONNECTING, CONNECT_FAILED } connect_step;

/* The socket being connected woke up: connected, or on to the next
 * address, or failed (c is gone). */
static connect_step on_connect_event(conn *c)
{
    int err = 0;
    socklen_t len = sizeof err;
    if (getsockopt(c->fd, SOL_SOCKET, SO_ERROR, &err, &len) != 0)
        err = errno;
    if (err == 0) {
        c->connecting = false;
        return CONNECTED;
    }
    drop_socket(c);
    c->address++;
    err = start_connect(c, err);
    if (err == 0)
        return STILL_CONNECTING;
    connect_failed(c, err);
    return CONNECT_FAILED;
}

static size_t request_size(const exchange *ex)
{
    return ex->head_len + ex->body_len;
}

/* Writes what it can of c's request; false if c failed (and is gone). */
static bool write_some(conn *c)
{
    exchange *ex = c->exchange;
    while (ex->sent < request_size(ex)) {
        struct iovec iov[2];
        int n = 0;
        if (ex->sent < ex->head_len)
            iov[n++] = (struct iovec){ex->head + ex->sent, ex->head_len - ex->sent};
        size_t body_at = ex->sent > ex->head_len ? ex->sent - ex->head_len : 0;
        if (ex->body_len > body_at)
            iov[n++] = (struct iovec){(void *)(uintptr_t)(ex->body + body_at), ex->body_len - body_at};
        struct msghdr msg = {.msg_iov = iov, .msg_iovlen = (size_t)n};
        ssize_t wrote = sendmsg(c->fd, &msg, MSG_NOSIGNAL);
        if (wrote < 0) {
            if (errno == EINTR)
                continue;
            if (errno == EAGAIN || errno == EWOULDBLOCK) {
                watch(c, EV_READ | EV_WRITE);
                return true;
            }
            char why[128];
            snprintf(why, sizeof why, "Send failure: %s", strerror(errno));
            conn_failed(c, why);
            return false;
        }
        ex->sent += (size_t)wrote;
    }
    watch(c, EV_READ);
    return true;
}

static void attach(exchange *ex, conn *c)
{
    c->exchange = ex;
    c->in_len = 0;
    ex->conn = c;
    ex->sent = 0;
    ex->received = 0;
    sl_h1_response_start(&ex->response, ex->head_request);
    if (!c->connecting)
        write_some(c);
}

/* The response ended: report it; keep the connection if it may carry another. */
static void response_done(conn *c)
{
    exchange *ex = c->exchange;
    bool keep = ex->response.keep_alive && c->in_len == 0 && ex->sent == request_size(ex);
    c->exchange = NULL;
    finish(ex, NULL);
    if (keep)
        make_idle(c);
    else
        close_conn(c);
}

static void read_some(conn *c)
{
    exchange *ex = c->exchange;
    if (!ex) { /* idle: the peer closed it, or says what nobody asked */
        close_conn(c);
        return;
    }
    ssize_t n = recv(c->fd, c->in + c->in_len, sizeof c->in - c->in_len, 0);
    if (n < 0) {
        if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)
            return;
        char why[128];
        snprintf(why, sizeof why, "Recv failure: %s", strerror(errno));
        conn_failed(c, why);
        return;
    }
    sl_h1_progress progress;
    if (n == 0) {
        progress = sl_h1_response_eof(&ex->response);
        if (progress == SL_H1_DONE)
            response_done(c);
        else
            conn_failed(c, ex->response.error);
        return;
    }
    c->in_len += (size_t)n;
    ex->received += (size_t)n;
    size_t used;
    progress = sl_h1_response_feed(&ex->response, c->in, c->in_len, &used);
    memmove(c->in, c->in + used, c->in_len - used);
    c->in_len -= used;
    if (progress == SL_H1_DONE) {
        response_done(c);
    } else if (progress == SL_H1_ERROR) {
        char why[128];
        snprintf(why, sizeof why, "Bad HTTP response: %s", ex->response.error);
        conn_failed(c, why); /* bytes came back: not sent again */
    } else if (c->in_len == sizeof c->in) {
        conn_failed(c, "Bad HTTP response: a header line longer than 8192 bytes");
    }
}

static void on_conn_event(evutil_socket_t fd, short kind, void *arg)
{
    (void)fd;
    conn *c = arg;
    if (c->connecting) {
        if (on_connect_event(c) != CONNECTED)
            return;
        if (!write_some(c))
            return;
        kind = 0; /* the socket is new to reading: wait for its own event */
    } else if ((kind & EV_WRITE) && c->exchange && c->exchange->sent < request_size(c->exchange)) {
        if (!write_some(c))
            return;
    }
    if (kind & EV_READ)
        read_some(c);
}


/* A new connection to o, connecting; NULL with *err (an errno) if none
 * could start. */
static conn *open_conn(origin *o, int *err)
{
    sl_h1_client *client = o->client;
    conn *c = calloc(1, sizeof *c);
    if (!c) {
        *err = ENOMEM;
        return NULL;
    }
    c->client = client;
    c->origin = o;
    c->fd = -1;
    c->ev = event_new(client->base, -1, 0, on_conn_event, c);
    if (!c->ev) {
        free(c);
        *err = ENOMEM;
        return NULL;
    }
    *err = start_connect(c, EADDRNOTAVAIL);
    if (*err != 0) {
        event_free(c->ev);
        free(c);
        return NULL;
    }
    c->next = client->conns;
    if (c->next)
        c->next->prev = c;
    client->conns = c;
    client->conn_count++;
    return c;
}

/* ---- origins and names ---- */

static bool addresses_fresh(const origin *o, int64_t now)
{
    return o->addresses && (o->numeric || now - o->resolved_us < DNS_KEEP_US);
}

/* The lookup of o's name ended (result 0: with addresses): its waiting
 * requests go on, or end with the reason. */
static void lookup_ended(origin *o, int result, struct evutil_addrinfo *addresses)
{
    exchange *waiting = o->waiting;
    o->waiting = o->waiting_tail = NULL;
    if (result == 0) {
        if (o->addresses)
            evutil_freeaddrinfo(o->addresses);
        o->addresses = addresses;
        o->resolved_us = sl_monotonic_us();
    }
    char why[256 + 96];
    snprintf(why, sizeof why, "Could not resolve host: %s (%s)", o->host,
             result == 0 ? "no address" : evutil_gai_strerror(result));
    while (waiting) {
        exchange *ex = waiting;
        waiting = ex->next;
        if (result == 0)
            dispatch(ex);
        else
            finish(ex, why);
    }
}

static void on_resolved(int result, struct evutil_addrinfo *addresses, void *arg)
{
    dns_ticket *ticket = arg;
    origin *o = ticket->o;
    free(ticket);
    if (!o) { /* the client is gone */
        if (addresses)
            evutil_freeaddrinfo(addresses);
        return;
    }
    o->lookup = NULL;
    o->dns_request = NULL;
    lookup_ended(o, result, addresses);
}

/* Looks o's name up; its waiting requests go on when the answer comes. */
static void resolve(origin *o)
{
    sl_h1_client *client = o->client;
    if (!client->dns)
        client->dns = evdns_base_new(client->base, EVDNS_BASE_INITIALIZE_NAMESERVERS);
    dns_ticket *ticket = client->dns ? malloc(sizeof *ticket) : NULL;
    if (!ticket) {
        lookup_ended(o, client->dns ? EVUTIL_EAI_MEMORY : EVUTIL_EAI_FAIL, NULL);
        return;
    }
    struct evutil_addrinfo hints = {
        .ai_family = AF_UNSPEC,
        .ai_socktype = SOCK_STREAM,
        .ai_protocol = IPPROTO_TCP,
    }; /* no AI_ADDRCONFIG: it may hide localhost on a host without a network */
    ticket->o = o;
    o->lookup = ticket;
    /* The answer may come before evdns_getaddrinfo returns (from
     * /etc/hosts, say); then it returns NULL and o->lookup is NULL again. */
    struct evdns_getaddrinfo_request *request =
        evdns_getaddrinfo(client->dns, o->host, o->port, &hints, on_resolved, ticket);
    if (o->lookup)
        o->dns_request = request;
}

static uint64_t origin_hash(const char *host, const char *port)
{
    uint64_t h = UINT64_C(14695981039346656037); /* FNV-1a */
    for (const char *p = host; *p; p++)
        h = (h ^ (unsigned char)*p) * UINT64_C(1099511628211);
    for (const char *p = port; *p; p++)
        h = (h ^ (unsigned char)*p) * UINT64_C(1099511628211);
    return h;
}

static bool grow_buckets(sl_h1_client *client)
{
    size_t n = client->bucket_count ? 2 * client->bucket_count : 64;
    origin **buckets = calloc(n, sizeof *buckets);
    if (!buckets)
        return false;
    for (size_t i = 0; i < client->bucket_count; i++) {
        while (client->buckets[i]) {
            origin *o = client->buckets[i];
            client->buckets[i] = o->next;
            size_t b = origin_hash(o->host, o->port) & (n - 1);
            o->next = buckets[b];
            buckets[b] = o;
        }
    }
    free(client->buckets);
    client->buckets = buckets;
    client->bucket_count = n;
    return true;
}

/* The origin of target, made at its first use; NULL if out of memory. */
static origin *find_origin(sl_h1_client *client, const sl_h1_target *target)
{
    if (client->origin_count >= client->bucket_count)
        grow_buckets(client); /* if that fails, chains just grow longer */
    size_t b = origin_hash(target->host, target->port) & (client->bucket_count - 1);
    for (origin *o = client->buckets[b]; o; o = o->next)
        if (strcmp(o->host, target->host) == 0 && strcmp(o->port, target->port) == 0)
            return o;
    origin *o = calloc(1, sizeof *o);
    if (!o)
        return NULL;
    o->client = client;
    snprintf(o->host, sizeof o->host, "%s", target->host);
    snprintf(o->port, sizeof o->port, "%s", target->port);
    struct evutil_addrinfo hints = {
        .ai_family = AF_UNSPEC,
        .ai_socktype = SOCK_STREAM,
        .ai_protocol = IPPROTO_TCP,
        .ai_flags = EVUTIL_AI_NUMERICHOST | EVUTIL_AI_NUMERICSERV,
    };
    o->numeric = evutil_getaddrinfo(o->host, o->port, &hints, &o->addresses) == 0;
    o->next = client->buckets[b];
    client->buckets[b] = o;
    client->origin_count++;
    return o;
}

/* ---- requests ---- */

/* True if an idle connection has nothing unread and is still open. The
 * loop closes an idle connection that turns readable, but only on its next
 * turn: bytes that arrived since (a server that wrote past its response,
 * or closed) would otherwise be read as the next request's answer. */
static bool quiet(const conn *c)
{
    char byte;
    ssize_t n = recv(c->fd, &byte, 1, MSG_PEEK | MSG_DONTWAIT);
    return n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK);
}

/* Puts ex on a connection: an idle one of its origin, else a new one
 * (once the origin's name is resolved). A request sent again goes on a
 * new one: the idle ones may be as dead as the one that failed it. */
static void dispatch(exchange *ex)
{
    origin *o = ex->origin;
    while (o->idle && !ex->retried) {
        conn *c = o->idle;
        unlink_idle(c);
        if (quiet(c)) {
            attach(ex, c);
            return;
        }
        close_conn(c);
    }
    if (!addresses_fresh(o, sl_monotonic_us())) {
        ex->next = NULL;
        if (o->waiting_tail)
            o->waiting_tail->next = ex;
        else
            o->waiting = ex;
        o->waiting_tail = ex;
        if (!o->lookup)
            resolve(o);
        return;
    }
    int err;
    conn *c = open_conn(o, &err);
    if (!c) {
        char why[256 + 64];
        describe_connect_error(why, sizeof why, o, err);
        finish(ex, why);
        return;
    }
    attach(ex, c);
}

static void unlink_waiting(exchange *ex)
{
    origin *o = ex->origin;
    exchange *prev = NULL;
    for (exchange *w = o->waiting; w; prev = w, w = w->next) {
        if (w != ex)
            continue;
        if (prev)
            prev->next = w->next;
        else
            o->waiting = w->next;
        if (o->waiting_tail == w)
            o->waiting_tail = prev;
        return;
    }
}

static void on_timeout(evutil_socket_t fd, short kind, void *arg)
{
    (void)fd;
    (void)kind;
    exchange *ex = arg;
    if (ex->conn) {
        conn *c = ex->conn;
        c->exchange = NULL;
        close_conn(c);
    } else {
        unlink_waiting(ex);
    }
    char why[128];
    snprintf(why, sizeof why, "Operation timed out after %" PRId64 " milliseconds with %zu bytes received",
             (sl_monotonic_us() - ex->started_us) / 1000, ex->received);
    ex->timed_out = true;
    finish(ex, why);
}

/* Closes connections idle for longer than IDLE_CLOSE_US. */
static void on_sweep(evutil_socket_t fd, short kind, void *arg)
{
    (void)fd;
    (void)kind;
    sl_h1_client *client = arg;
    int64_t now = sl_monotonic_us();
    conn *c = client->conns;
    while (c) {
        conn *next = c->next;
        if (c->idle && now - c->idle_since_us > IDLE_CLOSE_US)
            close_conn(c);
        c = next;
    }
}

sl_h1_client *sl_h1_client_new(struct event_base *base, char *err, size_t err_size)
{
    sl_h1_client *client = calloc(1, sizeof *client);
    if (!client) {
        snprintf(err, err_size, "http client: out of memory");
        return NULL;
    }
    client->base = base;
    client->report_soon = event_new(base, -1, 0, on_report_soon, client);
    client->sweep = event_new(base, -1, EV_PERSIST, on_sweep, client);
    bool closer = sl_close_later_init(&client->closer, base);
    if (!client->report_soon || !client->sweep || !closer || !grow_buckets(client)) {
        snprintf(err, err_size, "http client: out of memory");
        sl_h1_client_free(client);
        return NULL;
    }
    struct timeval every = {SWEEP_INTERVAL_S, 0};
    event_add(client->sweep, &every);
    return client;
}

static void free_exchange(exchange *ex)
{
    if (ex->timeout)
        event_free(ex->timeout);
    free(ex->head);
    free(ex);
}

/* Frees a list of exchanges linked by next. */
static void free_exchanges(exchange *ex)
{
    while (ex) {
        exchange *next = ex->next;
        free_exchange(ex);
        ex = next;
    }
}

void sl_h1_client_free(sl_h1_client *client)
{
    if (!client)
        return;
    for (size_t i = 0; i < client->bucket_count; i++)
        for (origin *o = client->buckets[i]; o; o = o->next)
            if (o->lookup) {
                o->lookup->o = NULL; /* its callback comes after o is freed */
                if (o->dns_request)
                    evdns_getaddrinfo_cancel(o->dns_request);
            }
    if (client->dns)
        evdns_base_free(client->dns, 1);
    while (client->conns) {
        conn *c = client->conns;
        if (c->exchange) {
            evtimer_del(c->exchange->timeout);
            free_exchange(c->exchange);
            c->exchange = NULL;
        }
        close_conn(c);
    }
    for (size_t i = 0; i < client->bucket_count; i++) {
        while (client->buckets[i]) {
            origin *o = client->buckets[i];
            client->buckets[i] = o->next;
            free_exchanges(o->waiting);
            if (o->addresses)
                evutil_freeaddrinfo(o->addresses);
            free(o);
        }
    }
    free(client->buckets);
    free_exchanges(client->reports);
    free_exchanges(client->free_exchanges);
    sl_close_later_free(&client->closer);
    if (client->report_soon)
        event_free(client->report_soon);
    if (client->sweep)
        event_free(client->sweep);
    free(client);
}

static exchange *take_exchange(sl_h1_client *client)
{
    exchange *ex = client->free_exchanges;
    if (ex) {
        client->free_exchanges = ex->next;
        return ex;
    }
    ex = calloc(1, sizeof *ex);
    if (!ex)
        return NULL;
    ex->client = client;
    ex->timeout = evtimer_new(client->base, on_timeout, ex);
    if (!ex->timeout) {
        free(ex);
        return NULL;
    }
    return ex;
}

/* Writes the request's head into ex->head, growing it as needed. */
static bool build_head(exchange *ex, const sl_h1_target *target, const sl_http_request *request)
{
    size_t len = sl_h1_request_head(ex->head, ex->head_cap, request->method, target, request->headers,
                                    request->header_count, request->body_len);
    if (len >= ex->head_cap) {
        size_t cap = len + 1 > 1024 ? len + 1 : 1024;
        char *bigger = realloc(ex->head, cap);
        if (!bigger)
            return false;
        ex->head = bigger;
        ex->head_cap = cap;
        sl_h1_request_head(ex->head, ex->head_cap, request->method, target, request->headers,
                           request->header_count, request->body_len);
    }
    ex->head_len = len;
    return true;
}

bool sl_h1_send(sl_h1_client *client, const sl_h1_target *target, const sl_http_request *request,
                sl_http_done_fn done, void *arg)
{
    exchange *ex = take_exchange(client);
    if (!ex)
        return false;
    origin *o = find_origin(client, target);
    if (!o || !build_head(ex, target, request)) {
        recycle(ex);
        return false;
    }
    ex->origin = o;
    ex->conn = NULL;
    ex->done = done;
    ex->arg = arg;
    ex->body = request->body;
    ex->body_len = sl_h1_request_has_body(request->method, request->body_len) ? request->body_len : 0;
    ex->head_request = strcmp(request->method, "HEAD") == 0;
    ex->retried = false;
    ex->error[0] = '\0';
    ex->timed_out = false;
    ex->received = 0;
    ex->started_us = sl_monotonic_us();
    if (request->timeout_ms > 0) {
        struct timeval tv = {(time_t)(request->timeout_ms / 1000),
                             (suseconds_t)(request->timeout_ms % 1000 * 1000)};
        evtimer_add(ex->timeout, &tv);
    }
    dispatch(ex);
    return true;
}

size_t sl_h1_connection_count(const sl_h1_client *client)
{
    return client->conn_count;
}
