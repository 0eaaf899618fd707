/* event_wait.h - running a test's libevent loop until something happened:
 * in short turns, so a flag set by any callback is seen, and bounded. */
#ifndef SLUICE_TEST_EVENT_WAIT_H
#define SLUICE_TEST_EVENT_WAIT_H

#include <stdbool.h>

#include <event2/event.h>

/* Runs base in 10 ms turns until *flag holds or timeout_ms passed;
 * returns *flag. */
bool event_wait(struct event_base *base, const bool *flag, int timeout_ms);

/* Runs base for ms milliseconds (callbacks due meanwhile run). */
void event_run_for(struct event_base *base, int ms);

#endif
