/* envelope.c - job element -> HTTP request (see envelope.h for the rules).
 *
 * Two passes over an envelope: the strict scanner of json_scan.h first
 * (cJSON is lenient, and cuts strings at an escaped \u0000), which also
 * records where each top-level member's value lies so a JSON body can be
 * forwarded as the producer wrote it; then cJSON for the decoded values,
 * mapped onto the request one key at a time. What a path or url may name
 * is url_policy.h's decision. */
#include "config/json_path.h" /* sl_jpath_type */
#include "job/envelope.h"

#include <cjson/cJSON.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "job/json_scan.h"
#include "job/url_policy.h"

#define QUOTE_MAX 60         /* bytes of producer data an error message echoes */
#define MEMBERS_MAX 7        /* id body headers method path url deadline */
#define DEADLINE_LIMIT 9007199254740992.0 /* 2^53: deadlines stay below, exact */

_Static_assert(MEMBERS_MAX <= SL_JSON_SPANS_MAX, "the scanner records every member's span");

const char *sl_job_status_reason(sl_job_status status)
{
    switch (status) {
    case SL_JOB_MALFORMED:
        return "malformed";
    case SL_JOB_TOO_LARGE:
        return "too_large";
    case SL_JOB_BAD_HEADER:
        return "bad_header";
    case SL_JOB_URL_NOT_ALLOWED:
        return "url_not_allowed";
    case SL_JOB_NO_MEMORY:
        return "no_memory";
    case SL_JOB_OK:
        break;
    }
    return NULL;
}

/* ---- error messages ---------------------------------------------------- */

typedef struct ctx {
    char *err;
    size_t err_size;
} ctx;

__attribute__((format(printf, 4, 5))) static sl_job_status fail(const ctx *c,
                                                                sl_job_status status,
                                                                sl_job_request *out,
                                                                const char *fmt, ...)
{
    sl_job_request_clear(out);
    if (c->err_size > 0) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(c->err, c->err_size, fmt, ap);
        va_end(ap);
    }
    return status;
}

/* Producer data made safe to log: at most QUOTE_MAX input bytes, control
 * and non-ASCII bytes and '"' '\' as \xNN, "..." when cut. `buf` must hold
 * QUOTE_BUF bytes. */
#define QUOTE_BUF (QUOTE_MAX * 4 + 4)
static const char *quote(char *buf, const char *s, size_t n)
{
    static const char hex[] = "0123456789abcdef";
    size_t o = 0;
    for (size_t i = 0; i < n && i < QUOTE_MAX; i++) {
        unsigned char ch = (unsigned char)s[i];
        if (ch < 0x20 || ch >= 0x7f || ch == '"' || ch == '\\') {
            buf[o++] = '\\';
            buf[o++] = 'x';
            buf[o++] = hex[ch >> 4];
            buf[o++] = hex[ch & 15];
        } else {
            buf[o++] = (char)ch;
        }
    }
    if (n > QUOTE_MAX) {
        memcpy(buf + o, "...", 3);
        o += 3;
    }
    buf[o] = '\0';
    return buf;
}

/* A NUL-terminated copy of s[0, n) (which may hold NULs); NULL when out of memory. */
static char *dup_n(const char *s, size_t n)
{
    char *d = malloc(n + 1);
    if (d) {
        if (n)
            memcpy(d, s, n);
        d[n] = '\0';
    }
    return d;
}

/* ---- header checks ------------------------------------------------------ */

static bool is_tchar(unsigned char ch)
{
    if ((ch >= '0' && ch <= '9') || (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z'))
        return true;
    return ch != '\0' && strchr("!#$%&'*+-.^_`|~", ch) != NULL;
}

static bool is_token(const char *s)
{
    if (*s == '\0')
        return false;
    for (; *s; s++)
        if (!is_tchar((unsigned char)*s))
            return false;
    return true;
}

static bool forbidden_header(const char *name, const char *idempotency_header)
{
    static const char *const hop[] = {"Host",    "Content-Length", "Transfer-Encoding",
                                      "Connection", "Expect",      "Upgrade",
                                      "TE",      "Trailer",        "Keep-Alive"};
    for (size_t i = 0; i < sizeof hop / sizeof hop[0]; i++)
        if (strcasecmp(name, hop[i]) == 0)
            return true;
    if (strncasecmp(name, "Proxy-", 6) == 0)
        return true;
    return idempotency_header && strcasecmp(name, idempotency_header) == 0;
}

/* ---- keys and headers ------------------------------------------------ */

static const char *const known_keys[MEMBERS_MAX] = {"id",   "body", "headers", "method",
                                                    "path", "url",  "deadline"};

/* The member named `key`, NULL when absent or null. */
static const cJSON *member(const cJSON *obj, const char *key)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);
    return cJSON_IsNull(v) ? NULL : v;
}

