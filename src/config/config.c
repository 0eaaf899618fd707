/* config.c - the schema of the configuration file: which keys each object
 * has and how they assemble into an sl_config.
 *
 * One pass over the JSON tree builds the result and reports every problem
 * it meets; the result is thrown away if there was any. Each reader below
 * takes the parent's path and the key, reports its own errors, and leaves
 * the default in place when the key is absent. The pieces live apart:
 * json_path.c reads fields with paths, config_fields.c holds the scalar
 * fields' bounds and defaults, secrets.c resolves "${ENV}" and "@/file",
 * config_env.c is the real environment. */
#include <cjson/cJSON.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "admission/admission.h"
#include "base/authority.h"
#include "config/config.h"
#include "config/config_fields.h"
#include "config/json_path.h"
#include "config/secrets.h"

#define PREFIX_MAX 64
#define LIMIT_NAME_MAX 64

#define DEFAULT_REDIS "redis://127.0.0.1:6379/0"
#define DEFAULT_PREFIX "sluice"
#define DEFAULT_ADMIN "127.0.0.1:9464"
#define DEFAULT_IDEMPOTENCY_HEADER "Idempotency-Key"

typedef struct parse_ctx {
    sl_jpath_reader r; /* where problems go */
    const sl_config_env *env;
} parse_ctx;

static const char *const top_keys[] = {"redis",   "prefix",   "workers",   "admin",
                                       "tenants", "grace_ms", "redis_tls",
                                       "forget_idle_ms", "max_discovered_tenants", NULL};
static const char *const redis_tls_keys[] = {"ca_file", "cert_file", "key_file", "server_name",
                                             "verify", NULL};
static const char *const tenant_keys[] = {
    "endpoint", "rate",       "capacity", "overflow",    "concurrency",   "timeout_ms",
    "retry",    "headers",    "format",   "allow_urls",  "max_wait_ms",   "limits",
    "max_job_bytes", "idempotency_header", "tls", "adaptive", NULL};
static const char *const tls_keys[] = {"ca_file", "cert_file", "key_file", NULL};
static const char *const adaptive_keys[] = {"min",         "max",        "decrease", "increase",
                                            "cooldown_ms", "on_timeout", "on_5xx",   NULL};
static const char *const retry_keys[] = {"max_attempts", "base_ms", "max_ms", NULL};
static const char *const limit_keys[] = {"name", "type", "on_deny", "capacity",
                                         "rate", "max",  "window_ms", NULL};

/* Set by sluice itself: a configured value would corrupt the request. */
static const char *const reserved_headers[] = {"Content-Length", "Transfer-Encoding", NULL};

/* ---- small helpers -------------------------------------------------- */

static bool is_digit(char c)
{
    return c >= '0' && c <= '9';
}

static bool is_alpha(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}

static bool all_chars_in(const char *s, const char *extra)
{
    for (; *s; s++) {
        if (!is_alpha(*s) && !is_digit(*s) && !strchr(extra, *s))
            return false;
    }
    return true;
}

/* 1..max characters of [A-Za-z0-9] and `extra`. */
static bool name_ok(const char *s, size_t max, const char *extra)
{
    size_t len = strlen(s);
    return len >= 1 && len <= max && all_chars_in(s, extra);
}

static bool http_token(const char *s)
{
    return *s && all_chars_in(s, "!#$%&'*+-.^_`|~");
}

static char *dup_str(parse_ctx *c, const char *s)
{
    char *d = strdup(s);
    if (!d)
        c->r.oom = true;
    return d;
}

static bool in_list_nocase(const char *s, const char *const *list)
{
    for (; *list; list++) {
        if (strcasecmp(s, *list) == 0)
            return true;
    }
    return false;
}

/* ---- URLs and addresses --------------------------------------------- */

/* "host:port" or "[v6]:port", the port required; on success *host is
 * malloc'd (IPv6 without brackets). */
static bool parse_host_port(const char *s, char **host, int *port)
{
    sl_authority a;
    if (sl_authority_parse(s, strlen(s), &a) != SL_AUTHORITY_OK || a.port == 0)
        return false;
    char *copy = strdup(a.host);
    if (!copy)
        return false;
    *host = copy;
    *port = a.port;
    return true;
}

/* The message of an endpoint or allow_urls entry whose authority was
 * refused; brackets that do not close or hold no address are all "an
 * invalid host", as they were before authority.c. */
static const char *url_authority_error(sl_authority_status st, const sl_authority *a)
{
    switch (st) {
    case SL_AUTHORITY_OK:
        return NULL;
    case SL_AUTHORITY_NO_HOST:
        return a->bracketed ? "has an invalid host" : "must have a host";
    case SL_AUTHORITY_BAD_HOST:
    case SL_AUTHORITY_UNCLOSED_BRACKET:
    case SL_AUTHORITY_AFTER_BRACKET:
        return "has an invalid host";
    case SL_AUTHORITY_UNBRACKETED_V6:
        return "has more than one ':' (an IPv6 address goes in brackets, e.g. "
               "http://[::1]:8080/)";
    case SL_AUTHORITY_BAD_PORT:
        return "has an invalid port (1..65535)";
    }
    return "has an invalid host";
}

