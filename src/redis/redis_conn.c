/* redis_conn.c - see redis_conn.h. The transport (TCP, unix socket or
 * TLS, with its connect, handshake and reply deadlines) is redis_link's;
 * this file keeps a link usable: backoff, AUTH, SELECT, SCRIPT LOAD. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/log.h"
#include "redis/lua_scripts.h"
#include "redis/redis_conn.h"
#include "redis/redis_link.h"

#define RECONNECT_MIN_MS 100
#define RECONNECT_MAX_MS 5000
/* Replies that stop coming mean a dead peer TCP cannot see. */
static const sl_redis_link_timeouts link_timeouts = {
    .connect_ms = 5000, .handshake_ms = 5000, .reply_ms = 5000};

static const char *const daemon_scripts[] = {"claim", "ack"};
#define SCRIPT_COUNT (sizeof daemon_scripts / sizeof daemon_scripts[0])

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
    long backoff_ms;
    sl_redis_metrics *metrics; /* the caller's, or own_metrics */
    sl_redis_metrics own_metrics;
    setup_step auth_step, select_step;
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

static void schedule_reconnect(sl_redis_conn *conn)
{
    struct timeval tv = {conn->backoff_ms / 1000, (conn->backoff_ms % 1000) * 1000};
    evtimer_add(conn->reconnect_timer, &tv);
    conn->backoff_ms = conn->backoff_ms * 2 > RECONNECT_MAX_MS ? RECONNECT_MAX_MS : conn->backoff_ms * 2;
}

/* Every reply passes here before its callback. */
static void count_reply(void *arg, const redisReply *reply)
{
    sl_redis_conn *conn = arg;
    if (reply->type == REDIS_REPLY_ERROR)
        sl_counter_add(&conn->metrics->errors, 1);
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
    if (!conn->ready)
        return false;
    return send_internal(conn, argc, argv, argvlen, fn, arg);
}

bool sl_redis_conn_send_formatted(sl_redis_conn *conn, const char *cmd, size_t len,
                                  sl_redis_reply_fn fn, void *arg)
{
    if (!conn->ready || !conn->link)
        return false;
    return sl_redis_link_send_formatted(conn->link, cmd, len, fn, arg, 0);
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
                conn->backoff_ms = RECONNECT_MIN_MS;
                set_ready(conn, true);
            }
        } else if (reply) {
            SL_LOG(SL_LOG_ERROR, "msg=\"SCRIPT LOAD failed, reconnecting\" script=%s error=\"%s\"",
                   daemon_scripts[load->index], reply->type == REDIS_REPLY_ERROR ? reply->str : "?");
            drop_connection(conn, "SCRIPT LOAD failed");
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
        const sl_lua_script *script = sl_lua_script_find(daemon_scripts[i]);
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
        drop_connection(step->conn, "setup failed");
    }
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
    sl_redis_conn_reload_scripts(conn);
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
    if (was_connected) {
        sl_counter_add(&conn->metrics->reconnects, 1);
        SL_LOG(SL_LOG_WARNING, "msg=\"redis connection lost\" error=\"%s\" retry_ms=%ld", why,
               conn->backoff_ms);
    } else {
        SL_LOG(SL_LOG_WARNING, "msg=\"redis connect failed\" error=\"%s\" retry_ms=%ld", why,
               conn->backoff_ms);
    }
    sl_redis_link_free(conn->link); /* after the log: why is the link's */
    conn->link = NULL;
    set_ready(conn, false);
    schedule_reconnect(conn);
}

static void connect_now(evutil_socket_t fd, short kind, void *arg)
{
    (void)fd;
    (void)kind;
    sl_redis_conn *conn = arg;
    char err[256];
    conn->link = sl_redis_link_open(conn->base, conn->target, &link_timeouts, on_link_event,
                                    count_reply, conn, err, sizeof err);
    if (!conn->link) {
        SL_LOG(SL_LOG_WARNING, "msg=\"redis connect failed\" error=\"%s\" retry_ms=%ld", err,
               conn->backoff_ms);
        sl_counter_add(&conn->metrics->errors, 1);
        schedule_reconnect(conn);
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
    conn->backoff_ms = RECONNECT_MIN_MS;
    conn->auth_step = (setup_step){conn, "AUTH"};
    conn->select_step = (setup_step){conn, "SELECT"};
    conn->reconnect_timer = evtimer_new(base, connect_now, conn);
    if (!conn->reconnect_timer) {
        sl_redis_conn_free(conn);
        return NULL;
    }
    if (target->tls && target->tls_options.no_verify)
        SL_LOG(SL_LOG_WARNING, "msg=\"redis_tls.verify is false: the Redis server's certificate "
                               "is NOT checked, anyone on the path can read and change every "
                               "job\"");
    struct timeval now = {0, 0};
    evtimer_add(conn->reconnect_timer, &now);
    return conn;
}

void sl_redis_conn_free(sl_redis_conn *conn)
{
    if (!conn)
        return;
    sl_redis_link_free(conn->link); /* pending callbacks get NULL replies */
    if (conn->reconnect_timer)
        event_free(conn->reconnect_timer);
    free(conn);
}

bool sl_redis_conn_ready(const sl_redis_conn *conn)
{
    return conn->ready;
}

const char *sl_redis_conn_sha(const sl_redis_conn *conn, const char *name)
{
    if (!conn->ready)
        return NULL;
    for (size_t i = 0; i < SCRIPT_COUNT; i++)
        if (strcmp(daemon_scripts[i], name) == 0)
            return conn->sha[i];
    return NULL;
}


const sl_redis_target *sl_redis_conn_node(const sl_redis_conn *conn)
{
    return conn->target;
}
