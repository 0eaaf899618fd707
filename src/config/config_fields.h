/* config_fields.h - the scalar fields of the configuration file as a
 * table: one row per field with its key, type, bounds and default, so
 * that each fact is written once and the messages quote the row (in the
 * way Redis's config.c keeps its standardConfig table).
 *
 * Strings (redis, prefix, admin, endpoint, idempotency_header), headers,
 * allow_urls and the parameters of limits are read by config.c: each has
 * a rule of its own (URL, token, secret, the admission model's ranges). */
#ifndef SLUICE_CONFIG_FIELDS_H
#define SLUICE_CONFIG_FIELDS_H

#include <cjson/cJSON.h>
#include <stdbool.h>
#include <stdint.h>

#include "config/json_path.h"

typedef enum sl_field_type {
    SL_FIELD_INT,  /* a JSON integer in [min, max] */
    SL_FIELD_RATE, /* jobs/s, a multiple of 0.001, stored as milli-jobs/s in [min, max] */
    SL_FIELD_ENUM, /* one of names, stored as its index */
} sl_field_type;

/* Rows of the table, in the order of SPEC section 6. */
typedef enum sl_field_id {
    /* top level (sl_config) */
    SL_FIELD_WORKERS,
    SL_FIELD_GRACE_MS,
    SL_FIELD_FORGET_IDLE_MS,
    SL_FIELD_MAX_DISCOVERED_TENANTS,
    /* a tenant (sl_tenant_config) */
    SL_FIELD_RATE_JOBS, /* also a bucket limit's "rate" */
    SL_FIELD_CAPACITY,
    SL_FIELD_OVERFLOW,
    SL_FIELD_CONCURRENCY,
    SL_FIELD_TIMEOUT_MS,
    SL_FIELD_FORMAT,
    SL_FIELD_MAX_WAIT_MS,
    SL_FIELD_MAX_JOB_BYTES,
    /* a tenant's retry (sl_retry_config) */
    SL_FIELD_RETRY_MAX_ATTEMPTS,
    SL_FIELD_RETRY_BASE_MS,
    SL_FIELD_RETRY_MAX_MS,
    /* one of a tenant's limits (sl_limit_config) */
    SL_FIELD_LIMIT_TYPE,
    SL_FIELD_LIMIT_ON_DENY,
    /* a tenant's adaptive (sl_adaptive_config) */
    SL_FIELD_ADAPTIVE_MIN,
    SL_FIELD_ADAPTIVE_MAX,
    SL_FIELD_ADAPTIVE_INCREASE,
    SL_FIELD_ADAPTIVE_COOLDOWN_MS,
    SL_FIELD_COUNT
} sl_field_id;

typedef struct sl_field {
    const char *name;         /* the JSON key */
    sl_field_type type;
    int64_t min, max;         /* INT, RATE: inclusive bounds (RATE in milli-jobs/s) */
    bool required;            /* no default: absence is an error */
    int64_t def;              /* the value when absent (ENUM: an index into names) */
    const char *const *names; /* ENUM: the accepted strings, NULL-terminated */
} sl_field;

/* The row of id; id must be below SL_FIELD_COUNT. Never NULL. */
const sl_field *sl_config_field(sl_field_id id);

/* Reads field id at obj.NAME into *out: the row's default when the key is
 * absent ("is required" reported instead if the row has none), the value
 * if it is good, and when it is bad the default stays and the problem is
 * reported, quoting the row's bounds ("must be an integer between 1 and
 * 10000"). obj may be NULL (every key absent). */
sl_jpath_status sl_config_field_read(sl_jpath_reader *r, const cJSON *obj, const char *parent,
                                     sl_field_id id, int64_t *out);

#endif
