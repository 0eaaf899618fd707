/* test_sentinel_conn.c - the Sentinel side of redis_conn and
 * sentinel_client, in process, against a primary, a replica and three
 * real sentinels (support/redis_sentinel.h): the sentinels asked in turn,
 * the one that answered asked first next time; a primary demoted under
 * the connection (READONLY) dropped, and the connection back once a
 * primary is named again; a stale sentinel that names the replica asked
 * after the others once ROLE shows it wrong; redis_client naming that
 * primary. */
#include <criterion/criterion.h>
#include <string.h>

#include <arpa/inet.h>
#include <netinet/in.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>
#include <event2/listener.h>

#include "process.h"
#include "redis/redis_client.h"
#include "redis/redis_conn.h"
#include "redis/sentinel_client.h"
#include "redis_sentinel.h"

static rsn_group group;

static void setup(void)
{
    char err[256];
    cr_assert(rsn_start(&group, err, sizeof err), "%s", err);
}

static void teardown(void)
{
    rsn_stop(&group);
}

TestSuite(sentinel_conn, .init = setup, .fini = teardown, .timeout = 120);

/* Runs the loop in 10 ms slices until *flag (at most ~timeout_ms). */
static void run_until(struct event_base *base, const bool *flag, int timeout_ms, const char *what)
{
    for (int i = 0; i < timeout_ms / 10 && !*flag; i++) {
        struct timeval tv = {0, 10000};
        event_base_loopexit(base, &tv);
        event_base_dispatch(base);
    }
    cr_assert(*flag, "%s", what);
}

typedef struct resolution {
    bool done;
    int port;
    char why[1200];
} resolution;

static void on_resolved(void *arg, const sl_sentinel_addr *primary, const char *why)
{
    resolution *r = arg;
    r->done = true;
    r->port = primary ? primary->port : 0;
    snprintf(r->why, sizeof r->why, "%s", why ? why : "");
}

Test(sentinel_conn, a_dead_sentinel_is_skipped_and_the_answering_one_asked_first)
{
    int dead = rs_free_port();
    char url[160];
    snprintf(url, sizeof url, "redis-sentinel://127.0.0.1:%d,127.0.0.1:%d/%s", dead,
             group.sentinels[1].port, RSN_MASTER_NAME);
    sl_redis_target t;
    char err[256];
    cr_assert(sl_redis_target_parse(url, &t, err, sizeof err), "%s", err);
    struct event_base *base = event_base_new();
    sl_sentinels *s = sl_sentinels_new(base, &t, SL_SENTINEL_TIMEOUT_MS);
    cr_assert_not_null(s);

    resolution first = {0};
    cr_assert(sl_sentinels_resolve(s, on_resolved, &first));
    cr_assert_not(sl_sentinels_resolve(s, on_resolved, &first), "two at once");
    cr_assert_not(first.done, "called back from inside sl_sentinels_resolve");
    run_until(base, &first.done, 10000, "no answer");
    cr_assert_eq(first.port, group.nodes[0].port, "%s", first.why);
    char skipped[64];
    snprintf(skipped, sizeof skipped, "skipped: 127.0.0.1:%d: ", dead);
    cr_assert(strstr(first.why, skipped), "%s", first.why);

    resolution second = {0};
    cr_assert(sl_sentinels_resolve(s, on_resolved, &second));
    run_until(base, &second.done, 10000, "no answer");
    cr_assert_eq(second.port, group.nodes[0].port);
    cr_assert_str_eq(second.why, "", "the sentinel that answered was not asked first");

    sl_sentinels_free(s);
    event_base_free(base);
    sl_redis_target_clear(&t);
}

typedef struct conn_run {
    bool ready, lost;
    bool replied;
    char error[128];
} conn_run;

static void on_ready(void *arg, bool ready)
{
    conn_run *run = arg;
    run->ready = ready;
    if (!ready)
        run->lost = true;
}

static void on_reply(redisReply *reply, void *arg)
{
    conn_run *run = arg;
    run->replied = true;
    snprintf(run->error, sizeof run->error, "%s",
             reply && reply->type == REDIS_REPLY_ERROR ? reply->str : "");
}

