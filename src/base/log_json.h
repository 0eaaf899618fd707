/* log_json.h - a log line's key=value fields as one JSON object (pure). */
#ifndef SLUICE_LOG_JSON_H
#define SLUICE_LOG_JSON_H

#include <stdbool.h>
#include <stddef.h>

/* Turns `level=info msg="a b" n=3 x=y` into {"level":"info","msg":"a b","n":3,"x":"y"}.
 * Values in double quotes may hold \" and \\; bare values that are plain
 * integers become numbers. Writes a NUL-terminated object into out; false
 * if it did not fit or the line is not key=value pairs. */
bool sl_log_kv_to_json(const char *kv, char *out, size_t out_size);

#endif
