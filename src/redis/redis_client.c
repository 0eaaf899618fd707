/* redis_client.c - see redis_client.h. One server and the primary the
 * sentinels name are both one sl_redis_conn (Sentinel is followed inside
 * it), so this is a thin wrapper: a command's key is not even looked at,
 * and the per-job path pays one call more, no hashing. A Redis Cluster is
 * cluster.c's router, which has the same calls. The one place that
 * chooses the shape is sl_redis_client_new; every other call dispatches
 * on which of the two is set. */
#include <stdlib.h>

#include "redis/cluster.h"
#include "redis/redis_client.h"

struct sl_redis_client {
    sl_redis_conn *conn;        /* standalone and Sentinel; else NULL */
    sl_redis_cluster *cluster;  /* Redis Cluster; else NULL */
    sl_redis_client_ready_fn on_ready;
    sl_redis_client_nodes_fn on_nodes;
    void *arg;
};

/* Each connect may reach another node (Sentinel: a new primary after a
 * failover), so the set of primaries is new each time the connection is
 * ready: on_nodes first, so that on_ready(true) finds it settled. */
static void on_conn_ready(void *arg, bool ready)
{
    sl_redis_client *c = arg;
    if (ready && c->on_nodes)
        c->on_nodes(c->arg);
    c->on_ready(c->arg, ready);
}

sl_redis_client *sl_redis_client_new(struct event_base *base, const sl_redis_target *target,
                                     sl_redis_metrics *metrics, sl_redis_client_ready_fn on_ready,
                                     sl_redis_client_nodes_fn on_nodes, void *arg)
{
    sl_redis_client *c = calloc(1, sizeof *c);
    if (!c)
        return NULL;
    c->on_ready = on_ready;
    c->on_nodes = on_nodes;
    c->arg = arg;
    switch (target->mode) {
    case SL_REDIS_STANDALONE:
    case SL_REDIS_SENTINEL:
        c->conn = sl_redis_conn_new(base, target, metrics, on_conn_ready, c);
        break;
    case SL_REDIS_CLUSTER:
        /* the router calls on_nodes and on_ready as this client would */
        c->cluster = sl_redis_cluster_new(base, target, metrics, on_ready, on_nodes, arg);
        break;
    }
    if (!c->conn && !c->cluster) {
        free(c);
        return NULL;
    }
    return c;
}

void sl_redis_client_set_options(sl_redis_client *c, const sl_redis_conn_options *options)
{
    if (c->cluster)
        sl_redis_cluster_set_options(c->cluster, options);
    else
        sl_redis_conn_set_options(c->conn, options);
}

const char *sl_redis_client_error(const sl_redis_client *c)
{
    return c->cluster ? sl_redis_cluster_error(c->cluster) : sl_redis_conn_error(c->conn);
}

void sl_redis_client_free(sl_redis_client *c)
{
    if (!c)
        return;
    sl_redis_conn_free(c->conn);
    sl_redis_cluster_free(c->cluster);
    free(c);
}

bool sl_redis_client_ready(const sl_redis_client *c)
{
    return c->cluster ? sl_redis_cluster_ready(c->cluster) : sl_redis_conn_ready(c->conn);
}

const char *sl_redis_client_sha(const sl_redis_client *c, const char *name)
{
    return c->cluster ? sl_redis_cluster_sha(c->cluster, name) : sl_redis_conn_sha(c->conn, name);
}

bool sl_redis_client_send(sl_redis_client *c, const char *key, int argc, const char **argv,
                          const size_t *argvlen, sl_redis_reply_fn fn, void *arg)
{
    if (c->cluster)
        return sl_redis_cluster_send(c->cluster, key, argc, argv, argvlen, fn, arg);
    /* one primary owns every slot */
    return sl_redis_conn_send(c->conn, argc, argv, argvlen, fn, arg);
}

void sl_redis_client_reload_scripts(sl_redis_client *c, const char *key)
{
    if (c->cluster)
        sl_redis_cluster_reload_scripts(c->cluster, key);
    else
        sl_redis_conn_reload_scripts(c->conn);
}

size_t sl_redis_client_primary_count(const sl_redis_client *c)
{
    if (c->cluster)
        return sl_redis_cluster_primary_count(c->cluster);
    return sl_redis_conn_ready(c->conn) ? 1 : 0;
}

const sl_redis_target *sl_redis_client_primary(const sl_redis_client *c, size_t i)
{
    if (c->cluster)
        return sl_redis_cluster_primary(c->cluster, i);
    /* i < primary_count: 0 */
    return sl_redis_conn_node(c->conn);
}

bool sl_redis_client_send_to(sl_redis_client *c, size_t i, int argc, const char **argv,
                             const size_t *argvlen, sl_redis_reply_fn fn, void *arg)
{
    if (c->cluster)
        return sl_redis_cluster_send_to(c->cluster, i, argc, argv, argvlen, fn, arg);
    return i == 0 && sl_redis_conn_send(c->conn, argc, argv, argvlen, fn, arg);
}
