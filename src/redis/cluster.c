/* cluster.c - see cluster.h. The decisions (slots, the map, what a reply
 * means) are cluster_slots.c's; this file does the sending: the probe
 * that asks for the map, one sl_redis_conn per primary, and the requests
 * that follow redirections.
 *
 * A request is its state and its command, formatted once (RESP, by
 * hiredis) so a redirect resends the same bytes. The common path is one
 * slot lookup and one send; the clock is read only once a request leaves
 * it (a redirect, or a wait for a primary). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "base/log.h"
#include "redis/cluster.h"
#include "redis/cluster_slots.h"
#include "redis/redis_errors.h"
#include "redis/redis_link.h"

/* The slot of a command with no key (TIME): any connected primary. */
#define KEYLESS SL_CLUSTER_SLOTS
/* The probe's waits: a map comes from a node that answers at once, and
 * a dead one should not hold up the next address for long. */
static const sl_redis_link_timeouts probe_timeouts = {
    .connect_ms = 2000, .handshake_ms = 2000, .reply_ms = 2000};

/* The scripts each primary's sl_redis_conn loads (redis_conn.h's list):
 * their SHA1s are kept here so the router answers while nodes reconnect. */
#define SCRIPT_COUNT ((size_t)SL_REDIS_CONN_SCRIPTS)

/* Redirects followed without a pause before backing off (hiredis-cluster
 * gives up after 5). */
#define MAX_QUICK_REDIRECTS 5

static const char asking_cmd[] = "*1\r\n$6\r\nASKING\r\n";

typedef struct request request;
typedef struct node node;

/* Requests waiting for a node or a timer, in arrival order. */
typedef struct req_queue {
    request *head, *tail;
} req_queue;

struct request {
    sl_redis_cluster *c;
    request *prev, *next;
    req_queue *queue;    /* the queue it waits in; NULL while sent */
    node *at;            /* where it was sent, waits, or (asking) must go */
    sl_redis_reply_fn fn;
    void *arg;
    struct event *timer; /* made on the first wait */
    int64_t deadline_us; /* 0 until the first redirect or wait */
    int tries;           /* backoffs so far */
    int redirects;       /* MOVED and ASK followed at once */
    unsigned slot;       /* or KEYLESS */
    bool asking;         /* the next send is ASKING + the command, to at */
    bool asked;          /* the last send was */
    unsigned char tx;    /* TX_BEGIN (MULTI), TX_END (EXEC, DISCARD) or 0 */
    bool in_tx;          /* sent inside a MULTI: its reply is never redirected */
    size_t len;
    char *cmd;           /* the command, in RESP (hiredis's: redisFreeCommand) */
};

struct node {
    sl_redis_cluster *c;
    sl_redis_target target;
    sl_redis_conn *conn;
    req_queue waiting; /* until conn is ready */
    bool in_multi;     /* a MULTI went on conn, its EXEC or DISCARD not yet */
};

/* A transaction's commands are queued by the node and run by its EXEC:
 * one of them resent elsewhere after a MOVED would run alone, outside
 * it (and EXEC then aborts). So inside a MULTI nothing is redirected:
 * the caller gets the error as it came (the CLI's transactions). */
enum { TX_BEGIN = 1, TX_END = 2 };

struct sl_redis_cluster {
    struct event_base *base;
    const sl_redis_target *target;
    sl_redis_metrics *metrics; /* the caller's, or own_metrics */
    sl_redis_metrics own_metrics;
    sl_redis_client_ready_fn on_ready;
    sl_redis_client_nodes_fn on_nodes;
    void *arg;
    sl_cluster_map map; /* owner[] indexes nodes[] */
    node **nodes;       /* map.primary_count entries; NULL where one could not be made */
    /* Nodes outside the map an ASK named (a new, empty primary), kept
     * until the next map: then a primary's node, or closed. */
    node *extra[SL_CLUSTER_EXTRA_MAX];
    sl_cluster_node extra_addr[SL_CLUSTER_EXTRA_MAX];
    size_t extra_count;
    node *keyless; /* where keyless commands went last; NULL: none yet */
    bool ready, closing;
    sl_redis_conn_options options; /* for every node's connection */
    char error[640];               /* sl_redis_cluster_error's */
    char probe_error[560];         /* the last address's failure in this round */
    char sha[SCRIPT_COUNT][41];
    req_queue backoff; /* waiting for a timer before routing again */
    int64_t expired_logged_us; /* when a chain past its deadline was last logged */
    /* The probe: a link of its own to one address after another. */
    struct event *refresh_timer;
    sl_redis_link *probe;
    sl_redis_target probe_target;
    bool probing, probe_done, refresh_again;
    size_t probe_start, probe_tried;
    long gap_ms;          /* sl_cluster_refresh_gap's, after the last round */
    int64_t round_end_us; /* when the last round ended; 0: none yet */
    bool map_news;        /* the last map applied changed something */
    bool next_round_asked, round_asked; /* armed by an asked-for refresh */
    sl_redis_cluster_stats stats;
};