/* NULL if s is an http(s) URL with a valid host (and port), else why not.
 * Never quotes s: it may carry credentials. A prefix of allowed URLs must
 * reach into the path, or "https://a.example" would admit
 * "https://a.example.evil.example/". */
static const char *http_url_error(const char *s, bool is_prefix)
{
    size_t skip;
    if (strncasecmp(s, "http://", 7) == 0)
        skip = 7;
    else if (strncasecmp(s, "https://", 8) == 0)
        skip = 8;
    else
        return "must be an http:// or https:// URL";
    for (const char *p = s; *p; p++) {
        if ((unsigned char)*p <= ' ' || *p == 0x7f)
            return "must not contain whitespace or control characters";
    }
    const char *auth = s + skip;
    size_t auth_len = strcspn(auth, "/?#");
    /* Credentials end at the last '@' of the authority. */
    const char *hp = auth;
    for (const char *p = auth; p < auth + auth_len; p++) {
        if (*p == '@')
            hp = p + 1;
    }
    sl_authority a;
    const char *why =
        url_authority_error(sl_authority_parse(hp, auth_len - (size_t)(hp - auth), &a), &a);
    if (why)
        return why;
    if (is_prefix && auth[auth_len] != '/')
        return "must include the path after the host (at least \"/\"), "
               "or it would also match other hosts";
    return NULL;
}
/* ---- tenants ------------------------------------------------------------ */

/* The retry object; its fields keep their defaults when it is absent. */
static void parse_retry(parse_ctx *c, const cJSON *tenant, const char *parent, sl_retry_config *r)
{
    char path[SL_JPATH_LEN];
    sl_jpath_status st;
    const cJSON *obj = sl_jpath_object(&c->r, tenant, parent, "retry", path, sizeof path, &st);
    if (obj) {
        sl_jpath_check_unknown(&c->r, obj, path, retry_keys);
        sl_jpath_check_duplicates(&c->r, obj, path);
    }
    sl_config_field_read(&c->r, obj, path, SL_FIELD_RETRY_MAX_ATTEMPTS, &r->max_attempts);
    sl_jpath_status base =
        sl_config_field_read(&c->r, obj, path, SL_FIELD_RETRY_BASE_MS, &r->base_ms);
    sl_jpath_status max = sl_config_field_read(&c->r, obj, path, SL_FIELD_RETRY_MAX_MS, &r->max_ms);
    if (base != SL_JPATH_BAD && max != SL_JPATH_BAD && r->max_ms < r->base_ms) {
        char p[SL_JPATH_LEN];
        sl_jpath_key(p, sizeof p, path, "max_ms");
        sl_jpath_fail(&c->r, p, "must be >= base_ms (%" PRId64 ")", r->base_ms);
    }
}

/* A file of a "tls" or "redis_tls" object at obj.key: an absolute path
 * (the units run in another directory) that can be read now, so that
 * check-config finds a wrong path rather than the first connection. NULL
 * if absent or wrong (reported). */
static char *tls_file(parse_ctx *c, const cJSON *obj, const char *path, const char *key)
{
    const char *file = NULL;
    if (sl_jpath_string(&c->r, obj, path, key, &file) != SL_JPATH_OK)
        return NULL;
    char where[SL_JPATH_LEN];
    sl_jpath_key(where, sizeof where, path, key);
    if (file[0] != '/') {
        sl_jpath_fail(&c->r, where, "must be an absolute path");
        return NULL;
    }
    char err[256] = "file reading is not available";
    char *text = c->env && c->env->read_file_fn
                     ? c->env->read_file_fn(c->env->ctx, file, err, sizeof err)
                     : NULL;
    if (!text) {
        sl_jpath_fail(&c->r, where, "cannot read %s: %s", file, err);
        return NULL;
    }
    sl_secret_free(text); /* a key file is a secret */
    return dup_str(c, file);
}

/* ca_file, cert_file and key_file of the "tls" or "redis_tls" object at
 * path; a certificate and its key come together. */
static void parse_tls_files(parse_ctx *c, const cJSON *obj, const char *path, char **ca,
                            char **cert, char **key)
{
    *ca = tls_file(c, obj, path, "ca_file");
    *cert = tls_file(c, obj, path, "cert_file");
    *key = tls_file(c, obj, path, "key_file");
    bool has_cert = sl_jpath_member(obj, "cert_file") != NULL;
    bool has_key = sl_jpath_member(obj, "key_file") != NULL;
    if (has_cert != has_key) {
        char where[SL_JPATH_LEN], other[SL_JPATH_LEN];
        sl_jpath_key(where, sizeof where, path, has_cert ? "key_file" : "cert_file");
        sl_jpath_key(other, sizeof other, path, has_cert ? "cert_file" : "key_file");
        sl_jpath_fail(&c->r, where, "is required with %s (a client certificate needs its key)",
                      other);
    }
}

