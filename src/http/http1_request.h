/* http1_request.h - what the HTTP/1.1 client needs of an http:// URL, and
 * the text of a request's head (pure). */
#ifndef SLUICE_HTTP1_REQUEST_H
#define SLUICE_HTTP1_REQUEST_H

#include <stdbool.h>
#include <stddef.h>

typedef struct sl_h1_target {
    char host[256];      /* a name or an address (an IPv6 one without brackets) */
    char port[6];        /* decimal, "80" when the URL names none */
    char authority[264]; /* the Host header's value: host, and :port unless 80 */
    const char *path;    /* into the URL: path and query, up to any fragment */
    size_t path_len;     /* 0 means "/" */
} sl_h1_target;

/* True if url is one this client serves, parsed into t: "http://", a host
 * (a name, an IPv4 address or a bracketed IPv6 one), an optional port in
 * 1..65535, then a path or query or nothing; no user info, only printable
 * ASCII. Anything else (https, credentials in the URL, ...) is libcurl's. */
bool sl_h1_target_parse(const char *url, sl_h1_target *t);

/* Writes the head of a request (request line, Host unless headers has
 * one, the header lines, Content-Length when a body goes) to out when it
 * fits in out_size bytes; returns its length either way (snprintf-like).
 * A body goes unless the method is GET or HEAD with body_len 0; a HEAD
 * never sends one. */
size_t sl_h1_request_head(char *out, size_t out_size, const char *method, const sl_h1_target *t,
                          const char *const *headers, size_t header_count, size_t body_len);
/* Whether a request of method with body_len bytes sends its body (see above). */
bool sl_h1_request_has_body(const char *method, size_t body_len);

#endif
