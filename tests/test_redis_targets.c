/* test_redis_targets.c - the ways `redis` names a server, through the real
 * daemon: an ACL user with its password, a unix socket, a database other
 * than 0. Each run delivers jobs pushed where the URL points, and nothing
 * appears anywhere else. */
#include <criterion/criterion.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config_file.h"
#include "daemon_env.h"
#include "delivery_checks.h"
#include "redis_fixture.h"
#include "sink_process.h"

static redis_fixture fx;
static sink_process sink;
static char dir[64];

static void setup(void)
{
    redis_fixture_start(&fx);
    daemon_env_start(&sink, dir, sizeof dir, "redis-targets");
}

static void teardown(void)
{
    daemon_env_stop(&sink, dir);
    redis_fixture_stop(&fx);
}

TestSuite(redis_targets, .init = setup, .fini = teardown, .timeout = 60);

static void command(const char *format, const char *arg)
{
    redisReply *reply = redisCommand(fx.conn, format, arg);
    cr_assert(reply && reply->type != REDIS_REPLY_ERROR, "%s: %s", format,
              reply ? reply->str : fx.conn->errstr);
    freeReplyObject(reply);
}

/* The default user needs a password now, and user `app` has another one:
 * a daemon that logs in without its user name, or without a password, is
 * refused. fx.conn, logged in before, stays so. */
static void require_acl_user(void)
{
    command("ACL SETUSER app on >%s ~* &* +@all", "app-secret");
    command("CONFIG SET requirepass %s", "default-secret");
}

/* Pushes 10 jobs into database db, runs a daemon on redis_url until the
 * endpoint has them all, and checks that db is drained and, when it is
 * not 0, that database 0 holds nothing of sluice's. */
static void delivers_through(const char *redis_url, int db)
{
    char path[128], db_text[16];
    snprintf(path, sizeof path, "%s/sluice.json", dir);
    snprintf(db_text, sizeof db_text, "%d", db);
    config_file_write(path, redis_url, CONFIG_DAEMON_MEMBERS,
                      "{\"acme\": {\"endpoint\": \"http://127.0.0.1:%d/hook\", \"rate\": 100}}",
                      sink.port);
    command("SELECT %s", db_text);
    redis_fixture_push_jobs(&fx, "acme", "j", 10);
    daemon_process d = daemon_env_run(dir, path, NULL);
    sink_request *reqs = NULL;
    size_t n = sink_wait_each(&sink, "j", 10, 10000, &reqs);
    /* acked a moment after the answer */
    for (int i = 0; i < 40 && redis_count(fx.conn, "HLEN sluice:{%s}:jobs", "acme") > 0; i++)
        sleep_ms(50);
    cr_assert_eq(daemon_stop(&d, SIGTERM, 10000), 0);
    assert_each_delivered(reqs, n, "j", 10, false);
    sink_requests_free(reqs, n);
    assert_tenant_drained(fx.conn, "acme");
    if (db != 0) {
        command("SELECT %s", "0");
        redisReply *keys = redisCommand(fx.conn, "KEYS sluice:*");
        cr_assert(keys && keys->type == REDIS_REPLY_ARRAY);
        cr_assert_eq(keys->elements, 0, "sluice wrote %s in database 0",
                     keys->elements ? keys->element[0]->str : "");
        freeReplyObject(keys);
    }
}

Test(redis_targets, an_acl_user_and_password_on_database_3)
{
    require_acl_user();
    char url[128];
    snprintf(url, sizeof url, "redis://app:app-secret@127.0.0.1:%d/3", fx.server.port);
    delivers_through(url, 3);
}

Test(redis_targets, a_unix_socket_on_database_2)
{
    char url[128];
    snprintf(url, sizeof url, "unix://%s/redis.sock?db=2", fx.server.dir);
    delivers_through(url, 2);
}

Test(redis_targets, a_unix_socket_with_an_acl_user)
{
    require_acl_user();
    char url[128];
    snprintf(url, sizeof url, "unix://app:app-secret@%s/redis.sock", fx.server.dir);
    delivers_through(url, 0);
}

/* The check above can fail: a wrong password delivers nothing. */
Test(redis_targets, a_wrong_password_delivers_nothing)
{
    require_acl_user();
    char url[128], path[128];
    snprintf(url, sizeof url, "redis://app:not-the-secret@127.0.0.1:%d/0", fx.server.port);
    snprintf(path, sizeof path, "%s/sluice.json", dir);
    config_file_write(path, url, CONFIG_DAEMON_MEMBERS,
                      "{\"acme\": {\"endpoint\": \"http://127.0.0.1:%d/hook\", \"rate\": 100}}",
                      sink.port);
    redis_fixture_push_jobs(&fx, "acme", "j", 3);
    daemon_process d = daemon_env_run(dir, path, NULL);
    sleep_ms(1500);
    daemon_stop(&d, SIGTERM, 10000);
    sink_request *reqs = NULL;
    size_t n = sink_read_log(&sink, &reqs);
    sink_requests_free(reqs, n);
    cr_assert_eq(n, 0, "%zu jobs delivered with a wrong password", n);
    cr_assert_eq(redis_count(fx.conn, "LLEN sluice:{%s}:queue", "acme"), 3);
}