/* "tls": whom to trust for the tenant's https:// endpoint (a private CA)
 * and who sluice is to it (a client certificate). Certificate and host
 * name are always verified. */
static void parse_tls(parse_ctx *c, const cJSON *tenant, const char *parent, sl_tenant_config *t)
{
    char path[SL_JPATH_LEN];
    sl_jpath_status st;
    const cJSON *obj = sl_jpath_object(&c->r, tenant, parent, "tls", path, sizeof path, &st);
    if (!obj)
        return;
    sl_jpath_check_unknown(&c->r, obj, path, tls_keys);
    sl_jpath_check_duplicates(&c->r, obj, path);
    parse_tls_files(c, obj, path, &t->tls_ca_file, &t->tls_cert_file, &t->tls_key_file);
}

/* obj.key as a boolean into *out (left alone when absent or bad). */
static void read_bool(parse_ctx *c, const cJSON *obj, const char *parent, const char *key,
                      bool *out)
{
    const cJSON *v = sl_jpath_member(obj, key);
    if (!v)
        return;
    if (!cJSON_IsBool(v)) {
        char p[SL_JPATH_LEN];
        sl_jpath_key(p, sizeof p, parent, key);
        sl_jpath_fail(&c->r, p, "must be true or false, not %s", sl_jpath_type(v));
        return;
    }
    *out = cJSON_IsTrue(v);
}

/* "decrease": the factor of a step down, in (0, 1) with at most three
 * decimals, kept as permille so that C and Lua compute it alike. */
static void read_decrease(parse_ctx *c, const cJSON *obj, const char *parent, int64_t *out)
{
    const cJSON *v = sl_jpath_member(obj, "decrease");
    if (!v)
        return;
    char p[SL_JPATH_LEN];
    sl_jpath_key(p, sizeof p, parent, "decrease");
    double d = cJSON_IsNumber(v) ? v->valuedouble * 1000 : -1;
    int64_t permille = (int64_t)(d + 0.5);
    double off = d - (double)permille;
    if (!(d >= 1 && d <= 999) || off > 1e-6 || off < -1e-6) {
        sl_jpath_fail(&c->r, p, "must be a number between 0.001 and 0.999, a multiple of 0.001");
        return;
    }
    *out = permille;
}

/* The adaptive object; absent: the rate is the file's (or an override). */
static void parse_adaptive(parse_ctx *c, const cJSON *tenant, const char *parent,
                           sl_adaptive_config *a)
{
    char path[SL_JPATH_LEN];
    sl_jpath_status st;
    const cJSON *obj = sl_jpath_object(&c->r, tenant, parent, "adaptive", path, sizeof path, &st);
    *a = (sl_adaptive_config){.decrease_permille = SL_ADAPTIVE_DECREASE_PERMILLE_DEFAULT};
    if (!obj)
        return;
    a->enabled = true;
    sl_jpath_check_unknown(&c->r, obj, path, adaptive_keys);
    sl_jpath_check_duplicates(&c->r, obj, path);
    sl_jpath_status min = sl_config_field_read(&c->r, obj, path, SL_FIELD_ADAPTIVE_MIN, &a->min_milli);
    sl_jpath_status max = sl_config_field_read(&c->r, obj, path, SL_FIELD_ADAPTIVE_MAX, &a->max_milli);
    if (min == SL_JPATH_OK && max == SL_JPATH_OK && a->max_milli < a->min_milli) {
        char p[SL_JPATH_LEN];
        sl_jpath_key(p, sizeof p, path, "max");
        sl_jpath_fail(&c->r, p, "must be >= min (%" PRId64 ".%03" PRId64 ")", a->min_milli / 1000,
                      a->min_milli % 1000);
    }
    read_decrease(c, obj, path, &a->decrease_permille);
    sl_config_field_read(&c->r, obj, path, SL_FIELD_ADAPTIVE_INCREASE, &a->increase_milli);
    if (a->increase_milli == 0) {
        a->increase_milli = a->max_milli / SL_ADAPTIVE_INCREASE_DIVISOR;
        if (a->increase_milli < 1)
            a->increase_milli = 1;
    }
    sl_config_field_read(&c->r, obj, path, SL_FIELD_ADAPTIVE_COOLDOWN_MS, &a->cooldown_ms);
    read_bool(c, obj, path, "on_timeout", &a->on_timeout);
    read_bool(c, obj, path, "on_5xx", &a->on_5xx);
}

static bool header_value_clean(const char *v)
{
    for (; *v; v++) {
        unsigned char ch = (unsigned char)*v;
        if ((ch < 0x20 && ch != '\t') || ch == 0x7f)
            return false;
    }
    return true;
}

