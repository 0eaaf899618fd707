/* config_types.h - the enumerated values of the configuration, shared by
 * the schema (config.h) and the field table (config_fields.h) that reads
 * them, so neither includes the other. */
#ifndef SLUICE_CONFIG_TYPES_H
#define SLUICE_CONFIG_TYPES_H

typedef enum sl_overflow {
    SL_OVERFLOW_WAIT,        /* the queue is an unbounded buffer */
    SL_OVERFLOW_DEAD_LETTER, /* jobs beyond capacity: reason "overflow" */
} sl_overflow;

typedef enum sl_job_format {
    SL_FORMAT_ENVELOPE, /* a JSON object {id, body, headers, ...} */
    SL_FORMAT_RAW,      /* the list element is the body */
} sl_job_format;

typedef enum sl_on_deny {
    SL_ON_DENY_DELAY,       /* hold the queue until the rule allows */
    SL_ON_DENY_DEAD_LETTER, /* reason "limit:NAME" */
} sl_on_deny;

typedef enum sl_limit_type {
    SL_LIMIT_POLICING,
    SL_LIMIT_TOKEN_BUCKET,
    SL_LIMIT_FIXED_WINDOW,
    SL_LIMIT_SLIDING_WINDOW_LOG,
    SL_LIMIT_SLIDING_WINDOW_COUNTER,
} sl_limit_type;

/* The script name in lua/ ("policing", ..., "sliding_window_counter"),
 * which is also the "type" of a limit in the config; NULL if out of range. */
const char *sl_limit_type_name(sl_limit_type type);

/* The defaults of a tenant's "adaptive" object (sl_adaptive_config). */
#define SL_ADAPTIVE_DECREASE_PERMILLE_DEFAULT 850 /* x0.85 */
#define SL_ADAPTIVE_INCREASE_DIVISOR 40           /* increase: max/40 (2.5% of max) */
#define SL_ADAPTIVE_COOLDOWN_MS_DEFAULT 1000      /* also config_fields.c's row */

#endif
