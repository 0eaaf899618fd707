/* log_json.c - see log_json.h. */
#include <ctype.h>
#include <stdio.h>
#include <string.h>

#include "base/log_json.h"

typedef struct writer {
    char *out;
    size_t size, used;
    bool full;
} writer;

static void put(writer *w, char c)
{
    if (w->used + 1 < w->size)
        w->out[w->used++] = c;
    else
        w->full = true;
}

/* A JSON string body: quotes, backslashes and control characters escaped. */
static void put_escaped(writer *w, char c)
{
    if (c == '"' || c == '\\') {
        put(w, '\\');
        put(w, c);
    } else if ((unsigned char)c < 0x20) {
        char esc[8];
        snprintf(esc, sizeof esc, "\\u%04x", (unsigned char)c);
        for (const char *p = esc; *p; p++)
            put(w, *p);
    } else {
        put(w, c);
    }
}

static bool plain_integer(const char *start, size_t len)
{
    size_t i = start[0] == '-' ? 1 : 0;
    if (len == i || len > 19)
        return false;
    for (; i < len; i++)
        if (!isdigit((unsigned char)start[i]))
            return false;
    return true;
}

bool sl_log_kv_to_json(const char *kv, char *out, size_t out_size)
{
    writer w = {out, out_size, 0, false};
    put(&w, '{');
    const char *p = kv;
    bool first = true;
    while (*p) {
        while (*p == ' ')
            p++;
        if (!*p)
            break;
        const char *key = p;
        while (*p && (isalnum((unsigned char)*p) || *p == '_'))
            p++;
        if (p == key || *p != '=')
            return false;
        size_t key_len = (size_t)(p - key);
        p++; /* '=' */
        if (!first)
            put(&w, ',');
        first = false;
        put(&w, '"');
        for (size_t i = 0; i < key_len; i++)
            put(&w, key[i]);
        put(&w, '"');
        put(&w, ':');
        if (*p == '"') {
            p++;
            put(&w, '"');
            while (*p && *p != '"') {
                if (*p == '\\' && (p[1] == '"' || p[1] == '\\'))
                    p++;
                put_escaped(&w, *p++);
            }
            if (*p != '"')
                return false; /* unterminated */
            p++;
            put(&w, '"');
        } else {
            const char *value = p;
            while (*p && *p != ' ')
                p++;
            size_t len = (size_t)(p - value);
            bool number = plain_integer(value, len);
            if (!number)
                put(&w, '"');
            for (size_t i = 0; i < len; i++)
                put_escaped(&w, value[i]);
            if (!number)
                put(&w, '"');
        }
    }
    put(&w, '}');
    if (w.full || w.used >= out_size)
        return false;
    out[w.used] = '\0';
    return true;
}
