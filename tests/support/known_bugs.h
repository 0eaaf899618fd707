/* known_bugs.h - tests of the contract that today's code is known to
 * break (each says why where it is skipped) run only when the environment
 * asks for them: SLUICE_TEST_KNOWN_BUGS=1. They are counted as skipped
 * otherwise, never as passed, and the one who fixes the bug turns them on. */
#ifndef SLUICE_TEST_KNOWN_BUGS_H
#define SLUICE_TEST_KNOWN_BUGS_H

#include <stdbool.h>

/* True when SLUICE_TEST_KNOWN_BUGS is set to something other than "" or "0". */
bool known_bugs_run(void);

#endif
