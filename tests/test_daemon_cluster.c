/* test_daemon_cluster.c - the real `sluice run` on a Redis Cluster of 3
 * primaries and 3 replicas (tests/support/redis_cluster.c): tenants on
 * every shard all delivered; a busy tenant's slot moved mid-run (its
 * claims meet ASK, TRYAGAIN, then MOVED); its primary failed over
 * (CLUSTER FAILOVER) then killed (kill -9) mid-run, a replica taking
 * over each time; the CLI (push, stats, dlq, tenant) on every shard;
 * keyspace notifications from every primary waking idle tenants.
 * Nothing is lost; a job may come twice only through a failover or a
 * dropped connection, with the same id; SPEC §4's burst bound holds. */
#include <criterion/criterion.h>
#include <signal.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "cli_run.h"
#include "config_file.h"
#include "daemon_env.h"
#include "delivery_checks.h"
#include "redis/cluster_slots.h"
#include "redis_cluster.h"
#include "shaping_bound.h"
#include "sink_process.h"

static rc_cluster cluster;
static sink_process sink;
static char dir[64];

static void setup(void)
{
    char err[256];
    cr_assert(rc_start(&cluster, err, sizeof err), "%s", err);
    daemon_env_start(&sink, dir, sizeof dir, "daemon-cluster");
}

static void teardown(void)
{
    daemon_env_stop(&sink, dir);
    rc_stop(&cluster);
}

TestSuite(daemon_cluster, .init = setup, .fini = teardown, .timeout = 180);

/* A tenant name whose slot primary p owns, in out. */
static void tenant_on(int p, char *out, size_t size)
{
    for (int n = 0; n < 10000; n++) {
        snprintf(out, size, "t%d", n);
        if (rc_owner(&cluster, sl_cluster_key_slot(out, strlen(out))) == p)
            return;
    }
    cr_assert_fail("no tenant for node %d", p);
}

/* LPUSHes n envelope jobs TAG-i onto tenant's queue on node i, and waits
 * until a replica has them too (a failover must not lose what was pushed). */
static void push_jobs(int i, const char *tenant, const char *tag, int n)
{
    redisContext *c = rc_connect(&cluster, i);
    cr_assert_not_null(c);
    char key[64], job[128];
    snprintf(key, sizeof key, "sluice:{%s}:queue", tenant);
    for (int k = 0; k < n; k++) {
        snprintf(job, sizeof job, "{\"id\":\"%s-%d\",\"body\":\"%s %d\"}", tag, k, tag, k);
        redisReply *reply = redisCommand(c, "LPUSH %s %s", key, job);
        cr_assert(reply && reply->type == REDIS_REPLY_INTEGER, "LPUSH refused");
        freeReplyObject(reply);
    }
    redisReply *reply = redisCommand(c, "WAIT 1 5000");
    cr_assert(reply && reply->type == REDIS_REPLY_INTEGER && reply->integer >= 1,
              "no replica acknowledged the jobs");
    freeReplyObject(reply);
    redisFree(c);
}

static const char *write_config(const char *tenants_format, ...)
    __attribute__((format(printf, 1, 2)));
static const char *write_config(const char *tenants_format, ...)
{
    static char path[128];
    char url[256];
    snprintf(path, sizeof path, "%s/sluice.json", dir);
    rc_url(&cluster, 3, url, sizeof url);
    va_list ap;
    va_start(ap, tenants_format);
    config_file_vwrite(path, url, CONFIG_DAEMON_MEMBERS, tenants_format, ap);
    va_end(ap);
    return path;
}

/* Waits until every job TAG-0..n-1 arrived, then checks each came (once
 * unless allow_dup). */
static void assert_all_came(const char *tag, int n, bool allow_dup)
{
    sink_request *reqs = NULL;
    size_t got = sink_wait_each(&sink, tag, n, 60000, &reqs);
    assert_each_delivered(reqs, got, tag, n, allow_dup);
    sink_requests_free(reqs, got);
}

