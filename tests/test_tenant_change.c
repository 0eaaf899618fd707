/* test_tenant_change.c - the pure parts of `sluice tenant`: FIELD=VALUE
 * read by the config's rows, --for durations, the events' JSON. */
#include <cjson/cJSON.h>
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "cli/tenant_change.h"

Test(tenant_change, assignments_are_read_as_the_config_reads_the_key)
{
    sl_tenant_field field;
    int64_t value = 0;
    char msg[SL_TENANT_MSG_MAX];
    cr_assert(sl_tenant_assignment_parse("rate=20", &field, &value, msg), "%s", msg);
    cr_assert_eq(field, SL_TENANT_RATE);
    cr_assert_eq(value, 20000, "milli-jobs/s");
    cr_assert(sl_tenant_assignment_parse("rate=0.125", &field, &value, msg), "%s", msg);
    cr_assert_eq(value, 125);
    cr_assert(sl_tenant_assignment_parse("concurrency=8", &field, &value, msg), "%s", msg);
    cr_assert_eq(field, SL_TENANT_CONCURRENCY);
    cr_assert_eq(value, 8);
    cr_assert(sl_tenant_assignment_parse("capacity=1000", &field, &value, msg), "%s", msg);
    cr_assert_eq(field, SL_TENANT_CAPACITY);

    struct {
        const char *text, *message;
    } bad[] = {
        {"rate=0", "rate: must be > 0"},
        {"rate=20/s", "rate: must be a number (jobs per second), not a string"},
        {"rate=0.0005", "rate: must be a multiple of 0.001 (at least 0.001)"},
        {"capacity=-1", "capacity: must be an integer between 1 and"},
        {"concurrency=1.5", "concurrency: must be an integer"},
        {"concurrency=", "concurrency: must be an integer"},
        {"pace=3", "unknown field 'pace'"},
        {"rate", "expects FIELD=VALUE"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        value = -7;
        cr_assert_not(sl_tenant_assignment_parse(bad[i].text, &field, &value, msg), "%s",
                      bad[i].text);
        cr_assert(strstr(msg, bad[i].message), "%s: %s", bad[i].text, msg);
        cr_assert_eq(value, -7, "left alone");
    }
}

Test(tenant_change, durations_take_s_m_h)
{
    int64_t ms = 0;
    cr_assert(sl_tenant_duration_parse("90s", &ms));
    cr_assert_eq(ms, 90000);
    cr_assert(sl_tenant_duration_parse("10m", &ms));
    cr_assert_eq(ms, 600000);
    cr_assert(sl_tenant_duration_parse("2h", &ms));
    cr_assert_eq(ms, 7200000);
    cr_assert(sl_tenant_duration_parse("8784h", &ms), "366 days");
    const char *bad[] = {"", "10", "0s", "m", "10x", "10ms", "1.5h", "-1m", "8785h",
                         "99999999999999999999s"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        ms = -1;
        cr_assert_not(sl_tenant_duration_parse(bad[i], &ms), "%s", bad[i]);
        cr_assert_eq(ms, -1, "%s: left alone", bad[i]);
    }
}

Test(tenant_change, an_event_is_the_designs_json)
{
    char *text = sl_tenant_event_json(1700000000123, "set", "rate", true, 10000, true, 20000,
                                      "alice@host \"x\"");
    cr_assert_not_null(text);
    cJSON *e = cJSON_Parse(text);
    cr_assert_not_null(e, "%s", text);
    cr_assert_eq(cJSON_GetObjectItem(e, "at_ms")->valuedouble, 1700000000123.0);
    cr_assert_str_eq(cJSON_GetObjectItem(e, "what")->valuestring, "set");
    cr_assert_str_eq(cJSON_GetObjectItem(e, "field")->valuestring, "rate");
    cr_assert_eq(cJSON_GetObjectItem(e, "old")->valuedouble, 10000);
    cr_assert_eq(cJSON_GetObjectItem(e, "new")->valuedouble, 20000);
    cr_assert_str_eq(cJSON_GetObjectItem(e, "by")->valuestring, "alice@host \"x\"");
    cJSON_Delete(e);
    free(text);
    text = sl_tenant_event_json(1, "unset", "capacity", false, 0, false, 0, "b");
    e = cJSON_Parse(text);
    cr_assert(cJSON_IsNull(cJSON_GetObjectItem(e, "old")) && cJSON_IsNull(cJSON_GetObjectItem(e, "new")),
              "%s", text);
    cJSON_Delete(e);
    free(text);
}

Test(tenant_change, rates_print_as_jobs_per_second)
{
    char out[32];
    sl_tenant_format_rate(out, sizeof out, 20000);
    cr_assert_str_eq(out, "20");
    sl_tenant_format_rate(out, sizeof out, 500);
    cr_assert_str_eq(out, "0.5");
    sl_tenant_format_rate(out, sizeof out, 1);
    cr_assert_str_eq(out, "0.001");
}
