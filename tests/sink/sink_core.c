/* sink_core.c - see sink_core.h. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/hex.h"
#include "sink_core.h"

/* ---- routes ---- */

/* Parses the decimal digits at *p (at most 10) into *out and advances *p;
 * false if there are none or too many. */
static bool parse_uint(const char **p, int64_t *out)
{
    const char *s = *p;
    size_t n = strspn(s, "0123456789");
    if (n == 0 || n > 10)
        return false;
    int64_t v = 0;
    for (size_t i = 0; i < n; i++)
        v = v * 10 + (s[i] - '0');
    *p = s + n;
    *out = v;
    return true;
}

/* True if path starts with the segment `prefix` (like "/slow/") and sets
 * *rest to what follows. */
static bool starts_with(const char *path, const char *prefix, const char **rest)
{
    size_t n = strlen(prefix);
    if (strncmp(path, prefix, n) != 0)
        return false;
    *rest = path + n;
    return true;
}

/* A path segment ends at '/', '?', '#' or the end of the URI. */
static bool segment_end(char c)
{
    return c == '\0' || c == '/' || c == '?' || c == '#';
}

/* Finds retry_after=VALUE in the query (which ends at '#' or NUL) and
 * percent-decodes it ('+' is a space) into out; NULL on success (out is ""
 * when absent), else why it is unusable. */
static const char *query_retry_after(const char *query, char out[SL_SINK_RETRY_AFTER_MAX])
{
    static const char name[] = "retry_after=";
    out[0] = '\0';
    const char *p = query;
    while (*p && *p != '#') {
        size_t len = strcspn(p, "&#");
        if (len >= sizeof name - 1 && memcmp(p, name, sizeof name - 1) == 0) {
            size_t o = 0;
            for (size_t i = sizeof name - 1; i < len; i++) {
                int c = (unsigned char)p[i];
                if (c == '+') {
                    c = ' ';
                } else if (c == '%') {
                    int hi = i + 2 < len ? sl_hex_digit(p[i + 1]) : -1;
                    int lo = i + 2 < len ? sl_hex_digit(p[i + 2]) : -1;
                    if (hi < 0 || lo < 0)
                        return "retry_after: bad percent-encoding";
                    c = hi * 16 + lo;
                    i += 2;
                }
                if (c < 0x20 || c == 0x7f)
                    return "retry_after: control characters are not allowed";
                if (o + 1 >= SL_SINK_RETRY_AFTER_MAX)
                    return "retry_after: longer than 127 bytes";
                out[o++] = (char)c;
            }
            out[o] = '\0';
            return NULL;
        }
        p += len;
        if (*p == '&')
            p++;
    }
    return NULL;
}

