/* notify.c - see notify.h. A connection of its own per primary, because
 * a connection that subscribes can do nothing else. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/log.h"
#include "redis/keys.h"
#include "redis/notify.h"
#include "redis/redis_link.h"

#define RECONNECT_MIN_MS 200
#define RECONNECT_MAX_MS 10000
#define RECHECK_MS 30000 /* notifications off: look again this often */

static const sl_redis_link_timeouts link_timeouts = {
    .connect_ms = 5000, .handshake_ms = 5000, .reply_ms = 5000};

/* The subscription on one primary. */
typedef struct subscriber {
    struct sl_notify *n;
    sl_redis_target target; /* a copy: the client's goes with its next nodes */
    sl_redis_link *link;    /* NULL while disconnected */
    struct event *reconnect_timer;
    long backoff_ms;
    bool active;
    bool connected; /* the link came up */
    bool kept;      /* sl_notify_nodes_changed: still a primary */
    char channel_prefix[64]; /* "__keyspace@<db>__:" */
} subscriber;

struct sl_notify {
    struct event_base *base;
    const sl_redis_client *client;
    const char *prefix;
    sl_notify_push_fn on_push;
    sl_notify_state_fn on_state;
    void *arg;
    subscriber **subscribers; /* one per primary; NULL: none (out of memory) */
    size_t count;
    bool active; /* as last told to on_state */
};

bool sl_notify_flags_cover_lists(const char *flags)
{
    return strchr(flags, 'K') && (strchr(flags, 'l') || strchr(flags, 'A'));
}

/* Active only with every primary subscribed: a push to a shard without
 * a subscription would go unseen. */
static void update_state(sl_notify *n)
{
    bool active = n->count > 0;
    for (size_t i = 0; i < n->count && active; i++)
        active = n->subscribers[i] && n->subscribers[i]->active;
    if (n->active != active) {
        n->active = active;
        n->on_state(n->arg, active);
    }
}

static void set_active(subscriber *s, bool active)
{
    if (s->active != active) {
        s->active = active;
        update_state(s->n);
    }
}

static void schedule_reconnect(subscriber *s, long delay_ms)
{
    struct timeval tv = {delay_ms / 1000, (delay_ms % 1000) * 1000};
    evtimer_add(s->reconnect_timer, &tv);
}

sl_notify_message sl_notify_message_read(const redisReply *reply, const char *channel_prefix,
                                         const char *prefix, char *tenant, size_t size)
{
    if (reply->type == REDIS_REPLY_ERROR)
        return SL_NOTIFY_REFUSED;
    if (reply->type != REDIS_REPLY_ARRAY || reply->elements < 3 ||
        reply->element[0]->type != REDIS_REPLY_STRING)
        return SL_NOTIFY_OTHER; /* not a message of the subscription (a hostile reply) */
    const char *kind = reply->element[0]->str;
    if (strcmp(kind, "psubscribe") == 0)
        return SL_NOTIFY_SUBSCRIBED;
    if (strcmp(kind, "pmessage") != 0 || reply->elements != 4)
        return SL_NOTIFY_OTHER;
    const redisReply *channel = reply->element[2], *event = reply->element[3];
    if (channel->type != REDIS_REPLY_STRING || event->type != REDIS_REPLY_STRING)
        return SL_NOTIFY_OTHER;
    if (strstr(event->str, "push") == NULL && strcmp(event->str, "linsert") != 0)
        return SL_NOTIFY_OTHER; /* lpush, rpush, lpushx, rpushx (LMOVE reports these too) */
    size_t skip = strlen(channel_prefix);
    if (channel->len <= skip || strncmp(channel->str, channel_prefix, skip) != 0)
        return SL_NOTIFY_OTHER;
    return sl_tenant_from_queue_key(channel->str + skip, channel->len - skip, prefix, tenant, size)
               ? SL_NOTIFY_PUSH
               : SL_NOTIFY_OTHER;
}