static int64_t now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

static void queue_push(req_queue *q, request *r)
{
    r->queue = q;
    r->next = NULL;
    r->prev = q->tail;
    if (q->tail)
        q->tail->next = r;
    else
        q->head = r;
    q->tail = r;
}

static void queue_remove(request *r)
{
    req_queue *q = r->queue;
    if (!q)
        return;
    if (r->prev)
        r->prev->next = r->next;
    else
        q->head = r->next;
    if (r->next)
        r->next->prev = r->prev;
    else
        q->tail = r->prev;
    r->prev = r->next = NULL;
    r->queue = NULL;
}

/* ---- requests ---- */

/* A request with its command formatted (RESP, by hiredis's own
 * formatter), or NULL if out of memory. */
static request *request_new(sl_redis_cluster *c, unsigned slot, int argc, const char **argv,
                            const size_t *argvlen, sl_redis_reply_fn fn, void *arg)
{
    char *cmd = NULL;
    long long len = redisFormatCommandArgv(&cmd, argc, argv, argvlen);
    request *r = len > 0 ? malloc(sizeof *r) : NULL;
    if (!r) {
        redisFreeCommand(cmd);
        return NULL;
    }
    *r = (request){.c = c, .fn = fn, .arg = arg, .slot = slot, .len = (size_t)len, .cmd = cmd};
    return r;
}

static void request_free(request *r)
{
    queue_remove(r);
    if (r->timer)
        event_free(r->timer);
    redisFreeCommand(r->cmd);
    free(r);
}

/* Hands the reply (NULL: did not complete, may have run) to the caller. */
static void finish(request *r, redisReply *reply)
{
    sl_redis_reply_fn fn = r->fn;
    void *arg = r->arg;
    request_free(r);
    fn(reply, arg);
}

static void route(request *r);

static void on_request_timer(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    request *r = arg;
    queue_remove(r);
    route(r);
}

/* Arms r's timer to fire in delay_us (made on first use); false if out
 * of memory. */
static bool arm(request *r, int64_t delay_us)
{
    if (!r->timer) {
        r->timer = evtimer_new(r->c->base, on_request_timer, r);
        if (!r->timer)
            return false;
    }
    if (delay_us < 0)
        delay_us = 0;
    struct timeval tv = {(time_t)(delay_us / 1000000), (suseconds_t)(delay_us % 1000000)};
    return evtimer_add(r->timer, &tv) == 0;
}

static void start_deadline(request *r)
{
    if (!r->deadline_us)
        r->deadline_us = now_us() + (int64_t)SL_CLUSTER_CHAIN_MS * 1000;
}

/* r waits on n until n is ready (then it is sent) or its deadline (then
 * the caller gets NULL). False if out of memory. */
static bool park(node *n, request *r)
{
    start_deadline(r);
    if (!arm(r, r->deadline_us - now_us() + 1000))
        return false;
    r->at = n;
    queue_push(&n->waiting, r);
    return true;
}

/* r is routed again after the transient backoff (capped by its
 * deadline). False if out of memory. */
static bool back_off(request *r)
{
    start_deadline(r);
    int64_t delay = sl_redis_transient_backoff_us(++r->tries);
    int64_t left = r->deadline_us - now_us();
    if (!arm(r, delay < left ? delay : left))
        return false;
    queue_push(&r->c->backoff, r);
    return true;
}

/* ---- the map ---- */

static void refresh_soon(sl_redis_cluster *c, long delay_ms);

/* Where a request goes now: the owner of its slot, or for a keyless one
 * the first connected primary. NULL if no one serves the slot. */
