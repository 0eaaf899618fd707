/* lua_scripts.h - the scripts of lua/, embedded into the binary by the build. */
#ifndef SLUICE_LUA_SCRIPTS_H
#define SLUICE_LUA_SCRIPTS_H

#include <stddef.h>

typedef struct sl_lua_script {
    const char *name;   /* file base name: "shaping", "token_bucket", ... */
    const char *source; /* NUL-terminated Lua source, static */
    size_t length;      /* bytes, without the NUL */
} sl_lua_script;

extern const sl_lua_script sl_lua_scripts[];
extern const size_t sl_lua_script_count;

/* The embedded script called `name`, or NULL if there is none. */
const sl_lua_script *sl_lua_script_find(const char *name);

#endif
