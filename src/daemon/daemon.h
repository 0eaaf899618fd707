/* daemon.h - `sluice run`: the worker threads and the main thread's loop. */
#ifndef SLUICE_DAEMON_H
#define SLUICE_DAEMON_H

#include <stdio.h>

#include "config/config.h"

/* Returned after a second stop signal: the caller must end the process at
 * once (_exit), since worker threads may still be running. */
#define SL_DAEMON_EXIT_NOW (-1)

/* Runs the daemon until SIGTERM/SIGINT: the first drains (stop claiming,
 * finish deliveries within grace_ms, hand back the rest), a second stops
 * at once. Returns the exit code: 0 after a clean drain, 1 otherwise, or
 * SL_DAEMON_EXIT_NOW. trace, if not NULL, receives one line per departure
 * (tenant, claim id, slot and departure in microseconds on Redis's clock,
 * departure on this host's clock). SIGHUP re-reads config_path: a valid
 * file applies at once, an invalid one is logged and the running
 * configuration kept. */
int sl_daemon_run(const sl_config *config, const char *config_path, FILE *trace);

#endif
