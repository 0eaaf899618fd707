/* tenant_change.h - the pure parts of `sluice tenant`: reading an
 * operator's FIELD=VALUE and --for DURATION, and writing one change as the
 * JSON of the events list (SPEC section 9, PREFIX:{T}:events). No I/O. */
#ifndef SLUICE_TENANT_CHANGE_H
#define SLUICE_TENANT_CHANGE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The longest message tenant_change writes, with its NUL. */
#define SL_TENANT_MSG_MAX 192

/* The settings an operator may set or unset. */
typedef enum sl_tenant_field {
    SL_TENANT_RATE,        /* stored in milli-jobs/s */
    SL_TENANT_CAPACITY,
    SL_TENANT_CONCURRENCY,
    SL_TENANT_FIELD_COUNT
} sl_tenant_field;

/* The settings hash's name of field ("rate", "capacity", "concurrency"). */
const char *sl_tenant_field_name(sl_tenant_field field);

/* The field named name; false if it is none an operator may set. */
bool sl_tenant_field_parse(const char *name, sl_tenant_field *out);

/* Reads text as field's value exactly as the config file reads the key of
 * the same name (config_fields.c's row: its bounds and its messages);
 * *out is the hash's value (rate in milli-jobs/s). False with "KEY:
 * MESSAGE" in msg (SL_TENANT_MSG_MAX bytes) otherwise. */
bool sl_tenant_value_parse(sl_tenant_field field, const char *text, int64_t *out, char *msg);

/* Reads "FIELD=VALUE" into *field and *value; false with a message. */
bool sl_tenant_assignment_parse(const char *text, sl_tenant_field *field, int64_t *value,
                                char *msg);

/* A pause's length: a positive integer and a unit, s, m or h ("90s",
 * "10m", "2h"), at most 366 days; in ms. False on anything else. */
bool sl_tenant_duration_parse(const char *text, int64_t *out_ms);

/* One change as the events list keeps it: {"at_ms", "what", "field",
 * "old", "new", "by"}; old and new are the hash's values (rate fields in
 * milli-jobs/s), has_old / has_new false for null. Returns a string the
 * caller frees with free(), or NULL when out of memory. */
char *sl_tenant_event_json(int64_t at_ms, const char *what, const char *field, bool has_old,
                           int64_t old_value, bool has_new, int64_t new_value, const char *by);

/* Writes a rate in milli-jobs/s as jobs/s without trailing zeros ("10",
 * "0.5") into out (size bytes). */
void sl_tenant_format_rate(char *out, size_t size, int64_t rate_milli);

#endif
