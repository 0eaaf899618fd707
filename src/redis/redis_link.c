/* redis_link.c - see redis_link.h.
 *
 * A link goes CONNECTING (a non-blocking connect, bounded by connect_ms)
 * -> HANDSHAKE (TLS only, bounded by handshake_ms) -> UP -> FAILED. A
 * failure only records why and wakes fail_ev: the pending callbacks and
 * on_event run from fail_ev's own turn of the loop, never from inside a
 * caller's call, so an owner can close a link from any callback.
 *
 * The per-command path: the command is formatted once by hiredis (one
 * malloc) and copied into the bufferevent's output; the callback goes into
 * a ring that grows by doubling, so it costs no allocation. */
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/bufferevent_ssl.h>
#include <openssl/err.h>

#include "redis/redis_link.h"
#include "redis/redis_tls.h"

/* TCP keepalive on every Redis connection: probe after 30 s of silence,
 * every 10 s, give up after 3 unanswered (about a minute in all). */
#define KEEPALIVE_IDLE_S 30
#define KEEPALIVE_EVERY_S 10
#define KEEPALIVE_PROBES 3

typedef enum link_state { CONNECTING, HANDSHAKE, UP, FAILED } link_state;

typedef struct pending {
    sl_redis_link_reply_fn fn;
    void *arg;
    unsigned flags;
} pending;

struct sl_redis_link {
    struct event_base *base;
    const sl_redis_target *target;
    sl_redis_link_timeouts timeouts;
    sl_redis_link_event_fn on_event;
    sl_redis_link_tap_fn tap;
    void *arg;
    link_state state;
    evutil_socket_t fd;          /* while CONNECTING; then the bufferevent's */
    struct event *connect_ev;    /* writable = connected, or connect_ms passed */
    struct bufferevent *bev;     /* from the connect on */
    SSL_CTX *ssl_ctx;            /* rediss:// only */
    struct event *deadline;      /* the handshake's, then the replies' */
    const struct timeval *reply_tv; /* a libevent common timeout: O(1) re-arming */
    struct event *fail_ev;
    redisReader *reader;
    pending *ring;
    size_t ring_cap, ring_head, ring_count;
    size_t awaited; /* pending commands whose silence counts (not subscriptions) */
    bool replied;   /* a reply came: the server accepted the connection */
    char why[256];
};

/* ---- failing ----------------------------------------------------------- */

/* Records why (the first reason wins) and lets fail_ev finish the job. */
static void fail(sl_redis_link *link, const char *why)
{
    if (link->state == FAILED)
        return;
    link->state = FAILED;
    snprintf(link->why, sizeof link->why, "%s", why);
    if (link->bev)
        bufferevent_disable(link->bev, EV_READ | EV_WRITE);
    event_del(link->connect_ev);
    event_del(link->deadline);
    event_active(link->fail_ev, EV_TIMEOUT, 0);
}

static void release_transport(sl_redis_link *link)
{
    if (link->bev) {
        /* BEV_OPT_CLOSE_ON_FREE: closes the socket and frees the SSL. */
        bufferevent_free(link->bev);
        link->bev = NULL;
        link->fd = -1;
    }
    if (link->fd >= 0) {
        evutil_closesocket(link->fd);
        link->fd = -1;
    }
}

/* Every pending callback gets NULL, oldest first. */
static void flush_pending(sl_redis_link *link)
{
    while (link->ring_count > 0) {
        pending p = link->ring[link->ring_head];
        link->ring_head = (link->ring_head + 1) % link->ring_cap;
        link->ring_count--;
        p.fn(NULL, p.arg);
    }
    link->awaited = 0;
}

static void on_fail_ev(evutil_socket_t fd, short kind, void *arg)
{
    (void)fd;
    (void)kind;
    sl_redis_link *link = arg;
    release_transport(link);
    flush_pending(link);
    /* Last: the owner may free the link in here. */
    link->on_event(link->arg, false, link->why);
}

void sl_redis_link_close(sl_redis_link *link, const char *why)
{
    fail(link, why);
}

/* ---- replies ------------------------------------------------------------ */

static void arm_reply_deadline(sl_redis_link *link)
{
    if (link->awaited > 0)
        event_add(link->deadline, link->reply_tv);
    else
        event_del(link->deadline);
}

/* One parsed reply to the oldest pending command. */
static void dispatch(sl_redis_link *link, redisReply *reply)
{
    if (link->ring_count == 0) {
        freeReplyObject(reply);
        fail(link, "protocol error: a reply nobody asked for");
        return;
    }
    link->replied = true;
    pending p = link->ring[link->ring_head];
    if (!(p.flags & SL_LINK_SUBSCRIBE)) {
        link->ring_head = (link->ring_head + 1) % link->ring_cap;
        link->ring_count--;
        link->awaited--;
    }
    if (link->tap)
        link->tap(link->arg, reply);
    p.fn(reply, p.arg);
    if (!(p.flags & SL_LINK_KEEP_REPLY))
        freeReplyObject(reply);
}

