/* test_config_fields.c - the table of scalar config fields: every row's
 * bounds are what its messages quote and what is accepted, its default is
 * what an absent key gives, and the config parser takes its defaults from
 * the table. The rows are read from the table, so a changed bound or
 * default is tested without editing this file. */
#include <criterion/criterion.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "config/config.h"
#include "config/config_fields.h"

typedef struct fixture {
    sl_errors errors;
    sl_jpath_reader r;
} fixture;

static void setup(fixture *f)
{
    sl_errors_init(&f->errors);
    f->r = (sl_jpath_reader){.errors = &f->errors, .oom = false};
}

/* Reads row id from the JSON object {"NAME": value_json}. */
static sl_jpath_status read_as(fixture *f, sl_field_id id, const char *value_json, int64_t *out)
{
    const sl_field *row = sl_config_field(id);
    char json[256];
    snprintf(json, sizeof json, "{\"%s\": %s}", row->name, value_json);
    cJSON *obj = cJSON_Parse(json);
    cr_assert_not_null(obj, "%s", json);
    sl_jpath_status st = sl_config_field_read(&f->r, obj, "p", id, out);
    cJSON_Delete(obj);
    return st;
}

static void assert_last_error(const fixture *f, const char *expected)
{
    cr_assert_gt(f->errors.count, 0, "no error, expected %s", expected);
    cr_assert_str_eq(f->errors.items[f->errors.count - 1], expected);
}

Test(fields, every_row_is_complete)
{
    for (int id = 0; id < SL_FIELD_COUNT; id++) {
        const sl_field *row = sl_config_field((sl_field_id)id);
        cr_assert_not_null(row->name, "row %d", id);
        if (row->type == SL_FIELD_ENUM) {
            cr_assert_not_null(row->names, "%s", row->name);
            int n = 0;
            while (row->names[n])
                n++;
            cr_assert(row->required || (row->def >= 0 && row->def < n), "%s", row->name);
        } else {
            cr_assert_leq(row->min, row->max, "%s", row->name);
            cr_assert(row->required || row->def == 0 ||
                          (row->def >= row->min && row->def <= row->max),
                      "%s: default %" PRId64 " outside its bounds", row->name, row->def);
        }
    }
}

Test(fields, integer_rows_accept_their_bounds_and_quote_them)
{
    for (int id = 0; id < SL_FIELD_COUNT; id++) {
        const sl_field *row = sl_config_field((sl_field_id)id);
        if (row->type != SL_FIELD_INT)
            continue;
        fixture f;
        setup(&f);
        char text[64], msg[256];
        int64_t v = -1;

        snprintf(text, sizeof text, "%" PRId64, row->min);
        cr_assert_eq(read_as(&f, (sl_field_id)id, text, &v), SL_JPATH_OK, "%s", row->name);
        cr_assert_eq(v, row->min);
        snprintf(text, sizeof text, "%" PRId64, row->max);
        cr_assert_eq(read_as(&f, (sl_field_id)id, text, &v), SL_JPATH_OK, "%s", row->name);
        cr_assert_eq(v, row->max);
        cr_assert_eq(f.errors.count, 0);

        snprintf(msg, sizeof msg, "p.%s: must be an integer between %" PRId64 " and %" PRId64,
                 row->name, row->min, row->max);
        const int64_t outside[] = {row->min - 1, row->max + 1};
        for (int i = 0; i < 2; i++) {
            snprintf(text, sizeof text, "%" PRId64, outside[i]);
            cr_assert_eq(read_as(&f, (sl_field_id)id, text, &v), SL_JPATH_BAD, "%s", text);
            assert_last_error(&f, msg);
            cr_assert_eq(v, row->def, "%s: a bad value leaves the default", row->name);
        }
        sl_errors_clear(&f.errors);
    }
}

Test(fields, absent_keys_give_the_default)
{
    for (int id = 0; id < SL_FIELD_COUNT; id++) {
        const sl_field *row = sl_config_field((sl_field_id)id);
        fixture f;
        setup(&f);
        cJSON *empty = cJSON_CreateObject();
        int64_t v = -12345;
        cr_assert_eq(sl_config_field_read(&f.r, empty, "p", (sl_field_id)id, &v), SL_JPATH_ABSENT);
        cJSON_Delete(empty);
        if (row->required) {
            cr_assert_eq(v, -12345, "%s", row->name);
            char msg[128];
            snprintf(msg, sizeof msg, "p.%s: is required", row->name);
            assert_last_error(&f, msg);
        } else {
            cr_assert_eq(v, row->def, "%s", row->name);
            cr_assert_eq(f.errors.count, 0);
        }
        sl_errors_clear(&f.errors);
    }
}