/* A header name and where it stands in the envelope. */
typedef struct named {
    const char *name;
    size_t index;
} named;

static int by_name_then_index(const void *a, const void *b)
{
    const named *x = a, *y = b;
    int order = strcasecmp(x->name, y->name);
    if (order != 0)
        return order;
    return (x->index > y->index) - (x->index < y->index);
}

/* Sets repeat[i] when header i's name equals an earlier one's ignoring
 * case. By sorting, O(n log n) whatever the names: comparing each header
 * with all before it took seconds for a mebibyte of headers. False when
 * out of memory. */
static bool mark_repeats(const cJSON *headers, size_t n, bool *repeat)
{
    named *sorted = malloc(n * sizeof *sorted);
    if (!sorted)
        return false;
    size_t i = 0;
    const cJSON *h;
    cJSON_ArrayForEach(h, headers)
    {
        sorted[i] = (named){h->string, i};
        i++;
    }
    qsort(sorted, n, sizeof *sorted, by_name_then_index);
    for (i = 1; i < n; i++)
        if (strcasecmp(sorted[i - 1].name, sorted[i].name) == 0)
            repeat[sorted[i].index] = true;
    free(sorted);
    return true;
}

/* Checks and copies each header in envelope order, so the first bad one
 * is the one reported; repeat[i] says header i's name was used before. */
static sl_job_status copy_headers(const ctx *c, const cJSON *headers, const char *idem,
                                  const bool *repeat, sl_job_request *out)
{
    char q[QUOTE_BUF];
    const cJSON *h;
    cJSON_ArrayForEach(h, headers)
    {
        const char *name = h->string;
        if (!is_token(name))
            return fail(c, SL_JOB_BAD_HEADER, out, "headers.\"%s\": name is not an HTTP token",
                        quote(q, name, strlen(name)));
        if (forbidden_header(name, idem))
            return fail(c, SL_JOB_BAD_HEADER, out, "headers.%s: may not be set by a job",
                        quote(q, name, strlen(name)));
        if (!cJSON_IsString(h))
            return fail(c, SL_JOB_MALFORMED, out, "headers.%s: must be a string, got %s",
                        quote(q, name, strlen(name)), sl_jpath_type(h));
        const char *v = h->valuestring;
        for (const char *p = v; *p; p++) {
            unsigned char ch = (unsigned char)*p;
            if ((ch < 0x20 && ch != '\t') || ch == 0x7f)
                return fail(c, SL_JOB_BAD_HEADER, out,
                            "headers.%s: value contains control character 0x%02x",
                            quote(q, name, strlen(name)), ch);
        }
        if (repeat[out->header_count])
            return fail(c, SL_JOB_BAD_HEADER, out, "headers.%s: set twice",
                        quote(q, name, strlen(name)));
        size_t vlen = strlen(v);
        while (vlen > 0 && (v[vlen - 1] == ' ' || v[vlen - 1] == '\t'))
            vlen--;
        while (vlen > 0 && (*v == ' ' || *v == '\t')) {
            v++;
            vlen--;
        }
        sl_http_header *slot = &out->headers[out->header_count];
        slot->name = strdup(name);
        slot->value = dup_n(v, vlen);
        out->header_count++; /* counted before the check so clear frees it */
        if (!slot->name || !slot->value)
            return fail(c, SL_JOB_NO_MEMORY, out, "out of memory");
    }
    return SL_JOB_OK;
}

/* The bytes of every header's name and string value: what a request would
 * carry. A downstream (and every proxy before it) refuses a head much
 * larger than this, so a job over the bound could never be delivered. */
static size_t header_bytes(const cJSON *headers)
{
    size_t bytes = 0;
    const cJSON *h;
    cJSON_ArrayForEach(h, headers)
    {
        bytes += strlen(h->string);
        if (cJSON_IsString(h))
            bytes += strlen(h->valuestring);
    }
    return bytes;
}

/* The job's own headers: tokens, none the transport or the idempotency
 * key depends on, no control characters, none twice; values trimmed. */
