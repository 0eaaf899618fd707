/* redis_client.h - the daemon's Redis, whatever its shape: one server
 * (redis://, rediss://, unix://), the primary the sentinels name
 * (redis-sentinel://, inside redis_conn), or a Redis Cluster
 * (redis-cluster://, by cluster.h). Callers name the key a command is
 * about; the client sends it to the node that owns that key's slot and
 * follows the cluster's redirections itself, so the daemon above never
 * knows which shape it talks to.
 *
 * Replies keep redis_conn's rules: a NULL reply means the connection was
 * lost before the reply came, and the command may have run (the lease
 * covers a claim, an ack is resent); with a Cluster also that a chain of
 * redirections outlasted its deadline (cluster.h). */
#ifndef SLUICE_REDIS_CLIENT_H
#define SLUICE_REDIS_CLIENT_H

#include <stdbool.h>
#include <stddef.h>

#include <event2/event.h>
#include <hiredis/hiredis.h>

#include "base/metrics.h"
#include "config/redis_url.h"
#include "redis/redis_callbacks.h"
#include "redis/redis_conn.h"

typedef struct sl_redis_client sl_redis_client;

/* Starts connecting to target (which must outlive the client), counting
 * troubles in metrics (NULL: not counted). on_nodes may be NULL; when the
 * connection becomes ready it fires before on_ready(true). NULL only if
 * out of memory. */
sl_redis_client *sl_redis_client_new(struct event_base *base, const sl_redis_target *target,
                                     sl_redis_metrics *metrics, sl_redis_client_ready_fn on_ready,
                                     sl_redis_client_nodes_fn on_nodes, void *arg);
/* Sets what differs from the daemon's client (the CLI's: no scripts,
 * callbacks own their replies), for every connection it opens; only right
 * after sl_redis_client_new, before the loop runs. */
void sl_redis_client_set_options(sl_redis_client *c, const sl_redis_conn_options *options);
/* Why the last connect failed or a connection was lost, "" until one has:
 * for an owner that reports failures itself instead of waiting for the
 * reconnect (the CLI). */
const char *sl_redis_client_error(const sl_redis_client *c);
/* Disconnects (pending callbacks get NULL) and frees. NULL is a no-op.
 * Not from a callback. */
void sl_redis_client_free(sl_redis_client *c);
bool sl_redis_client_ready(const sl_redis_client *c);
/* The SHA1 of the daemon script `name` (sl_redis_conn_scripts), or NULL if not
 * ready. The same on every node. */
const char *sl_redis_client_sha(const sl_redis_client *c, const char *name);

/* Sends a command about `key` (its {hash tag} picks the slot; NULL: any
 * primary, e.g. TIME) whose reply goes to fn(reply, arg). False, and no
 * callback, if it cannot go now (not ready, out of memory). */
bool sl_redis_client_send(sl_redis_client *c, const char *key, int argc, const char **argv,
                          const size_t *argvlen, sl_redis_reply_fn fn, void *arg);

/* A command about `key` met NOSCRIPT: load the scripts again where it
 * went; on_ready(true) follows (Cluster: resent by the client itself,
 * this is then never needed). */
void sl_redis_client_reload_scripts(sl_redis_client *c, const char *key);

/* How many primaries are known now (standalone and Sentinel: 1 when
 * ready). */
size_t sl_redis_client_primary_count(const sl_redis_client *c);
/* Primary i's address (i < count), valid until on_nodes or the client is
 * freed: for a subscriber link of its own (notify.c). */
const sl_redis_target *sl_redis_client_primary(const sl_redis_client *c, size_t i);
/* Sends a command to primary i: what every primary must answer (SCAN for
 * discovery). False, and no callback, if it cannot go now. */
bool sl_redis_client_send_to(sl_redis_client *c, size_t i, int argc, const char **argv,
                             const size_t *argvlen, sl_redis_reply_fn fn, void *arg);

#endif
