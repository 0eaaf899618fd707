/* envelope.h - one Redis list element -> one HTTP request, or the precise
 * reason why not (SPEC section 3). Pure: no I/O, no clock.
 *
 * Envelope format: a JSON object with optional keys id, body, headers,
 * method, path, url, deadline. Decisions where the SPEC is silent:
 * - The JSON must be strict RFC 8259 (no leading zeros, no "+1", no
 *   trailing garbage, no raw control characters inside strings): the
 *   element is checked by a validating scanner before cJSON reads it.
 * - Unknown and duplicate keys are malformed: a typo such as "bdoy" would
 *   otherwise send an empty body, and a duplicate "url" could be read
 *   differently by another parser.
 * - JSON null for id, headers, method, path, url or deadline means absent
 *   (producers that serialise optional fields as null). For body, null is a
 *   JSON value like any other and is sent as the JSON text `null`.
 * - A string body is sent as its decoded bytes. Any other body is sent as
 *   the producer's own JSON text of that value, byte for byte (whitespace
 *   inside it included), not re-printed by cJSON: re-printing would round
 *   integers above 2^53 (snowflake ids) and turn 1e400 into null.
 * - "\u0000" in a JSON string cannot be carried (cJSON strings end at
 *   NUL): bad_header inside "headers" (naming the header), malformed
 *   anywhere else (naming the envelope key), a string body included.
 * - Header values: leading/trailing SP/HTAB are trimmed (they are not part
 *   of an HTTP field value); bytes >= 0x80 are allowed (obs-text); an empty
 *   value is kept (the HTTP layer must send it as an empty header).
 *   Duplicate header names (case-insensitive) are bad_header.
 * - Forbidden job headers (bad_header): Host, Content-Length,
 *   Transfer-Encoding, Connection, Expect, Upgrade, TE, Trailer, Keep-Alive,
 *   Proxy-*, and rules->idempotency_header, all case-insensitive.
 *   Content-Type, Authorization etc. are allowed here; how they merge with
 *   the tenant's configured headers is the HTTP layer's decision.
 * - id: 1..200 bytes of printable ASCII (0x20..0x7E), not starting or
 *   ending with a space (a downstream reading the Idempotency-Key header
 *   would trim it and see a different key).
 * - method: exactly one of GET POST PUT PATCH DELETE HEAD OPTIONS
 *   (uppercase, not normalised); HEAD with a non-empty body is malformed.
 * - deadline: an integral JSON number in 0..2^53-1 (1.7e12 is fine, 1.5
 *   not; 2^53 and above are refused since a double cannot tell them apart).
 * - path and url: printable ASCII only (percent-encode the rest), no
 *   space, '\' or '#' anywhere; before the first '?' no dot segment ("."
 *   or ".." in any spelling, %2e included: curl and servers resolve them)
 *   and no "%2f"/"%5c" (an encoded slash can become a separator in a
 *   downstream that decodes before routing). path must start with "/" but
 *   not "//"; url = endpoint with its trailing "/"s removed + path (the
 *   endpoint is trusted config: it should carry no query). Without path
 *   and url, url = endpoint unchanged.
 * - url: the scheme must be http:// or https:// (case-insensitive), and
 *   the url must start with one allow_urls entry byte for byte (no case
 *   folding of the host) at a boundary: the prefix ends in '/' or '?', or
 *   the url continues with '/', '?' or ends there. A bad url is
 *   url_not_allowed (not malformed), a url that is not a string malformed.
 * - max_bytes 0 means SL_JOB_MAX_BYTES_DEFAULT.
 * Error messages quote at most ~60 bytes of producer data, with control
 * and non-ASCII bytes escaped as \xNN so they are safe to log.
 */
#ifndef SLUICE_ENVELOPE_H
#define SLUICE_ENVELOPE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define SL_JOB_MAX_BYTES_DEFAULT ((size_t)1 << 20) /* 1 MiB */
#define SL_JOB_ID_MAX 200
#define SL_JOB_HEADERS_MAX 100                   /* a job's own headers */
#define SL_JOB_HEADER_BYTES_MAX ((size_t)64 << 10) /* their names and values */

typedef enum {
    SL_JOB_OK,
    SL_JOB_MALFORMED,
    SL_JOB_TOO_LARGE,
    SL_JOB_BAD_HEADER,
    SL_JOB_URL_NOT_ALLOWED,
    SL_JOB_NO_MEMORY, /* not the job's fault: keep it claimed, do not dead-letter */
} sl_job_status;

/* The dead-letter reason of a status: "malformed", "too_large",
 * "bad_header", "url_not_allowed" ("no_memory" for SL_JOB_NO_MEMORY, which
 * is not a dead-letter reason); NULL for SL_JOB_OK or unknown values. */
const char *sl_job_status_reason(sl_job_status status);

typedef struct sl_job_rules {  /* from the tenant config; borrowed */
    bool raw;                  /* format "raw": the element itself is the body */
    size_t max_bytes;          /* 0 = SL_JOB_MAX_BYTES_DEFAULT */
    const char *endpoint;      /* tenant endpoint URL (required) */
    const char *const *allow_urls; /* allowed full-URL prefixes */
    size_t allow_url_count;
    const char *idempotency_header; /* e.g. "Idempotency-Key" (NULL = none) */
} sl_job_rules;

typedef struct sl_http_header {
    char *name;
    char *value;
} sl_http_header;

/* Everything is owned by the request; free with sl_job_request_clear. */
typedef struct sl_job_request {
    char *id;     /* envelope "id", or NULL when absent (the caller assigns one) */
    char *method; /* default "POST" */
    char *url;    /* endpoint (+ path), or the job's allowed full "url" */
    sl_http_header *headers; /* the job's own headers, in envelope order */
    size_t header_count;
    char *body;   /* never NULL; NUL-terminated, but raw bodies may hold NULs:
                     use body_len */
    size_t body_len;
    bool body_is_json; /* body was a non-string JSON value: send it with
                          Content-Type: application/json */
    int64_t deadline_ms; /* envelope "deadline" (unix ms) or 0 */
} sl_job_request;

/* Parses `len` bytes of `element` (need not be NUL-terminated) by `rules`.
 * On SL_JOB_OK fills *out (the caller clears it); on any other status *out
 * is left all-zero and err (if err_size > 0) holds a message naming the key,
 * e.g. `headers.X-A: must be a string`. On allocation failure returns
 * SL_JOB_NO_MEMORY. rules->endpoint NULL is read as "". */
sl_job_status sl_job_parse(const char *element, size_t len, const sl_job_rules *rules,
                           sl_job_request *out, char *err, size_t err_size);

/* Frees everything *req owns and zeroes it; safe on a zeroed struct. */
void sl_job_request_clear(sl_job_request *req);

#endif