static sl_job_status parse_headers(const ctx *c, const cJSON *headers, const char *idem,
                                   sl_job_request *out)
{
    if (!cJSON_IsObject(headers))
        return fail(c, SL_JOB_MALFORMED, out, "headers: must be an object, got %s",
                    sl_jpath_type(headers));
    size_t n = (size_t)cJSON_GetArraySize(headers);
    if (n == 0)
        return SL_JOB_OK;
    if (n > SL_JOB_HEADERS_MAX)
        return fail(c, SL_JOB_BAD_HEADER, out, "headers: %zu of them, more than %d", n,
                    SL_JOB_HEADERS_MAX);
    size_t bytes = header_bytes(headers);
    if (bytes > SL_JOB_HEADER_BYTES_MAX)
        return fail(c, SL_JOB_BAD_HEADER, out, "headers: %zu bytes of names and values, more than %zu",
                    bytes, SL_JOB_HEADER_BYTES_MAX);
    out->headers = calloc(n, sizeof *out->headers);
    bool *repeat = calloc(n, sizeof *repeat);
    sl_job_status st;
    if (!out->headers || !repeat || !mark_repeats(headers, n, repeat))
        st = fail(c, SL_JOB_NO_MEMORY, out, "out of memory");
    else
        st = copy_headers(c, headers, idem, repeat, out);
    free(repeat);
    return st;
}

/* ---- the steps of an envelope ------------------------------------------ */

/* What every step reads: the element, its scan, and cJSON's tree of it. */
typedef struct envelope {
    const ctx *c;
    const char *element;
    const sl_json_scan *scan;
    const cJSON *root;
    const sl_job_rules *rules;
    size_t body_index; /* which top-level member is "body" (set by check_keys) */
} envelope;

/* Strict JSON and an object: cJSON alone would take what RFC 8259 does not. */
static sl_job_status check_json(const ctx *c, const char *element, size_t len,
                                sl_json_scan *scan, sl_job_request *out)
{
    if (!sl_json_scan_text(element, len, scan))
        return fail(c, SL_JOB_MALFORMED, out, "invalid JSON at byte %zu: %s", scan->error_at,
                    scan->error);
    char first = element[scan->first];
    if (first != '{')
        return fail(c, SL_JOB_MALFORMED, out, "envelope: must be a JSON object, got %s",
                    first == '[' ? "an array" : first == '"' ? "a string" : "a scalar");
    return SL_JOB_OK;
}

/* Every key known, none twice: a typo would silently drop a field, and a
 * duplicate could be read differently by another parser. Bounded: an
 * unknown key stops the walk, so at most MEMBERS_MAX + 1 members are
 * compared with those before them. */
static sl_job_status check_keys(envelope *e, sl_job_request *out)
{
    char q[QUOTE_BUF];
    size_t index = 0;
    const cJSON *m;
    cJSON_ArrayForEach(m, e->root)
    {
        size_t k = 0;
        while (k < MEMBERS_MAX && strcmp(m->string, known_keys[k]) != 0)
            k++;
        if (k == MEMBERS_MAX)
            return fail(e->c, SL_JOB_MALFORMED, out, "envelope: unknown key \"%s\"",
                        quote(q, m->string, strlen(m->string)));
        for (const cJSON *p = e->root->child; p != m; p = p->next)
            if (strcmp(p->string, m->string) == 0)
                return fail(e->c, SL_JOB_MALFORMED, out, "%s: set twice", m->string);
        if (k == 1)
            e->body_index = index;
        index++;
    }
    return SL_JOB_OK;
}

/* A "\u0000" cannot be carried (cJSON strings end at NUL): refused, naming
 * the key, and the header when it is inside "headers". */
static sl_job_status refuse_nul(const envelope *e, sl_job_request *out)
{
    char q[QUOTE_BUF];
    const sl_json_scan *scan = e->scan;
    if (!scan->nul_seen)
        return SL_JOB_OK;
    const cJSON *top = cJSON_GetArrayItem(e->root, (int)scan->nul_top);
    if (scan->nul_in_top_key || !top)
        return fail(e->c, SL_JOB_MALFORMED, out, "envelope: a key contains \\u0000");
    if (strcmp(top->string, "headers") == 0 && cJSON_IsObject(top)) {
        const cJSON *h = cJSON_GetArrayItem(top, (int)scan->nul_inner);
        const char *name = h ? h->string : "";
        return fail(e->c, SL_JOB_BAD_HEADER, out, "headers.\"%s\": name or value contains NUL",
                    quote(q, name, strlen(name)));
    }
    return fail(e->c, SL_JOB_MALFORMED, out, "%s: \\u0000 in a string is not supported",
                top->string);
}

/* "id" becomes the idempotency key: printable, and no edge space a
 * downstream would trim into a different key. */
