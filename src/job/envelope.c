/* envelope.c - job element -> HTTP request (see envelope.h for the rules).
 *
 * Two passes over an envelope: a strict RFC 8259 scanner first (cJSON is
 * lenient: it takes "01", "+1", raw control characters in strings, and it
 * silently truncates strings at an escaped \u0000), which also records where
 * each top-level member's value lies so a JSON body can be forwarded as the
 * producer wrote it; then cJSON for the decoded values. */
#include "job/envelope.h"

#include <cjson/cJSON.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define QUOTE_MAX 60         /* bytes of producer data an error message echoes */
#define SCAN_DEPTH_MAX 512   /* JSON nesting (cJSON's own limit is 1000) */
#define MEMBERS_MAX 7        /* id body headers method path url deadline */
#define DEADLINE_LIMIT 9007199254740992.0 /* 2^53: deadlines stay below, exact */

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

/* ---- strict JSON scanner ----------------------------------------------- */

typedef struct span {
    size_t start, end;
} span;

typedef struct scanner {
    const char *s;
    size_t len, pos;
    const char *what; /* first error, NULL while fine */
    size_t members;   /* top-level object members seen */
    span values[MEMBERS_MAX]; /* their value spans, in order (first MEMBERS_MAX) */
    /* Where we are, for the first "\u0000": cJSON would cut that string
     * short, so it is refused, naming the envelope key (and the header). */
    size_t cur_top, cur_inner; /* member index at depth 0 and 1 */
    bool in_top_key;
    bool nul_seen, nul_in_top_key;
    size_t nul_top, nul_inner;
} scanner;

static bool scan_value(scanner *sc, int depth);

static bool scan_error(scanner *sc, const char *what)
{
    if (!sc->what)
        sc->what = what;
    return false;
}

static void skip_ws(scanner *sc)
{
    while (sc->pos < sc->len) {
        char ch = sc->s[sc->pos];
        if (ch != ' ' && ch != '\t' && ch != '\n' && ch != '\r')
            break;
        sc->pos++;
    }
}

static int peek(const scanner *sc)
{
    return sc->pos < sc->len ? (unsigned char)sc->s[sc->pos] : -1;
}

static bool is_hex(int ch)
{
    return (ch >= '0' && ch <= '9') || (ch >= 'a' && ch <= 'f') || (ch >= 'A' && ch <= 'F');
}

static bool scan_string(scanner *sc)
{
    sc->pos++; /* opening quote */
    while (sc->pos < sc->len) {
        unsigned char ch = (unsigned char)sc->s[sc->pos];
        if (ch == '"') {
            sc->pos++;
            return true;
        }
        if (ch < 0x20)
            return scan_error(sc, "unescaped control character in a string");
        if (ch != '\\') {
            sc->pos++;
            continue;
        }
        if (sc->pos + 1 >= sc->len)
            break;
        char e = sc->s[sc->pos + 1];
        if (e == 'u') {
            if (sc->pos + 6 > sc->len)
                break;
            for (size_t k = 2; k < 6; k++)
                if (!is_hex((unsigned char)sc->s[sc->pos + k]))
                    return scan_error(sc, "bad \\u escape");
            if (memcmp(sc->s + sc->pos + 2, "0000", 4) == 0 && !sc->nul_seen) {
                sc->nul_seen = true;
                sc->nul_in_top_key = sc->in_top_key;
                sc->nul_top = sc->cur_top;
                sc->nul_inner = sc->cur_inner;
            }
            sc->pos += 6;
        } else if (e != '\0' && strchr("\"\\/bfnrt", e)) {
            sc->pos += 2;
        } else {
            return scan_error(sc, "bad escape in a string");
        }
    }
    return scan_error(sc, "unterminated string");
}

static size_t count_digits(const scanner *sc)
{
    size_t n = 0;
    while (sc->pos + n < sc->len && sc->s[sc->pos + n] >= '0' && sc->s[sc->pos + n] <= '9')
        n++;
    return n;
}

