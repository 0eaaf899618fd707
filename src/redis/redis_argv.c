/* redis_argv.c - see redis_argv.h. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "redis/redis_argv.h"

void sl_argv_init(sl_argv *a)
{
    memset(a, 0, sizeof *a);
}

void sl_argv_reset(sl_argv *a)
{
    a->count = 0;
    a->text_used = 0;
    a->failed = false;
}

void sl_argv_free(sl_argv *a)
{
    free(a->offsets);
    free(a->lengths);
    free(a->text);
    free(a->argv);
    sl_argv_init(a);
}

/* Makes room for one more argument of len bytes. */
static bool reserve(sl_argv *a, size_t len)
{
    if (a->count + 1 > a->capacity) {
        size_t n = a->capacity ? a->capacity * 2 : 16;
        size_t *offsets = realloc(a->offsets, n * sizeof *offsets);
        if (offsets)
            a->offsets = offsets;
        size_t *lengths = realloc(a->lengths, n * sizeof *lengths);
        if (lengths)
            a->lengths = lengths;
        const char **argv = realloc(a->argv, n * sizeof *argv);
        if (argv)
            a->argv = argv;
        if (!offsets || !lengths || !argv)
            return false;
        a->capacity = n;
    }
    if (a->text_used + len + 1 > a->text_size) {
        size_t n = a->text_size ? a->text_size : 256;
        while (n < a->text_used + len + 1)
            n *= 2;
        char *text = realloc(a->text, n);
        if (!text)
            return false;
        a->text = text;
        a->text_size = n;
    }
    return true;
}

void sl_argv_add(sl_argv *a, const char *bytes, size_t len)
{
    if (a->failed || !reserve(a, len)) {
        a->failed = true;
        return;
    }
    memcpy(a->text + a->text_used, bytes, len);
    a->text[a->text_used + len] = '\0';
    a->offsets[a->count] = a->text_used;
    a->lengths[a->count] = len;
    a->count++;
    a->text_used += len + 1;
}

void sl_argv_add_str(sl_argv *a, const char *s)
{
    sl_argv_add(a, s, strlen(s));
}

void sl_argv_add_int(sl_argv *a, int64_t v)
{
    char text[24];
    int len = snprintf(text, sizeof text, "%" PRId64, v);
    sl_argv_add(a, text, (size_t)len);
}

const char **sl_argv_finish(sl_argv *a)
{
    if (a->failed)
        return NULL;
    /* Pointers are made last: the text buffer may have moved while adding. */
    for (size_t i = 0; i < a->count; i++)
        a->argv[i] = a->text + a->offsets[i];
    return a->argv;
}
