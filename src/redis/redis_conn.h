/* redis_conn.h - one asynchronous Redis connection on a libevent base that
 * keeps itself usable: it reconnects with backoff, authenticates, selects
 * the database and loads the daemon's scripts after every connect, and
 * drops a connection whose replies stop coming. Plain TCP, a unix socket
 * or TLS (rediss://), by redis_link; with Sentinel (redis-sentinel://),
 * the primary the sentinels name, confirmed by ROLE and followed through
 * failovers. */
#ifndef SLUICE_REDIS_CONN_H
#define SLUICE_REDIS_CONN_H

#include <stdbool.h>
#include <stddef.h>

#include <event2/event.h>
#include <hiredis/hiredis.h>

#include "base/metrics.h"
#include "config/redis_url.h"

typedef struct sl_redis_conn sl_redis_conn;

/* A command's reply; NULL if the connection was lost before it came. The
 * reply is freed after the callback returns. */
typedef void (*sl_redis_reply_fn)(redisReply *reply, void *arg);
/* Called with ready = true once connected and scripts are loaded, and with
 * false when the connection is lost (pending callbacks get NULL replies). */
typedef void (*sl_redis_ready_fn)(void *arg, bool ready);

/* Starts connecting to target (which must outlive the connection), counting
 * its troubles in metrics (the caller's; NULL: not counted). Never NULL
 * unless out of memory. */
sl_redis_conn *sl_redis_conn_new(struct event_base *base, const sl_redis_target *target,
                                 sl_redis_metrics *metrics, sl_redis_ready_fn on_ready, void *arg);
/* What a connection for the CLI does differently; zeroed: the daemon's. */
typedef struct sl_redis_conn_options {
    bool no_scripts;   /* ready once set up, without loading the daemon's
                          scripts (sha NULL): no round trip, and no need of
                          the permission to load scripts */
    bool keep_replies; /* each command's callback owns its reply
                          (freeReplyObject), e.g. to keep it for later */
} sl_redis_conn_options;

/* Sets conn's options (copied); only right after sl_redis_conn_new, before
 * its loop runs. */
void sl_redis_conn_set_options(sl_redis_conn *conn, const sl_redis_conn_options *options);
/* Disconnects (pending callbacks get NULL) and frees. Not from a callback. */
void sl_redis_conn_free(sl_redis_conn *conn);
/* The daemon scripts each connection loads (lua_scripts.h names), in
 * this order: one list for the connection and the cluster router. */
#define SL_REDIS_CONN_SCRIPTS 3
extern const char *const sl_redis_conn_scripts[SL_REDIS_CONN_SCRIPTS];

bool sl_redis_conn_ready(const sl_redis_conn *conn);
/* Whether the link is up, ready or not (a script reload is not a lost
 * connection). */
bool sl_redis_conn_connected(const sl_redis_conn *conn);
/* The SHA1 of the loaded daemon script `name` (sl_redis_conn_scripts), or NULL. */
const char *sl_redis_conn_sha(const sl_redis_conn *conn, const char *name);
/* Sends a command; false (and no callback) if not connected. */
bool sl_redis_conn_send(sl_redis_conn *conn, int argc, const char **argv, const size_t *argvlen,
                        sl_redis_reply_fn fn, void *arg);
/* The same for a command already in the protocol (cmd[0..len), copied):
 * a router that resends a command formats it once. */
bool sl_redis_conn_send_formatted(sl_redis_conn *conn, const char *cmd, size_t len,
                                  sl_redis_reply_fn fn, void *arg);
/* The server lost the scripts (NOSCRIPT): load them again; on_ready(true)
 * follows. */
void sl_redis_conn_reload_scripts(sl_redis_conn *conn);

/* Why the last connect failed or the last connection was lost ("connect
 * timed out after 5000 ms", "AUTH failed: WRONGPASS ..."), "" until one
 * has: for an owner that reports failures itself (the CLI). */
const char *sl_redis_conn_error(const sl_redis_conn *conn);
/* The node connected now (Sentinel: the primary it resolved; else the
 * target), valid until the next on_ready(false). */
const sl_redis_target *sl_redis_conn_node(const sl_redis_conn *conn);

/* True for an error reply that says the script cache is empty. */
bool sl_redis_is_noscript(const redisReply *reply);

#endif