/* number = [ "-" ] ( "0" / 1-9 *DIGIT ) [ "." 1*DIGIT ] [ e [+-] 1*DIGIT ] */
static bool scan_number(scanner *sc)
{
    if (peek(sc) == '-')
        sc->pos++;
    size_t n = count_digits(sc);
    if (n == 0)
        return scan_error(sc, "bad number");
    if (n > 1 && sc->s[sc->pos] == '0')
        return scan_error(sc, "number with a leading zero");
    sc->pos += n;
    if (peek(sc) == '.') {
        sc->pos++;
        if ((n = count_digits(sc)) == 0)
            return scan_error(sc, "bad number");
        sc->pos += n;
    }
    if (peek(sc) == 'e' || peek(sc) == 'E') {
        sc->pos++;
        if (peek(sc) == '+' || peek(sc) == '-')
            sc->pos++;
        if ((n = count_digits(sc)) == 0)
            return scan_error(sc, "bad number");
        sc->pos += n;
    }
    return true;
}

static bool scan_literal(scanner *sc, const char *word)
{
    size_t n = strlen(word);
    if (sc->len - sc->pos < n || memcmp(sc->s + sc->pos, word, n) != 0)
        return scan_error(sc, "unexpected character");
    sc->pos += n;
    return true;
}

/* Object or array; depth 0 is the envelope itself, whose member spans are
 * recorded. */
static bool scan_container(scanner *sc, int depth)
{
    bool object = sc->s[sc->pos] == '{';
    char close = object ? '}' : ']';
    if (depth >= SCAN_DEPTH_MAX)
        return scan_error(sc, "nested too deeply");
    sc->pos++;
    skip_ws(sc);
    if (peek(sc) == close) {
        sc->pos++;
        return true;
    }
    for (size_t index = 0;; index++) {
        skip_ws(sc);
        if (depth == 0)
            sc->cur_top = index;
        else if (depth == 1)
            sc->cur_inner = index;
        if (object) {
            if (peek(sc) != '"')
                return scan_error(sc, "expected a string key");
            sc->in_top_key = depth == 0;
            bool ok = scan_string(sc);
            sc->in_top_key = false;
            if (!ok)
                return false;
            skip_ws(sc);
            if (peek(sc) != ':')
                return scan_error(sc, "expected ':'");
            sc->pos++;
            skip_ws(sc);
        }
        size_t start = sc->pos;
        if (!scan_value(sc, depth + 1))
            return false;
        if (object && depth == 0) {
            if (sc->members < MEMBERS_MAX)
                sc->values[sc->members] = (span){start, sc->pos};
            sc->members++;
        }
        skip_ws(sc);
        int ch = peek(sc);
        if (ch == close) {
            sc->pos++;
            return true;
        }
        if (ch != ',')
            return scan_error(sc, object ? "expected ',' or '}'" : "expected ',' or ']'");
        sc->pos++;
    }
}

static bool scan_value(scanner *sc, int depth)
{
    switch (peek(sc)) {
    case '{':
    case '[':
        return scan_container(sc, depth);
    case '"':
        return scan_string(sc);
    case 't':
        return scan_literal(sc, "true");
    case 'f':
        return scan_literal(sc, "false");
    case 'n':
        return scan_literal(sc, "null");
    case -1:
        return scan_error(sc, "unexpected end");
    default:
        if (peek(sc) == '-' || (peek(sc) >= '0' && peek(sc) <= '9'))
            return scan_number(sc);
        return scan_error(sc, "unexpected character");
    }
}

/* ---- field checks ------------------------------------------------------ */

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

static const char *json_type(const cJSON *v)
{
    if (cJSON_IsString(v))
        return "a string";
    if (cJSON_IsNumber(v))
        return "a number";
    if (cJSON_IsBool(v))
        return "a boolean";
    if (cJSON_IsNull(v))
        return "null";
    if (cJSON_IsArray(v))
        return "an array";
    return "an object";
}

static bool starts_with_ci(const char *s, const char *prefix)
{
    return strncasecmp(s, prefix, strlen(prefix)) == 0;
}

/* The checks path and url share. `s` is the whole text; the path part is
 * [path_start, first '?'). Returns NULL or what is wrong. */
