/* notify.c - see notify.h. A second connection per worker, because a
 * connection that subscribes can do nothing else. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <hiredis/adapters/libevent.h>
#include <hiredis/async.h>

#include "redis/keys.h"
#include "base/log.h"
#include "redis/notify.h"

#define RECONNECT_MIN_MS 200
#define RECONNECT_MAX_MS 10000
#define RECHECK_MS 30000 /* notifications off: look again this often */

struct sl_notify {
    struct event_base *base;
    const sl_redis_target *target;
    const char *prefix;
    sl_notify_push_fn on_push;
    sl_notify_state_fn on_state;
    void *arg;
    redisAsyncContext *ac;
    struct event *reconnect_timer;
    long backoff_ms;
    bool active;
    bool closing;
    char channel_prefix[64]; /* "__keyspace@<db>__:" */
};

bool sl_notify_flags_cover_lists(const char *flags)
{
    return strchr(flags, 'K') && (strchr(flags, 'l') || strchr(flags, 'A'));
}

static void set_active(sl_notify *n, bool active)
{
    if (n->active != active) {
        n->active = active;
        n->on_state(n->arg, active);
    }
}

static void schedule_reconnect(sl_notify *n, long delay_ms)
{
    struct timeval tv = {delay_ms / 1000, (delay_ms % 1000) * 1000};
    evtimer_add(n->reconnect_timer, &tv);
}

/* Every message of the subscription: ["pmessage", pattern, channel, event]. */
static void on_message(redisAsyncContext *ac, void *r, void *privdata)
{
    (void)ac;
    sl_notify *n = privdata;
    redisReply *reply = r;
    if (!reply || n->closing)
        return;
    if (reply->type == REDIS_REPLY_ERROR) {
        /* PSUBSCRIBE refused (an ACL without the channel, a server still
         * loading): without a subscription the connection is useless, so
         * drop it and look again later. */
        SL_LOG(SL_LOG_WARNING, "msg=\"notifications: PSUBSCRIBE failed, retrying later\" error=\"%s\"",
               reply->str);
        redisAsyncDisconnect(n->ac);
        return;
    }
    if (reply->type != REDIS_REPLY_ARRAY || reply->elements < 3)
        return;
    const char *kind = reply->element[0]->str;
    if (strcmp(kind, "psubscribe") == 0) {
        SL_LOG(SL_LOG_INFO, "msg=\"keyspace notifications on: idle tenants wake at once\"");
        n->backoff_ms = RECONNECT_MIN_MS;
        set_active(n, true);
        return;
    }
    if (strcmp(kind, "pmessage") != 0 || reply->elements != 4)
        return;
    const redisReply *channel = reply->element[2], *event = reply->element[3];
    if (strstr(event->str, "push") == NULL && strcmp(event->str, "linsert") != 0)
        return; /* lpush, rpush, lpushx, rpushx (LMOVE reports these too) */
    size_t skip = strlen(n->channel_prefix);
    if (channel->len <= skip)
        return;
    char tenant[256];
    if (sl_tenant_from_queue_key(channel->str + skip, channel->len - skip, n->prefix, tenant,
                                 sizeof tenant))
        n->on_push(n->arg, tenant);
}

static void subscribe(sl_notify *n)
{
    char pattern[SL_KEY_MAX + 64];
    snprintf(pattern, sizeof pattern, "%s%s:{*}:queue", n->channel_prefix, n->prefix);
    redisAsyncCommand(n->ac, on_message, n, "PSUBSCRIBE %s", pattern);
}