/* Every message of the subscription: ["pmessage", pattern, channel, event]. */
static void on_message(redisReply *reply, void *arg)
{
    subscriber *s = arg;
    if (!reply)
        return;
    char tenant[256];
    sl_notify_message what =
        sl_notify_message_read(reply, s->channel_prefix, s->n->prefix, tenant, sizeof tenant);
    if (what == SL_NOTIFY_REFUSED) {
        /* PSUBSCRIBE refused (an ACL without the channel, a server still
         * loading): without a subscription the connection is useless, so
         * drop it and look again later. */
        SL_LOG(SL_LOG_WARNING, "msg=\"notifications: PSUBSCRIBE failed, retrying later\" error=\"%s\"",
               reply->str);
        sl_redis_link_close(s->link, "PSUBSCRIBE failed");
    } else if (what == SL_NOTIFY_SUBSCRIBED) {
        SL_LOG(SL_LOG_INFO, "msg=\"keyspace notifications on: idle tenants wake at once\"");
        s->backoff_ms = RECONNECT_MIN_MS;
        set_active(s, true);
    } else if (what == SL_NOTIFY_PUSH) {
        s->n->on_push(s->n->arg, tenant);
    }
}

static void subscribe(subscriber *s)
{
    char pattern[SL_KEY_MAX + 64];
    snprintf(pattern, sizeof pattern, "%s%s:{*}:queue", s->channel_prefix, s->n->prefix);
    const char *argv[] = {"PSUBSCRIBE", pattern};
    sl_redis_link_send_argv(s->link, 2, argv, NULL, on_message, s, SL_LINK_SUBSCRIBE);
}

static void on_config(redisReply *reply, void *arg)
{
    subscriber *s = arg;
    if (!reply)
        return;
    const char *flags = NULL;
    if (reply->type == REDIS_REPLY_ARRAY && reply->elements == 2 &&
        reply->element[1]->type == REDIS_REPLY_STRING)
        flags = reply->element[1]->str;
    if (flags && sl_notify_flags_cover_lists(flags)) {
        subscribe(s);
        return;
    }
    SL_LOG(SL_LOG_INFO,
           "msg=\"keyspace notifications off (notify-keyspace-events needs K and l): idle tenants are polled, at least once a second\" setting=\"%s\"",
           flags ? flags : (reply->type == REDIS_REPLY_ERROR ? reply->str : "?"));
    /* Look again later; the connection is not needed meanwhile. */
    sl_redis_link_close(s->link, "notifications off");
}

static void on_auth(redisReply *reply, void *arg)
{
    subscriber *s = arg;
    if (reply && reply->type == REDIS_REPLY_ERROR) {
        SL_LOG(SL_LOG_ERROR, "msg=\"notifications: AUTH failed, retrying later\" error=\"%s\"",
               reply->str);
        sl_redis_link_close(s->link, "AUTH failed");
    }
}

static void on_connected(subscriber *s)
{
    const sl_redis_target *t = &s->target;
    if (t->password && t->username) {
        const char *argv[] = {"AUTH", t->username, t->password};
        sl_redis_link_send_argv(s->link, 3, argv, NULL, on_auth, s, 0);
    } else if (t->password) {
        const char *argv[] = {"AUTH", t->password};
        sl_redis_link_send_argv(s->link, 2, argv, NULL, on_auth, s, 0);
    }
    const char *argv[] = {"CONFIG", "GET", "notify-keyspace-events"};
    sl_redis_link_send_argv(s->link, 3, argv, NULL, on_config, s, 0);
}

/* Up: ask whether notifications are on. Gone: a failed connect backs off;
 * a subscription lost comes back after the backoff; a connection dropped
 * because notifications were off looks again after RECHECK_MS. */
static void on_link_event(void *arg, bool up, const char *why)
{
    subscriber *s = arg;
    if (up) {
        s->connected = true;
        on_connected(s);
        return;
    }
    (void)why;
    bool was_connected = s->connected, was_active = s->active;
    sl_redis_link_free(s->link);
    s->link = NULL;
    s->connected = false;
    set_active(s, false);
    if (!was_connected) {
        schedule_reconnect(s, s->backoff_ms);
        s->backoff_ms = s->backoff_ms * 2 > RECONNECT_MAX_MS ? RECONNECT_MAX_MS : s->backoff_ms * 2;
        return;
    }
    schedule_reconnect(s, was_active ? s->backoff_ms : RECHECK_MS);
}

