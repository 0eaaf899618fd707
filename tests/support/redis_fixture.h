/* redis_fixture.h - a Criterion fixture: a private redis-server per test
 * with the admission scripts loaded, and a blocking connection to it. */
#ifndef SLUICE_TEST_REDIS_FIXTURE_H
#define SLUICE_TEST_REDIS_FIXTURE_H

#include <stdbool.h>
#include <stdint.h>

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
/* Shuts the server down (SHUTDOWN SAVE, or NOSAVE) and waits for its
 * exit; its port and directory stay for redis_fixture_restart. */
void redis_fixture_shutdown(redis_fixture *f, bool save);
/* Starts the server again on its port (with its saved data) and
 * reconnects; fails the test if it can't. */
void redis_fixture_restart(redis_fixture *f);
/* LPUSHes n envelope jobs {"id": "TAG-i", "body": "TAG i"} onto tenant's
 * queue, pipelined; fails the test if Redis refuses one. */
void redis_fixture_push_jobs(redis_fixture *f, const char *tenant, const char *tag, int n);
/* SCRIPT LOADs embedded script `name` on f and writes its SHA1
 * into sha. Fails the test if it cannot. */
void redis_fixture_load(redis_fixture *f, const char *name, char sha[41]);
/* Redis's own clock (TIME), in microseconds; fails the test if it can't. */
int64_t redis_fixture_now_us(redis_fixture *f);

#endif
