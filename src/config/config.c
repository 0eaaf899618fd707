/* config.c - parsing and validating the configuration file.
 *
 * One pass over the JSON tree builds the result and reports every problem
 * it meets; the result is thrown away if there was any. Each reader below
 * takes the parent's path and the key, reports its own errors, and leaves
 * the default in place when the key is absent. */
#include <cjson/cJSON.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "admission/admission.h"
#include "base/authority.h"
#include "config/config.h"

#define PATH_LEN 768          /* longest path in a message; longer ones are cut */
#define SHOWN_KEY_MAX 80      /* escaped characters of an odd key shown in a path */
#define PREFIX_MAX 64
#define LIMIT_NAME_MAX 64
#define WORKERS_MAX 256
#define READ_FILE_MAX (64 * 1024 * 1024)

#define DEFAULT_REDIS "redis://127.0.0.1:6379/0"
#define DEFAULT_PREFIX "sluice"
#define DEFAULT_ADMIN "127.0.0.1:9464"
#define DEFAULT_IDEMPOTENCY_HEADER "Idempotency-Key"

typedef struct parse_ctx {
    const sl_config_env *env;
    sl_errors *errors;
    bool oom;
} parse_ctx;

typedef enum field_status { FIELD_ABSENT, FIELD_OK, FIELD_BAD } field_status;

static const char *const limit_type_names[] = {
    [SL_LIMIT_POLICING] = "policing",
    [SL_LIMIT_TOKEN_BUCKET] = "token_bucket",
    [SL_LIMIT_FIXED_WINDOW] = "fixed_window",
    [SL_LIMIT_SLIDING_WINDOW_LOG] = "sliding_window_log",
    [SL_LIMIT_SLIDING_WINDOW_COUNTER] = "sliding_window_counter",
    NULL,
};
static const char *const overflow_names[] = {"wait", "dead-letter", NULL};
static const char *const format_names[] = {"envelope", "raw", NULL};
static const char *const on_deny_names[] = {"delay", "dead-letter", NULL};

static const char *const top_keys[] = {"redis",   "prefix",  "workers", "admin",
                                       "tenants", "grace_ms", NULL};
static const char *const tenant_keys[] = {
    "endpoint", "rate",       "capacity", "overflow",    "concurrency",   "timeout_ms",
    "retry",    "headers",    "format",   "allow_urls",  "max_wait_ms",   "limits",
    "max_job_bytes", "idempotency_header", NULL};
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

bool sl_tenant_name_valid(const char *name)
{
    return name && name_ok(name, SL_TENANT_NAME_MAX, "_.:-");
}

const char *sl_limit_type_name(sl_limit_type type)
{
    if ((unsigned)type > SL_LIMIT_SLIDING_WINDOW_COUNTER)
        return NULL;
    return limit_type_names[type];
}

static void wipe_free(char *s)
{
    if (s) {
        explicit_bzero(s, strlen(s));
        free(s);
    }
}

static char *dup_str(parse_ctx *c, const char *s)
{
    char *d = strdup(s);
    if (!d)
        c->oom = true;
    return d;
}

/* A printable rendering of an arbitrary key or value: quotes, backslashes,
 * control and non-ASCII bytes escaped, cut after SHOWN_KEY_MAX bytes. */
static void escape_into(char *out, size_t size, const char *s)
{
    size_t o = 0;
    for (; *s; s++) {
        unsigned char ch = (unsigned char)*s;
        if (o + 8 >= size || o >= SHOWN_KEY_MAX) {
            memcpy(out + o, "...", 3);
            o += 3;
            break;
        }
        if (ch == '"' || ch == '\\') {
            out[o++] = '\\';
            out[o++] = (char)ch;
        } else if (ch < 0x20 || ch >= 0x7f) {
            o += (size_t)snprintf(out + o, size - o, "\\x%02x", ch);
        } else {
            out[o++] = (char)ch;
        }
    }
    out[o] = '\0';
}

/* A path cut short by its buffer ends in "..." rather than mid-name. */
static void mark_if_cut(char *out, size_t size, int written)
{
    if (written < 0 || (size_t)written >= size)
        memcpy(out + size - 4, "...", 4);
}

/* parent + ".key", or parent + "[\"key\"]" when the key has characters
 * that would make the dotted form ambiguous or unreadable. */
static void path_key(char *out, size_t size, const char *parent, const char *key)
{
    if (*key && strlen(key) <= SL_TENANT_NAME_MAX && all_chars_in(key, "_-*")) {
        mark_if_cut(out, size, snprintf(out, size, "%s%s%s", parent, *parent ? "." : "", key));
        return;
    }
    char shown[SHOWN_KEY_MAX + 16];
    escape_into(shown, sizeof shown, key);
    mark_if_cut(out, size, snprintf(out, size, "%s[\"%s\"]", parent, shown));
}

static void path_index(char *out, size_t size, const char *parent, size_t index)
{
    mark_if_cut(out, size, snprintf(out, size, "%s[%zu]", parent, index));
}