static node *pick(sl_redis_cluster *c, const request *r)
{
    if (r->asking)
        return r->at;
    if (r->slot == KEYLESS) {
        /* The first ready primary, the same one while it stays
         * connected: the daemon's TIME probes then read one host's
         * clock, not a different (NTP-close, not equal) one each time.
         * One reloading its scripts (NOSCRIPT) is still connected: the
         * request waits for it there. */
        if (c->keyless && sl_redis_conn_connected(c->keyless->conn))
            return c->keyless;
        size_t count = c->map.primary_count;
        for (size_t i = 0; i < count; i++)
            if (c->nodes[i] && sl_redis_conn_ready(c->nodes[i]->conn))
                return c->keyless = c->nodes[i];
        return count ? c->nodes[0] : NULL;
    }
    uint16_t owner = c->map.owner[r->slot];
    return owner == SL_CLUSTER_NO_OWNER ? NULL : c->nodes[owner];
}

static void on_reply(redisReply *reply, void *arg);

/* ASKING's +OK, owned here when callbacks own their replies. */
static void ignore_reply(redisReply *reply, void *arg)
{
    const sl_redis_cluster *c = arg;
    if (reply && c->options.keep_replies)
        freeReplyObject(reply);
}

static bool send_now(node *n, request *r)
{
    if (r->asking &&
        !sl_redis_conn_send_formatted(n->conn, asking_cmd, sizeof asking_cmd - 1, ignore_reply,
                                      n->c))
        return false;
    if (!sl_redis_conn_send_formatted(n->conn, r->cmd, r->len, on_reply, r))
        return false;
    r->at = n;
    r->asked = r->asking;
    r->asking = false;
    r->in_tx = n->in_multi && r->tx != TX_END;
    if (r->tx)
        n->in_multi = r->tx == TX_BEGIN;
    if (r->timer)
        evtimer_del(r->timer);
    return true;
}

/* Sends r where it belongs now, or has it wait; NULL to the caller past
 * its deadline or out of memory. */
static void route(request *r)
{
    sl_redis_cluster *c = r->c;
    if (c->closing) {
        finish(r, NULL);
        return;
    }
    int64_t now;
    if (r->deadline_us && (now = now_us()) >= r->deadline_us) {
        /* Many at once when a shard is down: one line a second says so. */
        c->stats.expired++;
        if (now - c->expired_logged_us >= 1000000) {
            SL_LOG(SL_LOG_WARNING, "msg=\"redis cluster: commands gave up\" slot=%u after_ms=%d "
                   "total=%llu", r->slot, SL_CLUSTER_CHAIN_MS,
                   (unsigned long long)c->stats.expired);
            c->expired_logged_us = now;
        }
        finish(r, NULL);
        return;
    }
    node *n = pick(c, r);
    bool waits;
    if (!n) {
        refresh_soon(c, 0);
        waits = back_off(r);
    } else if (sl_redis_conn_ready(n->conn) && send_now(n, r)) {
        return;
    } else {
        waits = park(n, r);
    }
    if (!waits)
        finish(r, NULL);
}

/* The index of the primary a MOVED names, or -1 (not a primary of the
 * map, or not connectable: the refresh will tell). */
static int redirect_node(sl_redis_cluster *c, const request *r, const sl_cluster_redirect *to)
{
    const char *host = to->host[0] ? to->host : r->at->target.host;
    int index = sl_cluster_map_find(&c->map, host, to->port);
    return index >= 0 && c->nodes[index] ? index : -1;
}

static node *node_new(sl_redis_cluster *c, const sl_cluster_node *addr);

/* The node an ASK names: a primary of the map, or one outside it (an
 * empty new primary importing its first slot), connected on demand
 * (SPEC §8). NULL if none can be had (then back off, refresh). */
static node *ask_node(sl_redis_cluster *c, const request *r, const sl_cluster_redirect *to)
{
    sl_cluster_node addr = {.port = to->port};
    snprintf(addr.host, sizeof addr.host, "%s", to->host[0] ? to->host : r->at->target.host);
    size_t i;
    switch (sl_cluster_ask_target(&c->map, c->extra_addr, c->extra_count, addr.host, addr.port,
                                  &i)) {
    case SL_CLUSTER_ASK_MAP:
        return c->nodes[i];
    case SL_CLUSTER_ASK_EXTRA:
        return c->extra[i];
    case SL_CLUSTER_ASK_CONNECT:
        i = c->extra_count;
        c->extra[i] = node_new(c, &addr);
        if (!c->extra[i])
            return NULL;
        c->extra_addr[i] = addr;
        c->extra_count++;
        SL_LOG(SL_LOG_INFO, "msg=\"redis cluster: ASK to a node outside the map, connecting\" "
               "node=%s:%d", addr.host, addr.port);
        return c->extra[i];
    case SL_CLUSTER_ASK_REFUSE:
        break;
    }
    return NULL;
}

