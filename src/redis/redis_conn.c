/* redis_conn.c - see redis_conn.h. */
#include <stdlib.h>
#include <string.h>

#include <hiredis/adapters/libevent.h>
#include <hiredis/async.h>

#include "base/log.h"
#include "redis/lua_scripts.h"
#include "base/monotonic.h"
#include "redis/redis_conn.h"

#define RECONNECT_MIN_MS 100
#define RECONNECT_MAX_MS 5000
#define REPLY_TIMEOUT_US (5 * 1000000)
#define WATCHDOG_MS 500

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
    redisAsyncContext *ac;  /* NULL while disconnected */
    bool connected;
    bool ready;
    char sha[SCRIPT_COUNT][41];
    size_t scripts_loaded;
    unsigned script_generation; /* replies of an older load are ignored */
    struct event *reconnect_timer;
    struct event *watchdog;
    long backoff_ms;
    size_t pending;         /* commands sent, not yet answered */
    int64_t last_reply_us;
    sl_redis_metrics *metrics; /* the caller's, or own_metrics */
    sl_redis_metrics own_metrics;
    bool closing; /* freeing: the disconnect is ours, do not reconnect */
    setup_step auth_step, select_step;
};

typedef struct pending_call {
    sl_redis_conn *conn;
    sl_redis_reply_fn fn;
    void *arg;
} pending_call;

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

/* Every reply passes here: it keeps the watchdog's clock and the count. */
static void on_reply(redisAsyncContext *ac, void *r, void *privdata)
{
    (void)ac;
    pending_call *call = privdata;
    sl_redis_conn *conn = call->conn;
    conn->pending--;
    conn->last_reply_us = sl_monotonic_us();
    if (r && ((redisReply *)r)->type == REDIS_REPLY_ERROR)
        sl_counter_add(&conn->metrics->errors, 1);
    call->fn(r, call->arg);
    free(call);
}

static bool send_internal(sl_redis_conn *conn, int argc, const char **argv, const size_t *argvlen,
                          sl_redis_reply_fn fn, void *arg)
{
    if (!conn->ac || !conn->connected)
        return false;
    pending_call *call = malloc(sizeof *call);
    if (!call)
        return false;
    *call = (pending_call){conn, fn, arg};
    if (conn->pending == 0)
        conn->last_reply_us = sl_monotonic_us(); /* the reply clock starts now */
    if (redisAsyncCommandArgv(conn->ac, on_reply, call, argc, argv, argvlen) != REDIS_OK) {
        free(call);
        return false;
    }
    conn->pending++;
    return true;
}

bool sl_redis_conn_send(sl_redis_conn *conn, int argc, const char **argv, const size_t *argvlen,
                        sl_redis_reply_fn fn, void *arg)
{
    if (!conn->ready)
        return false;
    return send_internal(conn, argc, argv, argvlen, fn, arg);
}

/* A setup step that failed (AUTH refused, SELECT out of range, a server
 * still LOADING its dump, ...) leaves a connection that will never be
 * ready: drop it, and on_disconnect reconnects after the backoff, which
 * grows until a setup succeeds. Safe inside a hiredis callback: hiredis
 * disconnects once the replies still due have come. */
static void drop_connection(sl_redis_conn *conn)
{
    if (conn->ac && !conn->closing)
        redisAsyncDisconnect(conn->ac);
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
            drop_connection(conn);
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
        if (!load)
            return;
        *load = (script_load){conn, i, conn->script_generation};
        const char *argv[] = {"SCRIPT", "LOAD", script->source};
        size_t argvlen[] = {6, 4, script->length};
        if (!send_internal(conn, 3, argv, argvlen, on_script_loaded, load))
            free(load);
    }
}


static void on_setup_reply(redisReply *reply, void *arg)
{
    setup_step *step = arg;
    if (reply && reply->type == REDIS_REPLY_ERROR) {
        SL_LOG(SL_LOG_ERROR, "msg=\"redis %s failed, reconnecting\" error=\"%s\"", step->what,
               reply->str);
        drop_connection(step->conn);
    }
}

static void on_connect(const redisAsyncContext *ac, int status)
{
    sl_redis_conn *conn = ac->data;
    if (status != REDIS_OK) {
        SL_LOG(SL_LOG_WARNING, "msg=\"redis connect failed\" error=\"%s\" retry_ms=%ld", ac->errstr,
               conn->backoff_ms);
        sl_counter_add(&conn->metrics->errors, 1);
        conn->ac = NULL; /* hiredis frees it after this callback */
        schedule_reconnect(conn);
        return;
    }
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

static void on_disconnect(const redisAsyncContext *ac, int status)
{
    sl_redis_conn *conn = ac->data;
    (void)status;
    if (conn->closing)
        return;
    conn->ac = NULL; /* hiredis frees it after this callback */
    conn->connected = false;
    conn->pending = 0;
    sl_counter_add(&conn->metrics->reconnects, 1);
    sl_counter_add(&conn->metrics->errors, 1);
    SL_LOG(SL_LOG_WARNING, "msg=\"redis connection lost\" error=\"%s\" retry_ms=%ld",
           ac->errstr[0] ? ac->errstr : "closed", conn->backoff_ms);
    set_ready(conn, false);
    schedule_reconnect(conn);
}

static void connect_now(evutil_socket_t fd, short kind, void *arg)
{
    (void)fd;
    (void)kind;
    sl_redis_conn *conn = arg;
    const sl_redis_target *t = conn->target;
    redisAsyncContext *ac = t->unix_path ? redisAsyncConnectUnix(t->unix_path)
                                         : redisAsyncConnect(t->host, t->port);
    if (!ac || ac->err) {
        SL_LOG(SL_LOG_WARNING, "msg=\"redis connect failed\" error=\"%s\" retry_ms=%ld",
               ac ? ac->errstr : "out of memory", conn->backoff_ms);
        sl_counter_add(&conn->metrics->errors, 1);
        if (ac)
            redisAsyncFree(ac);
        schedule_reconnect(conn);
        return;
    }
    ac->data = conn;
    conn->ac = ac;
    redisLibeventAttach(ac, conn->base);
    redisAsyncSetConnectCallback(ac, on_connect);
    redisAsyncSetDisconnectCallback(ac, on_disconnect);
}

/* Replies that stop coming mean a dead peer TCP cannot see: drop it. */
static void watchdog(evutil_socket_t fd, short kind, void *arg)
{
    (void)fd;
    (void)kind;
    sl_redis_conn *conn = arg;
    if (conn->ac && conn->pending > 0 && sl_monotonic_us() - conn->last_reply_us > REPLY_TIMEOUT_US) {
        SL_LOG(SL_LOG_WARNING, "msg=\"redis not answering, reconnecting\" pending=%zu", conn->pending);
        redisAsyncDisconnect(conn->ac);
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
    conn->watchdog = event_new(base, -1, EV_PERSIST, watchdog, conn);
    if (!conn->reconnect_timer || !conn->watchdog) {
        sl_redis_conn_free(conn);
        return NULL;
    }
    struct timeval every = {0, WATCHDOG_MS * 1000};
    event_add(conn->watchdog, &every);
    struct timeval now = {0, 0};
    evtimer_add(conn->reconnect_timer, &now);
    return conn;
}

void sl_redis_conn_free(sl_redis_conn *conn)
{
    if (!conn)
        return;
    conn->closing = true;
    if (conn->ac)
        redisAsyncFree(conn->ac); /* pending callbacks get NULL replies */
    if (conn->reconnect_timer)
        event_free(conn->reconnect_timer);
    if (conn->watchdog)
        event_free(conn->watchdog);
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

