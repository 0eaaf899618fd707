/* redis_fixture.c - see redis_fixture.h. */
#include <criterion/criterion.h>

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

void redis_fixture_load(redis_fixture *f, const char *name, char sha[41])
{
    cr_assert(sc_load(f->conn, name, sha), "SCRIPT LOAD %s failed", name);
}
