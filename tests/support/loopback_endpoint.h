/* loopback_endpoint.h - an HTTP endpoint for what sluice-sink does not
 * serve: IPv6 ([::1]) and https:// (TLS with a certificate the test made).
 * It answers every request 200 "ok" on a kept-alive connection and
 * remembers each request's Idempotency-Key. A thread per connection,
 * inside the test process. */
#ifndef SLUICE_TEST_LOOPBACK_ENDPOINT_H
#define SLUICE_TEST_LOOPBACK_ENDPOINT_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>

#define LOOPBACK_KEYS_MAX 256

typedef struct ssl_ctx_st loopback_tls; /* OpenSSL's SSL_CTX */

typedef struct loopback_endpoint {
    int listen_fd;
    int port;
    bool ipv6;             /* on ::1, else 127.0.0.1 */
    loopback_tls *tls;     /* NULL: plain HTTP */
    pthread_t thread;
    atomic_bool stop;
    atomic_int connections; /* being served now */
    pthread_mutex_t lock;   /* guards keys and requests */
    size_t requests;
    char keys[LOOPBACK_KEYS_MAX][64]; /* Idempotency-Key of each request, in order */
} loopback_endpoint;

/* Starts e on a free loopback port, on ::1 if ipv6, serving TLS with the
 * PEM certificate chain and key at cert_path and key_path unless they are
 * NULL. False, with a message in err, if it cannot. */
bool loopback_endpoint_start(loopback_endpoint *e, bool ipv6, const char *cert_path,
                             const char *key_path, char *err, size_t err_size);

/* The requests answered so far; copies up to max keys into keys (may be
 * NULL when max is 0). */
size_t loopback_endpoint_requests(loopback_endpoint *e, char (*keys)[64], size_t max);

/* Stops accepting, waits for the connections' threads, frees everything. */
void loopback_endpoint_stop(loopback_endpoint *e);

#endif
