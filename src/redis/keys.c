/* keys.c - see keys.h. */
#include <stdio.h>
#include <string.h>

#include "config/tenant_name.h"
#include "redis/keys.h"

static void tenant_key(char *out, const char *prefix, const char *tenant, const char *what)
{
    snprintf(out, SL_KEY_MAX, "%s:{%s}:%s", prefix, tenant, what);
}

void sl_tenant_keys_init(sl_tenant_keys *keys, const char *prefix, const char *tenant)
{
    tenant_key(keys->queue, prefix, tenant, "queue");
    tenant_key(keys->shape, prefix, tenant, "shape");
    tenant_key(keys->inflight, prefix, tenant, "inflight");
    tenant_key(keys->jobs, prefix, tenant, "jobs");
    tenant_key(keys->retry, prefix, tenant, "retry");
    tenant_key(keys->dlq, prefix, tenant, "dlq");
    tenant_key(keys->settings, prefix, tenant, "settings");
    tenant_key(keys->events, prefix, tenant, "events");
}

void sl_limit_key(char *out, const char *prefix, const char *tenant, const char *limit_name)
{
    snprintf(out, SL_KEY_MAX, "%s:{%s}:limit:%s", prefix, tenant, limit_name);
}

/* The tenant of "<prefix>:{T}<suffix>", or false. */
static bool tenant_from_key(const char *key, size_t key_len, const char *prefix, const char *suffix,
                            char *out, size_t out_size)
{
    size_t prefix_len = strlen(prefix);
    size_t suffix_len = strlen(suffix);
    if (key_len < prefix_len + 2 + 1 + suffix_len || memcmp(key, prefix, prefix_len) != 0 ||
        memcmp(key + prefix_len, ":{", 2) != 0 ||
        memcmp(key + key_len - suffix_len, suffix, suffix_len) != 0)
        return false;
    size_t tenant_len = key_len - prefix_len - 2 - suffix_len;
    if (tenant_len + 1 > out_size)
        return false;
    memcpy(out, key + prefix_len + 2, tenant_len);
    out[tenant_len] = '\0';
    return sl_tenant_name_valid(out);
}

bool sl_tenant_from_queue_key(const char *key, size_t key_len, const char *prefix, char *out,
                              size_t out_size)
{
    return tenant_from_key(key, key_len, prefix, "}:queue", out, out_size);
}

bool sl_tenant_from_work_key(const char *key, size_t key_len, const char *prefix, char *out,
                             size_t out_size)
{
    static const char *const suffixes[] = {"}:queue", "}:retry", "}:inflight"};
    for (size_t i = 0; i < sizeof suffixes / sizeof suffixes[0]; i++)
        if (tenant_from_key(key, key_len, prefix, suffixes[i], out, out_size))
            return true;
    return false;
}

void sl_work_key_pattern(char *out, const char *prefix)
{
    /* queue, retry, inflight: no other key of a tenant starts with q, r or i */
    snprintf(out, SL_KEY_MAX, "%s:{*}:[qri]*", prefix);
}
