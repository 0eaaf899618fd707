/* redis_url.h - where the Redis server is: parsing a redis:// or unix://
 * URL, and printing it back without the password.
 *
 * Accepted forms:
 *   redis://[[user]:password@]host[:port][/db]   (port 6379, db 0 by default)
 *   redis://[::1]:6379/0                          (IPv6 literal in brackets)
 *   rediss://...                                  (the same, over TLS)
 *   unix://[[user]:password@]/path/to/redis.sock[?db=N]
 * User and password may be percent-encoded (%40 for '@'). The TLS options
 * beyond the scheme come from the config's "redis_tls" object.
 */
#ifndef SLUICE_REDIS_URL_H
#define SLUICE_REDIS_URL_H

#include <stdbool.h>
#include <stddef.h>

/* How to talk TLS to the server (all strings malloc'd, NULL = unset). */
typedef struct sl_redis_tls_options {
    char *ca_file;     /* trusted CAs (PEM) instead of the system's */
    char *cert_file;   /* client certificate chain (PEM), for mutual TLS */
    char *key_file;    /* its private key (PEM) */
    char *server_name; /* SNI and the name verified; NULL = the URL's host */
    bool no_verify;    /* "verify": false: accept any certificate (warned) */
} sl_redis_tls_options;

typedef struct sl_redis_target {
    char *host;      /* TCP host (IPv6 without brackets); NULL for a unix socket */
    int port;        /* TCP port; 0 for a unix socket */
    char *unix_path; /* socket path; NULL for TCP */
    char *username;  /* ACL user; NULL = "default" */
    char *password;  /* NULL = no AUTH; secret: never print it */
    int db;          /* SELECT index, 0 by default */
    bool tls;        /* rediss:// */
    sl_redis_tls_options tls_options; /* from "redis_tls"; zeroed by the parser */
} sl_redis_target;

/* Parses url into *out (all strings malloc'd, freed by
 * sl_redis_target_clear). On failure returns false, leaves *out zeroed and
 * writes to err a message starting "redis: " that never quotes the URL,
 * so it cannot leak a password. */
bool sl_redis_target_parse(const char *url, sl_redis_target *out, char *err, size_t err_size);

/* A canonical URL for logs with the password replaced by "***", e.g.
 * "redis://app:***@[::1]:6379/0", "rediss://h:6380/0" or "unix:///run/redis.sock?db=2".
 * Returns a malloc'd string (caller frees) or NULL if out of memory. */
char *sl_redis_target_redacted(const sl_redis_target *t);

/* Frees the strings of *t (TLS options included) and zeroes it; safe on a zeroed struct. */
void sl_redis_target_clear(sl_redis_target *t);

#endif
