/* redis_url.h - where the Redis server is: parsing a redis:// or unix://
 * URL, and printing it back without the password.
 *
 * Accepted forms:
 *   redis://[[user]:password@]host[:port][/db]   (port 6379, db 0 by default)
 *   redis://[::1]:6379/0                          (IPv6 literal in brackets)
 *   unix://[[user]:password@]/path/to/redis.sock[?db=N]
 * User and password may be percent-encoded (%40 for '@'). rediss:// (TLS)
 * is refused: the build has no TLS support for Redis.
 */
#ifndef SLUICE_REDIS_URL_H
#define SLUICE_REDIS_URL_H

#include <stdbool.h>
#include <stddef.h>

typedef struct sl_redis_target {
    char *host;      /* TCP host (IPv6 without brackets); NULL for a unix socket */
    int port;        /* TCP port; 0 for a unix socket */
    char *unix_path; /* socket path; NULL for TCP */
    char *username;  /* ACL user; NULL = "default" */
    char *password;  /* NULL = no AUTH; secret: never print it */
    int db;          /* SELECT index, 0 by default */
} sl_redis_target;

/* Parses url into *out (all strings malloc'd, freed by
 * sl_redis_target_clear). On failure returns false, leaves *out zeroed and
 * writes to err a message starting "redis: " that never quotes the URL,
 * so it cannot leak a password. */
bool sl_redis_target_parse(const char *url, sl_redis_target *out, char *err, size_t err_size);

/* A canonical URL for logs with the password replaced by "***", e.g.
 * "redis://app:***@[::1]:6379/0" or "unix:///run/redis.sock?db=2".
 * Returns a malloc'd string (caller frees) or NULL if out of memory. */
char *sl_redis_target_redacted(const sl_redis_target *t);

/* Frees the strings of *t and zeroes it; safe on a zeroed struct. */
void sl_redis_target_clear(sl_redis_target *t);

#endif