Test(fields, enum_rows_store_the_index_and_list_the_names)
{
    fixture f;
    setup(&f);
    const sl_field *row = sl_config_field(SL_FIELD_OVERFLOW);
    int64_t v = -1;
    cr_assert_eq(read_as(&f, SL_FIELD_OVERFLOW, "\"dead-letter\"", &v), SL_JPATH_OK);
    cr_assert_eq(v, SL_OVERFLOW_DEAD_LETTER);
    cr_assert_str_eq(row->names[v], "dead-letter");
    cr_assert_eq(read_as(&f, SL_FIELD_OVERFLOW, "\"drop\"", &v), SL_JPATH_BAD);
    assert_last_error(&f, "p.overflow: must be \"wait\" or \"dead-letter\", not \"drop\"");
    cr_assert_eq(read_as(&f, SL_FIELD_LIMIT_TYPE, "\"sliding_window_log\"", &v), SL_JPATH_OK);
    cr_assert_eq(v, SL_LIMIT_SLIDING_WINDOW_LOG);
    cr_assert_str_eq(sl_config_field(SL_FIELD_LIMIT_TYPE)->names[v],
                     sl_limit_type_name(SL_LIMIT_SLIDING_WINDOW_LOG));
    sl_errors_clear(&f.errors);
}

Test(fields, the_rate_row_quotes_its_bounds_in_jobs_per_second)
{
    fixture f;
    setup(&f);
    const sl_field *row = sl_config_field(SL_FIELD_RATE_JOBS);
    int64_t v = -1;
    cr_assert_eq(read_as(&f, SL_FIELD_RATE_JOBS, "0.001", &v), SL_JPATH_OK);
    cr_assert_eq(v, row->min);
    char text[64], msg[128];
    snprintf(text, sizeof text, "%" PRId64, row->max / 1000);
    cr_assert_eq(read_as(&f, SL_FIELD_RATE_JOBS, text, &v), SL_JPATH_OK);
    cr_assert_eq(v, row->max);
    snprintf(text, sizeof text, "%" PRId64 ".001", row->max / 1000);
    cr_assert_eq(read_as(&f, SL_FIELD_RATE_JOBS, text, &v), SL_JPATH_BAD);
    snprintf(msg, sizeof msg, "p.rate: must be at most %" PRId64, row->max / 1000);
    assert_last_error(&f, msg);
    cr_assert_eq(read_as(&f, SL_FIELD_RATE_JOBS, "0.0004", &v), SL_JPATH_BAD);
    assert_last_error(&f, "p.rate: must be a multiple of 0.001 (at least 0.001)");
    cr_assert_eq(read_as(&f, SL_FIELD_RATE_JOBS, "0.1", &v), SL_JPATH_OK);
    cr_assert_eq(v, 100, "0.1 is not exact in binary but converts exactly");
    sl_errors_clear(&f.errors);
}

/* The parser's defaults are the table's: a minimal config has them all. */
Test(fields, a_minimal_config_has_the_table_defaults)
{
    sl_errors errs;
    sl_errors_init(&errs);
    sl_config_env env = {.cpu_count = 1000};
    sl_config *cfg = sl_config_parse(
        "{\"tenants\": {\"a\": {\"endpoint\": \"http://h/\", \"rate\": 1}}}", &env, &errs);
    cr_assert_not_null(cfg, "%s", errs.count ? errs.items[0] : "");
    const sl_tenant_config *t = sl_config_find_tenant(cfg, "a");
    cr_assert_not_null(t);
    const struct {
        sl_field_id id;
        int64_t value;
    } got[] = {
        {SL_FIELD_GRACE_MS, cfg->grace_ms},
        {SL_FIELD_CAPACITY, t->capacity},
        {SL_FIELD_OVERFLOW, t->overflow},
        {SL_FIELD_CONCURRENCY, t->concurrency},
        {SL_FIELD_TIMEOUT_MS, t->timeout_ms},
        {SL_FIELD_FORMAT, t->format},
        {SL_FIELD_MAX_WAIT_MS, t->max_wait_ms},
        {SL_FIELD_MAX_JOB_BYTES, t->max_job_bytes},
        {SL_FIELD_RETRY_MAX_ATTEMPTS, t->retry.max_attempts},
        {SL_FIELD_RETRY_BASE_MS, t->retry.base_ms},
        {SL_FIELD_RETRY_MAX_MS, t->retry.max_ms},
    };
    for (size_t i = 0; i < sizeof got / sizeof got[0]; i++)
        cr_assert_eq(got[i].value, sl_config_field(got[i].id)->def, "%s",
                     sl_config_field(got[i].id)->name);
    /* workers: the CPU count, clamped to the row's bounds. */
    cr_assert_eq(cfg->workers, sl_config_field(SL_FIELD_WORKERS)->max);
    sl_config_free(cfg);
    sl_errors_clear(&errs);
}
