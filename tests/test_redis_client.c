/* test_redis_client.c - the daemon's Redis client on one real
 * redis-server: ready with the scripts, commands with and without a key,
 * primary 0 and commands sent to it, NULL replies when the server dies,
 * and a reconnect that announces the primaries again. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

#include <event2/event.h>

#include "redis/redis_client.h"
#include "event_wait.h"
#include "reply_box.h"
#include "redis_server.h"

static rs_server server;

static void stop_server(void)
{
    rs_stop(&server);
}

TestSuite(redis_client, .fini = stop_server, .timeout = 60);

typedef struct run {
    bool ready;
    int readies, unreadies, nodes;
    size_t count_at_nodes;  /* primary_count inside on_nodes */
    bool ready_at_nodes;    /* sl_redis_client_ready inside on_nodes */
    sl_redis_client *client;
} run;

static void on_ready(void *arg, bool ready)
{
    run *r = arg;
    r->ready = ready;
    if (ready)
        r->readies++;
    else
        r->unreadies++;
}

static void on_nodes(void *arg)
{
    run *r = arg;
    r->nodes++;
    r->count_at_nodes = sl_redis_client_primary_count(r->client);
    r->ready_at_nodes = sl_redis_client_ready(r->client);
}

/* Runs the loop until *flag holds (at most 10 s, in 10 ms turns). */
static void run_until(struct event_base *base, const bool *flag, const char *what)
{
    cr_assert(event_wait(base, flag, 10000), "%s", what);
}

static sl_redis_target target_of(const rs_server *s)
{
    sl_redis_target t = {0};
    char url[64], err[256];
    snprintf(url, sizeof url, "redis://127.0.0.1:%d/0", s->port);
    cr_assert(sl_redis_target_parse(url, &t, err, sizeof err), "%s", err);
    return t;
}

Test(redis_client, ready_sends_with_and_without_a_key_and_to_primary_0)
{
    char err[256];
    cr_assert(rs_start(&server, err, sizeof err), "%s", err);
    sl_redis_target t = target_of(&server);
    struct event_base *base = event_base_new();
    run r = {0};
    r.client = sl_redis_client_new(base, &t, NULL, on_ready, on_nodes, &r);
    cr_assert_not_null(r.client);
    cr_assert_not(sl_redis_client_ready(r.client));
    cr_assert_eq(sl_redis_client_primary_count(r.client), 0, "no primary before the connect");
    const char *ping[] = {"PING"};
    cr_assert_not(sl_redis_client_send(r.client, NULL, 1, ping, NULL, reply_box_fill, &(reply_box){0}),
                  "nothing goes before ready");

    run_until(base, &r.ready, "ready");
    cr_assert_eq(r.nodes, 1, "the primaries announced once");
    cr_assert_eq(r.count_at_nodes, 1);
    cr_assert(r.ready_at_nodes, "on_nodes comes with the client ready");
    cr_assert_eq(sl_redis_client_primary_count(r.client), 1);
    cr_assert_not_null(sl_redis_client_sha(r.client, "claim"));
    cr_assert_not_null(sl_redis_client_sha(r.client, "ack"));
    cr_assert_null(sl_redis_client_sha(r.client, "nonesuch"));
    const sl_redis_target *p = sl_redis_client_primary(r.client, 0);
    cr_assert(sl_redis_target_same(p, &t), "primary 0 is the server connected");

    const char *set[] = {"SET", "sluice:{acme}:x", "7"};
    reply_box set_box = {0};
    cr_assert(sl_redis_client_send(r.client, "sluice:{acme}:x", 3, set, NULL, reply_box_fill, &set_box));
    const char *incr[] = {"INCR", "sluice:{acme}:x"};
    reply_box incr_box = {0};
    cr_assert(sl_redis_client_send(r.client, "sluice:{acme}:x", 2, incr, NULL, reply_box_fill, &incr_box));
    const char *time_argv[] = {"TIME"};
    reply_box time_box = {0};
    cr_assert(sl_redis_client_send(r.client, NULL, 1, time_argv, NULL, reply_box_fill, &time_box));
    const char *dbsize[] = {"DBSIZE"};
    reply_box size_box = {0};
    cr_assert(sl_redis_client_send_to(r.client, 0, 1, dbsize, NULL, reply_box_fill, &size_box));
    cr_assert_not(sl_redis_client_send_to(r.client, 1, 1, dbsize, NULL, reply_box_fill, &size_box),
                  "there is no primary 1");
    run_until(base, &size_box.came, "DBSIZE answered");
    cr_assert(set_box.came && incr_box.came && time_box.came, "replies come in order");
    cr_assert_str_eq(set_box.str, "OK");
    cr_assert_eq(incr_box.integer, 8);
    cr_assert_eq(time_box.type, REDIS_REPLY_ARRAY);
    cr_assert_eq(size_box.integer, 1);

    sl_redis_client_free(r.client);
    event_base_free(base);
    sl_redis_target_clear(&t);
}