/* Goes where a redirect points, at once the first few times; a chain
 * longer than that (two nodes that disagree while a slot settles) backs
 * off between hops instead of bouncing at network speed. */
static bool follow(request *r)
{
    if (++r->redirects <= MAX_QUICK_REDIRECTS) {
        route(r);
        return true;
    }
    return back_off(r);
}

static void on_reply(redisReply *reply, void *arg)
{
    request *r = arg;
    sl_redis_cluster *c = r->c;
    sl_cluster_reply_kind kind = sl_cluster_reply_classify(reply);
    sl_cluster_redirect to;
    if (kind == SL_CLUSTER_REPLY_DONE || c->closing || r->in_tx ||
        ((kind == SL_CLUSTER_REPLY_MOVED || kind == SL_CLUSTER_REPLY_ASK) &&
         !sl_cluster_redirect_parse(reply->str, &to))) {
        finish(r, reply); /* a malformed redirect is passed on as the error it is */
        return;
    }
    /* A redirection is the router's, not the caller's: freed here when
     * callbacks own their replies (to is parsed from it already). */
    if (c->options.keep_replies)
        freeReplyObject(reply);
    start_deadline(r);
    node *n;
    int index;
    bool waits = true;
    switch (kind) {
    case SL_CLUSTER_REPLY_MOVED:
        c->stats.moved++;
        refresh_soon(c, 0);
        index = redirect_node(c, r, &to);
        if (index >= 0)
            c->map.owner[to.slot] = (uint16_t)index;
        waits = index >= 0 ? follow(r) : back_off(r);
        break;
    case SL_CLUSTER_REPLY_ASK:
        c->stats.ask++;
        n = ask_node(c, r, &to);
        if (n) {
            r->asking = true;
            r->at = n;
            waits = follow(r);
        } else {
            refresh_soon(c, 0);
            waits = back_off(r);
        }
        break;
    case SL_CLUSTER_REPLY_TRYAGAIN:
        c->stats.tryagain++;
        waits = back_off(r);
        break;
    case SL_CLUSTER_REPLY_NOSCRIPT:
        /* A node that lost its scripts (a restart, SCRIPT FLUSH, a
         * replica promoted before it saw them): load them there, and the
         * command follows when it is ready. An ASK target stays one. */
        c->stats.noscript++;
        n = r->at;
        if (sl_redis_conn_ready(n->conn))
            sl_redis_conn_reload_scripts(n->conn);
        r->asking = r->asked;
        waits = park(n, r);
        break;
    case SL_CLUSTER_REPLY_FIND_PRIMARY:
        c->stats.find_primary++;
        refresh_soon(c, 0);
        waits = back_off(r);
        break;
    case SL_CLUSTER_REPLY_DONE:
        break;
    }
    if (!waits)
        finish(r, NULL);
}

/* ---- nodes ---- */

/* Sends what waited on n, now that it is ready. */
static void flush_waiting(node *n)
{
    request *r = n->waiting.head;
    n->waiting = (req_queue){0};
    while (r) {
        request *next = r->next;
        r->queue = NULL;
        r->prev = r->next = NULL;
        route(r);
        r = next;
    }
}

static void on_node_ready(void *arg, bool ready)
{
    node *n = arg;
    sl_redis_cluster *c = n->c;
    if (!ready) {
        /* Reloading its scripts (NOSCRIPT): the same node, soon ready
         * again; what is sent there waits for it. */
        if (sl_redis_conn_connected(n->conn))
            return;
        /* Lost: the map may have changed. */
        n->in_multi = false;
        const char *why = sl_redis_conn_error(n->conn);
        if (why[0])
            snprintf(c->error, sizeof c->error, "%s:%d: %s", n->target.host, n->target.port, why);
        refresh_soon(c, 0);
        return;
    }
    if (!c->ready) {
        for (size_t i = 0; i < SCRIPT_COUNT; i++) {
            const char *sha = sl_redis_conn_sha(n->conn, sl_redis_conn_scripts[i]);
            snprintf(c->sha[i], sizeof c->sha[i], "%s", sha ? sha : "");
        }
        c->ready = true;
        SL_LOG(SL_LOG_INFO, "msg=\"redis cluster ready\" primaries=%zu", c->map.primary_count);
        /* The first set of primaries, announced with the router ready
         * (as redis_client does for one server). */
        if (c->on_nodes)
            c->on_nodes(c->arg);
        c->on_ready(c->arg, true);
    }
    flush_waiting(n);
}

