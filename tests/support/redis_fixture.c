/* redis_fixture.c - see redis_fixture.h. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <sys/wait.h>

#include "redis_fixture.h"
#include "script_client.h"

void redis_fixture_start(redis_fixture *f)
{
    char err[256];
    cr_assert(rs_start(&f->server, err, sizeof err), "redis-server: %s", err);
    f->conn = rs_connect(&f->server);
    cr_assert_not_null(f->conn, "cannot connect to redis-server on port %d", f->server.port);
}

void redis_fixture_stop(redis_fixture *f)
{
    if (f->conn)
        redisFree(f->conn);
    f->conn = NULL;
    rs_stop(&f->server);
}

void redis_fixture_shutdown(redis_fixture *f, bool save)
{
    freeReplyObject(redisCommand(f->conn, save ? "SHUTDOWN SAVE" : "SHUTDOWN NOSAVE"));
    redisFree(f->conn);
    f->conn = NULL;
    int status;
    waitpid(f->server.pid, &status, 0);
    f->server.pid = 0;
}

void redis_fixture_restart(redis_fixture *f)
{
    char err[256];
    cr_assert(rs_start_on(&f->server, f->server.port, err, sizeof err), "redis-server: %s", err);
    f->conn = rs_connect(&f->server);
    cr_assert_not_null(f->conn, "cannot connect to redis-server on port %d", f->server.port);
}

void redis_fixture_push_jobs(redis_fixture *f, const char *tenant, const char *tag, int n)
{
    char key[256], job[256];
    snprintf(key, sizeof key, "sluice:{%s}:queue", tenant);
    for (int i = 0; i < n; i++) {
        /* as arguments: hiredis splits a format string at spaces */
        snprintf(job, sizeof job, "{\"id\":\"%s-%d\",\"body\":\"%s %d\"}", tag, i, tag, i);
        cr_assert_eq(redisAppendCommand(f->conn, "LPUSH %s %s", key, job), REDIS_OK);
    }
    for (int i = 0; i < n; i++) {
        redisReply *reply;
        cr_assert_eq(redisGetReply(f->conn, (void **)&reply), REDIS_OK);
        cr_assert(reply->type == REDIS_REPLY_INTEGER, "LPUSH refused");
        freeReplyObject(reply);
    }
}

void redis_fixture_load(redis_fixture *f, const char *name, char sha[41])
{
    cr_assert(sc_load(f->conn, name, sha), "SCRIPT LOAD %s failed", name);
}

int64_t redis_fixture_now_us(redis_fixture *f)
{
    redisReply *reply = redisCommand(f->conn, "TIME");
    cr_assert(reply && reply->type == REDIS_REPLY_ARRAY && reply->elements == 2, "TIME failed");
    int64_t now = strtoll(reply->element[0]->str, NULL, 10) * 1000000 +
                  strtoll(reply->element[1]->str, NULL, 10);
    freeReplyObject(reply);
    return now;
}
