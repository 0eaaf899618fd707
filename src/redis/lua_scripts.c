/* lua_scripts.c - lookup in the table generated from lua/. */
#include <string.h>

#include "redis/lua_scripts.h"

const sl_lua_script *sl_lua_script_find(const char *name)
{
    for (size_t i = 0; i < sl_lua_script_count; i++)
        if (strcmp(sl_lua_scripts[i].name, name) == 0)
            return &sl_lua_scripts[i];
    return NULL;
}
