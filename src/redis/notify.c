/* notify.c - see notify.h. A second connection per worker, because a
 * connection that subscribes can do nothing else. With Sentinel it
 * subscribes on the primary the sentinels name, asked before each
 * connect, and moves when they say it moved (+switch-master; Redis also
 * disconnects the subscribers of a node a failover reconfigures). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/log.h"
#include "redis/keys.h"
#include "redis/notify.h"
#include "redis/redis_link.h"
#include "redis/sentinel_client.h"

#define RECONNECT_MIN_MS 200
#define RECONNECT_MAX_MS 10000
#define RECHECK_MS 30000 /* notifications off: look again this often */

static const sl_redis_link_timeouts link_timeouts = {
    .connect_ms = 5000, .handshake_ms = 5000, .reply_ms = 5000};

struct sl_notify {
    struct event_base *base;
    const sl_redis_target *target;
    const char *prefix;
    sl_notify_push_fn on_push;
    sl_notify_state_fn on_state;
    void *arg;
    sl_redis_link *link; /* NULL while disconnected */
    struct event *reconnect_timer;
    long backoff_ms;
    bool active;
    bool connected; /* the link came up */
    char channel_prefix[64]; /* "__keyspace@<db>__:" */
    sl_sentinels *sentinels; /* Sentinel: who names the primary; else NULL */
    sl_redis_target node;    /* Sentinel: the primary they named */
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
static void on_message(redisReply *reply, void *arg)
{
    sl_notify *n = arg;
    if (!reply)
        return;
    if (reply->type == REDIS_REPLY_ERROR) {
        /* PSUBSCRIBE refused (an ACL without the channel, a server still
         * loading): without a subscription the connection is useless, so
         * drop it and look again later. */
        SL_LOG(SL_LOG_WARNING, "msg=\"notifications: PSUBSCRIBE failed, retrying later\" error=\"%s\"",
               reply->str);
        sl_redis_link_close(n->link, "PSUBSCRIBE failed");
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
    const char *argv[] = {"PSUBSCRIBE", pattern};
    sl_redis_link_send_argv(n->link, 2, argv, NULL, on_message, n, SL_LINK_SUBSCRIBE);
}

static void on_config(redisReply *reply, void *arg)
{
    sl_notify *n = arg;
    if (!reply)
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
    sl_redis_link_close(n->link, "notifications off");
}

static void on_auth(redisReply *reply, void *arg)
{
    sl_notify *n = arg;
    if (reply && reply->type == REDIS_REPLY_ERROR) {
        SL_LOG(SL_LOG_ERROR, "msg=\"notifications: AUTH failed, retrying later\" error=\"%s\"",
               reply->str);
        sl_redis_link_close(n->link, "AUTH failed");
    }
}

static void on_connected(sl_notify *n)
{
    const sl_redis_target *t = n->target;
    if (t->password && t->username) {
        const char *argv[] = {"AUTH", t->username, t->password};
        sl_redis_link_send_argv(n->link, 3, argv, NULL, on_auth, n, 0);
    } else if (t->password) {
        const char *argv[] = {"AUTH", t->password};
        sl_redis_link_send_argv(n->link, 2, argv, NULL, on_auth, n, 0);
    }
    const char *argv[] = {"CONFIG", "GET", "notify-keyspace-events"};
    sl_redis_link_send_argv(n->link, 3, argv, NULL, on_config, n, 0);
}

/* Up: ask whether notifications are on. Gone: a failed connect backs off;
 * a subscription lost comes back after the backoff; a connection dropped
 * because notifications were off looks again after RECHECK_MS. */
static void on_link_event(void *arg, bool up, const char *why)
{
    sl_notify *n = arg;
    if (up) {
        n->connected = true;
        on_connected(n);
        return;
    }
    (void)why;
    bool was_connected = n->connected, was_active = n->active;
    sl_redis_link_free(n->link);
    n->link = NULL;
    n->connected = false;
    set_active(n, false);
    if (!was_connected) {
        schedule_reconnect(n, n->backoff_ms);
        n->backoff_ms = n->backoff_ms * 2 > RECONNECT_MAX_MS ? RECONNECT_MAX_MS : n->backoff_ms * 2;
        return;
    }
    schedule_reconnect(n, was_active ? n->backoff_ms : RECHECK_MS);
}

static void open_link(sl_notify *n, const sl_redis_target *node)
{
    char err[256];
    n->link = sl_redis_link_open(n->base, node, &link_timeouts, on_link_event, NULL, n, err,
                                 sizeof err);
    if (!n->link)
        schedule_reconnect(n, RECONNECT_MAX_MS);
}

/* The sentinels answered (redis_conn logs why they did not; here the
 * next try just waits). */
static void on_primary(void *arg, const sl_sentinel_addr *primary, const char *why)
{
    sl_notify *n = arg;
    (void)why;
    sl_redis_target_clear(&n->node); /* no link uses it now */
    if (!primary || !sl_redis_target_node(n->target, primary->host, primary->port, &n->node)) {
        schedule_reconnect(n, n->backoff_ms);
        n->backoff_ms = n->backoff_ms * 2 > RECONNECT_MAX_MS ? RECONNECT_MAX_MS : n->backoff_ms * 2;
        return;
    }
    open_link(n, &n->node);
}

/* The primary moved: subscribe on the new one. */
static void on_switch(void *arg, const sl_sentinel_addr *to)
{
    sl_notify *n = arg;
    (void)to;
    if (n->link) {
        n->backoff_ms = RECONNECT_MIN_MS;
        sl_redis_link_close(n->link, "the primary moved (+switch-master)");
    }
}

static void connect_now(evutil_socket_t fd, short kind, void *arg)
{
    (void)fd;
    (void)kind;
    sl_notify *n = arg;
    if (!n->sentinels)
        open_link(n, n->target);
    else if (!sl_sentinels_resolve(n->sentinels, on_primary, n))
        schedule_reconnect(n, RECONNECT_MAX_MS);
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
    if (target->mode == SL_REDIS_SENTINEL) {
        n->sentinels = sl_sentinels_new(base, target, SL_SENTINEL_TIMEOUT_MS);
        if (n->sentinels)
            sl_sentinels_watch(n->sentinels, on_switch, n);
    }
    if (!n->reconnect_timer || (target->mode == SL_REDIS_SENTINEL && !n->sentinels)) {
        sl_notify_free(n);
        return NULL;
    }
    schedule_reconnect(n, 0);
    return n;
}

void sl_notify_free(sl_notify *n)
{
    if (!n)
        return;
    sl_redis_link_free(n->link);
    if (n->reconnect_timer)
        event_free(n->reconnect_timer);
    sl_sentinels_free(n->sentinels);
    sl_redis_target_clear(&n->node);
    free(n);
}
