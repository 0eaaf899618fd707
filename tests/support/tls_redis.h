/* tls_redis.h - a private redis-server that talks only TLS, with a test CA
 * and certificates made by the openssl command at test time. */
#ifndef SLUICE_TEST_TLS_REDIS_H
#define SLUICE_TEST_TLS_REDIS_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

typedef struct tls_redis {
    char dir[64]; /* certificates, keys and the server's files */
    pid_t pid;    /* 0 when not running */
    int port;     /* its TLS port on 127.0.0.1 */
    /* The CA file the server trusts (for client certificates), "ca.pem"
     * if NULL. OpenSSL completes the chain it sends from it: trusting
     * "other-ca.pem" makes it send its certificate alone, as servers with
     * a public CA's intermediate do. */
    const char *trusts;
} tls_redis;

/* Makes a fresh directory (r->dir) holding ca.pem, server.pem/server.key
 * (signed by that CA, for IP:127.0.0.1 and DNS:localhost), client.pem/
 * client.key (signed by it too) and other-ca.pem (a CA that signed
 * nothing here). False with a message in err. */
bool tls_redis_make_certs(tls_redis *r, char *err, size_t err_size);
/* (r->trusts is reset to NULL by tls_redis_make_certs.) */

/* Starts redis-server on a free loopback port, TLS only, with those
 * certificates; auth_clients: a client certificate is required. extra
 * (NULL-terminated name/value pairs after the flag, or NULL) is passed on,
 * e.g. "--notify-keyspace-events", "Kl". Waits (at most 5 s) until the
 * port accepts; the server dies with the calling process. */
bool tls_redis_start(tls_redis *r, bool auth_clients, const char *const *extra, char *err,
                     size_t err_size);

/* The path of `file` in r->dir, in out. */
void tls_redis_path(const tls_redis *r, const char *file, char *out, size_t size);

/* Stops the server by its PID and removes the directory. Safe to repeat. */
void tls_redis_stop(tls_redis *r);

#endif
