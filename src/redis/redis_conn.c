/* redis_conn.c - see redis_conn.h. The transport (TCP, unix socket or
 * TLS, with its connect, handshake and reply deadlines) is redis_link's;
 * this file keeps a link usable: backoff, AUTH, SELECT, SCRIPT LOAD.
 * With Sentinel (redis-sentinel://) each connect first asks the
 * sentinels for the primary (sentinel_client.c), confirms it with ROLE
 * before loading the scripts, and drops the link when the primary moves
 * (+switch-master) or turns replica under it (READONLY): the reconnect
 * that follows asks again. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/log.h"
#include "base/monotonic.h"
#include "job/backoff.h"
#include "redis/lua_scripts.h"
#include "redis/redis_conn.h"
#include "redis/redis_link.h"
#include "redis/sentinel.h"
#include "redis/sentinel_client.h"

/* The reconnect delay: full jitter under a cap doubling from MIN to MAX
 * with each failure (sl_backoff_ms). A connection counts as a success,
 * and the cap starts over, only once it stayed usable STABLE_MS: a Redis
 * that accepts then drops connections is retried ever more slowly. */
#define RECONNECT_MIN_MS 100
#define RECONNECT_MAX_MS 5000
#define RECONNECT_STABLE_MS 1000
/* Replies that stop coming mean a dead peer TCP cannot see. */
static const sl_redis_link_timeouts link_timeouts = {
    .connect_ms = 5000, .handshake_ms = 5000, .reply_ms = 5000};

const char *const sl_redis_conn_scripts[SL_REDIS_CONN_SCRIPTS] = {"claim", "ack", "reslot"};
#define SCRIPT_COUNT ((size_t)SL_REDIS_CONN_SCRIPTS)

/* The argument of a setup command's reply: which step, on which connection. */
typedef struct setup_step {
    struct sl_redis_conn *conn;
    const char *what; /* "AUTH", "SELECT" */
} setup_step;

struct sl_redis_conn {
    struct event_base *base;
    const sl_redis_target *target;
    sl_redis_ready_fn on_ready;
    void *arg;
    sl_redis_link *link;  /* NULL while disconnected */
    bool connected;
    bool ready;
    char sha[SCRIPT_COUNT][41];
    size_t scripts_loaded;
    unsigned script_generation; /* replies of an older load are ignored */
    struct event *reconnect_timer;
    int failures;       /* for the backoff: sl_backoff_failures */
    int64_t ready_us;   /* when this connection became usable; 0: not yet */
    uint64_t rng;       /* the backoff's jitter */
    long backoff_ms;    /* the delay of the reconnect scheduled last */
    sl_redis_metrics *metrics; /* the caller's, or own_metrics */
    sl_redis_metrics own_metrics;
    setup_step auth_step, select_step;
    sl_sentinels *sentinels; /* Sentinel: who names the primary; else NULL */
    sl_redis_target node;    /* Sentinel: the primary they named (zeroed before) */
    sl_redis_conn_options options;
    char error[256]; /* sl_redis_conn_error */
};

bool sl_redis_is_noscript(const redisReply *reply)
{
    return reply && reply->type == REDIS_REPLY_ERROR && strncmp(reply->str, "NOSCRIPT", 8) == 0;
}

static void set_ready(sl_redis_conn *conn, bool ready)
{
    if (conn->ready == ready)
        return;
    conn->ready = ready;
    conn->on_ready(conn->arg, ready);
}

/* The attempt failed or the connection ended: the next one after the
 * backoff (conn->backoff_ms, for the log lines that follow). */
static void schedule_reconnect(sl_redis_conn *conn)
{
    int64_t up_ms = conn->ready_us ? (sl_monotonic_us() - conn->ready_us) / 1000 : -1;
    conn->ready_us = 0;
    conn->failures = sl_backoff_failures(conn->failures, up_ms, RECONNECT_STABLE_MS);
    conn->backoff_ms = (long)sl_backoff_ms(conn->failures, RECONNECT_MIN_MS, RECONNECT_MAX_MS,
                                           sl_random_u64(&conn->rng));
    struct timeval tv = {conn->backoff_ms / 1000, (conn->backoff_ms % 1000) * 1000};
    evtimer_add(conn->reconnect_timer, &tv);
}

