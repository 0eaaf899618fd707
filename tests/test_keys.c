/* test_keys.c - the Redis key names of a tenant (SPEC section 2): every
 * key of a prefix and tenant, the {tenant} hash tag that puts them in one
 * cluster slot, and reading the tenant back out of a queue key, refusing
 * names that are not tenant names. Pure: no Redis. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

#include "config/tenant_name.h"
#include "redis/keys.h"

Test(keys, every_key_of_a_tenant_under_the_default_prefix)
{
    sl_tenant_keys k;
    cr_assert(sl_tenant_keys_init(&k, "sluice", "acme"));
    cr_assert_str_eq(k.queue, "sluice:{acme}:queue");
    cr_assert_str_eq(k.shape, "sluice:{acme}:shape");
    cr_assert_str_eq(k.inflight, "sluice:{acme}:inflight");
    cr_assert_str_eq(k.jobs, "sluice:{acme}:jobs");
    cr_assert_str_eq(k.retry, "sluice:{acme}:retry");
    cr_assert_str_eq(k.dlq, "sluice:{acme}:dlq");
    cr_assert_str_eq(k.settings, "sluice:{acme}:settings");
    cr_assert_str_eq(k.events, "sluice:{acme}:events");
    sl_tenant_keys_free(&k);

    char limit[SL_KEY_MAX];
    sl_limit_key(limit, "sluice", "acme", "daily");
    cr_assert_str_eq(limit, "sluice:{acme}:limit:daily");
}

Test(keys, a_configured_prefix_and_a_tenant_with_every_allowed_character)
{
    sl_tenant_keys k;
    cr_assert(sl_tenant_keys_init(&k, "prod:eu-1", "org:acme.eu_2-x"));
    cr_assert_str_eq(k.queue, "prod:eu-1:{org:acme.eu_2-x}:queue");
    cr_assert_str_eq(k.dlq, "prod:eu-1:{org:acme.eu_2-x}:dlq");
    sl_tenant_keys_free(&k);
    char limit[SL_KEY_MAX];
    sl_limit_key(limit, "prod:eu-1", "org:acme.eu_2-x", "burst.1");
    cr_assert_str_eq(limit, "prod:eu-1:{org:acme.eu_2-x}:limit:burst.1");
}

/* Redis Cluster hashes the text between the first '{' and the next '}':
 * for every key that must be the tenant, so one script touches one slot. */
static void assert_hash_tag(const char *key, const char *tenant)
{
    const char *open = strchr(key, '{');
    cr_assert_not_null(open, "%s has no hash tag", key);
    const char *close = strchr(open + 1, '}');
    cr_assert_not_null(close, "%s has an unclosed hash tag", key);
    cr_assert_eq((size_t)(close - open - 1), strlen(tenant), "%s", key);
    cr_assert(strncmp(open + 1, tenant, strlen(tenant)) == 0, "%s", key);
}

Test(keys, every_key_carries_the_tenant_as_its_hash_tag)
{
    const char *tenant = "t.1:x";
    sl_tenant_keys k;
    cr_assert(sl_tenant_keys_init(&k, "sluice", tenant));
    const char *all[] = {k.queue, k.shape, k.inflight, k.jobs,
                         k.retry, k.dlq,   k.settings, k.events};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
        assert_hash_tag(all[i], tenant);
    sl_tenant_keys_free(&k);
    char limit[SL_KEY_MAX];
    sl_limit_key(limit, "sluice", tenant, "l");
    assert_hash_tag(limit, tenant);
}

Test(keys, the_longest_names_fit_without_being_cut)
{
    char prefix[65], tenant[SL_TENANT_NAME_MAX + 1], name[65];
    memset(prefix, 'p', 64);
    prefix[64] = '\0';
    memset(tenant, 't', SL_TENANT_NAME_MAX);
    tenant[SL_TENANT_NAME_MAX] = '\0';
    memset(name, 'n', 64);
    name[64] = '\0';
    char limit[SL_KEY_MAX];
    sl_limit_key(limit, prefix, tenant, name);
    cr_assert_eq(strlen(limit), 64 + 2 + SL_TENANT_NAME_MAX + 2 + 6 + 64);
    cr_assert_str_eq(limit + strlen(limit) - 64, name);
    sl_tenant_keys k;
    cr_assert(sl_tenant_keys_init(&k, prefix, tenant));
    const char *all[] = {k.queue, k.shape, k.inflight, k.jobs,
                         k.retry, k.dlq,   k.settings, k.events};
    const char *what[] = {"queue", "shape", "inflight", "jobs",
                          "retry", "dlq",   "settings", "events"};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) {
        char expected[SL_KEY_MAX];
        snprintf(expected, sizeof expected, "%s:{%s}:%s", prefix, tenant, what[i]);
        cr_assert_str_eq(all[i], expected);
        cr_assert_eq(strlen(all[i]), 64 + 2 + SL_TENANT_NAME_MAX + 2 + strlen(what[i]));
    }
    sl_tenant_keys_free(&k);
}

/* The eight keys are one block of text, each exactly as long as it
 * needs: they follow each other, NUL after NUL, with nothing between. */
