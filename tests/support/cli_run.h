/* cli_run.h - running the sluice binary (getenv("SLUICE_BIN")) as a user
 * would, for tests of its subcommands. */
#ifndef SLUICE_TEST_CLI_RUN_H
#define SLUICE_TEST_CLI_RUN_H

#include <stddef.h>

/* Runs sluice with args (NULL-terminated) and `in` (NULL: nothing) on
 * stdin; stdout and stderr land together in out (NUL-terminated, cut to
 * out_size - 1 bytes). Returns the exit code (128 + a signal's number).
 * Fails the test if the process cannot be started. */
int cli_run(const char *in, const char *const *args, char *out, size_t out_size);

#endif