static void on_config(redisAsyncContext *ac, void *r, void *privdata)
{
    (void)ac;
    sl_notify *n = privdata;
    redisReply *reply = r;
    if (!reply || n->closing)
        return;
    const char *flags = NULL;
    if (reply->type == REDIS_REPLY_ARRAY && reply->elements == 2 &&
        reply->element[1]->type == REDIS_REPLY_STRING)
        flags = reply->element[1]->str;
    if (flags && sl_notify_flags_cover_lists(flags)) {
        subscribe(n);
        return;
    }
    SL_LOG(SL_LOG_INFO,
           "msg=\"keyspace notifications off (notify-keyspace-events needs K and l): idle tenants are polled, at least once a second\" setting=\"%s\"",
           flags ? flags : (reply->type == REDIS_REPLY_ERROR ? reply->str : "?"));
    /* Look again later; the connection is not needed meanwhile. */
    redisAsyncDisconnect(n->ac);
}

static void on_auth(redisAsyncContext *ac, void *r, void *privdata)
{
    (void)ac;
    redisReply *reply = r;
    sl_notify *n = privdata;
    if (reply && reply->type == REDIS_REPLY_ERROR && !n->closing) {
        SL_LOG(SL_LOG_ERROR, "msg=\"notifications: AUTH failed, retrying later\" error=\"%s\"",
               reply->str);
        redisAsyncDisconnect(n->ac);
    }
}

static void on_connect(const redisAsyncContext *ac, int status)
{
    sl_notify *n = ac->data;
    if (status != REDIS_OK) {
        n->ac = NULL; /* hiredis frees it */
        schedule_reconnect(n, n->backoff_ms);
        n->backoff_ms = n->backoff_ms * 2 > RECONNECT_MAX_MS ? RECONNECT_MAX_MS : n->backoff_ms * 2;
        return;
    }
    const sl_redis_target *t = n->target;
    if (t->password && t->username)
        redisAsyncCommand(n->ac, on_auth, n, "AUTH %s %s", t->username, t->password);
    else if (t->password)
        redisAsyncCommand(n->ac, on_auth, n, "AUTH %s", t->password);
    redisAsyncCommand(n->ac, on_config, n, "CONFIG GET notify-keyspace-events");
}

static void on_disconnect(const redisAsyncContext *ac, int status)
{
    (void)status;
    sl_notify *n = ac->data;
    if (n->closing)
        return;
    n->ac = NULL; /* hiredis frees it */
    bool was_active = n->active;
    set_active(n, false);
    schedule_reconnect(n, was_active ? n->backoff_ms : RECHECK_MS);
}

static void connect_now(evutil_socket_t fd, short kind, void *arg)
{
    (void)fd;
    (void)kind;
    sl_notify *n = arg;
    const sl_redis_target *t = n->target;
    redisAsyncContext *ac = t->unix_path ? redisAsyncConnectUnix(t->unix_path)
                                         : redisAsyncConnect(t->host, t->port);
    if (!ac || ac->err) {
        if (ac)
            redisAsyncFree(ac);
        schedule_reconnect(n, RECONNECT_MAX_MS);
        return;
    }
    ac->data = n;
    n->ac = ac;
    redisLibeventAttach(ac, n->base);
    redisAsyncSetConnectCallback(ac, on_connect);
    redisAsyncSetDisconnectCallback(ac, on_disconnect);
}

sl_notify *sl_notify_new(struct event_base *base, const sl_redis_target *target,
                         const char *prefix, sl_notify_push_fn on_push,
                         sl_notify_state_fn on_state, void *arg)
{
    sl_notify *n = calloc(1, sizeof *n);
    if (!n)
        return NULL;
    n->base = base;
    n->target = target;
    n->prefix = prefix;
    n->on_push = on_push;
    n->on_state = on_state;
    n->arg = arg;
    n->backoff_ms = RECONNECT_MIN_MS;
    snprintf(n->channel_prefix, sizeof n->channel_prefix, "__keyspace@%d__:", target->db);
    n->reconnect_timer = evtimer_new(base, connect_now, n);
    if (!n->reconnect_timer) {
        free(n);
        return NULL;
    }
    schedule_reconnect(n, 0);
    return n;
}

void sl_notify_free(sl_notify *n)
{
    if (!n)
        return;
    n->closing = true;
    if (n->ac)
        redisAsyncFree(n->ac);
    event_free(n->reconnect_timer);
    free(n);
}
