/* test_cluster.c - the Redis Cluster router (src/redis/cluster.c) against
 * a real cluster of 3 primaries and 3 replicas (tests/support/
 * redis_cluster.c): commands reach the owner of their key on every shard,
 * ASK is followed while a slot moves and MOVED once it has moved, a node
 * that lost the scripts gets them again, and a failover (graceful, then
 * kill -9) ends with commands served by the promoted replica. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include <event2/event.h>

#include "process.h"
#include "redis/cluster.h"
#include "redis/cluster_slots.h"
#include "event_wait.h"
#include "reply_box.h"
#include "redis_cluster.h"

static rc_cluster cluster;

static void stop_cluster(void)
{
    rc_stop(&cluster);
}

TestSuite(cluster, .fini = stop_cluster, .timeout = 120);

typedef struct run {
    struct event_base *base;
    sl_redis_target target;
    sl_redis_cluster *router;
    bool ready;
    int nodes;
} run;

static void on_ready(void *arg, bool ready)
{
    ((run *)arg)->ready = ready;
}

static void on_nodes(void *arg)
{
    ((run *)arg)->nodes++;
}

/* Runs the loop until *flag holds (at most 15 s). */
static void run_until(struct event_base *base, const bool *flag, const char *what)
{
    cr_assert(event_wait(base, flag, 15000), "%s", what);
}

/* A cluster, and a router on it, ready. */
static void start(run *r)
{
    char err[256], url[256];
    cr_assert(rc_start(&cluster, err, sizeof err), "%s", err);
    rc_url(&cluster, 3, url, sizeof url);
    cr_assert(sl_redis_target_parse(url, &r->target, err, sizeof err), "%s", err);
    r->base = event_base_new();
    r->router = sl_redis_cluster_new(r->base, &r->target, NULL, on_ready, on_nodes, r);
    cr_assert_not_null(r->router);
    run_until(r->base, &r->ready, "the router is ready");
}

static void finish(run *r)
{
    sl_redis_cluster_free(r->router);
    event_base_free(r->base);
    sl_redis_target_clear(&r->target);
}

/* Sends argv about key through the router and waits for the reply. */
static reply_box call(run *r, const char *key, int argc, const char **argv)
{
    reply_box box = {0};
    cr_assert(sl_redis_cluster_send(r->router, key, argc, argv, NULL, reply_box_fill, &box),
              "%s could not go", argv[0]);
    run_until(r->base, &box.came, "a reply");
    return box;
}

static void set(run *r, const char *key, const char *value)
{
    const char *argv[] = {"SET", key, value};
    reply_box box = call(r, key, 3, argv);
    cr_assert_not(box.lost, "SET %s lost", key);
    cr_assert_eq(box.type, REDIS_REPLY_STATUS, "SET %s: %s", key, box.str);
}

static reply_box get(run *r, const char *key)
{
    const char *argv[] = {"GET", key};
    return call(r, key, 2, argv);
}

/* A key "{tN}:x" whose slot node owns. */
static void key_on(int node, char *out, size_t size)
{
    for (int n = 0; n < 10000; n++) {
        char tag[16];
        snprintf(tag, sizeof tag, "t%d", n);
        if (rc_owner(&cluster, sl_cluster_key_slot(tag, strlen(tag))) == node) {
            snprintf(out, size, "{%s}:x", tag);
            return;
        }
    }
    cr_assert_fail("no key found for node %d", node);
}

static unsigned slot_of(const char *key)
{
    return sl_cluster_key_slot(key, strlen(key));
}

/* The value of key as node i holds it, read directly ("" if none),
 * even mid-import. */
static void direct_get(int i, const char *key, char *out, size_t size)
{
    redisContext *ctx = rc_connect(&cluster, i);
    cr_assert_not_null(ctx);
    /* ASKING: an importing node answers for its keys only after it */
    freeReplyObject(redisCommand(ctx, "ASKING"));
    redisReply *reply = redisCommand(ctx, "GET %s", key);
    cr_assert_not_null(reply);
    snprintf(out, size, "%s", reply->type == REDIS_REPLY_STRING ? reply->str : "");
    freeReplyObject(reply);
    redisFree(ctx);
}

