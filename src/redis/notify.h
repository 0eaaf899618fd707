/* notify.h - wake-ups from Redis keyspace notifications: a job pushed to an
 * idle tenant's queue is seen within milliseconds instead of at the next
 * poll. Works only where the server publishes list events
 * (notify-keyspace-events containing K and l or A); sluice never changes
 * the server's configuration, so elsewhere this stays inactive and the
 * worker keeps polling. */
#ifndef SLUICE_NOTIFY_H
#define SLUICE_NOTIFY_H

#include <stdbool.h>

#include <event2/event.h>

#include "config/redis_url.h"

typedef struct sl_notify sl_notify;

/* A job was pushed to `tenant`'s queue. */
typedef void (*sl_notify_push_fn)(void *arg, const char *tenant);
/* The subscription became active (true) or was lost (false). */
typedef void (*sl_notify_state_fn)(void *arg, bool active);

/* Starts a subscriber on its own connection (target and prefix must
 * outlive it). NULL if out of memory. */
sl_notify *sl_notify_new(struct event_base *base, const sl_redis_target *target,
                         const char *prefix, sl_notify_push_fn on_push,
                         sl_notify_state_fn on_state, void *arg);
/* Disconnects and frees. Not from one of its callbacks. */
void sl_notify_free(sl_notify *n);

/* True if the value of notify-keyspace-events publishes list pushes. */
bool sl_notify_flags_cover_lists(const char *flags);

#endif