/* Usable now: how long it stays so decides the next backoff. */
static void mark_ready(sl_redis_conn *conn)
{
    conn->ready_us = sl_monotonic_us();
    set_ready(conn, true);
}

static void drop_connection(sl_redis_conn *conn, const char *why);

/* Every reply passes here before its callback. A primary the sentinels
 * demoted answers writes with READONLY: the command is refused (callers
 * treat it as a passing state, redis_errors.h) and the connection goes,
 * so the reconnect asks the sentinels for the new primary. */
static void count_reply(void *arg, const redisReply *reply)
{
    sl_redis_conn *conn = arg;
    if (reply->type == REDIS_REPLY_ERROR) {
        sl_counter_add(&conn->metrics->errors, 1);
        if (conn->sentinels && sl_sentinel_reply_readonly(reply))
            drop_connection(conn, "the primary turned replica (READONLY)");
    }
}

static bool send_internal(sl_redis_conn *conn, int argc, const char **argv, const size_t *argvlen,
                          sl_redis_reply_fn fn, void *arg)
{
    if (!conn->link || !conn->connected)
        return false;
    return sl_redis_link_send_argv(conn->link, argc, argv, argvlen, fn, arg, 0);
}

bool sl_redis_conn_send(sl_redis_conn *conn, int argc, const char **argv, const size_t *argvlen,
                        sl_redis_reply_fn fn, void *arg)
{
    if (!conn->ready || !conn->link || !conn->connected)
        return false;
    return sl_redis_link_send_argv(conn->link, argc, argv, argvlen, fn, arg,
                                   conn->options.keep_replies ? SL_LINK_KEEP_REPLY : 0);
}

bool sl_redis_conn_send_formatted(sl_redis_conn *conn, const char *cmd, size_t len,
                                  sl_redis_reply_fn fn, void *arg)
{
    if (!conn->ready || !conn->link || !conn->connected)
        return false;
    return sl_redis_link_send_formatted(conn->link, cmd, len, fn, arg,
                                        conn->options.keep_replies ? SL_LINK_KEEP_REPLY : 0);
}

/* A setup step that failed (AUTH refused, SELECT out of range, a server
 * still LOADING its dump, ...) leaves a connection that will never be
 * ready: drop it, and on_link_event reconnects after the backoff, which
 * grows until a setup succeeds. Safe inside a reply callback: the link
 * closes on the loop's next turn. */
static void drop_connection(sl_redis_conn *conn, const char *why)
{
    if (conn->link)
        sl_redis_link_close(conn->link, why);
}

/* The same for a step the server refused: why is "<step> failed: <its
 * error>", the words sl_redis_conn_error gives the CLI. */
static void drop_refused(sl_redis_conn *conn, const char *step, const redisReply *reply)
{
    char why[256];
    snprintf(why, sizeof why, "%s failed: %s", step,
             reply->type == REDIS_REPLY_ERROR ? reply->str : "unexpected reply");
    drop_connection(conn, why);
}
typedef struct script_load {
    sl_redis_conn *conn;
    size_t index;
    unsigned generation;
} script_load;

static void on_script_loaded(redisReply *reply, void *arg)
{
    script_load *load = arg;
    sl_redis_conn *conn = load->conn;
    if (load->generation == conn->script_generation) {
        if (reply && reply->type == REDIS_REPLY_STRING && reply->len == 40) {
            memcpy(conn->sha[load->index], reply->str, 41);
            if (++conn->scripts_loaded == SCRIPT_COUNT) {
                SL_LOG(SL_LOG_INFO, "msg=\"redis ready\" scripts=%zu", SCRIPT_COUNT);
                mark_ready(conn);
            }
        } else if (reply) {
            SL_LOG(SL_LOG_ERROR, "msg=\"SCRIPT LOAD failed, reconnecting\" script=%s error=\"%s\"",
                   sl_redis_conn_scripts[load->index], reply->type == REDIS_REPLY_ERROR ? reply->str : "?");
            drop_refused(conn, "SCRIPT LOAD", reply);
        }
    }
    free(load);
}

