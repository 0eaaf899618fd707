/* redis_argv.h - a reusable argument vector for Redis commands.
 *
 * Arguments are copied into one growing buffer, so building a command costs
 * no allocation once the buffers have grown to their working size. */
#ifndef SLUICE_REDIS_ARGV_H
#define SLUICE_REDIS_ARGV_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct sl_argv {
    size_t count;
    size_t capacity;    /* slots in offsets, lengths and argv */
    size_t *offsets;    /* into text */
    size_t *lengths;    /* argvlen for hiredis */
    const char **argv;  /* filled by sl_argv_finish */
    char *text;         /* the arguments, each NUL-terminated */
    size_t text_used, text_size;
    bool failed;        /* an allocation failed: the command must not be sent */
} sl_argv;

void sl_argv_init(sl_argv *a);
/* Forgets the arguments, keeps the buffers. */
void sl_argv_reset(sl_argv *a);
void sl_argv_free(sl_argv *a);
void sl_argv_add(sl_argv *a, const char *bytes, size_t len);
void sl_argv_add_str(sl_argv *a, const char *s);
void sl_argv_add_int(sl_argv *a, int64_t v);
/* Pointers for redis*CommandArgv; NULL if an allocation failed. The lengths
 * are a->lengths. Valid until the next add, reset or free. */
const char **sl_argv_finish(sl_argv *a);

#endif
