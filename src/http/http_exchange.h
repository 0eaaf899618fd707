/* http_exchange.h - what a request and its result are: the types shared
 * by the chooser (http_client.h) and the two clients behind it
 * (http1_client.h, http_curl.h), so neither client includes the chooser. */
#ifndef SLUICE_HTTP_EXCHANGE_H
#define SLUICE_HTTP_EXCHANGE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "job/ratelimit_headers.h"

/* The most idle connections each of the two clients keeps open, all hosts
 * together (libcurl's CURLMOPT_MAXCONNECTS for https://). */
#define SL_HTTP_IDLE_CONNECTIONS_MAX 4096

typedef struct sl_http_request {
    const char *method;      /* "POST", ... */
    const char *url;
    const char *const *headers; /* "Name: value" lines */
    size_t header_count;
    const char *body;        /* must live until the completion callback */
    size_t body_len;
    int64_t timeout_ms;
    /* https:// only (the own http:// client ignores them). The strings need
     * live only during the send call. */
    const char *ca_file;   /* verify the endpoint with this CA bundle only; NULL: the system's */
    const char *cert_file; /* a client certificate for mutual TLS, with key_file; or NULL */
    const char *key_file;
} sl_http_request;

typedef struct sl_http_result {
    int status;              /* HTTP status, 0 when no response (see error) */
    const char *retry_after; /* Retry-After header value or NULL; valid during the callback */
    const char *error;       /* transport error text when status is 0, else NULL */
    bool timed_out;          /* status 0 because timeout_ms ran out */
    /* The response's rate-limit headers (ratelimit_headers.h), or NULL
     * when it had none; valid during the callback. */
    const sl_ratelimit_raw *ratelimit;
    int64_t elapsed_us;
} sl_http_result;

typedef void (*sl_http_done_fn)(void *arg, const sl_http_result *result);

#endif