void sl_redis_conn_reload_scripts(sl_redis_conn *conn)
{
    set_ready(conn, false);
    conn->scripts_loaded = 0;
    conn->script_generation++;
    for (size_t i = 0; i < SCRIPT_COUNT; i++) {
        const sl_lua_script *script = sl_lua_script_find(sl_redis_conn_scripts[i]);
        script_load *load = malloc(sizeof *load);
        if (load)
            *load = (script_load){conn, i, conn->script_generation};
        const char *argv[] = {"SCRIPT", "LOAD", script->source};
        size_t argvlen[] = {6, 4, script->length};
        if (!load || !send_internal(conn, 3, argv, argvlen, on_script_loaded, load)) {
            /* A script that was never sent leaves the connection never
             * ready: drop it, and the backoff connects and loads again. */
            free(load);
            drop_connection(conn, "cannot send SCRIPT LOAD");
            return;
        }
    }
}


static void on_setup_reply(redisReply *reply, void *arg)
{
    setup_step *step = arg;
    if (reply && reply->type == REDIS_REPLY_ERROR) {
        SL_LOG(SL_LOG_ERROR, "msg=\"redis %s failed, reconnecting\" error=\"%s\"", step->what,
               reply->str);
        drop_refused(step->conn, step->what, reply);
    }
}

/* Without scripts to load, the reply to this PING, which comes after
 * those of AUTH and SELECT, says the setup is over. */
static void on_setup_done(redisReply *reply, void *arg)
{
    sl_redis_conn *conn = arg;
    if (reply && reply->type != REDIS_REPLY_ERROR && sl_redis_link_up(conn->link)) {
        /* (not up: a setup step failed and closes it) */
        mark_ready(conn);
    } else if (reply && reply->type == REDIS_REPLY_ERROR) {
        drop_refused(conn, "PING", reply);
    }
}

/* The last step of a setup: the daemon's scripts, or (the CLI, without
 * them) a PING whose reply says AUTH and SELECT went through. */
static void finish_setup(sl_redis_conn *conn)
{
    if (!conn->options.no_scripts) {
        sl_redis_conn_reload_scripts(conn);
        return;
    }
    const char *argv[] = {"PING"};
    if (!send_internal(conn, 1, argv, NULL, on_setup_done, conn))
        drop_connection(conn, "cannot send PING");
}

/* The node the sentinels named, as messages show it. */
static void node_name(const sl_redis_conn *conn, char *out, size_t out_size)
{
    sl_sentinel_addr_format(conn->node.host, conn->node.port, out, out_size);
}

static void on_role(redisReply *reply, void *arg)
{
    sl_redis_conn *conn = arg;
    if (!reply)
        return; /* the link went (a setup step failed): on_link_event says why */
    char err[160], name[SL_HOST_MAX + 16], why[SL_HOST_MAX + 200];
    node_name(conn, name, sizeof name);
    sl_sentinel_role role = sl_sentinel_parse_role(reply, err, sizeof err);
    if (role == SL_ROLE_MASTER) {
        finish_setup(conn);
        return;
    }
    if (role == SL_ROLE_REPLICA)
        snprintf(why, sizeof why, "%s is a replica, not the primary", name);
    else if (role == SL_ROLE_SENTINEL)
        snprintf(why, sizeof why, "%s is a sentinel, not the primary", name);
    else
        snprintf(why, sizeof why, "%s: ROLE failed: %s", name, err);
    if (role != SL_ROLE_BAD) /* a node that answers it is not the primary: its sentinel is stale */
        sl_sentinels_demote_named(conn->sentinels);
    drop_connection(conn, why);
}

static void on_connected(sl_redis_conn *conn)
{
    conn->connected = true;
    const sl_redis_target *t = conn->target;
    if (t->password) {
        if (t->username) {
            const char *argv[] = {"AUTH", t->username, t->password};
            send_internal(conn, 3, argv, NULL, on_setup_reply, &conn->auth_step);
        } else {
            const char *argv[] = {"AUTH", t->password};
            send_internal(conn, 2, argv, NULL, on_setup_reply, &conn->auth_step);
        }
    }
    if (t->db != 0) {
        char db[16];
        snprintf(db, sizeof db, "%d", t->db);
        const char *argv[] = {"SELECT", db};
        send_internal(conn, 2, argv, NULL, on_setup_reply, &conn->select_step);
    }
    if (conn->sentinels) {
        /* The address may be stale (a failover under way): only a node
         * that says it is the primary gets the scripts and the work. */
        const char *argv[] = {"ROLE"};
        if (!send_internal(conn, 1, argv, NULL, on_role, conn))
            drop_connection(conn, "cannot send ROLE");
        return;
    }
    finish_setup(conn);
}

