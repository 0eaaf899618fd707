/* cluster.h - a Redis Cluster as one Redis: the router behind
 * redis_client.h for redis-cluster:// and rediss-cluster:// (SPEC §8).
 * The same calls and contracts as sl_redis_client_*, so the client only
 * dispatches.
 *
 * It asks the seeds (then the known primaries) for CLUSTER SLOTS, one
 * address at a time, each bounded by redis_link's connect and reply
 * deadlines, and keeps one sl_redis_conn per primary (AUTH, SELECT and
 * the daemon's scripts on each). A command names its key; the key's slot
 * picks the primary. Redirections are followed here:
 *   MOVED       the map's entry is updated, a full refresh is scheduled,
 *               the command goes to the new owner;
 *   ASK         ASKING and the command go to the named node, pipelined,
 *               the map unchanged; a node outside the map (an empty new
 *               primary receiving its first slot) is connected on
 *               demand, and closed at the next map that does not name it;
 *   TRYAGAIN, CLUSTERDOWN, a slot no one serves
 *               resent after a growing backoff (redis_errors.h's);
 *   NOSCRIPT    the node loads the scripts again, the command is resent
 *               when it is ready;
 *   READONLY, LOADING, MASTERDOWN
 *               the map is refreshed at once, the command resent after
 *               the backoff, to whoever owns the slot then.
 * Inside a MULTI (the CLI's transactions) nothing is redirected: a
 * queued command resent elsewhere would run outside its transaction, so
 * the error goes to the caller as it came, and EXEC fails as a whole.
 * A redirect chain lasts at most SL_CLUSTER_CHAIN_MS from its first
 * redirect (plus one reply's wait); past it the callback gets NULL, like a lost connection: every
 * caller already treats NULL as "did not complete, may have run" (a claim
 * is covered by its lease, an ack is resent), whereas an error reply
 * would read as the command's own failure. A NULL reply from a lost
 * connection is handed on and never resent: the command may have run.
 *
 * ready: the slot map is known and one primary has loaded the scripts
 * (so sl_redis_cluster_sha answers). It stays true while the map is
 * refreshed; a command for a primary that is not connected (yet, or
 * during a failover) waits for it on that primary, at most
 * SL_CLUSTER_CHAIN_MS (then NULL), rather than being refused: the daemon sends a
 * tenant's claim once and waits for its reply, and no on_ready would
 * tell it when one shard of many is back.
 *
 * Time: the daemon's Redis clock (daemon/redis_clock.c) sends TIME with
 * no key; a keyless command goes to the first connected primary, the same
 * one while it stays connected. The nodes of a cluster are assumed to
 * share a clock (one machine here, NTP-synced hosts in production: within
 * a few milliseconds), so that primary's TIME serves every tenant. A
 * tenant's slots come from its own node's TIME (in the scripts); nodes
 * whose clocks differ by d shift that tenant's departures by d, a
 * constant offset, never a burst, since the probed node does not hop. */
#ifndef SLUICE_REDIS_CLUSTER_H
#define SLUICE_REDIS_CLUSTER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <event2/event.h>
#include <hiredis/hiredis.h>

#include "base/metrics.h"
#include "config/redis_url.h"
#include "redis/redis_callbacks.h"
#include "redis/redis_conn.h"

/* How long a redirect chain (or a wait for a primary) may last, from
 * its first redirect: enough for a slot migration's ASK/TRYAGAIN/MOVED
 * and a restart, short enough that a tenant's claim is soon tried again.
 * It is NOT past a failover: Redis's default cluster-node-timeout is
 * 15 s, plus an election; during one, callers get NULL after this and
 * send again (a claim is covered by its lease, an ack is resent), so a
 * longer wait would only hold a tenant's claim up. The bound a caller
 * sees is this plus the node link's reply deadline (redis_conn.c's 5 s):
 * a command sent just before the deadline waits for its reply. */
#define SL_CLUSTER_CHAIN_MS 5000
/* The slot map is asked again this often even when nothing moved: a new
 * shard is seen within this. */
#define SL_CLUSTER_REFRESH_MS 10000
/* While a primary of the map is not connected, the map is asked this
 * often: a promoted replica is found within it after the failover. */
#define SL_CLUSTER_RECOVER_MS 500

typedef struct sl_redis_cluster sl_redis_cluster;

/* What the router did, for tests and logs (counted since _new). */
typedef struct sl_redis_cluster_stats {
    uint64_t moved, ask, tryagain, noscript, find_primary;
    uint64_t refreshes; /* slot maps received */
    uint64_t expired;   /* chains past SL_CLUSTER_CHAIN_MS: NULL to the caller */
} sl_redis_cluster_stats;

/* Starts asking target's seeds (target->mode SL_REDIS_CLUSTER; it must
 * outlive the router), counting connection troubles in metrics (NULL: not
 * counted). on_nodes (may be NULL) fires when the set of primaries
 * changes (with the router ready: the first set just before the first
 * on_ready(true)). NULL only if out of memory. */
sl_redis_cluster *sl_redis_cluster_new(struct event_base *base, const sl_redis_target *target,
                                       sl_redis_metrics *metrics,
                                       sl_redis_client_ready_fn on_ready,
                                       sl_redis_client_nodes_fn on_nodes, void *arg);
/* Sets what differs from the daemon's router (the CLI's: no scripts,
 * callbacks own their replies) for every node it connects; only right
 * after sl_redis_cluster_new, before the loop runs. */
void sl_redis_cluster_set_options(sl_redis_cluster *c, const sl_redis_conn_options *options);
/* Why no node gave a slot map in the last round, or why a node's
 * connection failed last; "" until then (the CLI reports it at once). */
const char *sl_redis_cluster_error(const sl_redis_cluster *c);
/* Disconnects (pending and waiting callbacks get NULL) and frees. NULL is
 * a no-op. Not from a callback. */
void sl_redis_cluster_free(sl_redis_cluster *c);
bool sl_redis_cluster_ready(const sl_redis_cluster *c);
/* The SHA1 of the daemon script `name` (sl_redis_conn_scripts), or NULL if not
 * ready. The same on every node. */
const char *sl_redis_cluster_sha(const sl_redis_cluster *c, const char *name);

/* Sends a command about `key` (NUL-terminated; its {hash tag} picks the
 * slot; NULL: any connected primary) whose reply goes to fn(reply, arg),
 * after the redirections above. False, and no callback, if not ready or
 * out of memory. */
bool sl_redis_cluster_send(sl_redis_cluster *c, const char *key, int argc, const char **argv,
                           const size_t *argvlen, sl_redis_reply_fn fn, void *arg);

/* A command about `key` met NOSCRIPT: the key's primary loads the
 * scripts again (the router does this itself for what it sends; for
 * redis_client.h's sake). */
void sl_redis_cluster_reload_scripts(sl_redis_cluster *c, const char *key);

/* How many primaries the map has now. */
size_t sl_redis_cluster_primary_count(const sl_redis_cluster *c);
/* Primary i's address (i < count), valid until on_nodes or free. */
const sl_redis_target *sl_redis_cluster_primary(const sl_redis_cluster *c, size_t i);
/* Sends a command to primary i, as is (no redirection followed): what
 * every primary must answer (SCAN). False, and no callback, if primary i
 * is not connected now. */
bool sl_redis_cluster_send_to(sl_redis_cluster *c, size_t i, int argc, const char **argv,
                              const size_t *argvlen, sl_redis_reply_fn fn, void *arg);

/* The counters above. */
sl_redis_cluster_stats sl_redis_cluster_stats_get(const sl_redis_cluster *c);

#endif
