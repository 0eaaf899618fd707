/* redis_sentinel.h - a Sentinel-managed Redis for one test process: a
 * primary, a replica of it and three sentinels (the real `redis-server
 * sentinel.conf --sentinel`, or the binary named by SLUICE_REDIS_SERVER,
 * e.g. valkey-server), on free loopback ports, tuned so that a failover
 * takes a few seconds. Everything dies with the test process and is
 * stopped by PID. */
#ifndef SLUICE_TEST_REDIS_SENTINEL_H
#define SLUICE_TEST_REDIS_SENTINEL_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include <hiredis/hiredis.h>

#include "redis_server.h"

#define RSN_SENTINELS 3
#define RSN_MASTER_NAME "mymaster"

typedef struct rsn_sentinel {
    pid_t pid;    /* 0 when not running */
    int port;     /* on 127.0.0.1 */
    char dir[64]; /* its config (which it rewrites) and log */
} rsn_sentinel;

typedef struct rsn_group {
    rs_server nodes[2]; /* [0] starts as the primary, [1] as its replica */
    rsn_sentinel sentinels[RSN_SENTINELS];
    /* redis-sentinel://127.0.0.1:A,127.0.0.1:B,127.0.0.1:C/mymaster */
    char url[160];
} rsn_group;

/* Starts the primary, the replica (in sync before this returns) and the
 * sentinels, and waits until every sentinel names the primary and knows
 * the replica and the other sentinels, so a failover can run. False with
 * a message in err (everything started is stopped). */
bool rsn_start(rsn_group *g, char *err, size_t err_size);

/* Stops every process by its PID and removes their directories. Safe on a
 * group that did not (fully) start. */
void rsn_stop(rsn_group *g);

/* The primary's port as sentinel i says it (0 if it does not answer). */
int rsn_primary_port(const rsn_group *g, int i);

/* Index (0 or 1) in g->nodes of the node on port, or -1. */
int rsn_node_of_port(const rsn_group *g, int port);

/* SENTINEL FAILOVER on sentinel 0, then waits (at most timeout_ms) until
 * every sentinel names the other node and it answers ROLE master. False
 * with a message in err. */
bool rsn_failover(rsn_group *g, int timeout_ms, char *err, size_t err_size);

/* WAIT: true once the replica of the node on primary_port acknowledged
 * every write made before (at most timeout_ms). */
bool rsn_replicated(const rsn_group *g, int primary_port, int timeout_ms);

/* A blocking connection to 127.0.0.1:port (2 s timeout), or NULL. */
redisContext *rsn_connect(int port);

#endif