Test(cluster, commands_reach_the_owner_on_every_shard)
{
    run r = {0};
    start(&r);
    cr_assert_eq(r.nodes, 1, "the primaries announced once, with the router ready");
    cr_assert_eq(sl_redis_cluster_primary_count(r.router), 3);
    cr_assert_not_null(sl_redis_cluster_sha(r.router, "claim"));
    cr_assert_not_null(sl_redis_cluster_sha(r.router, "ack"));
    cr_assert_not_null(sl_redis_cluster_sha(r.router, "reslot"));
    int shards = 0;
    for (int i = 0; i < RC_NODES; i++) {
        if (!cluster.nodes[i].primary)
            continue;
        shards++;
        char key[32], value[32], seen[32];
        key_on(i, key, sizeof key);
        snprintf(value, sizeof value, "v%d", i);
        set(&r, key, value);
        reply_box box = get(&r, key);
        cr_assert_str_eq(box.str, value);
        direct_get(i, key, seen, sizeof seen);
        cr_assert_str_eq(seen, value, "%s is on its slot's owner", key);
    }
    cr_assert_eq(shards, 3);
    /* a command with no key goes to some primary */
    const char *time_argv[] = {"TIME"};
    reply_box box = call(&r, NULL, 1, time_argv);
    cr_assert_eq(box.type, REDIS_REPLY_ARRAY);
    /* each primary answers what is sent to it */
    for (size_t i = 0; i < sl_redis_cluster_primary_count(r.router); i++) {
        const char *argv[] = {"DBSIZE"};
        reply_box dbsize = {0};
        cr_assert(sl_redis_cluster_send_to(r.router, i, 1, argv, NULL, reply_box_fill, &dbsize));
        run_until(r.base, &dbsize.came, "DBSIZE");
        cr_assert_eq(dbsize.integer, 1, "one key on each primary");
    }
    sl_redis_cluster_stats stats = sl_redis_cluster_stats_get(r.router);
    cr_assert_eq(stats.moved + stats.ask, 0, "no redirection on a settled cluster");
    finish(&r);
}

Test(cluster, ask_while_a_slot_moves_then_moved)
{
    run r = {0};
    start(&r);
    int from = rc_other_primary(&cluster, -1);
    int to = rc_other_primary(&cluster, from);
    char key[32], fresh[40], value[32];
    key_on(from, key, sizeof key);
    snprintf(fresh, sizeof fresh, "%.*s:new", (int)(strchr(key, '}') - key + 1), key);
    cr_assert_eq(slot_of(fresh), slot_of(key));
    unsigned slot = slot_of(key);
    set(&r, key, "old");

    /* 1: migrating; the key still on `from` is served there, a key it
     * does not hold is ASKed to `to` */
    cr_assert(rc_move_begin(&cluster, slot, from, to));
    cr_assert_str_eq(get(&r, key).str, "old");
    cr_assert_eq(sl_redis_cluster_stats_get(r.router).ask, 0);
    set(&r, fresh, "new");
    cr_assert_eq(sl_redis_cluster_stats_get(r.router).ask, 1, "the new key was ASKed");
    direct_get(to, fresh, value, sizeof value);
    cr_assert_str_eq(value, "new", "it went to the importing node");

    /* 2: every key moved: ASK for the old key too */
    cr_assert(rc_move_keys(&cluster, slot, from, to));
    cr_assert_str_eq(get(&r, key).str, "old");
    cr_assert_eq(sl_redis_cluster_stats_get(r.router).ask, 2);
    cr_assert_eq(sl_redis_cluster_stats_get(r.router).moved, 0, "ASK left the map alone");

    /* 3: the slot is `to`'s: MOVED once, then straight there */
    cr_assert(rc_move_end(&cluster, slot, to));
    cr_assert_str_eq(get(&r, key).str, "old");
    cr_assert_eq(sl_redis_cluster_stats_get(r.router).moved, 1);
    cr_assert_str_eq(get(&r, fresh).str, "new");
    cr_assert_eq(sl_redis_cluster_stats_get(r.router).moved, 1, "the map was updated");
    cr_assert_eq(sl_redis_cluster_stats_get(r.router).expired, 0);
    finish(&r);
}