Test(keys, the_keys_are_one_allocation_of_their_exact_text)
{
    sl_tenant_keys k;
    cr_assert(sl_tenant_keys_init(&k, "p", "t"));
    static const char text[] = "p:{t}:queue\0p:{t}:shape\0p:{t}:inflight\0p:{t}:jobs\0"
                               "p:{t}:retry\0p:{t}:dlq\0p:{t}:settings\0p:{t}:events";
    cr_assert_eq(k.queue, k.text);
    cr_assert_eq(memcmp(k.text, text, sizeof text), 0);
    cr_assert_eq(k.events + strlen(k.events) + 1, k.text + sizeof text);
    sl_tenant_keys_free(&k);
    cr_assert_null(k.text);
    cr_assert_null(k.queue);
    sl_tenant_keys_free(&k); /* zeroed: a no-op */
}

static bool tenant_of(const char *key, const char *prefix, char *out, size_t out_size)
{
    return sl_tenant_from_queue_key(key, strlen(key), prefix, out, out_size);
}

Test(keys, the_tenant_of_a_queue_key)
{
    char out[SL_TENANT_NAME_MAX + 1];
    cr_assert(tenant_of("sluice:{acme}:queue", "sluice", out, sizeof out));
    cr_assert_str_eq(out, "acme");
    cr_assert(tenant_of("prod:eu:{org:a.b}:queue", "prod:eu", out, sizeof out));
    cr_assert_str_eq(out, "org:a.b");

    /* Round trip through the key builder. */
    sl_tenant_keys k;
    cr_assert(sl_tenant_keys_init(&k, "px", "T-9"));
    cr_assert(tenant_of(k.queue, "px", out, sizeof out));
    cr_assert_str_eq(out, "T-9");
    sl_tenant_keys_free(&k);
}

Test(keys, other_keys_and_other_prefixes_are_not_queue_keys)
{
    char out[SL_TENANT_NAME_MAX + 1];
    cr_assert_not(tenant_of("sluice:{acme}:shape", "sluice", out, sizeof out));
    cr_assert_not(tenant_of("sluice:{acme}:limit:queue", "sluice", out, sizeof out));
    cr_assert_not(tenant_of("other:{acme}:queue", "sluice", out, sizeof out));
    cr_assert_not(tenant_of("sluicex:{acme}:queue", "sluice", out, sizeof out));
    cr_assert_not(tenant_of("sluice:acme:queue", "sluice", out, sizeof out));
    cr_assert_not(tenant_of("sluice:{acme}:queue", "sluice:x", out, sizeof out));
    cr_assert_not(tenant_of("", "sluice", out, sizeof out));
}

Test(keys, a_queue_key_of_a_bad_tenant_name_is_refused)
{
    char out[512];
    cr_assert_not(tenant_of("sluice:{}:queue", "sluice", out, sizeof out));
    cr_assert_not(tenant_of("sluice:{a b}:queue", "sluice", out, sizeof out));
    cr_assert_not(tenant_of("sluice:{*}:queue", "sluice", out, sizeof out));
    cr_assert_not(tenant_of("sluice:{a{b}:queue", "sluice", out, sizeof out));
    cr_assert_not(tenant_of("sluice:{a}b}:queue", "sluice", out, sizeof out));
    cr_assert_not(tenant_of("sluice:{caf\xc3\xa9}:queue", "sluice", out, sizeof out));

    char key[400], tenant[SL_TENANT_NAME_MAX + 2];
    memset(tenant, 'a', SL_TENANT_NAME_MAX + 1);
    tenant[SL_TENANT_NAME_MAX + 1] = '\0';
    snprintf(key, sizeof key, "sluice:{%s}:queue", tenant);
    cr_assert_not(tenant_of(key, "sluice", out, sizeof out), "129 characters");
    tenant[SL_TENANT_NAME_MAX] = '\0';
    snprintf(key, sizeof key, "sluice:{%s}:queue", tenant);
    cr_assert(tenant_of(key, "sluice", out, sizeof out), "128 characters");
}

Test(keys, a_tenant_longer_than_the_buffer_is_refused)
{
    char out[4];
    cr_assert_not(tenant_of("sluice:{abcd}:queue", "sluice", out, sizeof out));
    cr_assert(tenant_of("sluice:{abc}:queue", "sluice", out, sizeof out));
    cr_assert_str_eq(out, "abc");
}

Test(tenant_name, the_rule)
{
    cr_assert(sl_tenant_name_valid("a"));
    cr_assert(sl_tenant_name_valid("Az09_.:-"));
    cr_assert_not(sl_tenant_name_valid(NULL));
    cr_assert_not(sl_tenant_name_valid(""));
    cr_assert_not(sl_tenant_name_valid("*"));
    const char *bad = "{}/ \t@#,;\"'\\";
    for (const char *p = bad; *p; p++) {
        char name[4] = {'a', *p, 'b', '\0'};
        cr_assert_not(sl_tenant_name_valid(name), "%s", name);
    }
    char name[SL_TENANT_NAME_MAX + 2];
    memset(name, 'x', sizeof name - 1);
    name[sizeof name - 1] = '\0';
    cr_assert_not(sl_tenant_name_valid(name));
    name[SL_TENANT_NAME_MAX] = '\0';
    cr_assert(sl_tenant_name_valid(name));
}