void sl_sink_route_parse(const char *uri, sl_sink_route *out)
{
    memset(out, 0, sizeof *out);
    out->kind = SL_SINK_OK;
    const char *path = uri;
    if (*path != '/') {
        /* Absolute form: skip "scheme://authority". */
        const char *scheme_end = strstr(uri, "://");
        if (!scheme_end)
            return;
        path = strchr(scheme_end + 3, '/');
        if (!path)
            return;
    }
    const char *rest;
    int64_t v;
    if (starts_with(path, "/_health", &rest) && segment_end(*rest) && *rest != '/') {
        out->kind = SL_SINK_HEALTH;
    } else if (starts_with(path, "/_mode", &rest) && segment_end(*rest)) {
        out->kind = SL_SINK_MODE;
        out->mode_path = *rest == '/' ? rest : "";
    } else if (starts_with(path, "/close", &rest) && segment_end(*rest)) {
        out->kind = SL_SINK_CLOSE;
    } else if (starts_with(path, "/reset", &rest) && segment_end(*rest)) {
        out->kind = SL_SINK_RESET;
    } else if (starts_with(path, "/status/", &rest)) {
        if (!parse_uint(&rest, &v) || !segment_end(*rest) || v < 100 || v > 599) {
            out->kind = SL_SINK_BAD;
            out->error = "/status/NNN: NNN must be an integer between 100 and 599";
            return;
        }
        out->kind = SL_SINK_STATUS;
        out->status = (int)v;
        const char *query = strchr(rest, '?');
        if (query) {
            const char *err = query_retry_after(query + 1, out->retry_after);
            if (err) {
                out->kind = SL_SINK_BAD;
                out->error = err;
            }
        }
    } else if (starts_with(path, "/slow/", &rest)) {
        if (!parse_uint(&rest, &v) || !segment_end(*rest) || v > SL_SINK_SLOW_MS_MAX) {
            out->kind = SL_SINK_BAD;
            out->error = "/slow/MS: MS must be an integer between 0 and 60000";
            return;
        }
        out->kind = SL_SINK_SLOW;
        out->param = v;
    } else if (starts_with(path, "/flaky/", &rest)) {
        if (!parse_uint(&rest, &v) || !segment_end(*rest) || v > SL_SINK_FLAKY_MAX) {
            out->kind = SL_SINK_BAD;
            out->error = "/flaky/N: N must be an integer between 0 and 1000000000";
            return;
        }
        out->kind = SL_SINK_FLAKY;
        out->param = v;
    } else if (starts_with(path, "/limit/", &rest)) {
        if (!parse_uint(&rest, &v) || !segment_end(*rest) || v < 1 || v > SL_SINK_LIMIT_MAX) {
            out->kind = SL_SINK_BAD;
            out->error = "/limit/R: R must be an integer between 1 and 1000000";
            return;
        }
        out->kind = SL_SINK_LIMIT;
        out->param = v;
        const char *query = strchr(rest, '?');
        out->headers = query && strstr(query, "headers=1") != NULL;
    }
}

sl_sink_verdict sl_sink_bucket_take(sl_sink_bucket *b, int64_t rate, int64_t now_us)
{
    const int64_t one = 1000000;
    int64_t burst = (rate / 10 > 1 ? rate / 10 : 1) * one;
    if (b->at_us == 0) {
        b->micro_tokens = burst;
    } else if (now_us > b->at_us) {
        int64_t elapsed = now_us - b->at_us;
        if (elapsed > 10 * one)
            elapsed = 10 * one; /* long enough to fill any bucket */
        b->micro_tokens += rate * elapsed;
    }
    if (b->micro_tokens > burst)
        b->micro_tokens = burst;
    if (now_us > b->at_us)
        b->at_us = now_us;
    sl_sink_verdict v = {.allowed = b->micro_tokens >= one};
    if (v.allowed)
        b->micro_tokens -= one;
    v.remaining = b->micro_tokens / one;
    if (v.remaining == 0)
        v.reset_us = (one - b->micro_tokens + rate - 1) / rate;
    return v;
}

/* ---- the mode ---- */

const char *sl_sink_mode_parse(const char *mode_path, sl_sink_route *mode)
{
    const char *rest;
    if (starts_with(mode_path, "/ok", &rest) && segment_end(*rest) && *rest != '/') {
        memset(mode, 0, sizeof *mode);
        mode->kind = SL_SINK_OK;
        return NULL;
    }
    if (*mode_path != '/')
        return "/_mode/BEHAVIOUR: a behaviour is required (ok, status/NNN, slow/MS, flaky/N, "
               "close or reset)";
    sl_sink_route_parse(mode_path, mode);
    switch (mode->kind) {
    case SL_SINK_STATUS:
    case SL_SINK_SLOW:
    case SL_SINK_FLAKY:
    case SL_SINK_LIMIT:
    case SL_SINK_CLOSE:
    case SL_SINK_RESET:
        return NULL;
    case SL_SINK_BAD:
        return mode->error;
    default:
        return "/_mode/BEHAVIOUR: BEHAVIOUR must be ok, status/NNN[?retry_after=S], slow/MS, "
               "flaky/N, limit/R[?headers=1], close or reset";
    }
}

const sl_sink_route *sl_sink_route_under_mode(const sl_sink_route *request,
                                              const sl_sink_route *mode)
{
    return request->kind == SL_SINK_OK ? mode : request;
}