/* SPEC §8: a shard is added as an empty primary; its first slot's keys
 * are ASKed to a node the map does not name yet. */
Test(cluster, ask_to_an_empty_new_primary_outside_the_map)
{
    run r = {0};
    start(&r);
    int from = rc_other_primary(&cluster, -1);
    char key[32], fresh[40], value[32];
    key_on(from, key, sizeof key);
    snprintf(fresh, sizeof fresh, "%.*s:new", (int)(strchr(key, '}') - key + 1), key);
    unsigned slot = slot_of(key);
    cr_assert(rc_add_empty_primary(&cluster, from), "the new primary met the cluster");
    cr_assert(rc_move_begin(&cluster, slot, from, RC_SPARE));
    set(&r, fresh, "new");
    /* ASKed once, or again if a map refresh closed the connection to
     * the new node in between (it is not in the map yet) */
    cr_assert_geq(sl_redis_cluster_stats_get(r.router).ask, 1, "the new key was ASKed");
    cr_assert_eq(sl_redis_cluster_stats_get(r.router).expired, 0);
    direct_get(RC_SPARE, fresh, value, sizeof value);
    cr_assert_str_eq(value, "new", "it went to the new primary");
    cr_assert_eq(sl_redis_cluster_primary_count(r.router), 3, "the map is unchanged");
    finish(&r);
}

/* A node that answers an ASKed command with MOVED (it was not told to
 * import the slot) keeps a request bouncing: past the quick redirects it
 * backs off with an ASK to a node outside the map, while every MOVED
 * asks for a refresh, which closes that node. The request must not use
 * it afterwards (the ASan build sees a use after free). */
Test(cluster, a_backed_off_ask_survives_its_node_leaving)
{
    run r = {0};
    start(&r);
    int from = rc_other_primary(&cluster, -1);
    char key[32], fresh[40];
    key_on(from, key, sizeof key);
    snprintf(fresh, sizeof fresh, "%.*s:new", (int)(strchr(key, '}') - key + 1), key);
    cr_assert(rc_add_empty_primary(&cluster, from), "the new primary met the cluster");
    char s[16];
    snprintf(s, sizeof s, "%u", slot_of(key));
    redisContext *ctx = rc_connect(&cluster, from);
    redisReply *migrating =
        redisCommand(ctx, "CLUSTER SETSLOT %s MIGRATING %s", s, cluster.nodes[RC_SPARE].id);
    cr_assert(migrating && migrating->type == REDIS_REPLY_STATUS);
    freeReplyObject(migrating);
    redisFree(ctx);
    uint64_t refreshes = sl_redis_cluster_stats_get(r.router).refreshes;
    const char *argv[] = {"SET", fresh, "new"};
    reply_box box = call(&r, fresh, 3, argv);
    cr_assert(box.lost, "a slot no node takes: NULL at the chain's deadline");
    sl_redis_cluster_stats st = sl_redis_cluster_stats_get(r.router);
    cr_assert_gt(st.ask, 3, "asked %llu times", (unsigned long long)st.ask);
    cr_assert_gt(st.refreshes, refreshes, "the map was asked for again");
    finish(&r);
}

