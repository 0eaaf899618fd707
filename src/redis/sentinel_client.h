/* sentinel_client.h - the sentinels of a redis-sentinel:// URL as one
 * service, on a libevent base: which node is the primary now (asked of
 * each sentinel in turn, the one that answered first asked first next
 * time, as the Sentinel client guidelines say), and a subscription to
 * +switch-master that says when it moves. Sentinels are asked without
 * AUTH (redis_url.h). Used by redis_conn (the daemon) and by the CLI, so
 * both find the primary the same way. */
#ifndef SLUICE_SENTINEL_CLIENT_H
#define SLUICE_SENTINEL_CLIENT_H

#include <stdbool.h>

#include <event2/event.h>

#include "config/redis_url.h"
#include "redis/sentinel.h"

typedef struct sl_sentinels sl_sentinels;

/* How long one sentinel may take to accept the connection, and then to
 * answer: a sentinel that does not answer within this is skipped for the
 * next, so a dead first sentinel costs one such wait per resolution. */
#define SL_SENTINEL_TIMEOUT_MS 1000

/* The outcome of a resolution: primary is the address the first sentinel
 * that knew it gave, and why is NULL or says which sentinels were skipped
 * before it; or primary is NULL and why says why none named it ("no
 * sentinel answered: 127.0.0.1:26379: connect: Connection refused; ...",
 * "no sentinel named the primary: sentinel 127.0.0.1:26379 does not know
 * primary 'mymaster'"). Both are valid during the call only. */
typedef void (*sl_sentinels_resolved_fn)(void *arg, const sl_sentinel_addr *primary,
                                         const char *why);
/* Our primary moved to `to` (a +switch-master message). */
typedef void (*sl_sentinels_switch_fn)(void *arg, const sl_sentinel_addr *to);

/* The sentinels of target (mode SL_REDIS_SENTINEL, which must outlive
 * them), each asked with timeout_ms for the connect and for the answer.
 * NULL if out of memory. */
sl_sentinels *sl_sentinels_new(struct event_base *base, const sl_redis_target *target,
                               int timeout_ms);
/* Closes every link and frees; a resolution under way never calls back.
 * NULL is a no-op. Not from one of its callbacks. */
void sl_sentinels_free(sl_sentinels *s);

/* Starts asking for the primary; fn(arg, ...) follows once, from the loop
 * (never from inside this call), and may free s. False, and no callback,
 * if a resolution is already under way or memory ran out. */
bool sl_sentinels_resolve(sl_sentinels *s, sl_sentinels_resolved_fn fn, void *arg);

/* The primary the last resolution gave says it is not one (ROLE: a
 * replica or a sentinel): the sentinel that named it is stale, cut off
 * from the others, and goes to the back of the order, so the next
 * resolution asks the others first instead of it forever. Once per
 * resolution; a no-op before any. */
void sl_sentinels_demote_named(sl_sentinels *s);

/* Keeps a subscription to +switch-master on one sentinel (the one asked
 * first, another after each failure, after a backoff) and calls fn for
 * each move of our primary, until s is freed. */
void sl_sentinels_watch(sl_sentinels *s, sl_sentinels_switch_fn fn, void *arg);

#endif
