/* config.h - the configuration file (SPEC section 6): parsed and validated
 * as a whole into plain data.
 *
 * Validation reports every problem, each prefixed with its JSON path
 * ("tenants.acme.rate: must be > 0"); unknown and duplicate keys are
 * errors. The environment and the file system are reached only through
 * an injected sl_config_env (config_env.h), so parsing is testable
 * without either.
 *
 * Secrets: a string of headers or redis may reference environment
 * variables ("${NAME}", also inside a value: "Bearer ${TOKEN}") or be a
 * file ("@/run/credentials/x", one trailing newline stripped); see
 * secrets.h. Their values are never part of an error message.
 *
 * Defaults and bounds: of the numeric and enumerated fields, the field
 * table in config_fields.c; of the strings, the DEFAULT_* of config.c.
 */
#ifndef SLUICE_CONFIG_H
#define SLUICE_CONFIG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/errors.h"
#include "config/config_env.h"
#include "config/config_types.h"
#include "config/redis_url.h"
#include "config/tenant_name.h"

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
    int64_t max_attempts;
    int64_t base_ms;
    int64_t max_ms;       /* at least base_ms */
} sl_retry_config;

/* A tenant's "adaptive" object (issue 16): the bounds and steps of the
 * adaptive rate controller (job/adaptive.h), which lua/ack.lua runs. */
typedef struct sl_adaptive_config {
    bool enabled;              /* the object is present */
    int64_t min_milli;         /* milli-jobs/s, <= max_milli */
    int64_t max_milli;
    int64_t decrease_permille; /* 1..999: "decrease" x 1000 */
    int64_t increase_milli;    /* per window; absent: max / 40 (at least 1) */
    int64_t cooldown_ms;       /* the window: at most one change per cooldown */
    bool on_timeout;           /* timeouts slow it down too */
    bool on_5xx;               /* 5xx other than 503 slow it down too */
} sl_adaptive_config;

typedef struct sl_tenant_config {
    char *name;            /* the tenant, or "*" for the template */
    char *endpoint;        /* http:// or https:// URL */
    int64_t rate_milli;    /* milli-jobs/s */
    int64_t capacity;
    sl_overflow overflow;
    int64_t concurrency;
    int64_t timeout_ms;
    sl_retry_config retry;
    sl_header_config *headers; /* in file order; names unique ignoring case */
    size_t header_count;
    sl_job_format format;
    char **allow_urls;     /* URL prefixes a job's "url" may start with */
    size_t allow_url_count;
    int64_t max_wait_ms;   /* 0 = no limit */
    sl_limit_config *limits; /* in file order */
    size_t limit_count;
    int64_t max_job_bytes;
    char *idempotency_header; /* an HTTP token */
    char *tls_ca_file;     /* "tls": the CA bundle for https://, or NULL (the system's) */
    char *tls_cert_file;   /* a client certificate (mutual TLS) and its key, or NULL */
    char *tls_key_file;
    sl_adaptive_config adaptive;
} sl_tenant_config;

typedef struct sl_config {
    sl_redis_target redis;
    char *redis_url_redacted; /* for logs: password replaced by "***" */
    char *prefix;             /* key prefix */
    int workers;              /* default: the CPU count, clamped */
    char *admin;              /* "host:port" as configured; NULL = disabled */
    char *admin_host;         /* host part, IPv6 without brackets; NULL if disabled */
    int admin_port;
    int64_t grace_ms;         /* SIGTERM grace period */
    int64_t forget_idle_ms;   /* a discovered tenant idle this long with empty
                                 keys is forgotten */
    int64_t max_discovered_tenants; /* tenants served through "*" at once */
    sl_tenant_config *tenants; /* sorted by name (strcmp); excludes "*" */
    size_t tenant_count;
    sl_tenant_config *template_tenant; /* the "*" entry, or NULL */
} sl_config;

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

#endif