Test(cluster, a_node_that_lost_the_scripts_loads_them_and_the_command_runs)
{
    run r = {0};
    start(&r);
    int p = rc_other_primary(&cluster, -1);
    char key[32];
    key_on(p, key, sizeof key);
    /* The round after the first map (armed while the nodes connected)
     * finds every primary up: the next is SL_CLUSTER_REFRESH_MS away. */
    for (int i = 0; i < 50 && sl_redis_cluster_stats_get(r.router).refreshes < 2; i++)
        event_run_for(r.base, 100);
    uint64_t refreshes = sl_redis_cluster_stats_get(r.router).refreshes;
    cr_assert_geq(refreshes, 2);
    redisContext *ctx = rc_connect(&cluster, p);
    redisReply *flushed = redisCommand(ctx, "SCRIPT FLUSH");
    cr_assert(flushed && flushed->type == REDIS_REPLY_STATUS);
    freeReplyObject(flushed);
    redisFree(ctx);

    /* The claim script with no arguments: its own answer (an error about
     * its arguments, or a result) shows it ran; NOSCRIPT would not. */
    const char *argv[] = {"EVALSHA", sl_redis_cluster_sha(r.router, "claim"), "1", key};
    reply_box box = call(&r, key, 4, argv);
    cr_assert_not(box.lost);
    cr_assert(strncmp(box.str, "NOSCRIPT", 8) != 0, "still %s", box.str);
    cr_assert_eq(sl_redis_cluster_stats_get(r.router).noscript, 1);
    box = call(&r, key, 4, argv);
    cr_assert_eq(sl_redis_cluster_stats_get(r.router).noscript, 1, "loaded for good");
    /* A reload is not a lost node: no map refresh follows it (one would
     * come REFRESH_MIN_MS after), and no error is reported. */
    event_run_for(r.base, 400);
    cr_assert_eq(sl_redis_cluster_stats_get(r.router).refreshes, refreshes,
                 "the reload was taken for a lost node");
    cr_assert_str_eq(sl_redis_cluster_error(r.router), "");
    finish(&r);
}

static double seconds_since(const struct timespec *t0)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)(t.tv_sec - t0->tv_sec) + (double)(t.tv_nsec - t0->tv_nsec) / 1e9;
}

/* SETs key through the router until one succeeds (at most 30 s); the
 * seconds it took. */
static double set_until_served(run *r, const char *key)
{
    struct timespec t0;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (int i = 0; i < 300; i++) {
        const char *argv[] = {"SET", key, "after"};
        reply_box box = call(r, key, 3, argv);
        if (!box.lost && box.type == REDIS_REPLY_STATUS)
            return seconds_since(&t0);
        /* NULL (a lost connection, or a chain past its deadline) or an
         * error: the caller's to retry, as the daemon does */
        event_run_for(r->base, 100);
    }
    cr_assert_fail("%s never served again", key);
    return 0;
}

Test(cluster, failover_then_kill_9_the_promoted_replica_serves)
{
    run r = {0};
    start(&r);
    int p = rc_other_primary(&cluster, -1);
    int replica = rc_replica(&cluster, p);
    cr_assert_geq(replica, 0, "primary %d has a replica", p);
    char key[32];
    key_on(p, key, sizeof key);
    set(&r, key, "before");

    /* graceful: the old primary answers MOVED to its former replica */
    cr_assert(rc_failover(&cluster, replica));
    cr_assert(rc_wait_ok(&cluster, 10000));
    int nodes_before = r.nodes;
    double took = set_until_served(&r, key);
    cr_log_info("CLUSTER FAILOVER: served again after %.2f s", took);
    cr_assert_str_eq(get(&r, key).str, "after");
    for (int i = 0; i < 300 && r.nodes == nodes_before; i++)
        event_run_for(r.base, 10);
    cr_assert_gt(r.nodes, nodes_before, "the new set of primaries was announced");
    cr_assert_eq(sl_redis_cluster_primary_count(r.router), 3);

    /* kill -9 of the new primary: its replica (the old primary) takes over */
    int now_primary = replica, heir = -1;
    for (int i = 0; i < 100 && heir < 0; i++) {
        sleep_ms(50);
        rc_roles(&cluster);
        heir = rc_replica(&cluster, replica);
    }
    cr_assert_geq(heir, 0, "the promoted node has a replica");
    struct timespec killed;
    clock_gettime(CLOCK_MONOTONIC, &killed);
    rc_kill(&cluster, now_primary);
    took = set_until_served(&r, key);
    double since_kill = seconds_since(&killed);
    cr_log_info("kill -9 of a primary: served again %.2f s after the kill (node timeout %d ms)",
                since_kill, RC_NODE_TIMEOUT_MS);
    (void)took;
    cr_assert(rc_wait_primary(&cluster, heir, 10000), "the replica took over");
    cr_assert_str_eq(get(&r, key).str, "after");
    cr_assert_eq(sl_redis_cluster_primary_count(r.router), 3);
    const sl_redis_target *t = NULL;
    bool heir_known = false;
    for (size_t i = 0; i < sl_redis_cluster_primary_count(r.router); i++) {
        t = sl_redis_cluster_primary(r.router, i);
        heir_known |= t && t->port == cluster.nodes[heir].port;
    }
    cr_assert(heir_known, "the promoted replica is a primary of the router");
    finish(&r);
}