static const char *url_text_error(const char *s, size_t path_start)
{
    for (const char *p = s; *p; p++) {
        unsigned char ch = (unsigned char)*p;
        if (ch <= 0x20 || ch >= 0x7f)
            return "must be printable ASCII without spaces (percent-encode the rest)";
        if (ch == '\\')
            return "must not contain '\\'";
        if (ch == '#')
            return "must not contain a fragment ('#')";
    }
    size_t end = path_start + strcspn(s + path_start, "?");
    for (size_t i = path_start; i + 3 <= end; i++)
        if (s[i] == '%' && (strncasecmp(s + i, "%2f", 3) == 0 || strncasecmp(s + i, "%5c", 3) == 0))
            return "must not contain an encoded '/' or '\\' in the path";
    /* Dot segments: curl and servers resolve them, so "/v1/../admin" would
     * leave an allowed prefix or the endpoint's path. */
    size_t i = path_start;
    while (i < end) {
        if (s[i] == '/') {
            i++;
            continue;
        }
        size_t dots = 0;
        bool only_dots = true;
        while (i < end && s[i] != '/') {
            if (s[i] == '.') {
                dots++;
                i++;
            } else if (strncasecmp(s + i, "%2e", 3) == 0 && i + 3 <= end) {
                dots++;
                i += 3;
            } else {
                only_dots = false;
                i++;
            }
        }
        if (only_dots && (dots == 1 || dots == 2))
            return "must not contain '.' or '..' segments";
    }
    return NULL;
}

static const char *path_error(const char *path)
{
    if (path[0] != '/')
        return "must start with '/'";
    if (path[1] == '/')
        return "must not start with '//'";
    return url_text_error(path, 0);
}

/* Where the path of an http(s) URL starts, 0 if it has another scheme. */
static size_t url_path_start(const char *url)
{
    size_t skip;
    if (starts_with_ci(url, "http://"))
        skip = 7;
    else if (starts_with_ci(url, "https://"))
        skip = 8;
    else
        return 0;
    return skip + strcspn(url + skip, "/?");
}

static bool prefix_allows(const char *prefix, const char *url)
{
    size_t n = strlen(prefix);
    if (n == 0 || strncmp(url, prefix, n) != 0)
        return false;
    char last = prefix[n - 1], next = url[n];
    return last == '/' || last == '?' || next == '\0' || next == '/' || next == '?';
}

/* ---- the parser -------------------------------------------------------- */

static const char *const known_keys[MEMBERS_MAX] = {"id",   "body", "headers", "method",
                                                    "path", "url",  "deadline"};

/* The member named `key`, NULL when absent or null. */
static const cJSON *member(const cJSON *obj, const char *key)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);
    return cJSON_IsNull(v) ? NULL : v;
}

static sl_job_status parse_headers(const ctx *c, const cJSON *headers, const char *idem,
                                   sl_job_request *out)
{
    char q[QUOTE_BUF];
    if (!cJSON_IsObject(headers))
        return fail(c, SL_JOB_MALFORMED, out, "headers: must be an object, got %s",
                    json_type(headers));
    size_t n = (size_t)cJSON_GetArraySize(headers);
    if (n == 0)
        return SL_JOB_OK;
    out->headers = calloc(n, sizeof *out->headers);
    if (!out->headers)
        return fail(c, SL_JOB_NO_MEMORY, out, "out of memory");
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
                        quote(q, name, strlen(name)), json_type(h));
        const char *v = h->valuestring;
        for (const char *p = v; *p; p++) {
            unsigned char ch = (unsigned char)*p;
            if ((ch < 0x20 && ch != '\t') || ch == 0x7f)
                return fail(c, SL_JOB_BAD_HEADER, out,
                            "headers.%s: value contains control character 0x%02x",
                            quote(q, name, strlen(name)), ch);
        }
        for (size_t k = 0; k < out->header_count; k++)
            if (strcasecmp(out->headers[k].name, name) == 0)
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

