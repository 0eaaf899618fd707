/* redis_fixture.h - a Criterion fixture: a private redis-server per test
 * with the admission scripts loaded, and a blocking connection to it. */
#ifndef SLUICE_TEST_REDIS_FIXTURE_H
#define SLUICE_TEST_REDIS_FIXTURE_H

#include <hiredis/hiredis.h>

#include "redis_server.h"

typedef struct redis_fixture {
    rs_server server;
    redisContext *conn;
} redis_fixture;

/* Starts the server and connects; fails the test (cr_assert) if it can't. */
void redis_fixture_start(redis_fixture *f);
/* Disconnects and stops the server by PID. */
void redis_fixture_stop(redis_fixture *f);
/* SCRIPT LOADs embedded script `name` on f and writes its SHA1
 * into sha. Fails the test if it cannot. */
void redis_fixture_load(redis_fixture *f, const char *name, char sha[41]);

#endif
