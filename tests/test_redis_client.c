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
#include "redis_server.h"
#include "reply_box.h"

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

/* A server, and a client of it on a loop of its own. */
typedef struct fixture {
    sl_redis_target target;
    struct event_base *base;
    run r;
} fixture;

/* Starts the server and the client (options NULL: the daemon's). */
static void start(fixture *f, const sl_redis_conn_options *options)
{
    char url[64], err[256];
    cr_assert(rs_start(&server, err, sizeof err), "%s", err);
    snprintf(url, sizeof url, "redis://127.0.0.1:%d/0", server.port);
    cr_assert(sl_redis_target_parse(url, &f->target, err, sizeof err), "%s", err);
    f->base = event_base_new();
    f->r = (run){0};
    f->r.client = sl_redis_client_new(f->base, &f->target, NULL, on_ready, on_nodes, &f->r);
    cr_assert_not_null(f->r.client);
    if (options)
        sl_redis_client_set_options(f->r.client, options);
}

static void finish(fixture *f)
{
    sl_redis_client_free(f->r.client);
    event_base_free(f->base);
    sl_redis_target_clear(&f->target);
}

Test(redis_client, ready_sends_with_and_without_a_key_and_to_primary_0)
{
    fixture f;
    start(&f, NULL);
    sl_redis_client *c = f.r.client;
    cr_assert_not(sl_redis_client_ready(c));
    cr_assert_eq(sl_redis_client_primary_count(c), 0, "no primary before the connect");
    const char *ping[] = {"PING"};
    cr_assert_not(sl_redis_client_send(c, NULL, 1, ping, NULL, reply_box_fill, &(reply_box){0}),
                  "nothing goes before ready");

    run_until(f.base, &f.r.ready, "ready");
    cr_assert_eq(f.r.nodes, 1, "the primaries announced once");
    cr_assert_eq(f.r.count_at_nodes, 1);
    cr_assert(f.r.ready_at_nodes, "on_nodes comes with the client ready");
    cr_assert_eq(sl_redis_client_primary_count(c), 1);
    cr_assert_not_null(sl_redis_client_sha(c, "claim"));
    cr_assert_not_null(sl_redis_client_sha(c, "ack"));
    cr_assert_not_null(sl_redis_client_sha(c, "reslot"));
    cr_assert_null(sl_redis_client_sha(c, "nonesuch"));
    const sl_redis_target *p = sl_redis_client_primary(c, 0);
    cr_assert(sl_redis_target_same(p, &f.target), "primary 0 is the server connected");

    const char *key = "sluice:{acme}:x";
    const char *set[] = {"SET", key, "7"};
    reply_box set_box = {0};
    cr_assert(sl_redis_client_send(c, key, 3, set, NULL, reply_box_fill, &set_box));
    const char *incr[] = {"INCR", key};
    reply_box incr_box = {0};
    cr_assert(sl_redis_client_send(c, key, 2, incr, NULL, reply_box_fill, &incr_box));
    const char *time_argv[] = {"TIME"};
    reply_box time_box = {0};
    cr_assert(sl_redis_client_send(c, NULL, 1, time_argv, NULL, reply_box_fill, &time_box));
    const char *dbsize[] = {"DBSIZE"};
    reply_box size_box = {0};
    cr_assert(sl_redis_client_send_to(c, 0, 1, dbsize, NULL, reply_box_fill, &size_box));
    cr_assert_not(sl_redis_client_send_to(c, 1, 1, dbsize, NULL, reply_box_fill, &size_box),
                  "there is no primary 1");
    run_until(f.base, &size_box.came, "DBSIZE answered");
    cr_assert(set_box.came && incr_box.came && time_box.came, "replies come in order");
    cr_assert_str_eq(set_box.str, "OK");
    cr_assert_eq(incr_box.integer, 8);
    cr_assert_eq(time_box.type, REDIS_REPLY_ARRAY);
    cr_assert_eq(size_box.integer, 1);
    finish(&f);
}