/* Waits until at least n requests reached the sink (at most 10 s); how
 * many did. */
static size_t wait_deliveries(size_t n)
{
    sink_request *reqs = NULL;
    size_t got = sink_wait_log(&sink, n, 10000, &reqs);
    sink_requests_free(reqs, got);
    cr_assert_geq(got, n, "only %zu of %zu requests came", got, n);
    return got;
}

/* The tenant's keys on its owner now are empty (nothing queued, leased,
 * retrying), within 10 s: acks may still be on their way. */
static void assert_drained(const char *tenant)
{
    int owner = rc_owner(&cluster, sl_cluster_key_slot(tenant, strlen(tenant)));
    redisContext *c = rc_connect(&cluster, owner);
    cr_assert_not_null(c);
    for (int i = 0; i < 100 && redis_count(c, "ZCARD sluice:{%s}:inflight", tenant) > 0; i++)
        sleep_ms(100);
    assert_tenant_drained(c, tenant);
    redisFree(c);
}

/* Pushes n envelope jobs TAG-i with redis-cli -c through node `via`,
 * which need not own the tenant's slot (redis-cli follows MOVED). */
static void cli_push_jobs(int via, const char *tenant, const char *tag, int n)
{
    char key[64], jobs[RC_CLI_PUSH_MAX][128];
    const char *values[RC_CLI_PUSH_MAX];
    cr_assert_leq(n, RC_CLI_PUSH_MAX);
    snprintf(key, sizeof key, "sluice:{%s}:queue", tenant);
    for (int k = 0; k < n; k++) {
        snprintf(jobs[k], sizeof jobs[k], "{\"id\":\"%s-%d\",\"body\":\"%s %d\"}", tag, k, tag, k);
        values[k] = jobs[k];
    }
    cr_assert(rc_cli_lpush(&cluster, via, key, values, n), "redis-cli -c LPUSH %s failed", key);
}

Test(daemon_cluster, tenants_on_every_shard_all_delivered)
{
    /* The producer is redis-cli -c, sent to another primary than the
     * tenant's: the jobs reach the owner by the cluster's own redirection. */
    char tenants[3][16];
    int shard = 0;
    for (int i = 0; i < RC_NODES && shard < 3; i++)
        if (cluster.nodes[i].primary) {
            tenant_on(i, tenants[shard], sizeof tenants[shard]);
            cli_push_jobs(rc_other_primary(&cluster, i), tenants[shard], tenants[shard], 40);
            shard++;
        }
    cr_assert_eq(shard, 3);
    const char *config = write_config(
        "{\"%s\": {\"endpoint\": \"http://127.0.0.1:%d/hook\", \"rate\": 40},"
        " \"%s\": {\"endpoint\": \"http://127.0.0.1:%d/hook\", \"rate\": 40},"
        " \"%s\": {\"endpoint\": \"http://127.0.0.1:%d/hook\", \"rate\": 40}}",
        tenants[0], sink.port, tenants[1], sink.port, tenants[2], sink.port);
    daemon_process d = daemon_env_run(dir, config, NULL);
    for (int t = 0; t < 3; t++)
        assert_all_came(tenants[t], 40, false);
    cr_assert_eq(daemon_stop(&d, SIGTERM, 10000), 0);
    for (int t = 0; t < 3; t++)
        assert_drained(tenants[t]);
}

#define BUSY_RATE 50

/* The departures the daemon traced (run_busy_tenant's): SPEC §4's burst
 * bound holds in every window, through whatever the cluster did (logged;
 * asserted where timing is the product's). */
