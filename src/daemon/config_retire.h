/* config_retire.h - when a configuration replaced by SIGHUP may be freed.
 *
 * Each reload makes a configuration one generation newer. Workers (and
 * their tenants' rules) point into the one they took last, until the next
 * reaches them through their loops; each worker publishes the oldest
 * generation it still uses. A configuration older than every worker's
 * oldest is used by no one, and is freed. Pure. */
#ifndef SLUICE_CONFIG_RETIRE_H
#define SLUICE_CONFIG_RETIRE_H

#include <stddef.h>

/* Of n kept configurations, oldest first (their generations in ascending
 * order in kept[]), how many from the front may be freed: those older
 * than the oldest generation any worker uses (in_use[0..workers), as each
 * published it). None when there are no workers' figures to go by. */
size_t sl_configs_retirable(const unsigned *kept, size_t n, const unsigned *in_use, size_t workers);

#endif