Test(redis_client, a_killed_server_gives_null_replies_and_a_new_one_new_nodes)
{
    fixture f;
    start(&f, NULL);
    sl_redis_client *c = f.r.client;
    int port = server.port;
    run_until(f.base, &f.r.ready, "ready");

    /* A command still waiting when the server dies: its reply is NULL,
     * then on_ready(false), and nothing can go. */
    const char *key = "sluice:{acme}:never";
    const char *blpop[] = {"BLPOP", key, "3"};
    reply_box box = {0};
    cr_assert(sl_redis_client_send(c, key, 3, blpop, NULL, reply_box_fill, &box));
    for (int i = 0; i < 5; i++) /* let the command reach the server */
        event_run_for(f.base, 10);
    rs_stop(&server);
    run_until(f.base, &box.came, "the waiting command answered");
    cr_assert(box.lost, "a reply lost with the server is NULL");
    for (int i = 0; i < 1000 && f.r.unreadies == 0; i++)
        event_run_for(f.base, 10);
    cr_assert_eq(f.r.unreadies, 1, "on_ready(false) after the loss");
    cr_assert_not(sl_redis_client_ready(c));
    cr_assert_neq(sl_redis_client_error(c)[0], '\0', "the loss is named");
    cr_assert_eq(sl_redis_client_primary_count(c), 0);
    cr_assert_null(sl_redis_client_sha(c, "claim"));
    const char *ping[] = {"PING"};
    cr_assert_not(sl_redis_client_send(c, NULL, 1, ping, NULL, reply_box_fill, &box));
    cr_assert_not(sl_redis_client_send_to(c, 0, 1, ping, NULL, reply_box_fill, &box));

    /* The server back on its port: ready again, the primaries announced
     * again (after a reconnect the node may be another one). */
    char err[256];
    cr_assert(rs_start_on(&server, port, err, sizeof err), "%s", err);
    run_until(f.base, &f.r.ready, "ready again");
    cr_assert_eq(f.r.readies, 2);
    cr_assert_eq(f.r.nodes, 2, "on_nodes again for the new connection");
    cr_assert_eq(f.r.count_at_nodes, 1);
    reply_box pong = {0};
    cr_assert(sl_redis_client_send(c, NULL, 1, ping, NULL, reply_box_fill, &pong));
    run_until(f.base, &pong.came, "PING answered");
    cr_assert_str_eq(pong.str, "PONG");
    finish(&f);
}

Test(redis_client, noscript_reloads_the_scripts)
{
    fixture f;
    start(&f, NULL);
    sl_redis_client *c = f.r.client;
    run_until(f.base, &f.r.ready, "ready");
    const char *flush[] = {"SCRIPT", "FLUSH"};
    reply_box flushed = {0};
    cr_assert(sl_redis_client_send(c, NULL, 2, flush, NULL, reply_box_fill, &flushed));
    run_until(f.base, &flushed.came, "SCRIPT FLUSH answered");
    sl_redis_client_reload_scripts(c, "sluice:{acme}:queue");
    cr_assert_not(f.r.ready, "not ready while the scripts load");
    run_until(f.base, &f.r.ready, "ready again with the scripts");
    const char *exists[] = {"SCRIPT", "EXISTS", sl_redis_client_sha(c, "claim")};
    reply_box found = {0};
    cr_assert(sl_redis_client_send(c, NULL, 3, exists, NULL, reply_box_fill, &found));
    run_until(f.base, &found.came, "SCRIPT EXISTS answered");
    cr_assert_eq(found.type, REDIS_REPLY_ARRAY);
    cr_assert_eq(found.integer, 1, "the claim script is loaded again");
    finish(&f);
}

/* The CLI's options: ready without the scripts, replies kept by their
 * callbacks. */
static void keep_reply(redisReply *reply, void *arg)
{
    *(redisReply **)arg = reply;
}

Test(redis_client, the_cli_options)
{
    fixture f;
    const sl_redis_conn_options options = {.no_scripts = true, .keep_replies = true};
    start(&f, &options);
    sl_redis_client *c = f.r.client;
    cr_assert_str_eq(sl_redis_client_error(c), "", "no failure yet");
    run_until(f.base, &f.r.ready, "ready without the scripts");
    cr_assert_null(sl_redis_client_sha(c, "claim"), "no script loaded");
    redisReply *kept = NULL;
    const char *ping[] = {"PING"};
    cr_assert(sl_redis_client_send(c, NULL, 1, ping, NULL, keep_reply, &kept));
    for (int i = 0; i < 1000 && !kept; i++)
        event_run_for(f.base, 10);
    cr_assert_not_null(kept);
    cr_assert_str_eq(kept->str, "PONG", "the reply outlives its callback");
    freeReplyObject(kept);
    finish(&f);
}