static node *node_new(sl_redis_cluster *c, const sl_cluster_node *addr)
{
    node *n = calloc(1, sizeof *n);
    if (!n)
        return NULL;
    n->c = c;
    if (!sl_redis_target_node(c->target, addr->host, addr->port, &n->target)) {
        free(n);
        return NULL;
    }
    n->conn = sl_redis_conn_new(c->base, &n->target, c->metrics, on_node_ready, n);
    if (!n->conn) {
        sl_redis_target_clear(&n->target);
        free(n);
        return NULL;
    }
    sl_redis_conn_set_options(n->conn, &c->options);
    return n;
}

/* Closes n: what was sent there gets NULL (it may have run), what waited
 * there is routed again by the map now in place. */
static void node_free(node *n)
{
    if (!n)
        return;
    /* A request backing off with an ASK to n must not go to n after it
     * is freed: it goes to its slot's owner by the map then (which
     * answers with the ASK again if the migration still runs). */
    if (n->c->keyless == n)
        n->c->keyless = NULL;
    for (request *b = n->c->backoff.head; b; b = b->next)
        if (b->at == n) {
            b->asking = false;
            b->at = NULL;
        }
    request *r = n->waiting.head;
    n->waiting = (req_queue){0};
    sl_redis_conn_free(n->conn);
    sl_redis_target_clear(&n->target);
    free(n);
    while (r) {
        request *next = r->next;
        r->queue = NULL;
        r->prev = r->next = NULL;
        r->asking = false;
        route(r);
        r = next;
    }
}

/* Whether slot has the same primary (by address) in a and b. */
static bool same_owner(const sl_cluster_map *a, const sl_cluster_map *b, size_t slot)
{
    uint16_t x = a->owner[slot], y = b->owner[slot];
    if (x == SL_CLUSTER_NO_OWNER || y == SL_CLUSTER_NO_OWNER)
        return x == y;
    return a->primaries[x].port == b->primaries[y].port &&
           strcmp(a->primaries[x].host, b->primaries[y].host) == 0;
}

/* Puts map m (taken) in place: primaries kept keep their connection, new
 * ones are connected, gone ones closed. */
static void apply_map(sl_redis_cluster *c, sl_cluster_map *m)
{
    node **nodes = calloc(m->primary_count, sizeof *nodes);
    if (!nodes) {
        sl_cluster_map_clear(m);
        return;
    }
    bool changed = sl_cluster_primaries_changed(&c->map, m);
    for (size_t i = 0; i < m->primary_count; i++) {
        int old = sl_cluster_map_find(&c->map, m->primaries[i].host, m->primaries[i].port);
        size_t x;
        if (old >= 0 && c->nodes[old]) {
            nodes[i] = c->nodes[old];
            c->nodes[old] = NULL;
        } else if (sl_cluster_ask_target(&c->map, c->extra_addr, c->extra_count,
                                         m->primaries[i].host, m->primaries[i].port,
                                         &x) == SL_CLUSTER_ASK_EXTRA && c->extra[x]) {
            nodes[i] = c->extra[x]; /* an ASK target that is a primary now */
            c->extra[x] = NULL;
            changed = true;
        } else {
            nodes[i] = node_new(c, &m->primaries[i]);
            changed = true;
        }
    }
    size_t moved = 0;
    for (size_t slot = 0; slot < SL_CLUSTER_SLOTS && c->map.primary_count; slot++)
        moved += !same_owner(&c->map, m, slot);
    if (moved && c->map.primary_count)
        SL_LOG(SL_LOG_INFO, "msg=\"redis cluster slot map changed\" slots=%zu", moved);
    node **old_nodes = c->nodes;
    size_t old_count = c->map.primary_count;
    sl_cluster_map_clear(&c->map);
    c->map = *m;
    c->nodes = nodes;
    c->stats.refreshes++;
    c->map_news = changed || moved || old_count == 0;
    if (changed)
        SL_LOG(SL_LOG_INFO, "msg=\"redis cluster primaries changed\" primaries=%zu",
               c->map.primary_count);
    for (size_t i = 0; i < old_count; i++)
        node_free(old_nodes[i]);
    free(old_nodes);
    node *extra[SL_CLUSTER_EXTRA_MAX];
    size_t extra_count = c->extra_count;
    memcpy(extra, c->extra, sizeof extra);
    c->extra_count = 0;
    for (size_t i = 0; i < extra_count; i++)
        node_free(extra[i]); /* an ASK target the map does not name */
    if (changed && c->ready && c->on_nodes)
        c->on_nodes(c->arg);
}