static void parse_headers(parse_ctx *c, const cJSON *tenant, const char *parent,
                          sl_tenant_config *t)
{
    char path[SL_JPATH_LEN];
    sl_jpath_status st;
    const cJSON *obj = sl_jpath_object(&c->r, tenant, parent, "headers", path, sizeof path, &st);
    if (!obj)
        return;
    size_t n = (size_t)cJSON_GetArraySize(obj);
    if (n == 0)
        return;
    t->headers = calloc(n, sizeof *t->headers);
    if (!t->headers) {
        c->r.oom = true;
        return;
    }
    const cJSON *item;
    cJSON_ArrayForEach(item, obj)
    {
        const char *name = item->string;
        char p[SL_JPATH_LEN];
        sl_jpath_key(p, sizeof p, path, name);
        bool ok = true;
        if (!http_token(name)) {
            sl_jpath_fail(&c->r, p,
                          "invalid header name: must be an HTTP token "
                          "(letters, digits and !#$%%&'*+-.^_`|~)");
            ok = false;
        } else if (in_list_nocase(name, reserved_headers)) {
            sl_jpath_fail(&c->r, p, "is set by sluice and cannot be configured");
            ok = false;
        } else if (t->idempotency_header && strcasecmp(name, t->idempotency_header) == 0) {
            sl_jpath_fail(&c->r, p,
                          "is the idempotency_header, which sluice sets to each job's id");
            ok = false;
        } else {
            for (const cJSON *prev = obj->child; prev != item; prev = prev->next) {
                if (strcasecmp(prev->string, name) == 0) {
                    sl_jpath_fail(&c->r, p, "duplicate header (header names ignore case)");
                    ok = false;
                    break;
                }
            }
        }
        if (!cJSON_IsString(item)) {
            sl_jpath_fail(&c->r, p, "must be a string, not %s", sl_jpath_type(item));
            continue;
        }
        bool secret;
        char *value = sl_secret_resolve(&c->r, c->env, p, item->valuestring, &secret);
        if (!value)
            continue;
        if (!header_value_clean(value)) {
            sl_jpath_fail(&c->r, p,
                          secret ? "the secret value contains CR, LF or another control character "
                                   "(only one trailing newline of a file is stripped)"
                                 : "must not contain CR, LF or other control characters");
            ok = false;
        }
        if (!ok) {
            sl_secret_free(value);
            continue;
        }
        sl_header_config *h = &t->headers[t->header_count];
        h->name = dup_str(c, name);
        h->value = value;
        h->secret = secret;
        t->header_count++;
    }
}

static void parse_allow_urls(parse_ctx *c, const cJSON *tenant, const char *parent,
                             sl_tenant_config *t)
{
    char path[SL_JPATH_LEN];
    void *items = NULL;
    const cJSON *arr =
        sl_jpath_array(&c->r, tenant, parent, "allow_urls", "an array of URL prefixes",
                       sizeof *t->allow_urls, path, &items);
    if (!arr)
        return;
    t->allow_urls = items;
    size_t i = 0;
    const cJSON *item;
    cJSON_ArrayForEach(item, arr)
    {
        char p[SL_JPATH_LEN];
        sl_jpath_index(p, sizeof p, path, i++);
        const char *why = cJSON_IsString(item) ? http_url_error(item->valuestring, true) : NULL;
        if (!cJSON_IsString(item))
            sl_jpath_fail(&c->r, p, "must be a string, not %s", sl_jpath_type(item));
        else if (why)
            sl_jpath_fail(&c->r, p, "%s", why);
        else
            t->allow_urls[t->allow_url_count++] = dup_str(c, item->valuestring);
    }
}

/* Window limits: each parameter checked on its own (so both can be
 * reported), then the sliding counter's product bound. */
static void check_window_params(parse_ctx *c, const char *path, sl_limit_type type,
                                sl_jpath_status max_st, int64_t max, sl_jpath_status win_st,
                                int64_t window_ms)
{
    const char *e_max = NULL, *e_win = NULL;
    if (max_st == SL_JPATH_OK)
        e_max = sl_window_params_error(&(sl_window_params){max, 1}, false);
    if (win_st == SL_JPATH_OK)
        e_win = sl_window_params_error(&(sl_window_params){1, window_ms}, false);
    if (e_max)
        sl_errors_add(c->r.errors, "%s.%s", path, e_max);
    if (e_win)
        sl_errors_add(c->r.errors, "%s.%s", path, e_win);
    if (max_st != SL_JPATH_OK || win_st != SL_JPATH_OK || e_max || e_win ||
        type != SL_LIMIT_SLIDING_WINDOW_COUNTER)
        return;
    const char *e = sl_window_params_error(&(sl_window_params){max, window_ms}, true);
    if (e)
        sl_errors_add(c->r.errors, "%s.%s", path, e);
}