static void fail(parse_ctx *c, const char *path, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void fail(parse_ctx *c, const char *path, const char *fmt, ...)
{
    char *msg = NULL;
    va_list ap;
    va_start(ap, fmt);
    int n = vasprintf(&msg, fmt, ap);
    va_end(ap);
    if (n < 0) {
        c->oom = true;
        return;
    }
    sl_errors_add(c->errors, "%s: %s", path, msg);
    free(msg);
}

static const char *json_type(const cJSON *v)
{
    if (cJSON_IsNull(v))
        return "null";
    if (cJSON_IsBool(v))
        return "a boolean";
    if (cJSON_IsNumber(v))
        return "a number";
    if (cJSON_IsString(v))
        return "a string";
    if (cJSON_IsArray(v))
        return "an array";
    if (cJSON_IsObject(v))
        return "an object";
    return "an invalid value";
}

static const cJSON *member(const cJSON *obj, const char *key)
{
    return cJSON_GetObjectItemCaseSensitive(obj, key);
}

static bool in_list(const char *s, const char *const *list)
{
    for (; *list; list++) {
        if (strcmp(s, *list) == 0)
            return true;
    }
    return false;
}

static bool in_list_nocase(const char *s, const char *const *list)
{
    for (; *list; list++) {
        if (strcasecmp(s, *list) == 0)
            return true;
    }
    return false;
}

/* ---- structure: unknown, duplicate and required keys --------------- */

static void check_unknown_keys(parse_ctx *c, const cJSON *obj, const char *path,
                               const char *const *known)
{
    const cJSON *item;
    cJSON_ArrayForEach(item, obj)
    {
        if (!in_list(item->string, known)) {
            char p[PATH_LEN];
            path_key(p, sizeof p, path, item->string);
            fail(c, p, "unknown key");
        }
    }
}

typedef struct keyed {
    const char *key;
    size_t index;
} keyed;

static int keyed_cmp(const void *a, const void *b)
{
    const keyed *x = a, *y = b;
    int r = strcmp(x->key, y->key);
    if (r == 0)
        r = x->index < y->index ? -1 : x->index > y->index;
    return r;
}

/* JSON allows repeated keys and cJSON keeps them all; the reader would see
 * only the first, so a repeat is an error (sorted: tenants can be many). */
static void check_duplicate_keys(parse_ctx *c, const cJSON *obj, const char *path)
{
    size_t n = (size_t)cJSON_GetArraySize(obj);
    if (n < 2)
        return;
    keyed *keys = malloc(n * sizeof *keys);
    if (!keys) {
        c->oom = true;
        return;
    }
    size_t i = 0;
    const cJSON *item;
    cJSON_ArrayForEach(item, obj)
    {
        keys[i].key = item->string;
        keys[i].index = i;
        i++;
    }
    qsort(keys, n, sizeof *keys, keyed_cmp);
    for (i = 1; i < n; i++) {
        if (strcmp(keys[i].key, keys[i - 1].key) == 0) {
            char p[PATH_LEN];
            path_key(p, sizeof p, path, keys[i].key);
            fail(c, p, "duplicate key");
        }
    }
    free(keys);
}

/* An object at obj.key: NULL if absent (*status FIELD_ABSENT) or not an
 * object (reported, FIELD_BAD). */
static const cJSON *get_object(parse_ctx *c, const cJSON *obj, const char *parent,
                               const char *key, char *path, size_t path_size,
                               field_status *status)
{
    const cJSON *v = member(obj, key);
    path_key(path, path_size, parent, key);
    *status = FIELD_ABSENT;
    if (!v)
        return NULL;
    if (!cJSON_IsObject(v)) {
        fail(c, path, "must be an object, not %s", json_type(v));
        *status = FIELD_BAD;
        return NULL;
    }
    *status = FIELD_OK;
    return v;
}

static void require(parse_ctx *c, field_status st, const char *parent, const char *key)
{
    if (st == FIELD_ABSENT) {
        char p[PATH_LEN];
        path_key(p, sizeof p, parent, key);
        fail(c, p, "is required");
    }
}

/* ---- scalar readers ------------------------------------------------- */

static field_status get_string(parse_ctx *c, const cJSON *obj, const char *parent,
                               const char *key, const char **out)
{
    const cJSON *v = member(obj, key);
    if (!v)
        return FIELD_ABSENT;
    if (!cJSON_IsString(v)) {
        char p[PATH_LEN];
        path_key(p, sizeof p, parent, key);
        fail(c, p, "must be a string, not %s", json_type(v));
        return FIELD_BAD;
    }
    *out = v->valuestring;
    return FIELD_OK;
}

/* An integer in [min, max]; min and max must be exact doubles (< 2^53). */
static field_status get_int(parse_ctx *c, const cJSON *obj, const char *parent, const char *key,
                            int64_t min, int64_t max, int64_t *out)
{
    const cJSON *v = member(obj, key);
    if (!v)
        return FIELD_ABSENT;
    char p[PATH_LEN];
    path_key(p, sizeof p, parent, key);
    if (!cJSON_IsNumber(v)) {
        fail(c, p, "must be an integer, not %s", json_type(v));
        return FIELD_BAD;
    }
    double d = v->valuedouble;
    /* Range first: only then is the cast defined. */
    if (!(d >= (double)min && d <= (double)max) || (double)(int64_t)d != d) {
        fail(c, p, "must be an integer between %" PRId64 " and %" PRId64, min, max);
        return FIELD_BAD;
    }
    *out = (int64_t)d;
    return FIELD_OK;
}

/* An integer whose range another function checks: a fraction or a value
 * beyond any range reads as 0, which every such range excludes. */
static field_status get_int_unchecked(parse_ctx *c, const cJSON *obj, const char *parent,
                                      const char *key, int64_t *out)
{
    const cJSON *v = member(obj, key);
    if (!v)
        return FIELD_ABSENT;
    if (!cJSON_IsNumber(v)) {
        char p[PATH_LEN];
        path_key(p, sizeof p, parent, key);
        fail(c, p, "must be an integer, not %s", json_type(v));
        return FIELD_BAD;
    }
    double d = v->valuedouble;
    bool in_range = d >= -(double)SL_NOW_US_MAX && d <= (double)SL_NOW_US_MAX;
    *out = in_range && (double)(int64_t)d == d ? (int64_t)d : 0;
    return FIELD_OK;
}

/* A rate in jobs/s: a JSON number, > 0, <= 1000000, a multiple of 0.001,
 * converted to milli-jobs/s exactly (0.1 is not exact in binary, so allow
 * the conversion's rounding error but nothing near a real fraction). */
static field_status get_rate(parse_ctx *c, const cJSON *obj, const char *parent,
                             const char *key, int64_t *out)
{
    const cJSON *v = member(obj, key);
    if (!v)
        return FIELD_ABSENT;
    char p[PATH_LEN];
    path_key(p, sizeof p, parent, key);
    if (!cJSON_IsNumber(v)) {
        fail(c, p, "must be a number (jobs per second), not %s", json_type(v));
        return FIELD_BAD;
    }
    double d = v->valuedouble;
    if (!(d > 0)) {
        fail(c, p, "must be > 0");
        return FIELD_BAD;
    }
    if (d > (double)SL_RATE_MILLI_MAX / 1000) {
        fail(c, p, "must be at most %" PRId64, SL_RATE_MILLI_MAX / 1000);
        return FIELD_BAD;
    }
    /* llround without libm: scaled is in (0, 1e9]. */
    double scaled = d * 1000;
    int64_t milli = (int64_t)(scaled + 0.5);
    double off = scaled - (double)milli;
    if (off > 1e-6 || off < -1e-6 || milli < SL_RATE_MILLI_MIN) {
        fail(c, p, "must be a multiple of 0.001 (at least 0.001)");
        return FIELD_BAD;
    }
    *out = milli;
    return FIELD_OK;
}

static field_status get_enum(parse_ctx *c, const cJSON *obj, const char *parent,
                             const char *key, const char *const *names, int *out)
{
    const char *s = NULL;
    field_status st = get_string(c, obj, parent, key, &s);
    if (st != FIELD_OK)
        return st;
    for (int i = 0; names[i]; i++) {
        if (strcmp(s, names[i]) == 0) {
            *out = i;
            return FIELD_OK;
        }
    }
    char expected[256] = "";
    size_t len = 0;
    for (int i = 0; names[i]; i++) {
        len += (size_t)snprintf(expected + len, sizeof expected - len, "%s\"%s\"",
                                i == 0 ? "" : names[i + 1] ? ", " : " or ", names[i]);
    }
    char shown[SHOWN_KEY_MAX + 16];
    escape_into(shown, sizeof shown, s);
    char p[PATH_LEN];
    path_key(p, sizeof p, parent, key);
    fail(c, p, "must be %s, not \"%s\"", expected, shown);
    return FIELD_BAD;
}

/* ---- URLs and addresses --------------------------------------------- */

/* "host:port" or "[v6]:port"; on success *host is malloc'd. */
static bool parse_host_port(const char *s, char **host, int *port)
{
    const char *h = s, *colon;
    size_t h_len;
    if (*s == '[') {
        const char *close = strchr(s, ']');
        if (!close || close[1] != ':')
            return false;
        h = s + 1;
        h_len = (size_t)(close - h);
        colon = close + 1;
        if (!memchr(h, ':', h_len))
            return false; /* brackets are for IPv6 only */
    } else {
        colon = strrchr(s, ':');
        if (!colon || memchr(s, ':', (size_t)(colon - s)))
            return false; /* none, or an IPv6 address without brackets */
        h_len = (size_t)(colon - s);
    }
    if (!sl_port_parse(colon + 1, strlen(colon + 1), port))
        return false;
    char *copy = strndup(h, h_len);
    if (!copy)
        return false;
    if (!sl_host_valid(copy)) {
        free(copy);
        return false;
    }
    *host = copy;
    return true;
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
    const char *hp = auth;
    for (const char *p = auth; p < auth + auth_len; p++) {
        if (*p == '@')
            hp = p + 1;
    }
    size_t hp_len = auth_len - (size_t)(hp - auth);
    const char *colon = NULL;
    const char *host = hp;
    size_t host_len = hp_len;
    if (hp_len > 0 && *hp == '[') {
        const char *close = memchr(hp, ']', hp_len);
        if (!close)
            return "has an invalid host";
        host = hp + 1;
        host_len = (size_t)(close - host);
        if (close + 1 < hp + hp_len) {
            if (close[1] != ':')
                return "has an invalid host";
            colon = close + 1;
        }
        if (!memchr(host, ':', host_len))
            return "has an invalid host";
    } else {
        colon = memchr(hp, ':', hp_len);
        if (colon)
            host_len = (size_t)(colon - hp);
    }
    if (host_len == 0)
        return "must have a host";
    char host_buf[256];
    if (host_len >= sizeof host_buf)
        return "has an invalid host";
    memcpy(host_buf, host, host_len);
    host_buf[host_len] = '\0';
    if (!sl_host_valid(host_buf))
        return "has an invalid host";
    int port;
    if (colon && !sl_port_parse(colon + 1, (size_t)(hp + hp_len - colon - 1), &port))
        return "has an invalid port (1..65535)";
    if (is_prefix && auth[auth_len] != '/')
        return "must include the path after the host (at least \"/\"), "
               "or it would also match other hosts";
    return NULL;
}

/* ---- secrets ------------------------------------------------------------ */

/* Resolves a string that may name secrets: "@/path" is the content of a
 * file (one trailing newline stripped), "${NAME}" anywhere is the value of
 * an environment variable. Returns a malloc'd string with *secret set, or
 * NULL after reporting why at `path` (never quoting a secret). */
static char *resolve_value(parse_ctx *c, const char *path, const char *raw, bool *secret)
{
    const sl_config_env *env = c->env;
    char shown[SHOWN_KEY_MAX + 16];
    *secret = false;
    if (raw[0] == '@' && raw[1] == '/') {
        *secret = true;
        const char *file = raw + 1;
        escape_into(shown, sizeof shown, file);
        char err[256] = "";
        char *data = env && env->read_file_fn
                         ? env->read_file_fn(env->ctx, file, err, sizeof err)
                         : (snprintf(err, sizeof err, "file reading is not available"), NULL);
        if (!data) {
            fail(c, path, "cannot read secret file %s: %s", shown, err[0] ? err : "unknown error");
            return NULL;
        }
        size_t len = strlen(data);
        if (len > 0 && data[len - 1] == '\n') {
            data[--len] = '\0';
            if (len > 0 && data[len - 1] == '\r')
                data[--len] = '\0';
        }
        if (len == 0) {
            fail(c, path, "secret file %s is empty", shown);
            free(data);
            return NULL;
        }
        return data;
    }
    if (!strstr(raw, "${"))
        return dup_str(c, raw);

    *secret = true;
    char *buf = NULL;
    size_t buf_len = 0;
    FILE *f = open_memstream(&buf, &buf_len);
    if (!f) {
        c->oom = true;
        return NULL;
    }
    bool ok = true;
    const char *p = raw, *ref;
    while ((ref = strstr(p, "${")) != NULL) {
        fwrite(p, 1, (size_t)(ref - p), f);
        const char *name = ref + 2;
        size_t n = strspn(name, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_");
        if (n == 0 || name[n] != '}' || is_digit(name[0])) {
            fail(c, path, "invalid reference: expected ${NAME}, NAME of [A-Za-z_][A-Za-z0-9_]*");
            ok = false;
            break;
        }
        char *var = strndup(name, n);
        if (!var) {
            c->oom = true;
            ok = false;
            break;
        }
        const char *value = env && env->getenv_fn ? env->getenv_fn(env->ctx, var) : NULL;
        if (!value) {
            fail(c, path, "environment variable %s is not set", var);
            ok = false;
        } else if (!*value) {
            fail(c, path, "environment variable %s is empty", var);
            ok = false;
        } else {
            fputs(value, f);
        }
        free(var);
        p = name + n + 1;
    }
    if (ok)
        fputs(p, f);
    if (fclose(f) != 0) {
        c->oom = true;
        ok = false;
    }
    if (!ok) {
        wipe_free(buf);
        return NULL;
    }
    return buf;
}

/* ---- tenants ------------------------------------------------------------ */

static void parse_retry(parse_ctx *c, const cJSON *tenant, const char *parent,
                        sl_retry_config *r)
{
    char path[PATH_LEN];
    field_status st;
    const cJSON *obj = get_object(c, tenant, parent, "retry", path, sizeof path, &st);
    if (!obj)
        return;
    check_unknown_keys(c, obj, path, retry_keys);
    check_duplicate_keys(c, obj, path);
    get_int(c, obj, path, "max_attempts", 1, 1000, &r->max_attempts);
    field_status base = get_int(c, obj, path, "base_ms", 1, 3600000, &r->base_ms);
    field_status max = get_int(c, obj, path, "max_ms", 1, 86400000, &r->max_ms);
    if (base != FIELD_BAD && max != FIELD_BAD && r->max_ms < r->base_ms) {
        char p[PATH_LEN];
        path_key(p, sizeof p, path, "max_ms");
        fail(c, p, "must be >= base_ms (%" PRId64 ")", r->base_ms);
    }
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
    char path[PATH_LEN];
    field_status st;
    const cJSON *obj = get_object(c, tenant, parent, "headers", path, sizeof path, &st);
    if (!obj)
        return;
    size_t n = (size_t)cJSON_GetArraySize(obj);
    if (n == 0)
        return;
    t->headers = calloc(n, sizeof *t->headers);
    if (!t->headers) {
        c->oom = true;
        return;
    }
    const cJSON *item;
    cJSON_ArrayForEach(item, obj)
    {
        const char *name = item->string;
        char p[PATH_LEN];
        path_key(p, sizeof p, path, name);
        bool ok = true;
        if (!http_token(name)) {
            fail(c, p, "invalid header name: must be an HTTP token "
                       "(letters, digits and !#$%%&'*+-.^_`|~)");
            ok = false;
        } else if (in_list_nocase(name, reserved_headers)) {
            fail(c, p, "is set by sluice and cannot be configured");
            ok = false;
        } else if (t->idempotency_header && strcasecmp(name, t->idempotency_header) == 0) {
            fail(c, p, "is the idempotency_header, which sluice sets to each job's id");
            ok = false;
        } else {
            for (const cJSON *prev = obj->child; prev != item; prev = prev->next) {
                if (strcasecmp(prev->string, name) == 0) {
                    fail(c, p, "duplicate header (header names ignore case)");
                    ok = false;
                    break;
                }
            }
        }
        if (!cJSON_IsString(item)) {
            fail(c, p, "must be a string, not %s", json_type(item));
            continue;
        }
        bool secret;
        char *value = resolve_value(c, p, item->valuestring, &secret);
        if (!value)
            continue;
        if (!header_value_clean(value)) {
            fail(c, p,
                 secret ? "the secret value contains CR, LF or another control character "
                          "(only one trailing newline of a file is stripped)"
                        : "must not contain CR, LF or other control characters");
            ok = false;
        }
        if (!ok) {
            wipe_free(value);
            continue;
        }
        sl_header_config *h = &t->headers[t->header_count];
        h->name = dup_str(c, name);
        h->value = value;
        h->secret = secret;
        t->header_count++;
    }
}

/* The array at parent.key, with zeroed room for its items (elem_size each)
 * in *items and its path in path (PATH_LEN bytes). NULL when the key is
 * absent or the array empty, and after an error (not an array: reported
 * as "must be WHAT"; out of memory). */
static const cJSON *get_array(parse_ctx *c, const cJSON *obj, const char *parent, const char *key,
                              const char *what, size_t elem_size, char *path, void **items)
{
    const cJSON *arr = member(obj, key);
    if (!arr)
        return NULL;
    path_key(path, PATH_LEN, parent, key);
    if (!cJSON_IsArray(arr)) {
        fail(c, path, "must be %s, not %s", what, json_type(arr));
        return NULL;
    }
    size_t n = (size_t)cJSON_GetArraySize(arr);
    if (n == 0)
        return NULL;
    *items = calloc(n, elem_size);
    if (!*items) {
        c->oom = true;
        return NULL;
    }
    return arr;
}

static void parse_allow_urls(parse_ctx *c, const cJSON *tenant, const char *parent,
                             sl_tenant_config *t)
{
    char path[PATH_LEN];
    void *items = NULL;
    const cJSON *arr = get_array(c, tenant, parent, "allow_urls", "an array of URL prefixes",
                                 sizeof *t->allow_urls, path, &items);
    if (!arr)
        return;
    t->allow_urls = items;
    size_t i = 0;
    const cJSON *item;
    cJSON_ArrayForEach(item, arr)
    {
        char p[PATH_LEN];
        path_index(p, sizeof p, path, i++);
        const char *why = cJSON_IsString(item) ? http_url_error(item->valuestring, true) : NULL;
        if (!cJSON_IsString(item))
            fail(c, p, "must be a string, not %s", json_type(item));
        else if (why)
            fail(c, p, "%s", why);
        else
            t->allow_urls[t->allow_url_count++] = dup_str(c, item->valuestring);
    }
}

/* Window limits: each parameter checked on its own (so both can be
 * reported), then the sliding counter's product bound. */
static void check_window_params(parse_ctx *c, const char *path, sl_limit_type type,
                                field_status max_st, int64_t max, field_status win_st,
                                int64_t window_ms)
{
    const char *e_max = NULL, *e_win = NULL;
    if (max_st == FIELD_OK)
        e_max = sl_window_params_error(&(sl_window_params){max, 1}, false);
    if (win_st == FIELD_OK)
        e_win = sl_window_params_error(&(sl_window_params){1, window_ms}, false);
    if (e_max)
        sl_errors_add(c->errors, "%s.%s", path, e_max);
    if (e_win)
        sl_errors_add(c->errors, "%s.%s", path, e_win);
    if (max_st != FIELD_OK || win_st != FIELD_OK || e_max || e_win ||
        type != SL_LIMIT_SLIDING_WINDOW_COUNTER)
        return;
    const char *e = sl_window_params_error(&(sl_window_params){max, window_ms}, true);
    if (e)
        sl_errors_add(c->errors, "%s.%s", path, e);
}

/* One entry of limits[]; true if *l was filled (then it owns its name). */
static bool parse_limit(parse_ctx *c, const cJSON *obj, const char *path, sl_limit_config *l)
{
    check_unknown_keys(c, obj, path, limit_keys);
    check_duplicate_keys(c, obj, path);
    bool ok = true;

    const char *name = NULL;
    field_status st = get_string(c, obj, path, "name", &name);
    require(c, st, path, "name");
    if (st == FIELD_OK && !name_ok(name, LIMIT_NAME_MAX, "_.-")) {
        char p[PATH_LEN];
        path_key(p, sizeof p, path, "name");
        fail(c, p, "must be 1..%d characters of [A-Za-z0-9_.-]", LIMIT_NAME_MAX);
        st = FIELD_BAD;
    }
    ok = ok && st == FIELD_OK;

    int type = -1;
    st = get_enum(c, obj, path, "type", limit_type_names, &type);
    require(c, st, path, "type");
    ok = ok && st == FIELD_OK;

    int on_deny = SL_ON_DENY_DELAY;
    ok = get_enum(c, obj, path, "on_deny", on_deny_names, &on_deny) != FIELD_BAD && ok;

    if (type < 0)
        return false; /* without a type, its parameters cannot be judged */

    bool bucket = type == SL_LIMIT_POLICING || type == SL_LIMIT_TOKEN_BUCKET;
    const char *k1 = bucket ? "capacity" : "max", *k2 = bucket ? "rate" : "window_ms";
    const char *wrong[2] = {bucket ? "max" : "capacity", bucket ? "window_ms" : "rate"};
    for (int i = 0; i < 2; i++) {
        if (member(obj, wrong[i])) {
            char p[PATH_LEN];
            path_key(p, sizeof p, path, wrong[i]);
            fail(c, p, "unknown key for type %s (its parameters are %s and %s)",
                 limit_type_names[type], k1, k2);
            ok = false;
        }
    }

    int64_t first = 0, second = 0;
    field_status st1 = get_int_unchecked(c, obj, path, k1, &first);
    field_status st2 = bucket ? get_rate(c, obj, path, k2, &second)
                              : get_int_unchecked(c, obj, path, k2, &second);
    require(c, st1, path, k1);
    require(c, st2, path, k2);
    if (bucket) {
        if (st1 == FIELD_OK) {
            /* The rate was checked by get_rate; check the capacity even if
             * the rate was wrong, with a stand-in rate. */
            sl_bucket_params p = {first, st2 == FIELD_OK ? second : SL_RATE_MILLI_MIN};
            const char *e = sl_bucket_params_error(&p);
            if (e) {
                sl_errors_add(c->errors, "%s.%s", path, e);
                ok = false;
            }
        }
    } else {
        size_t before = c->errors->count + c->errors->dropped;
        check_window_params(c, path, (sl_limit_type)type, st1, first, st2, second);
        ok = ok && before == c->errors->count + c->errors->dropped;
    }
    if (!ok || st1 != FIELD_OK || st2 != FIELD_OK)
        return false;
    l->name = dup_str(c, name);
    l->type = (sl_limit_type)type;
    l->first = first;
    l->second = second;
    l->on_deny = (sl_on_deny)on_deny;
    return l->name != NULL;
}

static void parse_limits(parse_ctx *c, const cJSON *tenant, const char *parent,
                         sl_tenant_config *t)
{
    char path[PATH_LEN];
    void *items = NULL;
    const cJSON *arr = get_array(c, tenant, parent, "limits", "an array of limits",
                                 sizeof *t->limits, path, &items);
    if (!arr)
        return;
    t->limits = items;
    size_t i = 0;
    const cJSON *item;
    cJSON_ArrayForEach(item, arr)
    {
        char p[PATH_LEN];
        path_index(p, sizeof p, path, i++);
        if (!cJSON_IsObject(item)) {
            fail(c, p, "must be an object, not %s", json_type(item));
            continue;
        }
        /* Names key the limit's state in Redis: a repeat would share it. */
        const cJSON *name = member(item, "name");
        size_t j = 0;
        for (const cJSON *prev = arr->child; name && cJSON_IsString(name) && prev != item;
             prev = prev->next, j++) {
            const cJSON *prev_name = cJSON_IsObject(prev) ? member(prev, "name") : NULL;
            if (prev_name && cJSON_IsString(prev_name) &&
                strcmp(prev_name->valuestring, name->valuestring) == 0 &&
                name_ok(name->valuestring, LIMIT_NAME_MAX, "_.-")) {
                char np[PATH_LEN];
                path_key(np, sizeof np, p, "name");
                fail(c, np, "duplicate limit name \"%s\" (also limits[%zu])", name->valuestring,
                     j);
                break;
            }
        }
        if (parse_limit(c, item, p, &t->limits[t->limit_count]))
            t->limit_count++;
    }
}

static void parse_tenant(parse_ctx *c, const cJSON *obj, const char *path, sl_tenant_config *t)
{
    t->capacity = 1000;
    t->overflow = SL_OVERFLOW_WAIT;
    t->concurrency = 16;
    t->timeout_ms = 5000;
    t->retry = (sl_retry_config){.max_attempts = 5, .base_ms = 500, .max_ms = 60000};
    t->format = SL_FORMAT_ENVELOPE;
    t->max_wait_ms = 0;
    t->max_job_bytes = 1048576;

    check_unknown_keys(c, obj, path, tenant_keys);
    check_duplicate_keys(c, obj, path);

    const char *s = NULL;
    field_status st = get_string(c, obj, path, "endpoint", &s);
    require(c, st, path, "endpoint");
    if (st == FIELD_OK) {
        const char *why = http_url_error(s, false);
        if (why) {
            char p[PATH_LEN];
            path_key(p, sizeof p, path, "endpoint");
            fail(c, p, "%s", why);
        } else {
            t->endpoint = dup_str(c, s);
        }
    }
    require(c, get_rate(c, obj, path, "rate", &t->rate_milli), path, "rate");
    get_int(c, obj, path, "capacity", 1, SL_CAPACITY_MAX, &t->capacity);
    int e = (int)t->overflow;
    get_enum(c, obj, path, "overflow", overflow_names, &e);
    t->overflow = (sl_overflow)e;
    get_int(c, obj, path, "concurrency", 1, 10000, &t->concurrency);
    get_int(c, obj, path, "timeout_ms", 1, 3600000, &t->timeout_ms);
    parse_retry(c, obj, path, &t->retry);

    st = get_string(c, obj, path, "idempotency_header", &s);
    if (st == FIELD_OK && !http_token(s)) {
        char p[PATH_LEN];
        path_key(p, sizeof p, path, "idempotency_header");
        fail(c, p, "must be an HTTP token (letters, digits and !#$%%&'*+-.^_`|~)");
    } else {
        t->idempotency_header = dup_str(c, st == FIELD_OK ? s : DEFAULT_IDEMPOTENCY_HEADER);
    }
    parse_headers(c, obj, path, t);

    e = (int)t->format;
    get_enum(c, obj, path, "format", format_names, &e);
    t->format = (sl_job_format)e;
    parse_allow_urls(c, obj, path, t);
    get_int(c, obj, path, "max_wait_ms", 0, SL_WINDOW_MS_MAX, &t->max_wait_ms);
    parse_limits(c, obj, path, t);
    get_int(c, obj, path, "max_job_bytes", 1, 64 * 1024 * 1024, &t->max_job_bytes);
}

static void tenant_clear(sl_tenant_config *t)
{
    free(t->name);
    free(t->endpoint);
    for (size_t i = 0; i < t->header_count; i++) {
        free(t->headers[i].name);
        if (t->headers[i].secret)
            wipe_free(t->headers[i].value);
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
    memset(t, 0, sizeof *t);
}

static int tenant_cmp(const void *a, const void *b)
{
    return strcmp(((const sl_tenant_config *)a)->name, ((const sl_tenant_config *)b)->name);
}

static void parse_tenants(parse_ctx *c, const cJSON *root, sl_config *cfg)
{
    char path[PATH_LEN];
    field_status st;
    const cJSON *obj = get_object(c, root, "", "tenants", path, sizeof path, &st);
    require(c, st, "", "tenants");
    if (!obj)
        return;
    size_t n = (size_t)cJSON_GetArraySize(obj);
    if (n == 0) {
        fail(c, path, "must list at least one tenant");
        return;
    }
    check_duplicate_keys(c, obj, path);
    cfg->tenants = calloc(n, sizeof *cfg->tenants);
    if (!cfg->tenants) {
        c->oom = true;
        return;
    }
    const cJSON *item;
    cJSON_ArrayForEach(item, obj)
    {
        const char *name = item->string;
        char p[PATH_LEN];
        path_key(p, sizeof p, path, name);
        bool is_template = strcmp(name, "*") == 0;
        bool keep = true;
        if (!is_template && !sl_tenant_name_valid(name)) {
            fail(c, p, "invalid tenant name: must be 1..%d characters of [A-Za-z0-9_.:-], "
                       "or \"*\" for the template",
                 SL_TENANT_NAME_MAX);
            keep = false;
        }
        if (!cJSON_IsObject(item)) {
            fail(c, p, "must be an object, not %s", json_type(item));
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
                c->oom = true;
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
    if (get_string(c, root, "", "redis", &url) == FIELD_BAD)
        return;
    bool secret;
    char *resolved = resolve_value(c, "redis", url, &secret);
    if (!resolved)
        return;
    char err[256];
    if (!sl_redis_target_parse(resolved, &cfg->redis, err, sizeof err))
        sl_errors_add(c->errors, "%s", err);
    else if (!(cfg->redis_url_redacted = sl_redis_target_redacted(&cfg->redis)))
        c->oom = true;
    wipe_free(resolved);
}

static void parse_admin(parse_ctx *c, const cJSON *root, sl_config *cfg)
{
    const cJSON *v = member(root, "admin");
    if (v && cJSON_IsNull(v))
        return; /* disabled */
    const char *s = DEFAULT_ADMIN;
    if (get_string(c, root, "", "admin", &s) == FIELD_BAD)
        return;
    if (!parse_host_port(s, &cfg->admin_host, &cfg->admin_port)) {
        fail(c, "admin",
             "must be \"host:port\" (e.g. \"127.0.0.1:9464\" or \"[::1]:9464\"), "
             "or null to disable");
        return;
    }
    cfg->admin = dup_str(c, s);
}

static void report_json_error(parse_ctx *c, const char *text, const char *at)
{
    if (!at) {
        fail(c, "config", "invalid JSON");
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
        fail(c, "config", "invalid JSON: unexpected end of input at line %zu, column %zu", line,
             col);
    else
        fail(c, "config", "invalid JSON at line %zu, column %zu", line, col);
}

sl_config *sl_config_parse(const char *json_text, const sl_config_env *env, sl_errors *errors)
{
    parse_ctx ctx = {.env = env, .errors = errors, .oom = false};
    parse_ctx *c = &ctx;
    size_t errors_before = errors->count + errors->dropped;
    if (!json_text) {
        fail(c, "config", "no text");
        return NULL;
    }
    const char *end = NULL;
    cJSON *root = cJSON_ParseWithOpts(json_text, &end, true);
    if (!root) {
        report_json_error(c, json_text, end);
        return NULL;
    }
    if (!cJSON_IsObject(root)) {
        fail(c, "config", "must be a JSON object, not %s", json_type(root));
        cJSON_Delete(root);
        return NULL;
    }
    sl_config *cfg = calloc(1, sizeof *cfg);
    if (!cfg) {
        cJSON_Delete(root);
        sl_errors_add(errors, "config: out of memory");
        return NULL;
    }
    check_unknown_keys(c, root, "", top_keys);
    check_duplicate_keys(c, root, "");

    parse_redis(c, root, cfg);

    const char *prefix = DEFAULT_PREFIX;
    if (get_string(c, root, "", "prefix", &prefix) == FIELD_OK &&
        !name_ok(prefix, PREFIX_MAX, "_.:-"))
        fail(c, "prefix", "must be 1..%d characters of [A-Za-z0-9_.:-]", PREFIX_MAX);
    else
        cfg->prefix = dup_str(c, prefix);

    int cpus = env ? env->cpu_count : 1;
    int64_t workers = cpus < 1 ? 1 : cpus > WORKERS_MAX ? WORKERS_MAX : cpus;
    get_int(c, root, "", "workers", 1, WORKERS_MAX, &workers);
    cfg->workers = (int)workers;

    parse_admin(c, root, cfg);

    cfg->grace_ms = 10000;
    get_int(c, root, "", "grace_ms", 0, 3600000, &cfg->grace_ms);

    parse_tenants(c, root, cfg);
    cJSON_Delete(root);

    if (c->oom)
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
    wipe_free(text);
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

/* ---- the real environment ----------------------------------------------- */

static const char *system_getenv(void *ctx, const char *name)
{
    (void)ctx;
    return getenv(name);
}

static char *system_read_file(void *ctx, const char *path, char *err, size_t err_size)
{
    (void)ctx;
    char ebuf[128];
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        snprintf(err, err_size, "%s", strerror_r(errno, ebuf, sizeof ebuf));
        return NULL;
    }
    const char *why = NULL;
    size_t len = 0, cap = 4096;
    char *buf = malloc(cap);
    if (!buf)
        why = "out of memory";
    while (!why) {
        if (len + 1 == cap) {
            char *bigger = cap > READ_FILE_MAX ? NULL : realloc(buf, cap * 2);
            if (!bigger) {
                why = cap > READ_FILE_MAX ? "larger than 64 MiB" : "out of memory";
                break;
            }
            buf = bigger;
            cap *= 2;
        }
        ssize_t got = read(fd, buf + len, cap - len - 1);
        if (got < 0 && errno == EINTR)
            continue;
        if (got < 0)
            why = strerror_r(errno, ebuf, sizeof ebuf);
        else if (got == 0)
            break;
        else
            len += (size_t)got;
    }
    close(fd);
    if (!why && memchr(buf, '\0', len))
        why = "contains a NUL byte";
    if (why) {
        snprintf(err, err_size, "%s", why);
        if (buf) {
            /* It may have been a secret. */
            explicit_bzero(buf, len);
            free(buf);
        }
        return NULL;
    }
    buf[len] = '\0';
    return buf;
}

sl_config_env sl_config_env_system(void)
{
    int cpus = 0;
    cpu_set_t set;
    /* The CPUs this process may run on (cpusets, systemd CPUAffinity=),
     * not merely those online. */
    if (sched_getaffinity(0, sizeof set, &set) == 0)
        cpus = CPU_COUNT(&set);
    if (cpus < 1)
        cpus = (int)sysconf(_SC_NPROCESSORS_ONLN);
    return (sl_config_env){
        .getenv_fn = system_getenv,
        .read_file_fn = system_read_file,
        .ctx = NULL,
        .cpu_count = cpus < 1 ? 1 : cpus,
    };
}