/* ---- the probe: CLUSTER SLOTS from one address after another ---- */

static bool any_primary_down(const sl_redis_cluster *c)
{
    for (size_t i = 0; i < c->map.primary_count; i++)
        if (!c->nodes[i] || !sl_redis_conn_ready(c->nodes[i]->conn))
            return true;
    return false;
}

/* Arms the next round in delay_ms; asked: for an asked-for refresh. */
static void arm_refresh(sl_redis_cluster *c, long delay_ms, bool asked)
{
    c->next_round_asked = asked;
    struct timeval tv = {delay_ms / 1000, (delay_ms % 1000) * 1000};
    evtimer_add(c->refresh_timer, &tv);
}

/* Asks for the map in delay_ms at the latest. */
static void refresh_soon(sl_redis_cluster *c, long delay_ms)
{
    if (c->closing)
        return;
    if (c->probing) {
        c->refresh_again = true; /* this probe's answer may predate the news */
        return;
    }
    struct timeval due, now;
    delay_ms = sl_cluster_refresh_delay(delay_ms, c->gap_ms,
                                        c->round_end_us ? (now_us() - c->round_end_us) / 1000
                                                        : INT64_MAX);
    if (event_pending(c->refresh_timer, EV_TIMEOUT, &due)) {
        event_base_gettimeofday_cached(c->base, &now);
        long left_ms = (long)(due.tv_sec - now.tv_sec) * 1000 + (due.tv_usec - now.tv_usec) / 1000;
        if (left_ms <= delay_ms)
            return;
    }
    arm_refresh(c, delay_ms, true);
}

static void probe_next(sl_redis_cluster *c);

static void on_probe_auth(redisReply *reply, void *arg)
{
    sl_redis_cluster *c = arg;
    if (reply && reply->type == REDIS_REPLY_ERROR && c->probe)
        sl_redis_link_close(c->probe, "AUTH refused");
}

static void on_probe_slots(redisReply *reply, void *arg)
{
    sl_redis_cluster *c = arg;
    if (!reply || !c->probe)
        return; /* the link closed: on_probe_event goes on */
    sl_cluster_map *m = malloc(sizeof *m);
    char err[256];
    if (!m) {
        sl_redis_link_close(c->probe, "out of memory");
        return;
    }
    if (sl_cluster_map_parse(reply, c->probe_target.host, m, err, sizeof err)) {
        c->probe_done = true;
        apply_map(c, m);
        sl_redis_link_close(c->probe, "map received");
    } else {
        SL_LOG(SL_LOG_WARNING, "msg=\"redis cluster: unusable slot map\" node=%s:%d error=\"%s\"",
               c->probe_target.host, c->probe_target.port, err);
        sl_redis_link_close(c->probe, "unusable slot map");
    }
    free(m);
}

static void on_probe_event(void *arg, bool up, const char *why)
{
    sl_redis_cluster *c = arg;
    if (up) {
        const sl_redis_target *t = &c->probe_target;
        bool sent = true;
        if (t->password) {
            const char *argv[] = {"AUTH", t->username ? t->username : t->password, t->password};
            sent = sl_redis_link_send_argv(c->probe, t->username ? 3 : 2, argv, NULL,
                                           on_probe_auth, c, 0);
        }
        const char *argv[] = {"CLUSTER", "SLOTS"};
        if (!sent || !sl_redis_link_send_argv(c->probe, 2, argv, NULL, on_probe_slots, c, 0))
            sl_redis_link_close(c->probe, "cannot send CLUSTER SLOTS");
        return;
    }
    if (!c->probe_done) {
        SL_LOG(SL_LOG_WARNING, "msg=\"redis cluster: no slot map from node\" node=%s:%d error=\"%s\"",
               c->probe_target.host, c->probe_target.port, why);
        snprintf(c->probe_error, sizeof c->probe_error, "%s:%d: %s", c->probe_target.host,
                 c->probe_target.port, why);
    }
    sl_redis_link_free(c->probe); /* after the log: why is the link's */
    c->probe = NULL;
    if (!c->probe_done) {
        probe_next(c);
        return;
    }
    c->probing = false;
    c->gap_ms = sl_cluster_refresh_gap(
        c->gap_ms, c->map_news ? SL_CLUSTER_ROUND_NEWS : SL_CLUSTER_ROUND_NO_NEWS, c->round_asked);
    c->round_end_us = now_us();
    long next = any_primary_down(c) ? SL_CLUSTER_RECOVER_MS : SL_CLUSTER_REFRESH_MS;
    bool again = c->refresh_again && c->gap_ms < next;
    /* asked for during the round: after the gap */
    arm_refresh(c, again ? c->gap_ms : next, again);
    c->refresh_again = false;
}