static void assert_no_burst(const char *what)
{
    char trace[128];
    snprintf(trace, sizeof trace, "%s/departures", dir);
    int64_t *t = NULL;
    size_t n = departures_read(trace, &t);
    int64_t window = spec_window_us(BUSY_RATE);
    size_t most = most_in_window(t, n, window), bound = spec_most_in_window(BUSY_RATE);
    double rate = n > 1 ? (double)(n - 1) * 1e6 / (double)(t[n - 1] - t[0]) : 0;
    cr_log_info("%s: %zu departures at %.2f/s (rate %d/s), most in a window of %lld us: %zu "
                "(SPEC allows %zu)", what, n, rate, BUSY_RATE, (long long)window, most, bound);
    if (timing_counts())
        cr_assert_leq(most, bound, "%s: a burst of %zu departures in %lld us", what, most,
                      (long long)window);
    free(t);
}

/* A tenant on primary p (its name in tenant) with 150 jobs TAG-i at
 * BUSY_RATE, and a daemon delivering them (departures traced), under way. */
static daemon_process run_busy_tenant(int p, char *tenant, size_t size, const char *tag)
{
    tenant_on(p, tenant, size);
    push_jobs(p, tenant, tag, 150);
    const char *config = write_config(
        "{\"%s\": {\"endpoint\": \"http://127.0.0.1:%d/hook\", \"rate\": %d}}", tenant,
        sink.port, BUSY_RATE);
    char trace[128];
    snprintf(trace, sizeof trace, "%s/departures", dir);
    daemon_process d = daemon_env_run(dir, config, trace);
    redisContext *c = rc_connect(&cluster, p);
    cr_assert(wait_under_way(c, tenant, &sink, 0, 10000), "nothing under way");
    redisFree(c);
    return d;
}

Test(daemon_cluster, a_busy_tenant_s_slot_moves_mid_run)
{
    rc_roles(&cluster);
    int from = rc_other_primary(&cluster, -1), to = rc_other_primary(&cluster, from);
    char tenant[16];
    daemon_process d = run_busy_tenant(from, tenant, sizeof tenant, "m");
    unsigned slot = sl_cluster_key_slot(tenant, strlen(tenant));
    /* Migrating, with the keys still on `from`: deliveries go on. Once
     * they have moved, claims meet ASK, and TRYAGAIN from the importing
     * node for a claim whose keys do not all exist there (Redis's rule
     * for multi-key commands mid-migration): the tenant waits until the
     * slot settles, then `from` answers MOVED. */
    cr_assert(rc_move_begin(&cluster, slot, from, to));
    size_t seen = wait_deliveries(10);
    cr_assert(rc_move_keys(&cluster, slot, from, to));
    cr_assert(rc_move_end(&cluster, slot, to));
    cr_assert_eq(rc_owner(&cluster, slot), to);
    cr_assert(daemon_env_wait_log(dir, "redis cluster slot map changed", 10000),
              "the daemon saw the slot move");
    cr_assert_lt(wait_deliveries(seen + 10), 150, "the move was over before the run");
    assert_all_came("m", 150, false);
    cr_assert_eq(daemon_stop(&d, SIGTERM, 10000), 0);
    assert_no_burst("a slot moved mid-run");
    assert_drained(tenant);
}

