/* violation.c - see violation.h. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include "violation.h"

_Noreturn void sl_fuzz_violation(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fputs("VIOLATION: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    abort();
}