static void on_read(struct bufferevent *bev, void *arg)
{
    sl_redis_link *link = arg;
    struct evbuffer *in = bufferevent_get_input(bev);
    /* Feed what came (hiredis copies it) and let the evbuffer go. */
    struct evbuffer_iovec vec[8];
    size_t total = evbuffer_get_length(in);
    while (total > 0) {
        int n = evbuffer_peek(in, -1, NULL, vec, 8);
        if (n > 8)
            n = 8;
        size_t fed = 0;
        for (int i = 0; i < n; i++) {
            if (redisReaderFeed(link->reader, vec[i].iov_base, vec[i].iov_len) != REDIS_OK) {
                fail(link, "out of memory");
                return;
            }
            fed += vec[i].iov_len;
        }
        evbuffer_drain(in, fed);
        total -= fed;
    }
    while (link->state == UP) {
        void *reply = NULL;
        if (redisReaderGetReply(link->reader, &reply) != REDIS_OK) {
            char why[200];
            snprintf(why, sizeof why, "protocol error: %s", link->reader->errstr);
            fail(link, why);
            return;
        }
        if (!reply)
            break;
        dispatch(link, reply);
    }
    if (link->state == UP)
        arm_reply_deadline(link);
}

/* ---- sending ------------------------------------------------------------ */

static bool ring_push(sl_redis_link *link, pending p)
{
    if (link->ring_count == link->ring_cap) {
        size_t cap = link->ring_cap ? link->ring_cap * 2 : 64;
        pending *ring = malloc(cap * sizeof *ring);
        if (!ring)
            return false;
        for (size_t i = 0; i < link->ring_count; i++)
            ring[i] = link->ring[(link->ring_head + i) % link->ring_cap];
        free(link->ring);
        link->ring = ring;
        link->ring_cap = cap;
        link->ring_head = 0;
    }
    link->ring[(link->ring_head + link->ring_count) % link->ring_cap] = p;
    link->ring_count++;
    return true;
}

bool sl_redis_link_send_formatted(sl_redis_link *link, const char *cmd, size_t len,
                                  sl_redis_link_reply_fn fn, void *fn_arg, unsigned flags)
{
    if (link->state != UP || !ring_push(link, (pending){fn, fn_arg, flags}))
        return false;
    if (bufferevent_write(link->bev, cmd, len) != 0) {
        link->ring_count--; /* the entry just pushed */
        return false;
    }
    if (!(flags & SL_LINK_SUBSCRIBE) && link->awaited++ == 0)
        event_add(link->deadline, link->reply_tv); /* the reply clock starts now */
    return true;
}

bool sl_redis_link_send_argv(sl_redis_link *link, int argc, const char **argv,
                             const size_t *argvlen, sl_redis_link_reply_fn fn, void *fn_arg,
                             unsigned flags)
{
    if (link->state != UP)
        return false;
    char *cmd = NULL;
    int len = redisFormatCommandArgv(&cmd, argc, argv, argvlen);
    if (len < 0)
        return false;
    bool sent = sl_redis_link_send_formatted(link, cmd, (size_t)len, fn, fn_arg, flags);
    redisFreeCommand(cmd);
    return sent;
}

bool sl_redis_link_up(const sl_redis_link *link)
{
    return link->state == UP;
}

/* ---- connecting --------------------------------------------------------- */

static void on_deadline(evutil_socket_t fd, short kind, void *arg)
{
    (void)fd;
    (void)kind;
    sl_redis_link *link = arg;
    char why[96];
    if (link->state == HANDSHAKE)
        snprintf(why, sizeof why, "TLS handshake timed out after %d ms",
                 link->timeouts.handshake_ms);
    else
        snprintf(why, sizeof why, "no reply within %d ms", link->timeouts.reply_ms);
    fail(link, why);
}

static void go_up(sl_redis_link *link)
{
    event_del(link->deadline);
    link->state = UP;
    link->on_event(link->arg, true, NULL);
}

/* The OpenSSL error behind a TLS bufferevent's failure, 0 if none.
 * libevent keeps up to three codes, the last first: SSL_get_error's
 * (SSL_ERROR_SSL, SSL_ERROR_SYSCALL, small numbers with no library) and
 * then OpenSSL's own queue, whose codes name a library and a reason. */
static unsigned long openssl_cause(struct bufferevent *bev)
{
    unsigned long cause = 0, e;
    while ((e = bufferevent_get_openssl_error(bev)) != 0)
        if (ERR_GET_LIB(e) != 0)
            cause = e; /* popped last = queued first: the root cause */
    return cause;
}