/* One entry of limits[]; true if *l was filled (then it owns its name). */
static bool parse_limit(parse_ctx *c, const cJSON *obj, const char *path, sl_limit_config *l)
{
    sl_jpath_check_unknown(&c->r, obj, path, limit_keys);
    sl_jpath_check_duplicates(&c->r, obj, path);
    bool ok = true;

    const char *name = NULL;
    sl_jpath_status st = sl_jpath_string(&c->r, obj, path, "name", &name);
    sl_jpath_require(&c->r, st, path, "name");
    if (st == SL_JPATH_OK && !name_ok(name, LIMIT_NAME_MAX, "_.-")) {
        char p[SL_JPATH_LEN];
        sl_jpath_key(p, sizeof p, path, "name");
        sl_jpath_fail(&c->r, p, "must be 1..%d characters of [A-Za-z0-9_.-]", LIMIT_NAME_MAX);
        st = SL_JPATH_BAD;
    }
    ok = ok && st == SL_JPATH_OK;

    int64_t type = -1;
    st = sl_config_field_read(&c->r, obj, path, SL_FIELD_LIMIT_TYPE, &type);
    ok = ok && st == SL_JPATH_OK;

    int64_t on_deny = 0;
    ok = sl_config_field_read(&c->r, obj, path, SL_FIELD_LIMIT_ON_DENY, &on_deny) != SL_JPATH_BAD &&
         ok;

    if (type < 0)
        return false; /* without a type, its parameters cannot be judged */

    bool bucket = type == SL_LIMIT_POLICING || type == SL_LIMIT_TOKEN_BUCKET;
    const char *k1 = bucket ? "capacity" : "max", *k2 = bucket ? "rate" : "window_ms";
    const char *wrong[2] = {bucket ? "max" : "capacity", bucket ? "window_ms" : "rate"};
    for (int i = 0; i < 2; i++) {
        if (sl_jpath_member(obj, wrong[i])) {
            char p[SL_JPATH_LEN];
            sl_jpath_key(p, sizeof p, path, wrong[i]);
            sl_jpath_fail(&c->r, p, "unknown key for type %s (its parameters are %s and %s)",
                          sl_limit_type_name((sl_limit_type)type), k1, k2);
            ok = false;
        }
    }

    int64_t first = 0, second = 0;
    sl_jpath_status st1 = sl_jpath_int_unchecked(&c->r, obj, path, k1, &first);
    sl_jpath_require(&c->r, st1, path, k1);
    sl_jpath_status st2;
    if (bucket) {
        /* A bucket's rate reads like a tenant's (its row also requires it). */
        st2 = sl_config_field_read(&c->r, obj, path, SL_FIELD_RATE_JOBS, &second);
        if (st1 == SL_JPATH_OK) {
            /* The rate was checked as it was read; check the capacity even
             * if the rate was wrong, with a stand-in rate. */
            sl_bucket_params p = {first, st2 == SL_JPATH_OK ? second : SL_RATE_MILLI_MIN};
            const char *e = sl_bucket_params_error(&p);
            if (e) {
                sl_errors_add(c->r.errors, "%s.%s", path, e);
                ok = false;
            }
        }
    } else {
        st2 = sl_jpath_int_unchecked(&c->r, obj, path, k2, &second);
        sl_jpath_require(&c->r, st2, path, k2);
        size_t before = c->r.errors->count + c->r.errors->dropped;
        check_window_params(c, path, (sl_limit_type)type, st1, first, st2, second);
        ok = ok && before == c->r.errors->count + c->r.errors->dropped;
    }
    if (!ok || st1 != SL_JPATH_OK || st2 != SL_JPATH_OK)
        return false;
    l->name = dup_str(c, name);
    l->type = (sl_limit_type)type;
    l->first = first;
    l->second = second;
    l->on_deny = (sl_on_deny)on_deny;
    return l->name != NULL;
}

static void parse_limits(parse_ctx *c, const cJSON *tenant, const char *parent, sl_tenant_config *t)
{
    char path[SL_JPATH_LEN];
    void *items = NULL;
    const cJSON *arr = sl_jpath_array(&c->r, tenant, parent, "limits", "an array of limits",
                                      sizeof *t->limits, path, &items);
    if (!arr)
        return;
    t->limits = items;
    size_t i = 0;
    const cJSON *item;
    cJSON_ArrayForEach(item, arr)
    {
        char p[SL_JPATH_LEN];
        sl_jpath_index(p, sizeof p, path, i++);
        if (!cJSON_IsObject(item)) {
            sl_jpath_fail(&c->r, p, "must be an object, not %s", sl_jpath_type(item));
            continue;
        }
        /* Names key the limit's state in Redis: a repeat would share it. */
        const cJSON *name = sl_jpath_member(item, "name");
        size_t j = 0;
        for (const cJSON *prev = arr->child; name && cJSON_IsString(name) && prev != item;
             prev = prev->next, j++) {
            const cJSON *prev_name = cJSON_IsObject(prev) ? sl_jpath_member(prev, "name") : NULL;
            if (prev_name && cJSON_IsString(prev_name) &&
                strcmp(prev_name->valuestring, name->valuestring) == 0 &&
                name_ok(name->valuestring, LIMIT_NAME_MAX, "_.-")) {
                char np[SL_JPATH_LEN];
                sl_jpath_key(np, sizeof np, p, "name");
                sl_jpath_fail(&c->r, np, "duplicate limit name \"%s\" (also limits[%zu])",
                              name->valuestring, j);
                break;
            }
        }
        if (parse_limit(c, item, p, &t->limits[t->limit_count]))
            t->limit_count++;
    }
}

