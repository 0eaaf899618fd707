/* cli_run.h - running the real `sluice` CLI ($SLUICE_BIN) from a test. */
#ifndef SLUICE_TEST_CLI_RUN_H
#define SLUICE_TEST_CLI_RUN_H

#include <stddef.h>

/* Runs sluice with args (NULL-terminated) and `in` (NULL: nothing) on
 * stdin; stdout and stderr land together in out (NUL-terminated, cut at
 * out_size - 1). Returns the exit code, 128 + the signal that ended it.
 * Fails the test (cr_assert) if it cannot be run. */
int cli_run(char *out, size_t out_size, const char *in, const char *const *args);

#endif