Test(daemon_cluster, failover_then_kill_9_mid_run_the_replica_takes_over)
{
    rc_roles(&cluster);
    int first = rc_other_primary(&cluster, -1);
    int p = rc_replica(&cluster, first);
    cr_assert_geq(p, 0);
    char tenant[16];
    daemon_process d = run_busy_tenant(first, tenant, sizeof tenant, "f");
    /* graceful: the replica takes over, the old primary answers MOVED */
    cr_assert(rc_failover(&cluster, p));
    size_t seen = wait_deliveries(20);
    /* then the new primary dies: the old one, its replica now, takes over */
    int heir = -1;
    for (int i = 0; i < 100 && heir < 0; i++) {
        rc_roles(&cluster);
        if ((heir = rc_replica(&cluster, p)) < 0)
            sleep_ms(50);
    }
    cr_assert_eq(heir, first, "the old primary replicates the new one");
    cr_assert_lt(wait_deliveries(seen + 10), 150, "the run would be over before the kill");
    struct timespec killed;
    clock_gettime(CLOCK_REALTIME, &killed);
    rc_kill(&cluster, p);
    cr_assert(rc_wait_primary(&cluster, heir, 15000), "the replica took over");
    struct timespec promoted;
    clock_gettime(CLOCK_REALTIME, &promoted);
    /* a claim or ack the old primary had not passed on may be lost with
     * it: such a job comes again, with its id */
    sink_request *reqs = NULL;
    size_t got = sink_wait_each(&sink, "f", 150, 60000, &reqs);
    assert_each_delivered(reqs, got, "f", 150, true);
    /* The stall (issue 14: no longer than the cluster's own failover and
     * 2 s): the longest gap between two jobs' first deliveries that spans
     * or follows the kill. A job delivered again (its claim or ack lost
     * with the primary) comes back only when its lease passes, which is
     * not a stall of the tenant: only first deliveries count. */
    int64_t kill_us = (int64_t)killed.tv_sec * 1000000 + killed.tv_nsec / 1000, stall = 0;
    sink_requests_sort_by_arrival(reqs, got);
    int64_t last_first = -1;
    for (size_t i = 0; i < got; i++) {
        bool again = false;
        for (size_t k = 0; k < i && !again; k++)
            again = strcmp(reqs[k].key, reqs[i].key) == 0;
        if (again)
            continue;
        if (last_first >= 0 && reqs[i].arrival_us > kill_us &&
            reqs[i].arrival_us - last_first > stall)
            stall = reqs[i].arrival_us - last_first;
        last_first = reqs[i].arrival_us;
    }
    double failover_s = (double)(promoted.tv_sec - killed.tv_sec) +
                        (double)(promoted.tv_nsec - killed.tv_nsec) / 1e9;
    cr_log_info("kill -9 of the tenant's primary: the longest pause in its deliveries %.2f s; "
                "the replica was a primary %.2f s after the kill (node timeout %d ms)",
                (double)stall / 1e6, failover_s, RC_NODE_TIMEOUT_MS);
    cr_assert_leq((double)stall / 1e6, failover_s + 2.0,
                  "deliveries paused %.2f s, the failover took %.2f s", (double)stall / 1e6,
                  failover_s);
    sink_requests_free(reqs, got);
    cr_assert_eq(daemon_stop(&d, SIGTERM, 10000), 0);
    assert_no_burst("a failover, then kill -9 of the tenant's primary");
    assert_drained(tenant);
}

/* The number after "\"tenant\":\"NAME\",\"queued\":" in stats --json. */
static long queued_in(const char *json, const char *tenant)
{
    char needle[64];
    snprintf(needle, sizeof needle, "\"tenant\":\"%s\",\"queued\":", tenant);
    const char *at = strstr(json, needle);
    cr_assert_not_null(at, "%s not in %s", tenant, json);
    return strtol(at + strlen(needle), NULL, 10);
}