/* REPLICAOF on the node on port ("NO ONE" or another node's port). */
static void replicaof(int port, int of_port)
{
    redisContext *c = rsn_connect(port);
    cr_assert_not_null(c);
    redisReply *r = of_port ? redisCommand(c, "REPLICAOF 127.0.0.1 %d", of_port)
                            : redisCommand(c, "REPLICAOF NO ONE");
    cr_assert(r && r->type == REDIS_REPLY_STATUS, "REPLICAOF: %s", r ? r->str : "no reply");
    freeReplyObject(r);
    redisFree(c);
}

Test(sentinel_conn, a_primary_demoted_under_the_connection_is_dropped)
{
    sl_redis_target t;
    char err[256];
    cr_assert(sl_redis_target_parse(group.url, &t, err, sizeof err), "%s", err);
    struct event_base *base = event_base_new();
    conn_run run = {0};
    sl_redis_conn *conn = sl_redis_conn_new(base, &t, NULL, on_ready, &run);
    cr_assert_not_null(conn);
    run_until(base, &run.ready, 10000, "never ready");
    const sl_redis_target *node = sl_redis_conn_node(conn);
    cr_assert_eq(node->port, group.nodes[0].port, "not on the primary");
    cr_assert_str_eq(node->host, "127.0.0.1");
    cr_assert_eq(node->mode, SL_REDIS_STANDALONE);

    /* Demote the primary behind the sentinels' back (REPLICAOF does not
     * disconnect its clients): a write meets READONLY. */
    int primary = group.nodes[0].port, replica = group.nodes[1].port;
    replicaof(replica, 0);
    replicaof(primary, replica);
    const char *argv[] = {"SET", "sentinel-test", "1"};
    cr_assert(sl_redis_conn_send(conn, 3, argv, NULL, on_reply, &run));
    run_until(base, &run.replied, 5000, "no reply to SET");
    cr_assert(strncmp(run.error, "READONLY", 8) == 0, "SET answered '%s'", run.error);
    run_until(base, &run.lost, 5000, "the connection to a replica stayed up");
    cr_assert_not(sl_redis_conn_ready(conn));

    /* Back as it was: the connection finds a primary again. */
    replicaof(primary, 0);
    replicaof(replica, primary);
    run_until(base, &run.ready, 30000, "never ready again");
    cr_assert_not_null(sl_redis_conn_sha(conn, "claim"));

    sl_redis_conn_free(conn);
    event_base_free(base);
    sl_redis_target_clear(&t);
}

/* A stale sentinel, cut off from the others: whatever it is asked, it
 * answers [127.0.0.1, port of the old primary, now a replica]. In the
 * test's own loop, so it needs no process. */
typedef struct stale_sentinel {
    struct evconnlistener *listener;
    int port;
    char answer[64];
    int asked; /* requests answered */
    struct bufferevent *conns[64]; /* open ones, freed at the end */
} stale_sentinel;

static void on_stale_read(struct bufferevent *bev, void *arg)
{
    stale_sentinel *st = arg;
    struct evbuffer *in = bufferevent_get_input(bev);
    evbuffer_drain(in, evbuffer_get_length(in));
    st->asked++;
    bufferevent_write(bev, st->answer, strlen(st->answer));
}

static void on_stale_event(struct bufferevent *bev, short what, void *arg)
{
    stale_sentinel *st = arg;
    if (!(what & (BEV_EVENT_EOF | BEV_EVENT_ERROR)))
        return;
    for (size_t i = 0; i < sizeof st->conns / sizeof st->conns[0]; i++)
        if (st->conns[i] == bev)
            st->conns[i] = NULL;
    bufferevent_free(bev);
}

static void on_stale_accept(struct evconnlistener *l, evutil_socket_t fd, struct sockaddr *sa,
                            int len, void *arg)
{
    (void)sa;
    (void)len;
    struct bufferevent *bev =
        bufferevent_socket_new(evconnlistener_get_base(l), fd, BEV_OPT_CLOSE_ON_FREE);
    cr_assert_not_null(bev);
    stale_sentinel *st = arg;
    size_t i = 0;
    while (i < sizeof st->conns / sizeof st->conns[0] && st->conns[i])
        i++;
    if (i == sizeof st->conns / sizeof st->conns[0]) { /* asked too often: a loop */
        bufferevent_free(bev);
        return;
    }
    st->conns[i] = bev;
    bufferevent_setcb(bev, on_stale_read, NULL, on_stale_event, arg);
    bufferevent_enable(bev, EV_READ);
}

