/* tenant_name.h - what a tenant may be called (SPEC section 2): the rule
 * shared by the config file, the Redis key names and the CLI. Pure. */
#ifndef SLUICE_TENANT_NAME_H
#define SLUICE_TENANT_NAME_H

#include <stdbool.h>

#define SL_TENANT_NAME_MAX 128

/* True if name is 1..SL_TENANT_NAME_MAX characters of [A-Za-z0-9_.:-]
 * (so not "*", the template, and never a brace that would break the
 * {tenant} hash tag of its keys); NULL is not valid. */
bool sl_tenant_name_valid(const char *name);

#endif
