/* json_scan.h - a strict RFC 8259 validator of one JSON text (pure, one
 * pass, linear in the input).
 *
 * cJSON is lenient: it takes "01", "+1", raw control characters in
 * strings, and it silently cuts a string at an escaped \u0000. A job
 * envelope is therefore scanned by this first and read by cJSON only when
 * the scan passes. The scan also records what the envelope mapping needs
 * and cJSON cannot tell: where each top-level member's value lies (so a
 * JSON body is forwarded as the producer wrote it) and where the first
 * "\u0000" is (so the error can name the key). */
#ifndef SLUICE_JSON_SCAN_H
#define SLUICE_JSON_SCAN_H

#include <stdbool.h>
#include <stddef.h>

#define SL_JSON_DEPTH_MAX 512 /* nesting refused beyond (cJSON's own limit is 1000) */
#define SL_JSON_SPANS_MAX 7   /* top-level member spans recorded (the envelope has 7 keys) */

/* Bytes [start, end) of the input. */
typedef struct sl_json_span {
    size_t start, end;
} sl_json_span;

typedef struct sl_json_scan {
    const char *error; /* what is wrong (static English), NULL if the text is valid */
    size_t error_at;   /* byte offset where the scan stopped on an error */
    size_t first;      /* offset of the value's first byte (after leading whitespace) */
    size_t members;    /* members of a top-level object (0 for other values) */
    sl_json_span values[SL_JSON_SPANS_MAX]; /* value spans of the first members, in order */
    /* The first "\u0000" escape, if any: in a top-level key, or inside the
     * value of top-level member nul_top (and, one level down, of its
     * member or element nul_inner). */
    bool nul_seen;
    bool nul_in_top_key;
    size_t nul_top, nul_inner;
} sl_json_scan;

/* Scans text[0, len) (need not be NUL-terminated) as exactly one JSON value
 * with optional surrounding whitespace, filling *out. True if valid; else
 * out->error and out->error_at say what and where (the first error). */
bool sl_json_scan_text(const char *text, size_t len, sl_json_scan *out);

#endif
