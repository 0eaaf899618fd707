/* redis_cluster.h - a private Redis Cluster for one test: 3 primaries and
 * 3 replicas on loopback ports (`--cluster-enabled yes`, joined by
 * `redis-cli --cluster create --cluster-replicas 1`), with the steps of a
 * slot move and of a failover, so a test can watch a router meet ASK,
 * MOVED and a promoted replica. SLUICE_REDIS_SERVER names another server
 * binary (valkey-server), SLUICE_REDIS_CLI another cli (valkey-cli). */
#ifndef SLUICE_TEST_REDIS_CLUSTER_H
#define SLUICE_TEST_REDIS_CLUSTER_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include <hiredis/hiredis.h>

#define RC_NODES 6
/* The index of an empty primary rc_add_empty_primary starts (not one of
 * the RC_NODES: no slot, no replica, outside the loops over them). */
#define RC_SPARE RC_NODES
/* Small, so a failover takes a couple of seconds, not fifteen. */
#define RC_NODE_TIMEOUT_MS 1500

typedef struct rc_node {
    pid_t pid;     /* 0 when not running */
    int port;      /* on 127.0.0.1; the cluster bus is port + 10000 */
    char id[41];   /* its cluster node id */
    bool primary;  /* as of the last rc_roles */
    int replica_of; /* a replica's primary (index), else -1 */
} rc_node;

typedef struct rc_cluster {
    char dir[64]; /* every node's files, removed by rc_stop */
    rc_node nodes[RC_NODES + 1]; /* and the spare */
} rc_cluster;

/* Starts the 6 servers, joins them, and waits (bounded) until every node
 * says cluster_state:ok and every replica is in sync. False, with a
 * message in err, on failure (then nothing is left running). */
bool rc_start(rc_cluster *c, char *err, size_t err_size);

/* Starts an empty primary (RC_SPARE) and has node `meet` meet it; waits
 * (bounded) until the two know each other, as a new shard is added
 * before its first slot moves to it. False if it did not. */
bool rc_add_empty_primary(rc_cluster *c, int meet);

/* Stops every server by its PID and removes the directory. Safe to repeat. */
void rc_stop(rc_cluster *c);

/* A blocking connection to node i, or NULL. Caller frees. */
redisContext *rc_connect(const rc_cluster *c, int i);

/* Reads who is primary and who replicates whom from a running node
 * (CLUSTER NODES). False if no node answered. */
bool rc_roles(rc_cluster *c);

/* The node that owns slot, as a running node's CLUSTER SLOTS says (-1:
 * none answered). */
int rc_owner(const rc_cluster *c, unsigned slot);

/* A primary other than `not` (-1: any), as of the last rc_roles. */
int rc_other_primary(const rc_cluster *c, int not);

/* A running replica of primary p, or -1. */
int rc_replica(const rc_cluster *c, int p);

/* Slot move in steps (the redis-cli --cluster reshard way). 1: `to`
 * IMPORTING from `from`, `from` MIGRATING to `to`: keys not on `from` get
 * ASK. 2: every key of the slot MIGRATEd: all of them get ASK. 3: SETSLOT
 * NODE on every primary: the slot is `to`'s, `from` answers MOVED. */
bool rc_move_begin(rc_cluster *c, unsigned slot, int from, int to);
bool rc_move_keys(rc_cluster *c, unsigned slot, int from, int to);
bool rc_move_end(rc_cluster *c, unsigned slot, int to);

/* CLUSTER FAILOVER on replica r; waits (at most 10 s) until it is a primary
 * and roles are read again. */
bool rc_failover(rc_cluster *c, int r);

/* kill -9 of node i (no wait). */
void rc_kill(rc_cluster *c, int i);

/* Waits (at most timeout_ms) until node i calls itself a primary
 * (ROLE); then reads the roles again. */
bool rc_wait_primary(rc_cluster *c, int i, int timeout_ms);

/* Waits (at most timeout_ms) until every running node says
 * cluster_state:ok. */
bool rc_wait_ok(const rc_cluster *c, int timeout_ms);

/* A producer no one here wrote: `redis-cli -c -p PORT(i) LPUSH key
 * values...`, which follows the cluster's MOVED to key's owner whatever
 * node i is. True if it exited 0 (within 30 s). n at most RC_CLI_PUSH_MAX. */
#define RC_CLI_PUSH_MAX 64
bool rc_cli_lpush(const rc_cluster *c, int i, const char *key, const char *const *values, int n);

/* "redis-cluster://127.0.0.1:P1,127.0.0.1:P2" of the running nodes
 * (at most `seeds` of them), in out. */
void rc_url(const rc_cluster *c, int seeds, char *out, size_t size);

#endif
