/* keys.c - see keys.h. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config/tenant_name.h"
#include "redis/keys.h"

bool sl_tenant_keys_init(sl_tenant_keys *keys, const char *prefix, const char *tenant)
{
    static const char *const what[] = {"queue", "shape", "inflight", "jobs",
                                       "retry", "dlq",   "settings", "events"};
    enum { KEY_COUNT = sizeof what / sizeof what[0] };
    const char **slot[KEY_COUNT] = {&keys->queue, &keys->shape, &keys->inflight, &keys->jobs,
                                    &keys->retry, &keys->dlq,   &keys->settings, &keys->events};
    *keys = (sl_tenant_keys){0};
    /* "<prefix>:{<tenant>}:<what>" and its NUL, for each */
    size_t common = strlen(prefix) + strlen(tenant) + 4 + 1;
    size_t size = 0;
    for (size_t i = 0; i < KEY_COUNT; i++)
        size += common + strlen(what[i]);
    char *text = malloc(size);
    if (!text)
        return false;
    char *at = text;
    for (size_t i = 0; i < KEY_COUNT; i++) {
        *slot[i] = at;
        at += snprintf(at, (size_t)(text + size - at), "%s:{%s}:%s", prefix, tenant, what[i]) + 1;
    }
    keys->text = text;
    return true;
}

void sl_tenant_keys_free(sl_tenant_keys *keys)
{
    free(keys->text);
    *keys = (sl_tenant_keys){0};
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