Test(cluster, a_command_for_a_shard_gone_for_good_gets_null_at_the_chain_deadline)
{
    run r = {0};
    start(&r);
    int p = rc_other_primary(&cluster, -1);
    int replica = rc_replica(&cluster, p);
    cr_assert_geq(replica, 0);
    char key[32];
    key_on(p, key, sizeof key);
    set(&r, key, "v");
    /* the shard and its replica gone: no failover can save it */
    rc_kill(&cluster, replica);
    rc_kill(&cluster, p);
    const char *argv[] = {"SET", key, "w"};
    /* The first may still go on the dying connection (NULL: lost); the
     * next waits for a primary that never comes back. */
    reply_box box = call(&r, key, 3, argv);
    cr_assert(box.lost, "NULL, not \"%s\"", box.str);
    box = call(&r, key, 3, argv);
    cr_assert(box.lost, "NULL, as for a lost connection, not \"%s\"", box.str);
    sl_redis_cluster_stats stats = sl_redis_cluster_stats_get(r.router);
    cr_assert_geq(stats.expired, 1, "the command waited out its chain");
    finish(&r);
}

Test(cluster, a_transaction_is_never_split_by_a_redirect)
{
    run r = {0};
    start(&r);
    int from = rc_other_primary(&cluster, -1);
    int to = rc_other_primary(&cluster, from);
    char key[32], value[32];
    key_on(from, key, sizeof key);
    set(&r, key, "before");
    unsigned slot = slot_of(key);
    cr_assert(rc_move_begin(&cluster, slot, from, to));
    cr_assert(rc_move_keys(&cluster, slot, from, to));
    cr_assert(rc_move_end(&cluster, slot, to));
    /* the router's map still names `from`: MULTI goes there, the SET
     * queued in it meets MOVED, and is not run alone on `to` */
    const char *multi[] = {"MULTI"}, *set_argv[] = {"SET", key, "inside"}, *exec[] = {"EXEC"};
    reply_box m = {0}, s = {0}, e = {0};
    cr_assert(sl_redis_cluster_send(r.router, key, 1, multi, NULL, reply_box_fill, &m));
    cr_assert(sl_redis_cluster_send(r.router, key, 3, set_argv, NULL, reply_box_fill, &s));
    cr_assert(sl_redis_cluster_send(r.router, key, 1, exec, NULL, reply_box_fill, &e));
    run_until(r.base, &e.came, "EXEC answered");
    cr_assert_eq(m.type, REDIS_REPLY_STATUS, "MULTI: %s", m.str);
    cr_assert_eq(s.type, REDIS_REPLY_ERROR);
    cr_assert(strncmp(s.str, "MOVED", 5) == 0, "the queued SET's own answer: %s", s.str);
    cr_assert_eq(e.type, REDIS_REPLY_ERROR, "EXEC aborts: %s", e.str);
    direct_get(to, key, value, sizeof value);
    cr_assert_str_eq(value, "before", "nothing of the transaction ran");
    cr_assert_eq(sl_redis_cluster_stats_get(r.router).moved, 0);
    /* outside a transaction, MOVED is followed again */
    set(&r, key, "after");
    cr_assert_eq(sl_redis_cluster_stats_get(r.router).moved, 1);
    direct_get(to, key, value, sizeof value);
    cr_assert_str_eq(value, "after");
    finish(&r);
}