/* Why the bufferevent failed: OpenSSL's reason, the socket's errno, or
 * the peer's closing. */
static void describe_bev_error(sl_redis_link *link, short what, char *why, size_t size)
{
    const sl_redis_target *t = link->target;
    int e = EVUTIL_SOCKET_ERROR();
    unsigned long ssl_error = t->tls ? openssl_cause(link->bev) : 0;
    if (t->tls) {
        SSL *ssl = bufferevent_openssl_get_ssl(link->bev);
        long verify = link->state == HANDSHAKE && ssl ? SSL_get_verify_result(ssl) : X509_V_OK;
        ERR_clear_error();
        if (ssl_error || verify != X509_V_OK) {
            sl_redis_tls_describe(verify, ssl_error, why, size);
            return;
        }
    }
    const char *stage = link->state == HANDSHAKE ? " during the TLS handshake" : "";
    size_t used;
    if ((what & BEV_EVENT_ERROR) && e)
        used = (size_t)snprintf(why, size, "%s%s", strerror(e), stage);
    else
        used = (size_t)snprintf(why, size, "connection closed by the server%s", stage);
    /* TLS 1.3 ends the client's handshake before the server has checked
     * the client's certificate: a server that wants one and got none
     * closes right after, and its alert may be lost with the reset. */
    if (t->tls && !t->tls_options.cert_file && !link->replied && used < size)
        snprintf(why + used, size - used,
                 " (does the server require a client certificate? see redis_tls.cert_file)");
}

static void on_bev_event(struct bufferevent *bev, short what, void *arg)
{
    (void)bev;
    sl_redis_link *link = arg;
    if (what & BEV_EVENT_CONNECTED) {
        if (link->state == HANDSHAKE)
            go_up(link);
        return;
    }
    if (what & (BEV_EVENT_ERROR | BEV_EVENT_EOF)) {
        char why[256];
        describe_bev_error(link, what, why, sizeof why);
        fail(link, why);
    }
}

/* The socket is connected: wrap it in a bufferevent, TLS or plain. */
static void start_transport(sl_redis_link *link)
{
    char err[256];
    if (link->target->tls) {
        SSL *ssl = sl_redis_tls_ssl_new(link->ssl_ctx, &link->target->tls_options,
                                        link->target->host, err, sizeof err);
        if (!ssl) {
            fail(link, err);
            return;
        }
        link->bev = bufferevent_openssl_socket_new(link->base, link->fd, ssl,
                                                   BUFFEREVENT_SSL_CONNECTING,
                                                   BEV_OPT_CLOSE_ON_FREE);
        if (!link->bev) {
            SSL_free(ssl);
            fail(link, "out of memory");
            return;
        }
        /* Redis may close without close_notify; the protocol frames itself. */
        bufferevent_openssl_set_allow_dirty_shutdown(link->bev, 1);
        link->state = HANDSHAKE;
        struct timeval tv = {link->timeouts.handshake_ms / 1000,
                             (link->timeouts.handshake_ms % 1000) * 1000};
        event_add(link->deadline, &tv);
    } else {
        link->bev = bufferevent_socket_new(link->base, link->fd, BEV_OPT_CLOSE_ON_FREE);
        if (!link->bev) {
            fail(link, "out of memory");
            return;
        }
    }
    bufferevent_setcb(link->bev, on_read, NULL, on_bev_event, link);
    bufferevent_enable(link->bev, EV_READ | EV_WRITE);
    if (link->state == CONNECTING)
        go_up(link);
}

static void on_connect_ev(evutil_socket_t fd, short kind, void *arg)
{
    sl_redis_link *link = arg;
    char why[128];
    if (kind & EV_TIMEOUT) {
        snprintf(why, sizeof why, "connect timed out after %d ms", link->timeouts.connect_ms);
        fail(link, why);
        return;
    }
    int error = 0;
    socklen_t len = sizeof error;
    if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &error, &len) != 0)
        error = errno;
    if (error) {
        snprintf(why, sizeof why, "connect: %s", strerror(error));
        fail(link, why);
        return;
    }
    start_transport(link);
}

