/* errors.c - a growable list of error messages. */
#include <stdio.h>
#include <stdlib.h>

#include "base/errors.h"

void sl_errors_init(sl_errors *errs)
{
    errs->items = NULL;
    errs->count = 0;
    errs->cap = 0;
    errs->dropped = 0;
}

void sl_errors_addv(sl_errors *errs, const char *fmt, va_list ap)
{
    if (errs->count == errs->cap) {
        size_t cap = errs->cap ? errs->cap * 2 : 8;
        char **items = realloc(errs->items, cap * sizeof *items);
        if (!items) {
            errs->dropped++;
            return;
        }
        errs->items = items;
        errs->cap = cap;
    }
    char *msg = NULL;
    if (vasprintf(&msg, fmt, ap) < 0) {
        errs->dropped++;
        return;
    }
    errs->items[errs->count++] = msg;
}

void sl_errors_add(sl_errors *errs, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    sl_errors_addv(errs, fmt, ap);
    va_end(ap);
}

bool sl_errors_any(const sl_errors *errs)
{
    return errs->count > 0 || errs->dropped > 0;
}

void sl_errors_clear(sl_errors *errs)
{
    for (size_t i = 0; i < errs->count; i++)
        free(errs->items[i]);
    free(errs->items);
    sl_errors_init(errs);
}
