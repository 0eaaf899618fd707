/* secrets.h - configuration values that name secrets: "@/path" is the
 * content of a file (one trailing newline stripped), "${NAME}" anywhere in
 * a value is the value of an environment variable ("Bearer ${TOKEN}").
 * Both are reached only through an injected sl_config_env. A secret's
 * value is never part of an error message. */
#ifndef SLUICE_SECRETS_H
#define SLUICE_SECRETS_H

#include <stdbool.h>

#include "config/config_env.h"
#include "config/json_path.h"

/* The value of raw with its secrets resolved, malloc'd (free it with
 * sl_secret_free); *secret says whether it came from a file or variable.
 * NULL after reporting every reason at path through r (a variable unset
 * or empty, a bad ${...}, a file unreadable or empty; out of memory sets
 * r->oom). env may be NULL: then nothing is set or readable. */
char *sl_secret_resolve(sl_jpath_reader *r, const sl_config_env *env, const char *path,
                        const char *raw, bool *secret);

/* Overwrites s with zeros, then frees it; NULL is a no-op. */
void sl_secret_free(char *s);

#endif
