/* test_notify.c - keyspace notifications (notify.c) on the primaries of a
 * redis_client, against a real redis-server: subscribed once the client
 * knows its primary, a push seen, the same primaries announced again keep
 * the subscription, a lost server turns it off. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

#include <event2/event.h>

#include "redis/notify.h"
#include "redis/redis_client.h"
#include "redis_server.h"
#include "resp_text.h"

static rs_server server;

static void stop_server(void)
{
    rs_stop(&server);
}

TestSuite(notify, .fini = stop_server, .timeout = 60);

typedef struct run {
    bool ready, active;
    int state_changes;
    char pushed[64];
    sl_notify *notify;
} run;

static void on_ready(void *arg, bool ready)
{
    ((run *)arg)->ready = ready;
}

static void on_nodes(void *arg)
{
    run *r = arg;
    if (r->notify)
        sl_notify_nodes_changed(r->notify);
}

static void on_state(void *arg, bool active)
{
    run *r = arg;
    r->active = active;
    r->state_changes++;
}

static void on_push(void *arg, const char *tenant)
{
    run *r = arg;
    snprintf(r->pushed, sizeof r->pushed, "%s", tenant);
}

static void on_lpush(redisReply *reply, void *arg)
{
    (void)reply;
    (void)arg;
}

/* Runs the loop until *flag equals want (at most 10 s, in 10 ms turns). */
static void run_until(struct event_base *base, const bool *flag, bool want, const char *what)
{
    for (int i = 0; i < 1000 && *flag != want; i++) {
        struct timeval tv = {0, 10000};
        event_base_loopexit(base, &tv);
        event_base_dispatch(base);
    }
    cr_assert_eq(*flag, want, "%s", what);
}

static void start_notifying_server(void)
{
    char err[256];
    cr_assert(rs_start(&server, err, sizeof err), "%s", err);
    redisContext *c = rs_connect(&server);
    cr_assert_not_null(c);
    redisReply *reply = redisCommand(c, "CONFIG SET notify-keyspace-events Kl");
    cr_assert(reply && reply->type == REDIS_REPLY_STATUS);
    freeReplyObject(reply);
    redisFree(c);
}

/* Connects a client and a notify to url; the push of a job to "acme"
 * must be seen; the primaries announced again change nothing; the server
 * gone, the subscription is off. */
static void follows_the_client(const char *url)
{
    sl_redis_target t;
    char err[256];
    cr_assert(sl_redis_target_parse(url, &t, err, sizeof err), "%s", err);
    struct event_base *base = event_base_new();
    run r = {0};
    sl_redis_client *client = sl_redis_client_new(base, &t, NULL, on_ready, on_nodes, &r);
    r.notify = sl_notify_new(base, client, "sluice", on_push, on_state, &r);
    cr_assert_not_null(r.notify);
    cr_assert_not(r.active, "nothing subscribed before the client knows a primary");
    run_until(base, &r.active, true, "subscribed on the primary");

    const char *argv[] = {"LPUSH", "sluice:{acme}:queue", "{}"};
    cr_assert(sl_redis_client_send(client, argv[1], 3, argv, NULL, on_lpush, NULL));
    bool pushed = false;
    for (int i = 0; i < 1000 && !pushed; i++) {
        struct timeval tv = {0, 10000};
        event_base_loopexit(base, &tv);
        event_base_dispatch(base);
        pushed = r.pushed[0] != '\0';
    }
    cr_assert_str_eq(r.pushed, "acme", "the push seen through the subscription");

    int changes = r.state_changes;
    sl_notify_nodes_changed(r.notify);
    cr_assert(r.active, "the same primary keeps its subscription");
    cr_assert_eq(r.state_changes, changes, "and it never went off");

    rs_stop(&server);
    run_until(base, &r.active, false, "the subscription lost with the server");

    sl_notify_free(r.notify);
    sl_redis_client_free(client);
    event_base_free(base);
    sl_redis_target_clear(&t);
}

Test(notify, follows_the_client_over_tcp)
{
    start_notifying_server();
    char url[64];
    snprintf(url, sizeof url, "redis://127.0.0.1:%d", server.port);
    follows_the_client(url);
}

/* The subscriber's copy of a unix socket target keeps its path. */
Test(notify, follows_the_client_over_a_unix_socket)
{
    start_notifying_server();
    char url[128];
    snprintf(url, sizeof url, "unix://%s/redis.sock", server.dir);
    follows_the_client(url);
}

static sl_notify_message read_text(const char *text, char *tenant, size_t size)
{
    redisReply *r = resp_text_reply(text);
    sl_notify_message what = sl_notify_message_read(r, "__keyspace@0__:", "sluice", tenant, size);
    freeReplyObject(r);
    return what;
}

Test(notify, messages_are_read)
{
    char tenant[64] = "";
    cr_assert_eq(read_text("*3\r\n$10\r\npsubscribe\r\n$1\r\np\r\n:1\r\n", tenant, sizeof tenant),
                 SL_NOTIFY_SUBSCRIBED);
    cr_assert_eq(read_text("-NOPERM no\r\n", tenant, sizeof tenant), SL_NOTIFY_REFUSED);
    cr_assert_eq(read_text("*4\r\n$8\r\npmessage\r\n$1\r\np\r\n"
                           "$34\r\n__keyspace@0__:sluice:{acme}:queue\r\n$5\r\nlpush\r\n",
                           tenant, sizeof tenant),
                 SL_NOTIFY_PUSH);
    cr_assert_str_eq(tenant, "acme");
    cr_assert_eq(read_text("*4\r\n$8\r\npmessage\r\n$1\r\np\r\n"
                           "$34\r\n__keyspace@0__:sluice:{acme}:queue\r\n$4\r\nlpop\r\n",
                           tenant, sizeof tenant),
                 SL_NOTIFY_OTHER);
}

/* A hostile server's replies of any shape: nothing for us, no crash. */
Test(notify, hostile_messages_are_ignored)
{
    char tenant[64];
    cr_assert_eq(read_text("*3\r\n:1\r\n:2\r\n:3\r\n", tenant, sizeof tenant), SL_NOTIFY_OTHER);
    cr_assert_eq(read_text("*3\r\n$-1\r\n:2\r\n:3\r\n", tenant, sizeof tenant), SL_NOTIFY_OTHER);
    cr_assert_eq(read_text("*4\r\n$8\r\npmessage\r\n$1\r\np\r\n"
                           "$34\r\n__keyspace@0__:sluice:{acme}:queue\r\n:7\r\n",
                           tenant, sizeof tenant),
                 SL_NOTIFY_OTHER);
    cr_assert_eq(read_text("*4\r\n$8\r\npmessage\r\n$1\r\np\r\n*0\r\n$5\r\nlpush\r\n", tenant,
                           sizeof tenant),
                 SL_NOTIFY_OTHER);
    cr_assert_eq(read_text("*4\r\n$8\r\npmessage\r\n$1\r\np\r\n"
                           "$34\r\n__keyspace@9__:sluice:{acme}:queue\r\n$5\r\nlpush\r\n",
                           tenant, sizeof tenant),
                 SL_NOTIFY_OTHER);
}