/* Opens a link to the next address not tried in this round: the known
 * primaries that are connected (one that is not is likely down, and a
 * dead host would hold the round up for a connect timeout), then the
 * seeds. */
static void probe_next(sl_redis_cluster *c)
{
    size_t total = c->map.primary_count + c->target->seed_count;
    while (c->probe_tried < total) {
        size_t k = (c->probe_start + c->probe_tried++) % total;
        const char *host;
        int port;
        if (k < c->map.primary_count &&
            (!c->nodes[k] || !sl_redis_conn_ready(c->nodes[k]->conn)))
            continue;
        if (k < c->map.primary_count) {
            host = c->map.primaries[k].host;
            port = c->map.primaries[k].port;
        } else {
            host = c->target->seeds[k - c->map.primary_count].host;
            port = c->target->seeds[k - c->map.primary_count].port;
        }
        sl_redis_target_clear(&c->probe_target);
        if (!sl_redis_target_node(c->target, host, port, &c->probe_target))
            continue;
        char err[256];
        c->probe = sl_redis_link_open(c->base, &c->probe_target, &probe_timeouts, on_probe_event,
                                      NULL, c, err, sizeof err);
        if (c->probe)
            return;
        SL_LOG(SL_LOG_WARNING, "msg=\"redis cluster: no slot map from node\" node=%s:%d error=\"%s\"",
               host, port, err);
        snprintf(c->probe_error, sizeof c->probe_error, "%s:%d: %s", host, port, err);
    }
    /* the round failed: the CLI, waiting for ready or an error, stops */
    snprintf(c->error, sizeof c->error, "no node gave the slot map (last: %s)",
             c->probe_error[0] ? c->probe_error : "no address to ask");
    c->gap_ms = sl_cluster_refresh_gap(c->gap_ms, SL_CLUSTER_ROUND_FAILED, c->round_asked);
    c->round_end_us = now_us();
    SL_LOG(SL_LOG_WARNING, "msg=\"redis cluster: no node gave a slot map\" tried=%zu retry_ms=%ld",
           total, c->gap_ms);
    sl_counter_add(&c->metrics->errors, 1);
    c->probing = false;
    arm_refresh(c, c->gap_ms, false);
}

static void on_refresh_timer(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    sl_redis_cluster *c = arg;
    if (c->probing)
        return;
    c->probing = true;
    c->probe_done = false;
    c->map_news = false;
    c->round_asked = c->next_round_asked;
    c->refresh_again = false;
    c->probe_tried = 0;
    c->probe_error[0] = '\0';
    c->probe_start++; /* a node that failed to answer is not always asked first */
    probe_next(c);
}

/* ---- the interface ---- */

sl_redis_cluster *sl_redis_cluster_new(struct event_base *base, const sl_redis_target *target,
                                       sl_redis_metrics *metrics,
                                       sl_redis_client_ready_fn on_ready,
                                       sl_redis_client_nodes_fn on_nodes, void *arg)
{
    sl_redis_cluster *c = calloc(1, sizeof *c);
    if (!c)
        return NULL;
    c->base = base;
    c->target = target;
    c->metrics = metrics ? metrics : &c->own_metrics;
    c->on_ready = on_ready;
    c->on_nodes = on_nodes;
    c->arg = arg;
    c->gap_ms = SL_CLUSTER_REFRESH_MIN_MS;
    c->probe_start = (size_t)-1; /* the first round starts at the first seed */
    for (size_t s = 0; s < SL_CLUSTER_SLOTS; s++)
        c->map.owner[s] = SL_CLUSTER_NO_OWNER;
    c->refresh_timer = evtimer_new(base, on_refresh_timer, c);
    if (!c->refresh_timer) {
        free(c);
        return NULL;
    }
    if (target->tls && target->tls_options.no_verify)
        SL_LOG(SL_LOG_WARNING, "msg=\"redis_tls.verify is false: the Redis servers' certificates "
                               "are NOT checked, anyone on the path can read and change every "
                               "job\"");
    arm_refresh(c, 0, false);
    return c;
}

