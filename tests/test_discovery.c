/* test_discovery.c - how tenants known only through the "*" template are
 * found, forgotten and capped: the keys that hold work
 * (src/redis/keys.c) and the worker's decisions
 * (src/daemon/worker_policy.c). No clock, no Redis. */
#include <criterion/criterion.h>
#include <string.h>

#include "config/tenant_name.h"
#include "daemon/worker_policy.h"
#include "redis/keys.h"

static bool work_tenant(const char *key, const char *prefix, char *out)
{
    return sl_tenant_from_work_key(key, strlen(key), prefix, out, SL_TENANT_NAME_MAX + 1);
}

Test(discovery, a_tenant_is_found_by_its_queue_retry_or_inflight_key)
{
    char out[SL_TENANT_NAME_MAX + 1];
    cr_assert(work_tenant("sluice:{acme}:queue", "sluice", out));
    cr_assert_str_eq(out, "acme");
    cr_assert(work_tenant("sluice:{drained}:retry", "sluice", out));
    cr_assert_str_eq(out, "drained");
    cr_assert(work_tenant("prod:eu:{org:a.b}:inflight", "prod:eu", out));
    cr_assert_str_eq(out, "org:a.b");
}

Test(discovery, keys_without_work_find_no_tenant)
{
    char out[SL_TENANT_NAME_MAX + 1];
    cr_assert_not(work_tenant("sluice:{acme}:dlq", "sluice", out));
    cr_assert_not(work_tenant("sluice:{acme}:shape", "sluice", out));
    cr_assert_not(work_tenant("sluice:{acme}:jobs", "sluice", out));
    cr_assert_not(work_tenant("sluice:{acme}:limit:retry", "sluice", out));
    cr_assert_not(work_tenant("other:{acme}:queue", "sluice", out));
    cr_assert_not(work_tenant("sluice:{}:retry", "sluice", out));
    cr_assert_not(work_tenant("sluice:{a b}:inflight", "sluice", out));
}

Test(discovery, the_scan_pattern_matches_the_three_work_keys)
{
    char pattern[SL_KEY_MAX];
    sl_work_key_pattern(pattern, "sluice");
    cr_assert_str_eq(pattern, "sluice:{*}:[qri]*");
}

Test(discovery, a_quiet_idle_tenant_is_checked_after_the_idle_time)
{
    int64_t busy = 1000000, after = 600000000;
    cr_assert_not(sl_forget_due(true, busy, after, busy + after - 1));
    cr_assert(sl_forget_due(true, busy, after, busy + after));
    cr_assert(sl_forget_due(true, busy, after, busy + 10 * after));
}

Test(discovery, a_tenant_holding_work_is_never_forgotten)
{
    cr_assert_not(sl_forget_due(false, 0, 1000, 1000000000));
}

Test(discovery, the_cap_counts_the_whole_process)
{
    cr_assert(sl_discover_allowed(0, 1));
    cr_assert(sl_discover_allowed(9999, 10000));
    cr_assert_not(sl_discover_allowed(10000, 10000));
    cr_assert_not(sl_discover_allowed(10001, 10000));
}

Test(discovery, the_cap_is_logged_once_a_minute)
{
    int64_t last = 0;
    cr_assert(sl_discover_cap_log_due(&last, 5000000), "the first refusal is logged");
    cr_assert_eq(last, 5000000);
    cr_assert_not(sl_discover_cap_log_due(&last, 5000001));
    cr_assert_not(sl_discover_cap_log_due(&last, 5000000 + SL_DISCOVER_CAP_LOG_EVERY_US - 1));
    cr_assert(sl_discover_cap_log_due(&last, 5000000 + SL_DISCOVER_CAP_LOG_EVERY_US));
}

Test(discovery, the_oldest_generation_in_use)
{
    unsigned tenants[] = {7, 5, 7};
    cr_assert_eq(sl_oldest_generation(7, tenants, 3), 5);
    cr_assert_eq(sl_oldest_generation(7, tenants, 0), 7);
    unsigned newer[] = {9};
    cr_assert_eq(sl_oldest_generation(7, newer, 1), 7);
}