static void stale_stop(stale_sentinel *st)
{
    for (size_t i = 0; i < sizeof st->conns / sizeof st->conns[0]; i++)
        if (st->conns[i])
            bufferevent_free(st->conns[i]);
    evconnlistener_free(st->listener);
}

static void stale_start(stale_sentinel *st, struct event_base *base, int names_port)
{
    struct sockaddr_in sin = {.sin_family = AF_INET, .sin_port = 0};
    sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    st->listener = evconnlistener_new_bind(base, on_stale_accept, st,
                                           LEV_OPT_CLOSE_ON_FREE | LEV_OPT_REUSEABLE, 16,
                                           (struct sockaddr *)&sin, sizeof sin);
    cr_assert_not_null(st->listener);
    socklen_t sl = sizeof sin;
    cr_assert_eq(getsockname(evconnlistener_get_fd(st->listener), (struct sockaddr *)&sin, &sl), 0);
    st->port = ntohs(sin.sin_port);
    char port[8];
    snprintf(port, sizeof port, "%d", names_port);
    snprintf(st->answer, sizeof st->answer, "*2\r\n$9\r\n127.0.0.1\r\n$%zu\r\n%s\r\n",
             strlen(port), port);
}

Test(sentinel_conn, a_stale_sentinel_naming_a_replica_is_asked_after_the_others)
{
    /* Listed first and always answering first, the stale sentinel names
     * the replica; ROLE says so, and the next resolution must ask the
     * real sentinel first (without the demotion it asks the stale one
     * first forever, and the connection never becomes ready). */
    struct event_base *base = event_base_new();
    stale_sentinel stale = {0};
    stale_start(&stale, base, group.nodes[1].port);
    char url[160];
    snprintf(url, sizeof url, "redis-sentinel://127.0.0.1:%d,127.0.0.1:%d/%s", stale.port,
             group.sentinels[1].port, RSN_MASTER_NAME);
    sl_redis_target t;
    char err[256];
    cr_assert(sl_redis_target_parse(url, &t, err, sizeof err), "%s", err);
    conn_run run = {0};
    sl_redis_conn *conn = sl_redis_conn_new(base, &t, NULL, on_ready, &run);
    cr_assert_not_null(conn);
    run_until(base, &run.ready, 20000, "never ready: the stale sentinel is still asked first");
    cr_assert_eq(sl_redis_conn_node(conn)->port, group.nodes[0].port, "not on the primary");
    cr_assert_geq(stale.asked, 1, "the stale sentinel was never asked");

    sl_redis_conn_free(conn);
    stale_stop(&stale);
    event_base_free(base);
    sl_redis_target_clear(&t);
}

typedef struct client_run {
    bool ready;
    int nodes_calls;
} client_run;

static void on_client_ready(void *arg, bool ready)
{
    ((client_run *)arg)->ready = ready;
}

static void on_client_nodes(void *arg)
{
    ((client_run *)arg)->nodes_calls++;
}

Test(sentinel_conn, the_client_names_the_primary_the_sentinels_named)
{
    sl_redis_target t;
    char err[256];
    cr_assert(sl_redis_target_parse(group.url, &t, err, sizeof err), "%s", err);
    struct event_base *base = event_base_new();
    client_run run = {0};
    sl_redis_client *c = sl_redis_client_new(base, &t, NULL, on_client_ready, on_client_nodes, &run);
    cr_assert_not_null(c);
    run_until(base, &run.ready, 10000, "never ready");
    cr_assert_eq(run.nodes_calls, 1);
    cr_assert_eq(sl_redis_client_primary_count(c), 1);
    const sl_redis_target *primary = sl_redis_client_primary(c, 0);
    cr_assert_eq(primary->port, group.nodes[0].port, "the client's primary is not the primary");
    cr_assert_null(primary->seeds, "a node target, not the sentinels'");
    sl_redis_client_free(c);
    event_base_free(base);
    sl_redis_target_clear(&t);
}