static sl_job_status parse_envelope(const ctx *c, const char *element, size_t len,
                                    const sl_job_rules *rules, sl_job_request *out)
{
    char q[QUOTE_BUF];
    scanner sc = {.s = element, .len = len};
    skip_ws(&sc);
    size_t first = sc.pos;
    if (scan_value(&sc, 0)) {
        skip_ws(&sc);
        if (sc.pos != len)
            scan_error(&sc, "trailing data after the JSON value");
    }
    if (sc.what)
        return fail(c, SL_JOB_MALFORMED, out, "invalid JSON at byte %zu: %s", sc.pos, sc.what);
    if (element[first] != '{')
        return fail(c, SL_JOB_MALFORMED, out, "envelope: must be a JSON object, got %s",
                    element[first] == '[' ? "an array" : element[first] == '"' ? "a string" : "a scalar");

    cJSON *root = cJSON_ParseWithLength(element, len);
    if (!root)
        /* The scanner accepted it, so this is a lone surrogate or memory. */
        return fail(c, SL_JOB_MALFORMED, out, "invalid JSON: bad \\u escape or out of memory");

    sl_job_status st = SL_JOB_OK;
    /* Every key known, none twice. */
    size_t index = 0, body_index = 0;
    const cJSON *m;
    cJSON_ArrayForEach(m, root)
    {
        size_t k = 0;
        while (k < MEMBERS_MAX && strcmp(m->string, known_keys[k]) != 0)
            k++;
        if (k == MEMBERS_MAX) {
            st = fail(c, SL_JOB_MALFORMED, out, "envelope: unknown key \"%s\"",
                      quote(q, m->string, strlen(m->string)));
            goto done;
        }
        for (const cJSON *p = root->child; p != m; p = p->next)
            if (strcmp(p->string, m->string) == 0) {
                st = fail(c, SL_JOB_MALFORMED, out, "%s: set twice", m->string);
                goto done;
            }
        if (k == 1)
            body_index = index;
        index++;
    }
    if (sc.nul_seen) {
        const cJSON *top = cJSON_GetArrayItem(root, (int)sc.nul_top);
        if (sc.nul_in_top_key || !top) {
            st = fail(c, SL_JOB_MALFORMED, out, "envelope: a key contains \\u0000");
        } else if (strcmp(top->string, "headers") == 0 && cJSON_IsObject(top)) {
            const cJSON *h = cJSON_GetArrayItem(top, (int)sc.nul_inner);
            const char *name = h ? h->string : "";
            st = fail(c, SL_JOB_BAD_HEADER, out, "headers.\"%s\": name or value contains NUL",
                      quote(q, name, strlen(name)));
        } else {
            st = fail(c, SL_JOB_MALFORMED, out,
                      "%s: \\u0000 in a string is not supported", top->string);
        }
        goto done;
    }

    const cJSON *v;
    if ((v = member(root, "id"))) {
        if (!cJSON_IsString(v)) {
            st = fail(c, SL_JOB_MALFORMED, out, "id: must be a string, got %s", json_type(v));
            goto done;
        }
        size_t n = strlen(v->valuestring);
        if (n == 0 || n > SL_JOB_ID_MAX) {
            st = fail(c, SL_JOB_MALFORMED, out, "id: must be 1..%d characters, got %zu",
                      SL_JOB_ID_MAX, n);
            goto done;
        }
        for (size_t i = 0; i < n; i++) {
            unsigned char ch = (unsigned char)v->valuestring[i];
            if (ch < 0x20 || ch > 0x7e) {
                st = fail(c, SL_JOB_MALFORMED, out, "id: must be printable ASCII, \"%s\"",
                          quote(q, v->valuestring, n));
                goto done;
            }
        }
        if (v->valuestring[0] == ' ' || v->valuestring[n - 1] == ' ') {
            st = fail(c, SL_JOB_MALFORMED, out, "id: must not start or end with a space");
            goto done;
        }
        if (!(out->id = strdup(v->valuestring))) {
            st = fail(c, SL_JOB_NO_MEMORY, out, "out of memory");
            goto done;
        }
    }

    static const char *const methods[] = {"GET",    "POST", "PUT",    "PATCH",
                                          "DELETE", "HEAD", "OPTIONS"};
    const char *method = "POST";
    if ((v = member(root, "method"))) {
        if (!cJSON_IsString(v)) {
            st = fail(c, SL_JOB_MALFORMED, out, "method: must be a string, got %s",
                      json_type(v));
            goto done;
        }
        method = NULL;
        for (size_t i = 0; i < sizeof methods / sizeof methods[0]; i++)
            if (strcmp(v->valuestring, methods[i]) == 0)
                method = methods[i];
        if (!method) {
            st = fail(c, SL_JOB_MALFORMED, out,
                      "method: \"%s\" is not one of GET POST PUT PATCH DELETE HEAD OPTIONS",
                      quote(q, v->valuestring, strlen(v->valuestring)));
            goto done;
        }
    }
    if (!(out->method = strdup(method))) {
        st = fail(c, SL_JOB_NO_MEMORY, out, "out of memory");
        goto done;
    }

    if ((v = member(root, "deadline"))) {
        double d = v->valuedouble;
        if (!cJSON_IsNumber(v) || !(d >= 0 && d < DEADLINE_LIMIT) || (double)(int64_t)d != d) {
            st = fail(c, SL_JOB_MALFORMED, out,
                      "deadline: must be an integer of unix milliseconds >= 0");
            goto done;
        }
        out->deadline_ms = (int64_t)d;
    }

    if ((v = member(root, "headers")) &&
        (st = parse_headers(c, v, rules->idempotency_header, out)) != SL_JOB_OK)
        goto done;

    const cJSON *path = member(root, "path"), *url = member(root, "url");
    const char *endpoint = rules->endpoint ? rules->endpoint : "";
    if (path && url) {
        st = fail(c, SL_JOB_MALFORMED, out, "path, url: set only one of them");
        goto done;
    }
    if (path) {
        if (!cJSON_IsString(path)) {
            st = fail(c, SL_JOB_MALFORMED, out, "path: must be a string, got %s",
                      json_type(path));
            goto done;
        }
        const char *why = path_error(path->valuestring);
        if (why) {
            st = fail(c, SL_JOB_MALFORMED, out, "path: %s, \"%s\"", why,
                      quote(q, path->valuestring, strlen(path->valuestring)));
            goto done;
        }
        size_t elen = strlen(endpoint), plen = strlen(path->valuestring);
        while (elen > 0 && endpoint[elen - 1] == '/')
            elen--;
        if ((out->url = malloc(elen + plen + 1))) {
            memcpy(out->url, endpoint, elen);
            memcpy(out->url + elen, path->valuestring, plen + 1);
        }
    } else if (url) {
        if (!cJSON_IsString(url)) {
            st = fail(c, SL_JOB_MALFORMED, out, "url: must be a string, got %s",
                      json_type(url));
            goto done;
        }
        const char *u = url->valuestring;
        size_t start = url_path_start(u);
        const char *why = start == 0 ? "must be an http:// or https:// URL" : url_text_error(u, start);
        bool allowed = false;
        for (size_t i = 0; !why && i < rules->allow_url_count; i++)
            allowed = allowed || prefix_allows(rules->allow_urls[i], u);
        if (!why && !allowed)
            why = rules->allow_url_count ? "matches no allow_urls prefix"
                                         : "not allowed (the tenant has no allow_urls)";
        if (why) {
            st = fail(c, SL_JOB_URL_NOT_ALLOWED, out, "url: %s, \"%s\"", why,
                      quote(q, u, strlen(u)));
            goto done;
        }
        out->url = strdup(u);
    } else {
        out->url = strdup(endpoint);
    }
    if (!out->url) {
        st = fail(c, SL_JOB_NO_MEMORY, out, "out of memory");
        goto done;
    }

    if ((v = cJSON_GetObjectItemCaseSensitive(root, "body"))) {
        if (cJSON_IsString(v)) {
            out->body_len = strlen(v->valuestring);
            out->body = dup_n(v->valuestring, out->body_len);
        } else if (body_index < MEMBERS_MAX) {
            span b = sc.values[body_index];
            out->body_len = b.end - b.start;
            out->body = dup_n(element + b.start, out->body_len);
            out->body_is_json = true;
        }
    } else {
        out->body = dup_n("", 0);
    }
    if (!out->body) {
        st = fail(c, SL_JOB_NO_MEMORY, out, "out of memory");
        goto done;
    }
    if (out->body_len > 0 && strcmp(out->method, "HEAD") == 0) {
        st = fail(c, SL_JOB_MALFORMED, out, "body: not allowed with method HEAD");
        goto done;
    }

done:
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