static void parse_tenant(parse_ctx *c, const cJSON *obj, const char *path, sl_tenant_config *t)
{
    sl_jpath_check_unknown(&c->r, obj, path, tenant_keys);
    sl_jpath_check_duplicates(&c->r, obj, path);

    const char *s = NULL;
    sl_jpath_status st = sl_jpath_string(&c->r, obj, path, "endpoint", &s);
    sl_jpath_require(&c->r, st, path, "endpoint");
    if (st == SL_JPATH_OK) {
        const char *why = http_url_error(s, false);
        if (why) {
            char p[SL_JPATH_LEN];
            sl_jpath_key(p, sizeof p, path, "endpoint");
            sl_jpath_fail(&c->r, p, "%s", why);
        } else {
            t->endpoint = dup_str(c, s);
        }
    }
    sl_config_field_read(&c->r, obj, path, SL_FIELD_RATE_JOBS, &t->rate_milli);
    sl_config_field_read(&c->r, obj, path, SL_FIELD_CAPACITY, &t->capacity);
    int64_t e = 0;
    sl_config_field_read(&c->r, obj, path, SL_FIELD_OVERFLOW, &e);
    t->overflow = (sl_overflow)e;
    sl_config_field_read(&c->r, obj, path, SL_FIELD_CONCURRENCY, &t->concurrency);
    sl_config_field_read(&c->r, obj, path, SL_FIELD_TIMEOUT_MS, &t->timeout_ms);
    parse_retry(c, obj, path, &t->retry);

    st = sl_jpath_string(&c->r, obj, path, "idempotency_header", &s);
    if (st == SL_JPATH_OK && !http_token(s)) {
        char p[SL_JPATH_LEN];
        sl_jpath_key(p, sizeof p, path, "idempotency_header");
        sl_jpath_fail(&c->r, p, "must be an HTTP token (letters, digits and !#$%%&'*+-.^_`|~)");
    } else {
        t->idempotency_header = dup_str(c, st == SL_JPATH_OK ? s : DEFAULT_IDEMPOTENCY_HEADER);
    }
    parse_headers(c, obj, path, t);

    sl_config_field_read(&c->r, obj, path, SL_FIELD_FORMAT, &e);
    t->format = (sl_job_format)e;
    parse_allow_urls(c, obj, path, t);
    sl_config_field_read(&c->r, obj, path, SL_FIELD_MAX_WAIT_MS, &t->max_wait_ms);
    parse_limits(c, obj, path, t);
    sl_config_field_read(&c->r, obj, path, SL_FIELD_MAX_JOB_BYTES, &t->max_job_bytes);
    parse_tls(c, obj, path, t);
    parse_adaptive(c, obj, path, &t->adaptive);
}

static void tenant_clear(sl_tenant_config *t)
{
    free(t->name);
    free(t->endpoint);
    for (size_t i = 0; i < t->header_count; i++) {
        free(t->headers[i].name);
        if (t->headers[i].secret)
            sl_secret_free(t->headers[i].value);
        else
            free(t->headers[i].value);
    }
    free(t->headers);
    for (size_t i = 0; i < t->allow_url_count; i++)
        free(t->allow_urls[i]);
    free(t->allow_urls);
    for (size_t i = 0; i < t->limit_count; i++)
        free(t->limits[i].name);
    free(t->limits);
    free(t->idempotency_header);
    free(t->tls_ca_file);
    free(t->tls_cert_file);
    free(t->tls_key_file);
    memset(t, 0, sizeof *t);
}

static int tenant_cmp(const void *a, const void *b)
{
    return strcmp(((const sl_tenant_config *)a)->name, ((const sl_tenant_config *)b)->name);
}

static void parse_tenants(parse_ctx *c, const cJSON *root, sl_config *cfg)
{
    char path[SL_JPATH_LEN];
    sl_jpath_status st;
    const cJSON *obj = sl_jpath_object(&c->r, root, "", "tenants", path, sizeof path, &st);
    sl_jpath_require(&c->r, st, "", "tenants");
    if (!obj)
        return;
    size_t n = (size_t)cJSON_GetArraySize(obj);
    if (n == 0) {
        sl_jpath_fail(&c->r, path, "must list at least one tenant");
        return;
    }
    sl_jpath_check_duplicates(&c->r, obj, path);
    cfg->tenants = calloc(n, sizeof *cfg->tenants);
    if (!cfg->tenants) {
        c->r.oom = true;
        return;
    }
    const cJSON *item;
    cJSON_ArrayForEach(item, obj)
    {
        const char *name = item->string;
        char p[SL_JPATH_LEN];
        sl_jpath_key(p, sizeof p, path, name);
        bool is_template = strcmp(name, "*") == 0;
        bool keep = true;
        if (!is_template && !sl_tenant_name_valid(name)) {
            sl_jpath_fail(&c->r, p,
                          "invalid tenant name: must be 1..%d characters of [A-Za-z0-9_.:-], "
                          "or \"*\" for the template",
                          SL_TENANT_NAME_MAX);
            keep = false;
        }
        if (!cJSON_IsObject(item)) {
            sl_jpath_fail(&c->r, p, "must be an object, not %s", sl_jpath_type(item));
            continue;
        }
        sl_tenant_config t = {0};
        parse_tenant(c, item, p, &t);
        t.name = dup_str(c, name);
        if (keep && is_template && !cfg->template_tenant) {
            cfg->template_tenant = malloc(sizeof *cfg->template_tenant);
            if (cfg->template_tenant)
                *cfg->template_tenant = t;
            else
                c->r.oom = true;
            keep = cfg->template_tenant != NULL;
        } else if (keep && !is_template) {
            cfg->tenants[cfg->tenant_count++] = t;
        } else {
            keep = false; /* a repeated "*", already reported */
        }
        if (!keep)
            tenant_clear(&t);
    }
}