Test(redis_client, a_killed_server_gives_null_replies_and_a_new_one_new_nodes)
{
    char err[256];
    cr_assert(rs_start(&server, err, sizeof err), "%s", err);
    int port = server.port;
    sl_redis_target t = target_of(&server);
    struct event_base *base = event_base_new();
    run r = {0};
    r.client = sl_redis_client_new(base, &t, NULL, on_ready, on_nodes, &r);
    run_until(base, &r.ready, "ready");

    /* A command still waiting when the server dies: its reply is NULL,
     * then on_ready(false), and nothing can go. */
    const char *blpop[] = {"BLPOP", "sluice:{acme}:never", "3"};
    reply_box box = {0};
    cr_assert(sl_redis_client_send(r.client, "sluice:{acme}:never", 3, blpop, NULL, reply_box_fill, &box));
    for (int i = 0; i < 5; i++) { /* let the command reach the server */
        struct timeval tv = {0, 10000};
        event_base_loopexit(base, &tv);
        event_base_dispatch(base);
    }
    rs_stop(&server);
    run_until(base, &box.came, "the waiting command answered");
    cr_assert(box.lost, "a reply lost with the server is NULL");
    bool down = false;
    for (int i = 0; i < 1000 && !down; i++) {
        struct timeval tv = {0, 10000};
        event_base_loopexit(base, &tv);
        event_base_dispatch(base);
        down = r.unreadies > 0;
    }
    cr_assert(down, "on_ready(false) after the loss");
    cr_assert_not(sl_redis_client_ready(r.client));
    cr_assert_eq(sl_redis_client_primary_count(r.client), 0);
    cr_assert_null(sl_redis_client_sha(r.client, "claim"));
    const char *ping[] = {"PING"};
    cr_assert_not(sl_redis_client_send(r.client, NULL, 1, ping, NULL, reply_box_fill, &box));
    cr_assert_not(sl_redis_client_send_to(r.client, 0, 1, ping, NULL, reply_box_fill, &box));

    /* The server back on its port: ready again, the primaries announced
     * again (after a reconnect the node may be another one). */
    cr_assert(rs_start_on(&server, port, err, sizeof err), "%s", err);
    run_until(base, &r.ready, "ready again");
    cr_assert_eq(r.readies, 2);
    cr_assert_eq(r.nodes, 2, "on_nodes again for the new connection");
    cr_assert_eq(r.count_at_nodes, 1);
    reply_box pong = {0};
    cr_assert(sl_redis_client_send(r.client, NULL, 1, ping, NULL, reply_box_fill, &pong));
    run_until(base, &pong.came, "PING answered");
    cr_assert_str_eq(pong.str, "PONG");

    sl_redis_client_free(r.client);
    event_base_free(base);
    sl_redis_target_clear(&t);
}

Test(redis_client, noscript_reloads_the_scripts)
{
    char err[256];
    cr_assert(rs_start(&server, err, sizeof err), "%s", err);
    sl_redis_target t = target_of(&server);
    struct event_base *base = event_base_new();
    run r = {0};
    r.client = sl_redis_client_new(base, &t, NULL, on_ready, on_nodes, &r);
    run_until(base, &r.ready, "ready");
    const char *flush[] = {"SCRIPT", "FLUSH"};
    reply_box flushed = {0};
    cr_assert(sl_redis_client_send(r.client, NULL, 2, flush, NULL, reply_box_fill, &flushed));
    run_until(base, &flushed.came, "SCRIPT FLUSH answered");
    sl_redis_client_reload_scripts(r.client, "sluice:{acme}:queue");
    cr_assert_not(r.ready, "not ready while the scripts load");
    run_until(base, &r.ready, "ready again with the scripts");
    const char *exists[] = {"SCRIPT", "EXISTS", sl_redis_client_sha(r.client, "claim")};
    reply_box found = {0};
    cr_assert(sl_redis_client_send(r.client, NULL, 3, exists, NULL, reply_box_fill, &found));
    run_until(base, &found.came, "SCRIPT EXISTS answered");
    cr_assert_eq(found.type, REDIS_REPLY_ARRAY);
    cr_assert_eq(found.integer, 1, "the claim script is loaded again");

    sl_redis_client_free(r.client);
    event_base_free(base);
    sl_redis_target_clear(&t);
}
