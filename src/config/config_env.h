/* config_env.h - what parsing the configuration may ask of the outside
 * world (variables, files, the CPU count), injected so that parsing is
 * testable without either; and the real one, for the daemon and the CLI. */
#ifndef SLUICE_CONFIG_ENV_H
#define SLUICE_CONFIG_ENV_H

#include <stddef.h>

/* Any member may be NULL/0: then no variable is set, no file is readable,
 * and cpu_count counts 1. */
typedef struct sl_config_env {
    /* The value of variable name, or NULL if unset; not freed. */
    const char *(*getenv_fn)(void *ctx, const char *name);
    /* The whole file, NUL-terminated and malloc'd (caller frees), or NULL
     * with a reason in err (e.g. "No such file or directory"). */
    char *(*read_file_fn)(void *ctx, const char *path, char *err, size_t err_size);
    void *ctx;
    int cpu_count; /* the default of workers (clamped to its bounds) */
} sl_config_env;

/* The real process environment, file system and usable CPU count. Files
 * over 64 MiB or holding a NUL byte are refused. */
sl_config_env sl_config_env_system(void);

#endif
