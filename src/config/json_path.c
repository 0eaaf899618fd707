/* json_path.c - reading JSON field by field with paths (json_path.h). */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config/json_path.h"

/* Longer keys are bracketed, so that a cut shows inside the quotes. */
#define DOTTED_KEY_MAX 128

static bool key_char(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
           c == '_' || c == '-' || c == '*';
}

/* True if key reads unambiguously after a dot. */
static bool dotted_ok(const char *key)
{
    size_t len = strlen(key);
    if (len == 0 || len > DOTTED_KEY_MAX)
        return false;
    for (size_t i = 0; i < len; i++) {
        if (!key_char(key[i]))
            return false;
    }
    return true;
}

void sl_jpath_escape(char *out, size_t size, const char *s)
{
    size_t o = 0;
    for (; *s; s++) {
        unsigned char ch = (unsigned char)*s;
        if (o + 8 >= size || o >= SL_JPATH_SHOWN_MAX) {
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

void sl_jpath_key(char *out, size_t size, const char *parent, const char *key)
{
    if (dotted_ok(key)) {
        mark_if_cut(out, size, snprintf(out, size, "%s%s%s", parent, *parent ? "." : "", key));
        return;
    }
    char shown[SL_JPATH_SHOWN_SIZE];
    sl_jpath_escape(shown, sizeof shown, key);
    mark_if_cut(out, size, snprintf(out, size, "%s[\"%s\"]", parent, shown));
}

void sl_jpath_index(char *out, size_t size, const char *parent, size_t index)
{
    mark_if_cut(out, size, snprintf(out, size, "%s[%zu]", parent, index));
}

void sl_jpath_fail(sl_jpath_reader *r, const char *path, const char *fmt, ...)
{
    char *msg = NULL;
    va_list ap;
    va_start(ap, fmt);
    int n = vasprintf(&msg, fmt, ap);
    va_end(ap);
    if (n < 0) {
        r->oom = true;
        return;
    }
    sl_errors_add(r->errors, "%s: %s", path, msg);
    free(msg);
}

const char *sl_jpath_type(const cJSON *v)
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

const cJSON *sl_jpath_member(const cJSON *obj, const char *key)
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

/* ---- structure: unknown, duplicate and required keys --------------- */

void sl_jpath_check_unknown(sl_jpath_reader *r, const cJSON *obj, const char *path,
                            const char *const *known)
{
    const cJSON *item;
    cJSON_ArrayForEach(item, obj)
    {
        if (!in_list(item->string, known)) {
            char p[SL_JPATH_LEN];
            sl_jpath_key(p, sizeof p, path, item->string);
            sl_jpath_fail(r, p, "unknown key");
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
    int c = strcmp(x->key, y->key);
    if (c == 0)
        c = x->index < y->index ? -1 : x->index > y->index;
    return c;
}

/* Sorted rather than pairwise: an object of tenants can be large. */
void sl_jpath_check_duplicates(sl_jpath_reader *r, const cJSON *obj, const char *path)
{
    size_t n = (size_t)cJSON_GetArraySize(obj);
    if (n < 2)
        return;
    keyed *keys = malloc(n * sizeof *keys);
    if (!keys) {
        r->oom = true;
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
            char p[SL_JPATH_LEN];
            sl_jpath_key(p, sizeof p, path, keys[i].key);
            sl_jpath_fail(r, p, "duplicate key");
        }
    }
    free(keys);
}

void sl_jpath_require(sl_jpath_reader *r, sl_jpath_status st, const char *parent, const char *key)
{
    if (st == SL_JPATH_ABSENT) {
        char p[SL_JPATH_LEN];
        sl_jpath_key(p, sizeof p, parent, key);
        sl_jpath_fail(r, p, "is required");
    }
}

/* ---- containers ----------------------------------------------------- */

const cJSON *sl_jpath_object(sl_jpath_reader *r, const cJSON *obj, const char *parent,
                             const char *key, char *path, size_t path_size,
                             sl_jpath_status *status)
{
    const cJSON *v = sl_jpath_member(obj, key);
    sl_jpath_key(path, path_size, parent, key);
    *status = SL_JPATH_ABSENT;
    if (!v)
        return NULL;
    if (!cJSON_IsObject(v)) {
        sl_jpath_fail(r, path, "must be an object, not %s", sl_jpath_type(v));
        *status = SL_JPATH_BAD;
        return NULL;
    }
    *status = SL_JPATH_OK;
    return v;
}

const cJSON *sl_jpath_array(sl_jpath_reader *r, const cJSON *obj, const char *parent,
                            const char *key, const char *what, size_t elem_size, char *path,
                            void **items)
{
    const cJSON *arr = sl_jpath_member(obj, key);
    if (!arr)
        return NULL;
    sl_jpath_key(path, SL_JPATH_LEN, parent, key);
    if (!cJSON_IsArray(arr)) {
        sl_jpath_fail(r, path, "must be %s, not %s", what, sl_jpath_type(arr));
        return NULL;
    }
    size_t n = (size_t)cJSON_GetArraySize(arr);
    if (n == 0)
        return NULL;
    *items = calloc(n, elem_size);
    if (!*items) {
        r->oom = true;
        return NULL;
    }
    return arr;
}

/* ---- scalars -------------------------------------------------------- */

sl_jpath_status sl_jpath_string(sl_jpath_reader *r, const cJSON *obj, const char *parent,
                                const char *key, const char **out)
{
    const cJSON *v = sl_jpath_member(obj, key);
    if (!v)
        return SL_JPATH_ABSENT;
    if (!cJSON_IsString(v)) {
        char p[SL_JPATH_LEN];
        sl_jpath_key(p, sizeof p, parent, key);
        sl_jpath_fail(r, p, "must be a string, not %s", sl_jpath_type(v));
        return SL_JPATH_BAD;
    }
    *out = v->valuestring;
    return SL_JPATH_OK;
}

sl_jpath_status sl_jpath_int(sl_jpath_reader *r, const cJSON *obj, const char *parent,
                             const char *key, int64_t min, int64_t max, int64_t *out)
{
    const cJSON *v = sl_jpath_member(obj, key);
    if (!v)
        return SL_JPATH_ABSENT;
    char p[SL_JPATH_LEN];
    sl_jpath_key(p, sizeof p, parent, key);
    if (!cJSON_IsNumber(v)) {
        sl_jpath_fail(r, p, "must be an integer, not %s", sl_jpath_type(v));
        return SL_JPATH_BAD;
    }
    double d = v->valuedouble;
    /* Range first: only then is the cast defined. */
    if (!(d >= (double)min && d <= (double)max) || (double)(int64_t)d != d) {
        sl_jpath_fail(r, p, "must be an integer between %" PRId64 " and %" PRId64, min, max);
        return SL_JPATH_BAD;
    }
    *out = (int64_t)d;
    return SL_JPATH_OK;
}

sl_jpath_status sl_jpath_int_unchecked(sl_jpath_reader *r, const cJSON *obj, const char *parent,
                                       const char *key, int64_t *out)
{
    const cJSON *v = sl_jpath_member(obj, key);
    if (!v)
        return SL_JPATH_ABSENT;
    if (!cJSON_IsNumber(v)) {
        char p[SL_JPATH_LEN];
        sl_jpath_key(p, sizeof p, parent, key);
        sl_jpath_fail(r, p, "must be an integer, not %s", sl_jpath_type(v));
        return SL_JPATH_BAD;
    }
    double d = v->valuedouble;
    bool in_range = d >= -(double)SL_JPATH_EXACT_MAX && d <= (double)SL_JPATH_EXACT_MAX;
    *out = in_range && (double)(int64_t)d == d ? (int64_t)d : 0;
    return SL_JPATH_OK;
}

sl_jpath_status sl_jpath_enum(sl_jpath_reader *r, const cJSON *obj, const char *parent,
                              const char *key, const char *const *names, int *out)
{
    const char *s = NULL;
    sl_jpath_status st = sl_jpath_string(r, obj, parent, key, &s);
    if (st != SL_JPATH_OK)
        return st;
    for (int i = 0; names[i]; i++) {
        if (strcmp(s, names[i]) == 0) {
            *out = i;
            return SL_JPATH_OK;
        }
    }
    char expected[256] = "";
    size_t len = 0;
    for (int i = 0; names[i]; i++) {
        len += (size_t)snprintf(expected + len, sizeof expected - len, "%s\"%s\"",
                                i == 0 ? "" : names[i + 1] ? ", " : " or ", names[i]);
    }
    char shown[SL_JPATH_SHOWN_SIZE];
    sl_jpath_escape(shown, sizeof shown, s);
    char p[SL_JPATH_LEN];
    sl_jpath_key(p, sizeof p, parent, key);
    sl_jpath_fail(r, p, "must be %s, not \"%s\"", expected, shown);
    return SL_JPATH_BAD;
}
