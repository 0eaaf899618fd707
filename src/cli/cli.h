/* cli.h - the producer and operator subcommands of SPEC section 7 that
 * talk to Redis: push, stats and dlq list|replay|purge.
 *
 * Each takes argv as main() hands it over (argv[0] is the command name),
 * prints its results to stdout and its errors to stderr, and returns the
 * exit code: 0 ok, 1 runtime failure (Redis unreachable or failing), 2
 * usage or configuration error. None calls exit().
 */
#ifndef SLUICE_CLI_H
#define SLUICE_CLI_H

/* `sluice push TENANT JOB...` / `sluice push TENANT -` (jobs from stdin). */
int sl_cli_push(int argc, char **argv);

/* `sluice stats [TENANT] [--json]`. */
int sl_cli_stats(int argc, char **argv);

/* `sluice dlq list|replay|purge TENANT ...`. */
int sl_cli_dlq(int argc, char **argv);

/* `sluice tenant show|set|unset|pause|resume TENANT ...`: the fleet's
 * live settings of a tenant (SPEC section 9). */
int sl_cli_tenant(int argc, char **argv);

#endif
