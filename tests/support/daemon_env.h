/* daemon_env.h - what a test of the real daemon runs against besides
 * Redis: the HTTP sink (tests/sink) and a temporary directory for its
 * configs, logs and traces. */
#ifndef SLUICE_TEST_DAEMON_ENV_H
#define SLUICE_TEST_DAEMON_ENV_H

#include <stdbool.h>
#include <stddef.h>

#include "daemon_process.h"
#include "process.h"
#include "sink_process.h"

/* Starts getenv("SLUICE_SINK") as *sink and makes dir (dir_size bytes of
 * room) a fresh /tmp/sluice-test-NAME-XXXXXX; fails the test if either
 * cannot be done. */
void daemon_env_start(sink_process *sink, char *dir, size_t dir_size, const char *name);

/* Starts `sluice run -c config` with its stderr appended to DIR/sluice.log
 * and, unless trace is NULL, --trace-departures trace; fails the test if
 * it cannot. Stop it with daemon_stop. */
daemon_process daemon_env_run(const char *dir, const char *config, const char *trace);

/* True once DIR/sluice.log (daemon_env_run's log) contains needle;
 * false after timeout_ms. */
bool daemon_env_wait_log(const char *dir, const char *needle, int timeout_ms);

/* Whether timing is the product's: sanitizers slow sluice several-fold
 * (SLUICE_SANITIZED=1), so their build checks what happens, and the
 * normal build how fast; timing assertions are guarded by it or widened. */
bool timing_counts(void);

/* Stops the sink by its PID and removes dir with everything in it. */
void daemon_env_stop(sink_process *sink, const char *dir);

#endif
