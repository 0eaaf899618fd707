/* redis_url.h - where the Redis server is: parsing a redis:// or unix://
 * URL, and printing it back without the password.
 *
 * Accepted forms:
 *   redis://[[user]:password@]host[:port][/db]   (port 6379, db 0 by default)
 *   redis://[::1]:6379/0                          (IPv6 literal in brackets)
 *   rediss://...                                  (the same, over TLS)
 *   unix://[[user]:password@]/path/to/redis.sock[?db=N]
 *   redis-cluster://[[user]:password@]host:port[,host:port...]
 *                                                 (seed nodes of a Redis Cluster)
 *   rediss-cluster://...                          (the same, over TLS)
 *   redis-sentinel://[[user]:password@]host:port[,host:port...]/MASTER_NAME[/db]
 *                                                 (the sentinels, port 26379 by
 *                                                  default, and the primary's name)
 * User and password may be percent-encoded (%40 for '@'); with Sentinel
 * and Cluster they are the data nodes' (sentinels are asked without AUTH).
 * The TLS options beyond the scheme come from the config's "redis_tls"
 * object.
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

/* Which shape of Redis the URL names. */
typedef enum sl_redis_mode {
    SL_REDIS_STANDALONE, /* redis://, rediss://, unix://: one server */
    SL_REDIS_SENTINEL,   /* redis-sentinel://: the primary the sentinels name */
    SL_REDIS_CLUSTER,    /* redis-cluster://, rediss-cluster://: a Redis Cluster */
} sl_redis_mode;

/* One host:port of a seed list. */
typedef struct sl_redis_seed {
    char *host; /* IPv6 without brackets */
    int port;
} sl_redis_seed;

typedef struct sl_redis_target {
    sl_redis_mode mode;
    /* Standalone: the server. Sentinel and Cluster: the first seed (a link
     * is opened to a node made by sl_redis_target_node, never to this). */
    char *host;      /* TCP host (IPv6 without brackets); NULL for a unix socket */
    int port;        /* TCP port; 0 for a unix socket */
    sl_redis_seed *seeds;  /* Sentinel: the sentinels; Cluster: seed nodes; else NULL */
    size_t seed_count;
    char *master_name;     /* Sentinel: the primary's name; else NULL */
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

/* Makes *out a standalone target for node host:port with t's credentials,
 * database and TLS settings (mode, seeds and master name not copied; a
 * TLS server_name of t is kept, else the node's host is verified). False
 * if out of memory (*out zeroed). Free with sl_redis_target_clear. */
bool sl_redis_target_node(const sl_redis_target *t, const char *host, int port,
                          sl_redis_target *out);

/* Makes *out a copy of t, every string its own (e.g. of a node whose
 * target may go before what connects to it). False if out of memory
 * (*out zeroed). Free with sl_redis_target_clear. */
bool sl_redis_target_copy(const sl_redis_target *t, sl_redis_target *out);

/* True if a and b name the same Redis the same way: every field and seed
 * but the TLS options (compared apart: config reload names them apart). */
bool sl_redis_target_same(const sl_redis_target *a, const sl_redis_target *b);

/* Frees the strings of *t (TLS options included) and zeroes it; safe on a zeroed struct. */
void sl_redis_target_clear(sl_redis_target *t);

#endif
