/* config_reload.h - what a configuration reload (SIGHUP) may change. */
#ifndef SLUICE_CONFIG_RELOAD_H
#define SLUICE_CONFIG_RELOAD_H

#include <stddef.h>

#include "config/config.h"

/* Writes to out (comma-separated, e.g. "redis, workers") the settings that
 * differ between running and next and only a restart can change: the
 * Redis target, the key prefix, the worker count and the admin address.
 * Returns how many differ (0: next can be applied by a reload). Secrets
 * are compared, never written. */
size_t sl_config_reload_blockers(const sl_config *running, const sl_config *next, char *out,
                                 size_t out_size);

#endif