int sl_sink_route_describe(const sl_sink_route *r, char *out, size_t size)
{
    switch (r->kind) {
    case SL_SINK_STATUS:
        if (r->retry_after[0])
            return snprintf(out, size, "status %d retry_after=%s", r->status, r->retry_after);
        return snprintf(out, size, "status %d", r->status);
    case SL_SINK_SLOW:
        return snprintf(out, size, "slow %lld", (long long)r->param);
    case SL_SINK_FLAKY:
        return snprintf(out, size, "flaky %lld", (long long)r->param);
    case SL_SINK_LIMIT:
        return snprintf(out, size, "limit %lld%s", (long long)r->param,
                        r->headers ? " headers" : "");
    case SL_SINK_CLOSE:
        return snprintf(out, size, "close");
    case SL_SINK_RESET:
        return snprintf(out, size, "reset");
    case SL_SINK_HEALTH:
        return snprintf(out, size, "health");
    case SL_SINK_MODE:
        return snprintf(out, size, "mode");
    case SL_SINK_BAD:
        return snprintf(out, size, "bad");
    case SL_SINK_OK:
        break;
    }
    return snprintf(out, size, "ok");
}

/* ---- log lines ---- */

size_t sl_sink_escape(char *out, const void *in, size_t len)
{
    static const char hex[] = "0123456789abcdef";
    const unsigned char *s = in;
    char *o = out;
    for (size_t i = 0; i < len; i++) {
        unsigned char c = s[i];
        if (c >= 0x20 && c <= 0x7e && c != '\\') {
            *o++ = (char)c;
            continue;
        }
        *o++ = '\\';
        switch (c) {
        case '\t':
            *o++ = 't';
            break;
        case '\n':
            *o++ = 'n';
            break;
        case '\r':
            *o++ = 'r';
            break;
        case '\\':
            *o++ = '\\';
            break;
        default:
            *o++ = 'x';
            *o++ = hex[c >> 4];
            *o++ = hex[c & 15];
        }
    }
    return (size_t)(o - out);
}

static size_t text_max(const char *s)
{
    return s ? 4 * strlen(s) : 1;
}

size_t sl_sink_line_max(const sl_sink_record *r)
{
    size_t n = 20 + 1 + text_max(r->method) + 1 + text_max(r->uri) + 1 + text_max(r->key) +
               1 + text_max(r->tenant) + 1 + 11 + 1 + 1 + text_max(r->test) + 1;
    for (size_t i = 0; i < r->body_parts; i++)
        n += 4 * r->body_len[i];
    return n;
}

static char *put_text(char *o, const char *s)
{
    if (!s) {
        *o++ = '-';
        return o;
    }
    return o + sl_sink_escape(o, s, strlen(s));
}

/* Writes v in decimal; v may be negative. */
static char *put_int(char *o, int64_t v)
{
    char tmp[24];
    size_t n = 0;
    uint64_t u = v < 0 ? (uint64_t)0 - (uint64_t)v : (uint64_t)v;
    do {
        tmp[n++] = (char)('0' + u % 10);
        u /= 10;
    } while (u);
    if (v < 0)
        *o++ = '-';
    while (n)
        *o++ = tmp[--n];
    return o;
}

size_t sl_sink_format_line(char *out, const sl_sink_record *r)
{
    char *o = out;
    o = put_int(o, r->arrival_us);
    *o++ = '\t';
    o = put_text(o, r->method);
    *o++ = '\t';
    o = put_text(o, r->uri);
    *o++ = '\t';
    o = put_text(o, r->key);
    *o++ = '\t';
    o = put_text(o, r->tenant);
    *o++ = '\t';
    o = put_int(o, r->status);
    *o++ = '\t';
    for (size_t i = 0; i < r->body_parts; i++)
        o += sl_sink_escape(o, r->body[i], r->body_len[i]);
    *o++ = '\t';
    o = put_text(o, r->test);
    *o++ = '\n';
    return (size_t)(o - out);
}

/* ---- /flaky counters ---- */