/* ---- top level ---------------------------------------------------------- */

static void parse_redis(parse_ctx *c, const cJSON *root, sl_config *cfg)
{
    const char *url = DEFAULT_REDIS;
    if (sl_jpath_string(&c->r, root, "", "redis", &url) == SL_JPATH_BAD)
        return;
    bool secret;
    char *resolved = sl_secret_resolve(&c->r, c->env, "redis", url, &secret);
    if (!resolved)
        return;
    char err[256];
    if (!sl_redis_target_parse(resolved, &cfg->redis, err, sizeof err))
        sl_errors_add(c->r.errors, "%s", err);
    else if (!(cfg->redis_url_redacted = sl_redis_target_redacted(&cfg->redis)))
        c->r.oom = true;
    sl_secret_free(resolved);
}

/* "redis_tls": how to talk TLS to a rediss:// server. */
static void parse_redis_tls(parse_ctx *c, const cJSON *root, sl_config *cfg)
{
    char path[SL_JPATH_LEN];
    sl_jpath_status st;
    const cJSON *tls = sl_jpath_object(&c->r, root, "", "redis_tls", path, sizeof path, &st);
    if (!tls)
        return;
    sl_jpath_check_unknown(&c->r, tls, "redis_tls", redis_tls_keys);
    sl_jpath_check_duplicates(&c->r, tls, "redis_tls");
    sl_redis_tls_options *o = &cfg->redis.tls_options;
    parse_tls_files(c, tls, "redis_tls", &o->ca_file, &o->cert_file, &o->key_file);
    const char *name = NULL;
    if (sl_jpath_string(&c->r, tls, "redis_tls", "server_name", &name) == SL_JPATH_OK) {
        if (!name_ok(name, 253, "-.") || name[0] == '.' || name[0] == '-')
            sl_jpath_fail(&c->r, "redis_tls.server_name",
                          "must be a host name (letters, digits, '-' and '.')");
        else
            o->server_name = dup_str(c, name);
    }
    const cJSON *verify = sl_jpath_member(tls, "verify");
    if (verify && !cJSON_IsBool(verify))
        sl_jpath_fail(&c->r, "redis_tls.verify", "must be true or false, not %s",
                      sl_jpath_type(verify));
    else if (verify)
        o->no_verify = cJSON_IsFalse(verify);
    /* Only a rediss:// URL talks TLS; options elsewhere would be ignored
     * silently, which hides a mistake. A URL already refused says so. */
    if (cfg->redis_url_redacted && !cfg->redis.tls)
        sl_jpath_fail(&c->r, "redis_tls", "applies only to a rediss:// URL in \"redis\"");
}

static void parse_admin(parse_ctx *c, const cJSON *root, sl_config *cfg)
{
    const cJSON *v = sl_jpath_member(root, "admin");
    if (v && cJSON_IsNull(v))
        return; /* disabled */
    const char *s = DEFAULT_ADMIN;
    if (sl_jpath_string(&c->r, root, "", "admin", &s) == SL_JPATH_BAD)
        return;
    if (!parse_host_port(s, &cfg->admin_host, &cfg->admin_port)) {
        sl_jpath_fail(&c->r, "admin",
                      "must be \"host:port\" (e.g. \"127.0.0.1:9464\" or \"[::1]:9464\"), "
                      "or null to disable");
        return;
    }
    cfg->admin = dup_str(c, s);
}

static void report_json_error(parse_ctx *c, const char *text, const char *at)
{
    if (!at) {
        sl_jpath_fail(&c->r, "config", "invalid JSON");
        return;
    }
    size_t line = 1, col = 1;
    for (const char *p = text; p < at && *p; p++) {
        if (*p == '\n') {
            line++;
            col = 1;
        } else {
            col++;
        }
    }
    if (!*at)
        sl_jpath_fail(&c->r, "config",
                      "invalid JSON: unexpected end of input at line %zu, column %zu", line, col);
    else
        sl_jpath_fail(&c->r, "config", "invalid JSON at line %zu, column %zu", line, col);
}

