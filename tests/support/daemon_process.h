/* daemon_process.h - a real `sluice run` process for integration tests. */
#ifndef SLUICE_TEST_DAEMON_PROCESS_H
#define SLUICE_TEST_DAEMON_PROCESS_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

typedef struct daemon_process {
    pid_t pid; /* 0 when not running */
} daemon_process;

/* Starts getenv("SLUICE_BIN") run -c config_path, stderr appended to
 * log_path, with --trace-departures trace_path unless it is NULL. Dies
 * with the calling process. */
bool daemon_start(daemon_process *d, const char *config_path, const char *log_path,
                  const char *trace_path, char *err, size_t err_size);

/* Sends sig and waits up to timeout_ms for the exit; returns the exit code,
 * 128 + signal if it was killed, or -1 if it did not exit in time (it is
 * then killed and reaped). */
int daemon_stop(daemon_process *d, int sig, int timeout_ms);

#endif
