/* json_path.h - reading a parsed JSON tree (cJSON) field by field, each
 * problem reported at its JSON path ("tenants.acme.rate: must be > 0").
 *
 * A reader collects every problem rather than stopping at the first, so
 * one run shows them all. Paths are "parent.key", or parent["key"] when
 * the key would be ambiguous or unprintable dotted, and "parent[3]" for
 * array items; a path longer than SL_JPATH_LEN ends in "...". Pure: no
 * I/O, no global state. Nothing here knows the config's schema. */
#ifndef SLUICE_JSON_PATH_H
#define SLUICE_JSON_PATH_H

#include <cjson/cJSON.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/errors.h"

#define SL_JPATH_LEN 768      /* bytes of a path buffer */
#define SL_JPATH_SHOWN_MAX 80 /* characters of an odd key or value shown escaped */
#define SL_JPATH_SHOWN_SIZE (SL_JPATH_SHOWN_MAX + 16) /* room for sl_jpath_escape */
/* The largest integer a JSON number (a double) holds exactly: 2^53 - 1. */
#define SL_JPATH_EXACT_MAX INT64_C(9007199254740991)

/* Where problems go. errors is the caller's; oom is set when memory ran
 * out (the caller reports that once, at the end). */
typedef struct sl_jpath_reader {
    sl_errors *errors;
    bool oom;
} sl_jpath_reader;

/* What a read found: the key absent (the caller's default stands), a good
 * value (stored), or a bad one (reported, nothing stored). */
typedef enum sl_jpath_status { SL_JPATH_ABSENT, SL_JPATH_OK, SL_JPATH_BAD } sl_jpath_status;

/* Writes parent + ".key" (or parent + "[\"key\"]", escaped) into out. */
void sl_jpath_key(char *out, size_t size, const char *parent, const char *key);

/* Writes parent + "[index]" into out. */
void sl_jpath_index(char *out, size_t size, const char *parent, size_t index);

/* A printable rendering of s into out (SL_JPATH_SHOWN_SIZE bytes or more):
 * quotes and backslashes escaped, control and non-ASCII bytes as \xNN,
 * cut with "..." after SL_JPATH_SHOWN_MAX characters. */
void sl_jpath_escape(char *out, size_t size, const char *s);

/* Adds "PATH: MESSAGE" to r->errors (sets r->oom if formatting fails). */
void sl_jpath_fail(sl_jpath_reader *r, const char *path, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* "null", "a boolean", "a number", "a string", "an array" or "an object". */
const char *sl_jpath_type(const cJSON *v);

/* obj's member named exactly key, or NULL (also when obj is NULL). */
const cJSON *sl_jpath_member(const cJSON *obj, const char *key);

/* Reports "PATH.key: unknown key" for each member of obj not in known
 * (NULL-terminated). */
void sl_jpath_check_unknown(sl_jpath_reader *r, const cJSON *obj, const char *path,
                            const char *const *known);

/* Reports "PATH.key: duplicate key" for each repeat of a key in obj: JSON
 * allows them, but a reader would see only the first. */
void sl_jpath_check_duplicates(sl_jpath_reader *r, const cJSON *obj, const char *path);

/* Reports "PARENT.key: is required" if st is SL_JPATH_ABSENT. */
void sl_jpath_require(sl_jpath_reader *r, sl_jpath_status st, const char *parent,
                      const char *key);

/* The object at obj.key, its path written to path (path_size bytes); NULL
 * if absent or not an object (reported). *status says which. */
const cJSON *sl_jpath_object(sl_jpath_reader *r, const cJSON *obj, const char *parent,
                             const char *key, char *path, size_t path_size,
                             sl_jpath_status *status);

/* The array at obj.key, its path written to path (SL_JPATH_LEN bytes), with
 * zeroed room for its items (elem_size each, caller frees) in *items. NULL
 * when absent or empty, and after an error (not an array: reported as
 * "must be WHAT, not TYPE"; out of memory). */
const cJSON *sl_jpath_array(sl_jpath_reader *r, const cJSON *obj, const char *parent,
                            const char *key, const char *what, size_t elem_size, char *path,
                            void **items);

/* The string at obj.key; *out points into the tree. */
sl_jpath_status sl_jpath_string(sl_jpath_reader *r, const cJSON *obj, const char *parent,
                                const char *key, const char **out);

/* An integer in [min, max] (both within +-SL_JPATH_EXACT_MAX); anything
 * else is "must be an integer between MIN and MAX". */
sl_jpath_status sl_jpath_int(sl_jpath_reader *r, const cJSON *obj, const char *parent,
                             const char *key, int64_t min, int64_t max, int64_t *out);

/* A number whose range another function checks: a fraction, or a value
 * beyond +-SL_JPATH_EXACT_MAX, reads as 0 (which such ranges exclude). */
sl_jpath_status sl_jpath_int_unchecked(sl_jpath_reader *r, const cJSON *obj, const char *parent,
                                       const char *key, int64_t *out);

/* A string from names (NULL-terminated), stored as its index; anything
 * else is "must be \"a\", \"b\" or \"c\", not \"x\"". */
sl_jpath_status sl_jpath_enum(sl_jpath_reader *r, const cJSON *obj, const char *parent,
                              const char *key, const char *const *names, int *out);

#endif
