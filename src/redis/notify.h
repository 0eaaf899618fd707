/* notify.h - wake-ups from Redis keyspace notifications: a job pushed to an
 * idle tenant's queue is seen within milliseconds instead of at the next
 * poll. A Redis publishes the events of its own keys only, so there is a
 * subscriber on every primary the client knows. Works only where the
 * servers publish list events (notify-keyspace-events containing K and l
 * or A); sluice never changes the server's configuration, so elsewhere
 * this stays inactive and the worker keeps polling. */
#ifndef SLUICE_NOTIFY_H
#define SLUICE_NOTIFY_H

#include <stdbool.h>

#include <event2/event.h>

#include "redis/redis_client.h"

typedef struct sl_notify sl_notify;

/* A job was pushed to `tenant`'s queue. */
typedef void (*sl_notify_push_fn)(void *arg, const char *tenant);
/* Subscribed on every primary (true), or no longer (false): one lost. */
typedef void (*sl_notify_state_fn)(void *arg, bool active);

/* Starts a subscriber, on a connection of its own, on each primary of
 * client (which, like prefix, must outlive it). NULL if out of memory. */
sl_notify *sl_notify_new(struct event_base *base, const sl_redis_client *client,
                         const char *prefix, sl_notify_push_fn on_push,
                         sl_notify_state_fn on_state, void *arg);
/* The client's primaries changed (call it from the client's on_nodes):
 * subscribes on the new ones, drops the subscribers of those gone, keeps
 * the others. */
void sl_notify_nodes_changed(sl_notify *n);

/* What a reply on the subscription says (read as hostile: any shape). */
typedef enum sl_notify_message {
    SL_NOTIFY_OTHER,      /* nothing for us */
    SL_NOTIFY_REFUSED,    /* an error: PSUBSCRIBE refused */
    SL_NOTIFY_SUBSCRIBED, /* PSUBSCRIBE confirmed */
    SL_NOTIFY_PUSH,       /* a push to tenant's queue: tenant filled */
} sl_notify_message;
/* Reads reply (not NULL) of a subscription whose channels start with
 * channel_prefix ("__keyspace@0__:"), for queues under prefix. */
sl_notify_message sl_notify_message_read(const redisReply *reply, const char *channel_prefix,
                                         const char *prefix, char *tenant, size_t size);
/* Disconnects and frees. Not from one of its callbacks. */
void sl_notify_free(sl_notify *n);

/* True if the value of notify-keyspace-events publishes list pushes. */
bool sl_notify_flags_cover_lists(const char *flags);

#endif