static sl_job_status take_id(const envelope *e, sl_job_request *out)
{
    char q[QUOTE_BUF];
    const cJSON *v = member(e->root, "id");
    if (!v)
        return SL_JOB_OK;
    if (!cJSON_IsString(v))
        return fail(e->c, SL_JOB_MALFORMED, out, "id: must be a string, got %s", sl_jpath_type(v));
    size_t n = strlen(v->valuestring);
    if (n == 0 || n > SL_JOB_ID_MAX)
        return fail(e->c, SL_JOB_MALFORMED, out, "id: must be 1..%d characters, got %zu",
                    SL_JOB_ID_MAX, n);
    for (size_t i = 0; i < n; i++) {
        unsigned char ch = (unsigned char)v->valuestring[i];
        if (ch < 0x20 || ch > 0x7e)
            return fail(e->c, SL_JOB_MALFORMED, out, "id: must be printable ASCII, \"%s\"",
                        quote(q, v->valuestring, n));
    }
    if (v->valuestring[0] == ' ' || v->valuestring[n - 1] == ' ')
        return fail(e->c, SL_JOB_MALFORMED, out, "id: must not start or end with a space");
    if (!(out->id = strdup(v->valuestring)))
        return fail(e->c, SL_JOB_NO_MEMORY, out, "out of memory");
    return SL_JOB_OK;
}

/* "method": one of a fixed list, as written (no case folding), POST by default. */
static sl_job_status take_method(const envelope *e, sl_job_request *out)
{
    static const char *const methods[] = {"GET",    "POST", "PUT",    "PATCH",
                                          "DELETE", "HEAD", "OPTIONS"};
    char q[QUOTE_BUF];
    const char *method = "POST";
    const cJSON *v = member(e->root, "method");
    if (v) {
        if (!cJSON_IsString(v))
            return fail(e->c, SL_JOB_MALFORMED, out, "method: must be a string, got %s",
                        sl_jpath_type(v));
        method = NULL;
        for (size_t i = 0; i < sizeof methods / sizeof methods[0]; i++)
            if (strcmp(v->valuestring, methods[i]) == 0)
                method = methods[i];
        if (!method)
            return fail(e->c, SL_JOB_MALFORMED, out,
                        "method: \"%s\" is not one of GET POST PUT PATCH DELETE HEAD OPTIONS",
                        quote(q, v->valuestring, strlen(v->valuestring)));
    }
    if (!(out->method = strdup(method)))
        return fail(e->c, SL_JOB_NO_MEMORY, out, "out of memory");
    return SL_JOB_OK;
}

/* "deadline": an integer a double holds exactly, so 2^53 and above are refused. */
static sl_job_status take_deadline(const envelope *e, sl_job_request *out)
{
    const cJSON *v = member(e->root, "deadline");
    if (!v)
        return SL_JOB_OK;
    double d = v->valuedouble;
    if (!cJSON_IsNumber(v) || !(d >= 0 && d < DEADLINE_LIMIT) || (double)(int64_t)d != d)
        return fail(e->c, SL_JOB_MALFORMED, out,
                    "deadline: must be an integer of unix milliseconds >= 0");
    out->deadline_ms = (int64_t)d;
    return SL_JOB_OK;
}

/* "headers": the job's own, each checked by parse_headers. */
static sl_job_status take_headers(const envelope *e, sl_job_request *out)
{
    const cJSON *v = member(e->root, "headers");
    if (!v)
        return SL_JOB_OK;
    return parse_headers(e->c, v, e->rules->idempotency_header, out);
}

/* Where the request goes: endpoint + "path", an allowed "url", or the
 * endpoint; url_policy.h decides what a job may name. */
static sl_job_status take_url(const envelope *e, sl_job_request *out)
{
    char q[QUOTE_BUF];
    const cJSON *path = member(e->root, "path"), *url = member(e->root, "url");
    const char *endpoint = e->rules->endpoint ? e->rules->endpoint : "";
    if (path && url)
        return fail(e->c, SL_JOB_MALFORMED, out, "path, url: set only one of them");
    if (path) {
        if (!cJSON_IsString(path))
            return fail(e->c, SL_JOB_MALFORMED, out, "path: must be a string, got %s",
                        sl_jpath_type(path));
        const char *why = sl_job_path_error(path->valuestring);
        if (why)
            return fail(e->c, SL_JOB_MALFORMED, out, "path: %s, \"%s\"", why,
                        quote(q, path->valuestring, strlen(path->valuestring)));
        out->url = sl_job_url_join(endpoint, path->valuestring);
    } else if (url) {
        if (!cJSON_IsString(url))
            return fail(e->c, SL_JOB_MALFORMED, out, "url: must be a string, got %s",
                        sl_jpath_type(url));
        const char *u = url->valuestring;
        const char *why = sl_job_url_error(u, e->rules->allow_urls, e->rules->allow_url_count);
        if (why)
            return fail(e->c, SL_JOB_URL_NOT_ALLOWED, out, "url: %s, \"%s\"", why,
                        quote(q, u, strlen(u)));
        out->url = strdup(u);
    } else {
        out->url = strdup(endpoint);
    }
    if (!out->url)
        return fail(e->c, SL_JOB_NO_MEMORY, out, "out of memory");
    return SL_JOB_OK;
}

