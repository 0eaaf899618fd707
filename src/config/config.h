/* config.h - the configuration file (SPEC section 6): parsed and validated
 * as a whole into plain data.
 *
 * Validation reports every problem, each prefixed with its JSON path
 * ("tenants.acme.rate: must be > 0"); unknown and duplicate keys are
 * errors. The environment and the file system are reached only through
 * an injected sl_config_env, so parsing is testable without either.
 *
 * Secrets: a string of headers or redis may reference environment
 * variables ("${NAME}", also inside a value: "Bearer ${TOKEN}") or be a
 * file ("@/run/credentials/x", one trailing newline stripped). Their
 * values are never part of an error message.
 */
#ifndef SLUICE_CONFIG_H
#define SLUICE_CONFIG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/errors.h"
#include "config/redis_url.h"

#define SL_TENANT_NAME_MAX 128

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

typedef struct sl_header_config {
    char *name;  /* an HTTP token */
    char *value; /* resolved; no CR, LF or other control characters but HTAB */
    bool secret; /* came from ${ENV} or @file: never print the value */
} sl_header_config;

typedef struct sl_limit_config {
    char *name; /* 1..64 of [A-Za-z0-9_.-], unique within the tenant */
    sl_limit_type type;
    /* The script's ARGV[1], ARGV[2]: capacity, rate_milli (policing,
     * token_bucket) or max, window_ms (window types); within the ranges
     * of sl_bucket_params_error / sl_window_params_error. */
    int64_t first;
    int64_t second;
    sl_on_deny on_deny;
} sl_limit_config;

typedef struct sl_retry_config {
    int64_t max_attempts; /* 1..1000, default 5 */
    int64_t base_ms;      /* 1..3600000, default 500 */
    int64_t max_ms;       /* base_ms..86400000, default 60000 */
} sl_retry_config;

typedef struct sl_tenant_config {
    char *name;            /* the tenant, or "*" for the template */
    char *endpoint;        /* http:// or https:// URL */
    int64_t rate_milli;    /* milli-jobs/s, SL_RATE_MILLI_MIN..MAX */
    int64_t capacity;      /* 1..SL_CAPACITY_MAX, default 1000 */
    sl_overflow overflow;  /* default wait */
    int64_t concurrency;   /* 1..10000, default 16 */
    int64_t timeout_ms;    /* 1..3600000, default 5000 */
    sl_retry_config retry;
    sl_header_config *headers; /* in file order; names unique ignoring case */
    size_t header_count;
    sl_job_format format;  /* default envelope */
    char **allow_urls;     /* URL prefixes a job's "url" may start with */
    size_t allow_url_count;
    int64_t max_wait_ms;   /* 0 = no limit (default) */
    sl_limit_config *limits; /* in file order */
    size_t limit_count;
    int64_t max_job_bytes; /* 1..67108864, default 1048576 */
    char *idempotency_header; /* an HTTP token, default "Idempotency-Key" */
} sl_tenant_config;

typedef struct sl_config {
    sl_redis_target redis;
    char *redis_url_redacted; /* for logs: password replaced by "***" */
    char *prefix;             /* key prefix, default "sluice" */
    int workers;              /* 1..256, default the CPU count */
    char *admin;              /* "host:port" as configured; NULL = disabled */
    char *admin_host;         /* host part, IPv6 without brackets; NULL if disabled */
    int admin_port;
    int64_t grace_ms;         /* SIGTERM grace period, 0..3600000, default 10000 */
    sl_tenant_config *tenants; /* sorted by name (strcmp); excludes "*" */
    size_t tenant_count;
    sl_tenant_config *template_tenant; /* the "*" entry, or NULL */
} sl_config;

/* What parsing may ask of the outside world. Any member may be NULL/0:
 * then no variable is set, no file is readable, and cpu_count counts 1. */
typedef struct sl_config_env {
    /* The value of variable name, or NULL if unset; not freed. */
    const char *(*getenv_fn)(void *ctx, const char *name);
    /* The whole file, NUL-terminated and malloc'd (caller frees), or NULL
     * with a reason in err (e.g. "No such file or directory"). */
    char *(*read_file_fn)(void *ctx, const char *path, char *err, size_t err_size);
    void *ctx;
    int cpu_count; /* the default of workers (clamped to 1..256) */
} sl_config_env;

/* The real process environment, file system and usable CPU count. Files
 * over 64 MiB or holding a NUL byte are refused. */
sl_config_env sl_config_env_system(void);

/* Parses and validates json_text. Returns a config (free it with
 * sl_config_free) or NULL after appending every problem to *errors.
 * env may be NULL (see sl_config_env). */
sl_config *sl_config_parse(const char *json_text, const sl_config_env *env, sl_errors *errors);

/* Reads path with env->read_file_fn and parses it; a read failure is one
 * error "PATH: REASON". */
sl_config *sl_config_load(const char *path, const sl_config_env *env, sl_errors *errors);

/* Frees everything; NULL is a no-op. Secret values are wiped first. */
void sl_config_free(sl_config *cfg);

/* The listed tenant named exactly name, or NULL (the "*" template is not
 * listed: see sl_config_tenant_for). */
const sl_tenant_config *sl_config_find_tenant(const sl_config *cfg, const char *name);

/* What governs tenant name: its own entry, else the "*" template if the
 * name is valid, else NULL. */
const sl_tenant_config *sl_config_tenant_for(const sl_config *cfg, const char *name);

/* True if name is 1..128 characters of [A-Za-z0-9_.:-] (not "*"). */
bool sl_tenant_name_valid(const char *name);

/* The script name in lua/ ("policing", ..., "sliding_window_counter"),
 * which is also the "type" of a limit in the config; NULL if out of range. */
const char *sl_limit_type_name(sl_limit_type type);

#endif