sl_config *sl_config_parse(const char *json_text, const sl_config_env *env, sl_errors *errors)
{
    parse_ctx ctx = {.r = {.errors = errors, .oom = false}, .env = env};
    parse_ctx *c = &ctx;
    size_t errors_before = errors->count + errors->dropped;
    if (!json_text) {
        sl_jpath_fail(&c->r, "config", "no text");
        return NULL;
    }
    const char *end = NULL;
    cJSON *root = cJSON_ParseWithOpts(json_text, &end, true);
    if (!root) {
        report_json_error(c, json_text, end);
        return NULL;
    }
    if (!cJSON_IsObject(root)) {
        sl_jpath_fail(&c->r, "config", "must be a JSON object, not %s", sl_jpath_type(root));
        cJSON_Delete(root);
        return NULL;
    }
    sl_config *cfg = calloc(1, sizeof *cfg);
    if (!cfg) {
        cJSON_Delete(root);
        sl_errors_add(errors, "config: out of memory");
        return NULL;
    }
    sl_jpath_check_unknown(&c->r, root, "", top_keys);
    sl_jpath_check_duplicates(&c->r, root, "");

    parse_redis(c, root, cfg);
    parse_redis_tls(c, root, cfg);

    const char *prefix = DEFAULT_PREFIX;
    if (sl_jpath_string(&c->r, root, "", "prefix", &prefix) == SL_JPATH_OK &&
        !name_ok(prefix, PREFIX_MAX, "_.:-"))
        sl_jpath_fail(&c->r, "prefix", "must be 1..%d characters of [A-Za-z0-9_.:-]", PREFIX_MAX);
    else
        cfg->prefix = dup_str(c, prefix);

    int64_t workers = 0;
    if (sl_config_field_read(&c->r, root, "", SL_FIELD_WORKERS, &workers) == SL_JPATH_ABSENT) {
        /* The default: one worker per usable CPU, within the bounds. */
        const sl_field *f = sl_config_field(SL_FIELD_WORKERS);
        int64_t cpus = env ? env->cpu_count : 1;
        workers = cpus < f->min ? f->min : cpus > f->max ? f->max : cpus;
    }
    cfg->workers = (int)workers;

    parse_admin(c, root, cfg);

    sl_config_field_read(&c->r, root, "", SL_FIELD_GRACE_MS, &cfg->grace_ms);
    sl_config_field_read(&c->r, root, "", SL_FIELD_FORGET_IDLE_MS, &cfg->forget_idle_ms);
    sl_config_field_read(&c->r, root, "", SL_FIELD_MAX_DISCOVERED_TENANTS,
                         &cfg->max_discovered_tenants);

    parse_tenants(c, root, cfg);
    cJSON_Delete(root);

    if (c->r.oom)
        sl_errors_add(errors, "config: out of memory");
    if (errors->count + errors->dropped != errors_before) {
        sl_config_free(cfg);
        return NULL;
    }
    qsort(cfg->tenants, cfg->tenant_count, sizeof *cfg->tenants, tenant_cmp);
    return cfg;
}

sl_config *sl_config_load(const char *path, const sl_config_env *env, sl_errors *errors)
{
    char err[256] = "file reading is not available";
    char *text = env && env->read_file_fn ? env->read_file_fn(env->ctx, path, err, sizeof err)
                                          : NULL;
    if (!text) {
        sl_errors_add(errors, "%s: %s", path, err[0] ? err : "cannot read");
        return NULL;
    }
    sl_config *cfg = sl_config_parse(text, env, errors);
    /* The file may hold literal secrets. */
    sl_secret_free(text);
    return cfg;
}

void sl_config_free(sl_config *cfg)
{
    if (!cfg)
        return;
    sl_redis_target_clear(&cfg->redis);
    free(cfg->redis_url_redacted);
    free(cfg->prefix);
    free(cfg->admin);
    free(cfg->admin_host);
    for (size_t i = 0; i < cfg->tenant_count; i++)
        tenant_clear(&cfg->tenants[i]);
    free(cfg->tenants);
    if (cfg->template_tenant) {
        tenant_clear(cfg->template_tenant);
        free(cfg->template_tenant);
    }
    free(cfg);
}

static int name_vs_tenant(const void *name, const void *tenant)
{
    return strcmp(name, ((const sl_tenant_config *)tenant)->name);
}

const sl_tenant_config *sl_config_find_tenant(const sl_config *cfg, const char *name)
{
    if (!cfg || !name || cfg->tenant_count == 0)
        return NULL;
    return bsearch(name, cfg->tenants, cfg->tenant_count, sizeof *cfg->tenants, name_vs_tenant);
}

const sl_tenant_config *sl_config_tenant_for(const sl_config *cfg, const char *name)
{
    const sl_tenant_config *t = sl_config_find_tenant(cfg, name);
    if (!t && cfg && sl_tenant_name_valid(name))
        t = cfg->template_tenant;
    return t;
}

