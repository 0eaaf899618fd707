/* errors.h - a growable list of error messages.
 *
 * Validation collects every problem it finds rather than stopping at the
 * first, so that one run of `sluice check-config` shows them all. Messages
 * are plain text, one problem each, and never contain secrets (the code
 * that adds them is responsible for that).
 */
#ifndef SLUICE_ERRORS_H
#define SLUICE_ERRORS_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>

typedef struct sl_errors {
    char **items;   /* items[0..count): NUL-terminated messages, owned */
    size_t count;
    size_t cap;
    size_t dropped; /* messages lost to a failed allocation; they still count */
} sl_errors;

/* Makes *errs an empty list (no allocation). */
void sl_errors_init(sl_errors *errs);
/* Appends one printf-formatted message; on allocation failure counts it in
 * `dropped` so that sl_errors_any stays true. */
void sl_errors_add(sl_errors *errs, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void sl_errors_addv(sl_errors *errs, const char *fmt, va_list ap)
    __attribute__((format(printf, 2, 0)));
/* True if anything was added since init/clear (including dropped ones). */
bool sl_errors_any(const sl_errors *errs);
/* Frees every message and makes the list empty again (reusable). */
void sl_errors_clear(sl_errors *errs);

#endif