void sl_redis_cluster_free(sl_redis_cluster *c)
{
    if (!c)
        return;
    c->closing = true;
    sl_redis_link_free(c->probe);
    sl_redis_target_clear(&c->probe_target);
    event_free(c->refresh_timer);
    for (size_t i = 0; i < c->map.primary_count; i++)
        node_free(c->nodes[i]); /* closing: what waited gets NULL too */
    free(c->nodes);
    for (size_t i = 0; i < c->extra_count; i++)
        node_free(c->extra[i]);
    while (c->backoff.head)
        finish(c->backoff.head, NULL);
    sl_cluster_map_clear(&c->map);
    free(c);
}

void sl_redis_cluster_set_options(sl_redis_cluster *c, const sl_redis_conn_options *options)
{
    c->options = *options;
}

const char *sl_redis_cluster_error(const sl_redis_cluster *c)
{
    return c->error;
}

bool sl_redis_cluster_ready(const sl_redis_cluster *c)
{
    return c->ready;
}

const char *sl_redis_cluster_sha(const sl_redis_cluster *c, const char *name)
{
    if (!c->ready)
        return NULL;
    for (size_t i = 0; i < SCRIPT_COUNT; i++)
        if (strcmp(sl_redis_conn_scripts[i], name) == 0)
            return c->sha[i][0] ? c->sha[i] : NULL;
    return NULL;
}

/* Whether a command opens (MULTI) or closes (EXEC, DISCARD) a transaction. */
static unsigned char tx_role(int argc, const char **argv, const size_t *argvlen)
{
    if (argc < 1)
        return 0;
    size_t len = argvlen ? argvlen[0] : strlen(argv[0]);
    if (len == 5 && strncasecmp(argv[0], "MULTI", 5) == 0)
        return TX_BEGIN;
    if ((len == 4 && strncasecmp(argv[0], "EXEC", 4) == 0) ||
        (len == 7 && strncasecmp(argv[0], "DISCARD", 7) == 0))
        return TX_END;
    return 0;
}

bool sl_redis_cluster_send(sl_redis_cluster *c, const char *key, int argc, const char **argv,
                           const size_t *argvlen, sl_redis_reply_fn fn, void *arg)
{
    if (!c->ready || c->closing)
        return false;
    unsigned slot = key ? sl_cluster_key_slot(key, strlen(key)) : KEYLESS;
    request *r = request_new(c, slot, argc, argv, argvlen, fn, arg);
    if (!r)
        return false;
    r->tx = tx_role(argc, argv, argvlen);
    node *n = pick(c, r);
    bool ok;
    if (n && sl_redis_conn_ready(n->conn))
        ok = send_now(n, r);
    else if (n)
        ok = park(n, r);
    else {
        refresh_soon(c, 0);
        ok = back_off(r);
    }
    if (!ok)
        request_free(r);
    return ok;
}

void sl_redis_cluster_reload_scripts(sl_redis_cluster *c, const char *key)
{
    if (!c->ready)
        return;
    uint16_t owner = c->map.owner[sl_cluster_key_slot(key, strlen(key))];
    if (owner != SL_CLUSTER_NO_OWNER && c->nodes[owner] &&
        sl_redis_conn_ready(c->nodes[owner]->conn))
        sl_redis_conn_reload_scripts(c->nodes[owner]->conn);
}

size_t sl_redis_cluster_primary_count(const sl_redis_cluster *c)
{
    return c->map.primary_count;
}

const sl_redis_target *sl_redis_cluster_primary(const sl_redis_cluster *c, size_t i)
{
    return i < c->map.primary_count && c->nodes[i] ? &c->nodes[i]->target : NULL;
}

bool sl_redis_cluster_send_to(sl_redis_cluster *c, size_t i, int argc, const char **argv,
                              const size_t *argvlen, sl_redis_reply_fn fn, void *arg)
{
    if (i >= c->map.primary_count || !c->nodes[i] || c->closing)
        return false;
    return sl_redis_conn_send(c->nodes[i]->conn, argc, argv, argvlen, fn, arg);
}

sl_redis_cluster_stats sl_redis_cluster_stats_get(const sl_redis_cluster *c)
{
    return c->stats;
}