/* The link is up, or gone (its pending callbacks have had NULL). A link
 * that never came up is a failed connect; one that did is a lost
 * connection. Either way the next attempt waits for the backoff. */
static void on_link_event(void *arg, bool up, const char *why)
{
    sl_redis_conn *conn = arg;
    if (up) {
        on_connected(conn);
        return;
    }
    bool was_connected = conn->connected;
    conn->connected = false;
    sl_counter_add(&conn->metrics->errors, 1);
    schedule_reconnect(conn);
    if (was_connected) {
        sl_counter_add(&conn->metrics->reconnects, 1);
        SL_LOG(SL_LOG_WARNING,
               "msg=\"redis connection lost\" error=\"%s\" retry_ms=%ld failures=%d",
               why, conn->backoff_ms, conn->failures);
    } else {
        SL_LOG(SL_LOG_WARNING, "msg=\"redis connect failed\" error=\"%s\" retry_ms=%ld failures=%d",
               why, conn->backoff_ms, conn->failures);
    }
    snprintf(conn->error, sizeof conn->error, "%s", why);
    sl_redis_link_free(conn->link); /* after the log and the copy: why is the link's */
    conn->link = NULL;
    set_ready(conn, false);
}

static void open_link(sl_redis_conn *conn, const sl_redis_target *node)
{
    char err[256];
    conn->link = sl_redis_link_open(conn->base, node, &link_timeouts, on_link_event,
                                    count_reply, conn, err, sizeof err);
    if (!conn->link) {
        schedule_reconnect(conn);
        SL_LOG(SL_LOG_WARNING, "msg=\"redis connect failed\" error=\"%s\" retry_ms=%ld failures=%d",
               err, conn->backoff_ms, conn->failures);
        snprintf(conn->error, sizeof conn->error, "%s", err);
        sl_counter_add(&conn->metrics->errors, 1);
    }
}

/* The sentinels answered: connect to the primary they named, or wait for
 * the backoff and ask again. */
static void on_primary(void *arg, const sl_sentinel_addr *primary, const char *why)
{
    sl_redis_conn *conn = arg;
    if (!primary) {
        schedule_reconnect(conn);
        SL_LOG(SL_LOG_WARNING,
               "msg=\"redis primary unknown\" error=\"%s\" retry_ms=%ld failures=%d",
               why, conn->backoff_ms, conn->failures);
        snprintf(conn->error, sizeof conn->error, "cannot find the primary: %s", why);
        sl_counter_add(&conn->metrics->errors, 1);
        return;
    }
    if (why)
        SL_LOG(SL_LOG_WARNING, "msg=\"some sentinels did not answer\" error=\"%s\"", why);
    sl_redis_target_clear(&conn->node); /* no link uses it now */
    if (!sl_redis_target_node(conn->target, primary->host, primary->port, &conn->node)) {
        schedule_reconnect(conn);
        SL_LOG(SL_LOG_WARNING,
               "msg=\"redis connect failed\" error=\"out of memory\" retry_ms=%ld failures=%d",
               conn->backoff_ms, conn->failures);
        snprintf(conn->error, sizeof conn->error, "out of memory");
        return;
    }
    char name[SL_HOST_MAX + 16];
    node_name(conn, name, sizeof name);
    SL_LOG(SL_LOG_INFO, "msg=\"sentinels name the primary\" primary=%s master_name=%s", name,
           conn->target->master_name);
    open_link(conn, &conn->node);
}

static void connect_now(evutil_socket_t fd, short kind, void *arg)
{
    (void)fd;
    (void)kind;
    sl_redis_conn *conn = arg;
    if (!conn->sentinels) {
        open_link(conn, conn->target);
        return;
    }
    if (!sl_sentinels_resolve(conn->sentinels, on_primary, conn)) {
        /* One under way cannot be, so memory ran out: the backoff retries. */
        snprintf(conn->error, sizeof conn->error, "out of memory");
        sl_counter_add(&conn->metrics->errors, 1);
        schedule_reconnect(conn);
    }
}

