/* config_reload.c - see config_reload.h. */
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "config/config_reload.h"

static bool same_string(const char *a, const char *b)
{
    return (!a && !b) || (a && b && strcmp(a, b) == 0);
}

static bool same_tls(const sl_redis_tls_options *a, const sl_redis_tls_options *b)
{
    return same_string(a->ca_file, b->ca_file) && same_string(a->cert_file, b->cert_file) &&
           same_string(a->key_file, b->key_file) &&
           same_string(a->server_name, b->server_name) && a->no_verify == b->no_verify;
}

static void note(char *out, size_t out_size, size_t *count, const char *name)
{
    size_t used = strlen(out);
    snprintf(out + used, out_size - used, "%s%s", *count ? ", " : "", name);
    ++*count;
}

size_t sl_config_reload_blockers(const sl_config *running, const sl_config *next, char *out,
                                 size_t out_size)
{
    size_t count = 0;
    if (out_size)
        out[0] = '\0';
    if (!sl_redis_target_same(&running->redis, &next->redis))
        note(out, out_size, &count, "redis");
    if (!same_tls(&running->redis.tls_options, &next->redis.tls_options))
        note(out, out_size, &count, "redis_tls");
    if (!same_string(running->prefix, next->prefix))
        note(out, out_size, &count, "prefix");
    if (running->workers != next->workers)
        note(out, out_size, &count, "workers");
    if (!same_string(running->admin, next->admin))
        note(out, out_size, &count, "admin");
    return count;
}
