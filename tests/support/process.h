/* process.h - stopping the servers and daemons tests start. */
#ifndef SLUICE_TEST_PROCESS_H
#define SLUICE_TEST_PROCESS_H

#include <sys/types.h>

/* Sends sig to pid and reaps it, sending SIGKILL if it has not exited
 * after timeout_ms. Returns its exit code, 128 + the signal that ended it,
 * or -1 if it had to be killed. */
int process_stop(pid_t pid, int sig, int timeout_ms);

/* Sleeps ms milliseconds, resuming after a signal. */
void sleep_ms(long ms);

#endif
