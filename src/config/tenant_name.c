/* tenant_name.c - see tenant_name.h. */
#include <string.h>

#include "config/tenant_name.h"

static bool allowed(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
           (c != '\0' && strchr("_.:-", c) != NULL);
}

bool sl_tenant_name_valid(const char *name)
{
    if (!name)
        return false;
    size_t len = strlen(name);
    if (len < 1 || len > SL_TENANT_NAME_MAX)
        return false;
    for (size_t i = 0; i < len; i++) {
        if (!allowed(name[i]))
            return false;
    }
    return true;
}