/* A non-blocking socket connecting to addr; -1 with errno set. */
static evutil_socket_t connect_to(const struct sockaddr *addr, socklen_t len)
{
    evutil_socket_t fd = socket(addr->sa_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return -1;
    if (addr->sa_family != AF_UNIX) {
        /* Commands are small and latency matters more than packet count. */
        int one = 1;
        setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        /* A subscription waits for no reply, so no deadline notices a peer
         * that vanished without closing (a dead host, a NAT that forgot the
         * flow): TCP keepalive does, within about a minute. */
        int idle_s = KEEPALIVE_IDLE_S, every_s = KEEPALIVE_EVERY_S, probes = KEEPALIVE_PROBES;
        setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &one, sizeof one);
        setsockopt(fd, IPPROTO_TCP, TCP_KEEPIDLE, &idle_s, sizeof idle_s);
        setsockopt(fd, IPPROTO_TCP, TCP_KEEPINTVL, &every_s, sizeof every_s);
        setsockopt(fd, IPPROTO_TCP, TCP_KEEPCNT, &probes, sizeof probes);
    }
    if (connect(fd, addr, len) == 0 || errno == EINPROGRESS)
        return fd;
    int saved = errno;
    close(fd);
    errno = saved;
    return -1;
}

/* Resolves and starts connecting; false with the reason in err. The
 * resolution blocks, as hiredis's did: a name in the config is looked up
 * at each (re)connect, so a moved server is found. */
static bool start_connect(sl_redis_link *link, char *err, size_t err_size)
{
    const sl_redis_target *t = link->target;
    if (t->unix_path) {
        struct sockaddr_un sun = {.sun_family = AF_UNIX};
        snprintf(sun.sun_path, sizeof sun.sun_path, "%s", t->unix_path);
        link->fd = connect_to((struct sockaddr *)&sun, sizeof sun);
        if (link->fd < 0) {
            snprintf(err, err_size, "connect %s: %s", t->unix_path, strerror(errno));
            return false;
        }
        return true;
    }
    char port[16];
    snprintf(port, sizeof port, "%d", t->port);
    struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM};
    struct addrinfo *list = NULL;
    int rc = getaddrinfo(t->host, port, &hints, &list);
    if (rc != 0) {
        snprintf(err, err_size, "cannot resolve %s: %s", t->host, gai_strerror(rc));
        return false;
    }
    int last_errno = 0;
    for (struct addrinfo *a = list; a && link->fd < 0; a = a->ai_next) {
        link->fd = connect_to(a->ai_addr, a->ai_addrlen);
        if (link->fd < 0)
            last_errno = errno;
    }
    freeaddrinfo(list);
    if (link->fd < 0) {
        snprintf(err, err_size, "connect: %s", strerror(last_errno));
        return false;
    }
    return true;
}

sl_redis_link *sl_redis_link_open(struct event_base *base, const sl_redis_target *target,
                                  const sl_redis_link_timeouts *timeouts,
                                  sl_redis_link_event_fn on_event, sl_redis_link_tap_fn tap,
                                  void *arg, char *err, size_t err_size)
{
    sl_redis_link *link = calloc(1, sizeof *link);
    if (!link) {
        snprintf(err, err_size, "out of memory");
        return NULL;
    }
    link->base = base;
    link->target = target;
    link->timeouts = *timeouts;
    link->on_event = on_event;
    link->tap = tap;
    link->arg = arg;
    link->fd = -1;
    link->state = CONNECTING;
    struct timeval reply = {timeouts->reply_ms / 1000, (timeouts->reply_ms % 1000) * 1000};
    link->reply_tv = event_base_init_common_timeout(base, &reply);
    link->deadline = evtimer_new(base, on_deadline, link);
    link->fail_ev = evtimer_new(base, on_fail_ev, link);
    link->reader = redisReaderCreate();
    if (!link->deadline || !link->fail_ev || !link->reader || !link->reply_tv) {
        snprintf(err, err_size, "out of memory");
        sl_redis_link_free(link);
        return NULL;
    }
    if (target->tls && !(link->ssl_ctx = sl_redis_tls_ctx_new(&target->tls_options, err,
                                                               err_size))) {
        sl_redis_link_free(link);
        return NULL;
    }
    if (!start_connect(link, err, err_size)) {
        sl_redis_link_free(link);
        return NULL;
    }
    link->connect_ev = event_new(base, link->fd, EV_WRITE, on_connect_ev, link);
    struct timeval tv = {timeouts->connect_ms / 1000, (timeouts->connect_ms % 1000) * 1000};
    if (!link->connect_ev || event_add(link->connect_ev, &tv) != 0) {
        snprintf(err, err_size, "out of memory");
        sl_redis_link_free(link);
        return NULL;
    }
    return link;
}

void sl_redis_link_free(sl_redis_link *link)
{
    if (!link)
        return;
    link->state = FAILED; /* callbacks that send now are refused */
    release_transport(link);
    flush_pending(link);
    if (link->connect_ev)
        event_free(link->connect_ev);
    if (link->deadline)
        event_free(link->deadline);
    if (link->fail_ev)
        event_free(link->fail_ev);
    if (link->reader)
        redisReaderFree(link->reader);
    if (link->ssl_ctx)
        SSL_CTX_free(link->ssl_ctx);
    free(link->ring);
    free(link);
}
