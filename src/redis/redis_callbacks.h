/* redis_callbacks.h - what the daemon's Redis tells its owner, whatever
 * its shape (redis_client.h, cluster.h): shared here so that the client
 * and the cluster router declare them once without including each other. */
#ifndef SLUICE_REDIS_CALLBACKS_H
#define SLUICE_REDIS_CALLBACKS_H

#include <stdbool.h>

/* ready: commands may go (standalone and Sentinel: connected, scripts
 * loaded; Cluster: the slot map is known). !ready: nothing can go now;
 * pending callbacks have had NULL. */
typedef void (*sl_redis_client_ready_fn)(void *arg, bool ready);
/* The set of primaries changed (the first map, a failover, a new shard):
 * what must be done on every primary (subscriptions, scans) starts over. */
typedef void (*sl_redis_client_nodes_fn)(void *arg);

#endif