Test(daemon_cluster, the_cli_pushes_shows_and_handles_dead_letters_on_every_shard)
{
    char url[256], out[8192], tenants[3][16];
    rc_url(&cluster, 2, url, sizeof url);
    int shard = 0;
    for (int i = 0; i < RC_NODES && shard < 3; i++)
        if (cluster.nodes[i].primary)
            tenant_on(i, tenants[shard++], sizeof tenants[0]);
    for (int t = 0; t < 3; t++) {
        int code = cli_run(out, sizeof out, "{\"id\":\"a\",\"body\":1}\n{\"id\":\"b\",\"body\":2}\n",
                           (const char *const[]){"push", "--redis", url, tenants[t], "-", NULL});
        cr_assert_eq(code, 0, "push %s: %s", tenants[t], out);
    }
    int code = cli_run(out, sizeof out, NULL,
                       (const char *const[]){"stats", "--redis", url, "--json", NULL});
    cr_assert_eq(code, 0, "stats: %s", out);
    for (int t = 0; t < 3; t++)
        cr_assert_eq(queued_in(out, tenants[t]), 2, "%s's jobs, on its own shard", tenants[t]);
    code = cli_run(out, sizeof out, NULL,
                   (const char *const[]){"stats", "--redis", url, tenants[1], "--json", NULL});
    cr_assert_eq(code, 0, "stats %s: %s", tenants[1], out);
    cr_assert_eq(queued_in(out, tenants[1]), 2);
    code = cli_run(out, sizeof out, NULL,
                   (const char *const[]){"dlq", "list", "--redis", url, tenants[2], NULL});
    cr_assert_eq(code, 0, "dlq list: %s", out);
    code = cli_run(out, sizeof out, NULL,
                   (const char *const[]){"tenant", "pause", "--redis", url, tenants[0], NULL});
    cr_assert_eq(code, 0, "tenant pause: %s", out);
    code = cli_run(out, sizeof out, NULL,
                   (const char *const[]){"tenant", "show", "--redis", url, tenants[0], NULL});
    cr_assert_eq(code, 0, "tenant show: %s", out);
    cr_assert(strstr(out, "paused"), "%s", out);
}

/* CLOCK_REALTIME in microseconds: the sink's clock for arrivals. */
static int64_t wall_us(void)
{
    struct timespec t;
    clock_gettime(CLOCK_REALTIME, &t);
    return (int64_t)t.tv_sec * 1000000 + t.tv_nsec / 1000;
}

Test(daemon_cluster, notifications_on_every_primary_wake_idle_tenants_at_once)
{
    for (int i = 0; i < RC_NODES; i++) {
        redisContext *c = rc_connect(&cluster, i);
        cr_assert_not_null(c);
        freeReplyObject(redisCommand(c, "CONFIG SET notify-keyspace-events Kl"));
        redisFree(c);
    }
    char tenants[3][16];
    int owners[3], shard = 0;
    for (int i = 0; i < RC_NODES && shard < 3; i++)
        if (cluster.nodes[i].primary) {
            owners[shard] = i;
            tenant_on(i, tenants[shard++], sizeof tenants[0]);
        }
    const char *config = write_config(
        "{\"%s\": {\"endpoint\": \"http://127.0.0.1:%d/hook\", \"rate\": 10},"
        " \"%s\": {\"endpoint\": \"http://127.0.0.1:%d/hook\", \"rate\": 10},"
        " \"%s\": {\"endpoint\": \"http://127.0.0.1:%d/hook\", \"rate\": 10}}",
        tenants[0], sink.port, tenants[1], sink.port, tenants[2], sink.port);
    daemon_process d = daemon_env_run(dir, config, NULL);
    cr_assert(daemon_env_wait_log(dir, "keyspace notifications on", 10000),
              "subscribed on every primary");
    sleep_ms(2500); /* idle long enough for polling to have backed off */
    for (int t = 0; t < 3; t++) {
        char id[32];
        snprintf(id, sizeof id, "idle-%d", t);
        size_t before = wait_deliveries(0);
        int64_t pushed = wall_us();
        push_jobs(owners[t], tenants[t], id, 1);
        sink_request *reqs = NULL;
        size_t n = sink_wait_log(&sink, before + 1, 5000, &reqs);
        int64_t latency = -1;
        for (size_t i = before; i < n; i++)
            if (strncmp(reqs[i].key, id, strlen(id)) == 0)
                latency = reqs[i].arrival_us - pushed;
        sink_requests_free(reqs, n);
        cr_log_info("%s (shard %d): picked up %lld us after the push", tenants[t], t,
                    (long long)latency);
        int64_t limit = timing_counts() ? 100000 : 1000000; /* notified, not polled */
        cr_assert(latency >= 0 && latency < limit, "%s picked up after %lld us", tenants[t],
                  (long long)latency);
    }
    cr_assert_eq(daemon_stop(&d, SIGTERM, 10000), 0);
}
