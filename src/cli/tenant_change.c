/* tenant_change.c - see tenant_change.h. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "base/errors.h"
#include "cli/tenant_change.h"
#include "config/config_fields.h"
#include "config/json_path.h"

#define DURATION_MAX_MS (INT64_C(366) * 24 * 3600 * 1000)

static const char *const field_names[SL_TENANT_FIELD_COUNT] = {
    [SL_TENANT_RATE] = "rate",
    [SL_TENANT_CAPACITY] = "capacity",
    [SL_TENANT_CONCURRENCY] = "concurrency",
};

/* The config row each field is read by: one set of bounds and messages. */
static const sl_field_id field_rows[SL_TENANT_FIELD_COUNT] = {
    [SL_TENANT_RATE] = SL_FIELD_RATE_JOBS,
    [SL_TENANT_CAPACITY] = SL_FIELD_CAPACITY,
    [SL_TENANT_CONCURRENCY] = SL_FIELD_CONCURRENCY,
};

const char *sl_tenant_field_name(sl_tenant_field field)
{
    return (unsigned)field < SL_TENANT_FIELD_COUNT ? field_names[field] : "?";
}

bool sl_tenant_field_parse(const char *name, sl_tenant_field *out)
{
    for (unsigned i = 0; i < SL_TENANT_FIELD_COUNT; i++)
        if (strcmp(name, field_names[i]) == 0) {
            *out = (sl_tenant_field)i;
            return true;
        }
    return false;
}

bool sl_tenant_value_parse(sl_tenant_field field, const char *text, int64_t *out, char *msg)
{
    /* The value as the config file would hold it: a JSON number when the
     * text is one, else a string (which the row refuses in its words). */
    cJSON *value = cJSON_ParseWithOpts(text, NULL, 1);
    if (!value || !cJSON_IsNumber(value)) {
        cJSON_Delete(value);
        value = cJSON_CreateString(text);
    }
    cJSON *obj = cJSON_CreateObject();
    if (!value || !obj || !cJSON_AddItemToObject(obj, field_names[field], value)) {
        cJSON_Delete(value);
        cJSON_Delete(obj);
        snprintf(msg, SL_TENANT_MSG_MAX, "out of memory");
        return false;
    }
    sl_errors errors;
    sl_errors_init(&errors);
    sl_jpath_reader reader = {.errors = &errors};
    int64_t parsed = 0;
    sl_jpath_status st = sl_config_field_read(&reader, obj, "", field_rows[field], &parsed);
    bool ok = st == SL_JPATH_OK && !sl_errors_any(&errors) && !reader.oom;
    if (ok)
        *out = parsed;
    else
        snprintf(msg, SL_TENANT_MSG_MAX, "%s",
                 errors.count ? errors.items[0] : "out of memory");
    sl_errors_clear(&errors);
    cJSON_Delete(obj);
    return ok;
}

bool sl_tenant_assignment_parse(const char *text, sl_tenant_field *field, int64_t *value,
                                char *msg)
{
    const char *eq = strchr(text, '=');
    char name[32];
    if (!eq || (size_t)(eq - text) >= sizeof name) {
        snprintf(msg, SL_TENANT_MSG_MAX, "'%.40s': expects FIELD=VALUE (rate, capacity, concurrency)",
                 text);
        return false;
    }
    memcpy(name, text, (size_t)(eq - text));
    name[eq - text] = '\0';
    if (!sl_tenant_field_parse(name, field)) {
        snprintf(msg, SL_TENANT_MSG_MAX, "unknown field '%s': expects rate, capacity or concurrency",
                 name);
        return false;
    }
    return sl_tenant_value_parse(*field, eq + 1, value, msg);
}

bool sl_tenant_duration_parse(const char *text, int64_t *out_ms)
{
    int64_t n = 0;
    const char *p = text;
    for (; *p >= '0' && *p <= '9'; p++) {
        if (n > DURATION_MAX_MS)
            return false;
        n = n * 10 + (*p - '0');
    }
    if (p == text || n <= 0 || p[0] == '\0' || p[1] != '\0')
        return false;
    int64_t unit = p[0] == 's' ? 1000 : p[0] == 'm' ? 60000 : p[0] == 'h' ? 3600000 : 0;
    if (!unit || n > DURATION_MAX_MS / unit)
        return false;
    *out_ms = n * unit;
    return true;
}

/* Adds name: value, or name: null. */
static bool add_value(cJSON *o, const char *name, bool has, int64_t value)
{
    return has ? cJSON_AddNumberToObject(o, name, (double)value) != NULL
               : cJSON_AddNullToObject(o, name) != NULL;
}

char *sl_tenant_event_json(int64_t at_ms, const char *what, const char *field, bool has_old,
                           int64_t old_value, bool has_new, int64_t new_value, const char *by)
{
    cJSON *o = cJSON_CreateObject();
    bool ok = o && cJSON_AddNumberToObject(o, "at_ms", (double)at_ms) &&
              cJSON_AddStringToObject(o, "what", what) &&
              cJSON_AddStringToObject(o, "field", field) && add_value(o, "old", has_old, old_value) &&
              add_value(o, "new", has_new, new_value) && cJSON_AddStringToObject(o, "by", by);
    char *text = ok ? cJSON_PrintUnformatted(o) : NULL;
    cJSON_Delete(o);
    if (!text)
        return NULL;
    /* cJSON_free may not be free(): hand back a copy the caller frees. */
    char *copy = strdup(text);
    cJSON_free(text);
    return copy;
}

void sl_tenant_format_rate(char *out, size_t size, int64_t rate_milli)
{
    snprintf(out, size, "%" PRId64 ".%03" PRId64, rate_milli / 1000, rate_milli % 1000);
    char *end = out + strlen(out) - 1;
    while (*end == '0')
        *end-- = '\0';
    if (*end == '.')
        *end = '\0';
}