/* +switch-master: the primary moved. A link to the old one goes (Redis
 * also disconnects clients of a node it reconfigures, but a link that is
 * only writing would notice late); waiting for the backoff, connect now. */
static void on_switch(void *arg, const sl_sentinel_addr *to)
{
    sl_redis_conn *conn = arg;
    char name[SL_HOST_MAX + 16];
    sl_sentinel_addr_format(to->host, to->port, name, sizeof name);
    if (conn->link) {
        if (conn->node.host && strcmp(conn->node.host, to->host) == 0 && conn->node.port == to->port)
            return; /* already there */
        SL_LOG(SL_LOG_INFO, "msg=\"sentinels moved the primary, reconnecting\" primary=%s", name);
        drop_connection(conn, "the primary moved (+switch-master)");
        return;
    }
    if (evtimer_pending(conn->reconnect_timer, NULL)) {
        SL_LOG(SL_LOG_INFO, "msg=\"sentinels moved the primary, connecting\" primary=%s", name);
        conn->failures = 0; /* news, not a failure: the next backoff starts over */
        struct timeval now = {0, 0};
        evtimer_add(conn->reconnect_timer, &now);
    }
}

sl_redis_conn *sl_redis_conn_new(struct event_base *base, const sl_redis_target *target,
                                 sl_redis_metrics *metrics, sl_redis_ready_fn on_ready, void *arg)
{
    sl_redis_conn *conn = calloc(1, sizeof *conn);
    if (!conn)
        return NULL;
    conn->metrics = metrics ? metrics : &conn->own_metrics;
    conn->base = base;
    conn->target = target;
    conn->on_ready = on_ready;
    conn->arg = arg;
    conn->rng = (uint64_t)sl_monotonic_us() ^ (uint64_t)(uintptr_t)conn; /* jitter, not secrecy */
    conn->auth_step = (setup_step){conn, "AUTH"};
    conn->select_step = (setup_step){conn, "SELECT"};
    conn->reconnect_timer = evtimer_new(base, connect_now, conn);
    if (!conn->reconnect_timer) {
        sl_redis_conn_free(conn);
        return NULL;
    }
    if (target->mode == SL_REDIS_SENTINEL) {
        conn->sentinels = sl_sentinels_new(base, target, SL_SENTINEL_TIMEOUT_MS);
        if (!conn->sentinels) {
            sl_redis_conn_free(conn);
            return NULL;
        }
        sl_sentinels_watch(conn->sentinels, on_switch, conn);
    }
    if (target->tls && target->tls_options.no_verify)
        SL_LOG(SL_LOG_WARNING, "msg=\"redis_tls.verify is false: the Redis server's certificate "
                               "is NOT checked, anyone on the path can read and change every "
                               "job\"");
    struct timeval now = {0, 0};
    evtimer_add(conn->reconnect_timer, &now);
    return conn;
}

void sl_redis_conn_set_options(sl_redis_conn *conn, const sl_redis_conn_options *options)
{
    conn->options = *options;
}

void sl_redis_conn_free(sl_redis_conn *conn)
{
    if (!conn)
        return;
    sl_redis_link_free(conn->link); /* pending callbacks get NULL replies */
    if (conn->reconnect_timer)
        event_free(conn->reconnect_timer);
    sl_sentinels_free(conn->sentinels);
    sl_redis_target_clear(&conn->node);
    free(conn);
}

bool sl_redis_conn_ready(const sl_redis_conn *conn)
{
    return conn->ready;
}

bool sl_redis_conn_connected(const sl_redis_conn *conn)
{
    return conn->link && conn->connected;
}

const char *sl_redis_conn_sha(const sl_redis_conn *conn, const char *name)
{
    if (!conn->ready)
        return NULL;
    for (size_t i = 0; i < SCRIPT_COUNT; i++)
        if (strcmp(sl_redis_conn_scripts[i], name) == 0)
            return conn->sha[i][0] ? conn->sha[i] : NULL; /* "": never loaded (no_scripts) */
    return NULL;
}


const char *sl_redis_conn_error(const sl_redis_conn *conn)
{
    return conn->error;
}

const sl_redis_target *sl_redis_conn_node(const sl_redis_conn *conn)
{
    return conn->sentinels ? &conn->node : conn->target;
}