struct sl_flaky_slot {
    uint64_t hash;
    const char *key; /* NULL: empty slot */
    size_t len;
    uint64_t count;
};

struct sl_flaky_chunk {
    sl_flaky_chunk *next;
    size_t used, cap;
    char data[];
};

#define FLAKY_CHUNK_SIZE ((size_t)1 << 20)
#define FLAKY_INITIAL_SLOTS ((size_t)1024)

/* FNV-1a, then a final mix so that linear probing sees spread-out bits. */
static uint64_t hash_key(const char *key, size_t len)
{
    uint64_t h = UINT64_C(14695981039346656037);
    for (size_t i = 0; i < len; i++) {
        h ^= (unsigned char)key[i];
        h *= UINT64_C(1099511628211);
    }
    h ^= h >> 33;
    h *= UINT64_C(0xff51afd7ed558ccd);
    h ^= h >> 33;
    return h;
}

/* A copy of key in the map's arena; NULL when out of memory. */
static const char *copy_key(sl_flaky_map *m, const char *key, size_t len)
{
    sl_flaky_chunk *c = m->chunks;
    if (!c || c->cap - c->used < len + 1) {
        size_t cap = len + 1 > FLAKY_CHUNK_SIZE ? len + 1 : FLAKY_CHUNK_SIZE;
        c = malloc(sizeof *c + cap);
        if (!c)
            return NULL;
        c->used = 0;
        c->cap = cap;
        c->next = m->chunks;
        m->chunks = c;
    }
    char *copy = c->data + c->used;
    memcpy(copy, key, len);
    copy[len] = '\0';
    c->used += len + 1;
    return copy;
}

static sl_flaky_slot *find_slot(sl_flaky_slot *slots, size_t capacity, uint64_t hash,
                                const char *key, size_t len)
{
    size_t i = (size_t)hash & (capacity - 1);
    for (;;) {
        sl_flaky_slot *s = &slots[i];
        if (!s->key || (s->hash == hash && s->len == len && memcmp(s->key, key, len) == 0))
            return s;
        i = (i + 1) & (capacity - 1);
    }
}

static bool grow(sl_flaky_map *m)
{
    size_t capacity = m->capacity ? m->capacity * 2 : FLAKY_INITIAL_SLOTS;
    sl_flaky_slot *slots = calloc(capacity, sizeof *slots);
    if (!slots)
        return false;
    for (size_t i = 0; i < m->capacity; i++) {
        sl_flaky_slot *s = &m->slots[i];
        if (s->key)
            *find_slot(slots, capacity, s->hash, s->key, s->len) = *s;
    }
    free(m->slots);
    m->slots = slots;
    m->capacity = capacity;
    return true;
}

uint64_t sl_flaky_hit(sl_flaky_map *m, const char *key, size_t len)
{
    uint64_t hash = hash_key(key, len);
    if (m->capacity) {
        sl_flaky_slot *s = find_slot(m->slots, m->capacity, hash, key, len);
        if (s->key) {
            if (s->count < UINT64_MAX)
                s->count++;
            return s->count;
        }
    }
    size_t max = m->max_entries ? m->max_entries : SL_SINK_FLAKY_KEYS_MAX;
    if (m->count >= max) {
        size_t keep = m->max_entries;
        sl_flaky_clear(m);
        m->max_entries = keep;
    }
    /* At most half full, so probes stay short and always find a hole. */
    if ((m->count + 1) * 2 > m->capacity && !grow(m))
        return 0;
    const char *copy = copy_key(m, key, len);
    if (!copy)
        return 0;
    sl_flaky_slot *s = find_slot(m->slots, m->capacity, hash, key, len);
    *s = (sl_flaky_slot){.hash = hash, .key = copy, .len = len, .count = 1};
    m->count++;
    return 1;
}

void sl_flaky_clear(sl_flaky_map *m)
{
    while (m->chunks) {
        sl_flaky_chunk *next = m->chunks->next;
        free(m->chunks);
        m->chunks = next;
    }
    free(m->slots);
    memset(m, 0, sizeof *m);
}