static void connect_now(evutil_socket_t fd, short kind, void *arg)
{
    (void)fd;
    (void)kind;
    subscriber *s = arg;
    char err[256];
    s->link = sl_redis_link_open(s->n->base, &s->target, &link_timeouts, on_link_event, NULL, s, err,
                                 sizeof err);
    if (!s->link)
        schedule_reconnect(s, RECONNECT_MAX_MS);
}

static void subscriber_free(subscriber *s)
{
    if (!s)
        return;
    sl_redis_link_free(s->link);
    if (s->reconnect_timer)
        event_free(s->reconnect_timer);
    sl_redis_target_clear(&s->target);
    free(s);
}

/* A subscriber on primary p, connecting at once; NULL if out of memory. */
static subscriber *subscriber_new(sl_notify *n, const sl_redis_target *p)
{
    subscriber *s = calloc(1, sizeof *s);
    if (!s)
        return NULL;
    s->n = n;
    s->backoff_ms = RECONNECT_MIN_MS;
    snprintf(s->channel_prefix, sizeof s->channel_prefix, "__keyspace@%d__:", p->db);
    s->reconnect_timer = evtimer_new(n->base, connect_now, s);
    if (!s->reconnect_timer || !sl_redis_target_copy(p, &s->target)) {
        subscriber_free(s);
        return NULL;
    }
    schedule_reconnect(s, 0);
    return s;
}

/* The subscriber of n on primary p, if n has one not yet kept. */
static subscriber *find_subscriber(const sl_notify *n, const sl_redis_target *p)
{
    for (size_t i = 0; i < n->count; i++) {
        subscriber *s = n->subscribers[i];
        if (s && !s->kept && sl_redis_target_same(&s->target, p))
            return s;
    }
    return NULL;
}

void sl_notify_nodes_changed(sl_notify *n)
{
    size_t count = sl_redis_client_primary_count(n->client);
    subscriber **next = calloc(count ? count : 1, sizeof *next);
    if (!next) {
        SL_LOG(SL_LOG_ERROR, "msg=\"out of memory following the primaries: notifications "
                             "stay as they were\"");
        return;
    }
    for (size_t i = 0; i < count; i++) {
        const sl_redis_target *p = sl_redis_client_primary(n->client, i);
        if (!p)
            continue; /* a primary the cluster router could not make: polled */
        next[i] = find_subscriber(n, p);
        if (!next[i])
            next[i] = subscriber_new(n, p); /* NULL: never active, so polled */
        if (next[i])
            next[i]->kept = true;
    }
    for (size_t i = 0; i < n->count; i++) {
        subscriber *s = n->subscribers[i];
        if (s && !s->kept)
            subscriber_free(s); /* a primary no more */
    }
    for (size_t i = 0; i < count; i++)
        if (next[i])
            next[i]->kept = false;
    free(n->subscribers);
    n->subscribers = next;
    n->count = count;
    update_state(n);
}

sl_notify *sl_notify_new(struct event_base *base, const sl_redis_client *client,
                         const char *prefix, sl_notify_push_fn on_push,
                         sl_notify_state_fn on_state, void *arg)
{
    sl_notify *n = calloc(1, sizeof *n);
    if (!n)
        return NULL;
    n->base = base;
    n->client = client;
    n->prefix = prefix;
    n->on_push = on_push;
    n->on_state = on_state;
    n->arg = arg;
    sl_notify_nodes_changed(n); /* none yet unless the client is ready */
    return n;
}

void sl_notify_free(sl_notify *n)
{
    if (!n)
        return;
    for (size_t i = 0; i < n->count; i++)
        subscriber_free(n->subscribers[i]);
    free(n->subscribers);
    free(n);
}