/* "body": a string as its decoded bytes, any other JSON value as the
 * producer's own text (re-printing would round big integers). */
static sl_job_status take_body(const envelope *e, sl_job_request *out)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(e->root, "body");
    if (v) {
        if (cJSON_IsString(v)) {
            out->body_len = strlen(v->valuestring);
            out->body = dup_n(v->valuestring, out->body_len);
        } else if (e->body_index < MEMBERS_MAX) {
            sl_json_span b = e->scan->values[e->body_index];
            out->body_len = b.end - b.start;
            out->body = dup_n(e->element + b.start, out->body_len);
            out->body_is_json = true;
        }
    } else {
        out->body = dup_n("", 0);
    }
    if (!out->body)
        return fail(e->c, SL_JOB_NO_MEMORY, out, "out of memory");
    if (out->body_len > 0 && strcmp(out->method, "HEAD") == 0)
        return fail(e->c, SL_JOB_MALFORMED, out, "body: not allowed with method HEAD");
    return SL_JOB_OK;
}

/* The steps in the order their errors are reported; each one fills its
 * part of *out or clears *out and says why. */
static sl_job_status parse_envelope(const ctx *c, const char *element, size_t len,
                                    const sl_job_rules *rules, sl_job_request *out)
{
    sl_json_scan scan;
    sl_job_status st = check_json(c, element, len, &scan, out);
    if (st != SL_JOB_OK)
        return st;
    cJSON *root = cJSON_ParseWithLength(element, len);
    if (!root)
        /* The scanner accepted it, so this is a lone surrogate or memory. */
        return fail(c, SL_JOB_MALFORMED, out, "invalid JSON: bad \\u escape or out of memory");
    envelope e = {.c = c, .element = element, .scan = &scan, .root = root, .rules = rules};
    st = check_keys(&e, out);
    if (st == SL_JOB_OK)
        st = refuse_nul(&e, out);
    if (st == SL_JOB_OK)
        st = take_id(&e, out);
    if (st == SL_JOB_OK)
        st = take_method(&e, out);
    if (st == SL_JOB_OK)
        st = take_deadline(&e, out);
    if (st == SL_JOB_OK)
        st = take_headers(&e, out);
    if (st == SL_JOB_OK)
        st = take_url(&e, out);
    if (st == SL_JOB_OK)
        st = take_body(&e, out);
    cJSON_Delete(root);
    return st;
}

sl_job_status sl_job_parse(const char *element, size_t len, const sl_job_rules *rules,
                           sl_job_request *out, char *err, size_t err_size)
{
    const ctx c = {.err = err, .err_size = err_size};
    *out = (sl_job_request){0};
    if (err_size > 0)
        err[0] = '\0';
    size_t max = rules->max_bytes ? rules->max_bytes : SL_JOB_MAX_BYTES_DEFAULT;
    if (len > max)
        return fail(&c, SL_JOB_TOO_LARGE, out, "job: %zu bytes, over the limit of %zu", len, max);
    if (!rules->raw)
        return parse_envelope(&c, element, len, rules, out);
    out->method = strdup("POST");
    out->url = strdup(rules->endpoint ? rules->endpoint : "");
    out->body = dup_n(element, len);
    out->body_len = len;
    if (!out->method || !out->url || !out->body)
        return fail(&c, SL_JOB_NO_MEMORY, out, "out of memory");
    return SL_JOB_OK;
}

void sl_job_request_clear(sl_job_request *req)
{
    for (size_t i = 0; i < req->header_count; i++) {
        free(req->headers[i].name);
        free(req->headers[i].value);
    }
    free(req->headers);
    free(req->id);
    free(req->method);
    free(req->url);
    free(req->body);
    *req = (sl_job_request){0};
}
