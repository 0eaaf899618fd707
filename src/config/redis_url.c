/* redis_url.c - parsing redis://, rediss://, unix://, redis-cluster:// and
 * redis-sentinel:// URLs without leaking secrets.
 *
 * No message written here quotes any part of the URL: a malformed URL may
 * have its password anywhere, so errors only say which part is wrong. */
#include <arpa/inet.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/un.h>

#include "base/hex.h"
#include "base/authority.h"
#include "config/redis_url.h"

#define REDIS_DEFAULT_PORT 6379
#define SENTINEL_DEFAULT_PORT 26379
/* A seed list longer than this is a mistake, not a cluster. */
#define MAX_SEEDS 64

static bool fail(char *err, size_t err_size, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static bool fail(char *err, size_t err_size, const char *fmt, ...)
{
    if (err && err_size) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err, err_size, fmt, ap);
        va_end(ap);
    }
    return false;
}

static bool is_digit(char c)
{
    return c >= '0' && c <= '9';
}

static bool is_alnum(char c)
{
    return is_digit(c) || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}

/* Non-negative decimal int in text[0..len), no sign, no overflow. */
static bool parse_db(const char *text, size_t len, int *out)
{
    if (len == 0 || len > 10)
        return false;
    long long v = 0;
    for (size_t i = 0; i < len; i++) {
        if (!is_digit(text[i]))
            return false;
        v = v * 10 + (text[i] - '0');
    }
    if (v > INT_MAX)
        return false;
    *out = (int)v;
    return true;
}

/* Percent-decodes text[0..len) into a new string. Sets *bad (and returns
 * NULL) on a malformed escape or an encoded NUL; NULL alone = out of memory. */
static char *percent_decode(const char *text, size_t len, bool *bad)
{
    char *out = malloc(len + 1);
    if (!out)
        return NULL;
    size_t o = 0;
    for (size_t i = 0; i < len; i++) {
        if (text[i] != '%') {
            out[o++] = text[i];
            continue;
        }
        int h = i + 2 < len ? sl_hex_digit(text[i + 1]) : -1;
        int l = i + 2 < len ? sl_hex_digit(text[i + 2]) : -1;
        if (h < 0 || l < 0 || (h == 0 && l == 0)) {
            *bad = true;
            free(out);
            return NULL;
        }
        out[o++] = (char)(h * 16 + l);
        i += 2;
    }
    out[o] = '\0';
    return out;
}

/* "user:password", ":password" or "password" (as redis-cli reads it). */
static bool set_userinfo(sl_redis_target *out, const char *ui, size_t len, char *err,
                         size_t err_size)
{
    const char *colon = memchr(ui, ':', len);
    const char *pw = colon ? colon + 1 : ui;
    size_t pw_len = colon ? len - (size_t)(colon - ui) - 1 : len;
    bool bad = false;
    if (colon && colon > ui) {
        out->username = percent_decode(ui, (size_t)(colon - ui), &bad);
        if (!out->username)
            return fail(err, err_size, "redis: %s",
                        bad ? "invalid percent-encoding in the user name" : "out of memory");
    }
    if (pw_len > 0) {
        out->password = percent_decode(pw, pw_len, &bad);
        if (!out->password)
            return fail(err, err_size, "redis: %s",
                        bad ? "invalid percent-encoding in the password" : "out of memory");
    }
    if (out->username && !out->password)
        return fail(err, err_size,
                    "redis: a user name needs a password (redis://user:password@host)");
    return true;
}

/* The part after "?": only db=N. */
static bool parse_query(const char *q, sl_redis_target *out, bool db_seen, char *err,
                        size_t err_size)
{
    while (*q) {
        size_t len = strcspn(q, "&");
        if (len >= 3 && strncmp(q, "db=", 3) == 0) {
            if (db_seen)
                return fail(err, err_size, "redis: the database is given twice");
            if (!parse_db(q + 3, len - 3, &out->db))
                return fail(err, err_size,
                            "redis: db must be an integer between 0 and %d", INT_MAX);
            db_seen = true;
        } else if (len > 0) {
            return fail(err, err_size, "redis: unknown URL parameter (only db=N is supported)");
        }
        q += len;
        if (*q == '&')
            q++;
    }
    return true;
}

/* One host[:port] (default_port if none) into a new *host. */
static bool parse_authority(const char *text, size_t len, int default_port, char **host,
                            int *port, char *err, size_t err_size)
{
    sl_authority authority;
    switch (sl_authority_parse(text, len, &authority)) {
    case SL_AUTHORITY_OK:
        break;
    case SL_AUTHORITY_NO_HOST:
        return fail(err, err_size, "redis: missing host (redis://host:port/db)");
    case SL_AUTHORITY_UNCLOSED_BRACKET:
        return fail(err, err_size, "redis: missing ']' after the IPv6 address");
    case SL_AUTHORITY_AFTER_BRACKET:
        return fail(err, err_size, "redis: unexpected text after the IPv6 address");
    case SL_AUTHORITY_UNBRACKETED_V6:
        return fail(err, err_size,
                    "redis: an IPv6 address must be in brackets, e.g. redis://[::1]:6379");
    case SL_AUTHORITY_BAD_HOST:
        return fail(err, err_size, "redis: invalid host");
    case SL_AUTHORITY_BAD_PORT:
        return fail(err, err_size, "redis: port must be an integer between 1 and 65535");
    }
    *host = strdup(authority.host);
    if (!*host)
        return fail(err, err_size, "redis: out of memory");
    *port = authority.port ? authority.port : default_port;
    return true;
}

/* The user info before the last '@' of rest[0..len), if any; *hosts is
 * what follows it. */
static bool take_userinfo(const char *rest, size_t len, sl_redis_target *out,
                          const char **hosts, char *err, size_t err_size)
{
    *hosts = rest;
    const char *at = NULL;
    for (const char *p = rest; p < rest + len; p++)
        if (*p == '@')
            at = p;
    if (!at)
        return true;
    *hosts = at + 1;
    return set_userinfo(out, rest, (size_t)(at - rest), err, err_size);
}

/* "h1:p1,h2:p2,..." (text[0..len)) into out->seeds; out->host and port
 * become the first seed. */
static bool parse_seeds(const char *text, size_t len, int default_port, sl_redis_target *out,
                        char *err, size_t err_size)
{
    size_t count = 1;
    for (size_t i = 0; i < len; i++)
        count += text[i] == ',';
    if (count > MAX_SEEDS)
        return fail(err, err_size, "redis: more than %d seed addresses", MAX_SEEDS);
    out->seeds = calloc(count, sizeof *out->seeds);
    if (!out->seeds)
        return fail(err, err_size, "redis: out of memory");
    const char *p = text;
    const char *end = text + len;
    for (size_t i = 0; i < count; i++) {
        const char *comma = memchr(p, ',', (size_t)(end - p));
        size_t item = comma ? (size_t)(comma - p) : (size_t)(end - p);
        if (item == 0)
            return fail(err, err_size, "redis: empty address in the list (host:port,host:port)");
        if (!parse_authority(p, item, default_port, &out->seeds[i].host, &out->seeds[i].port,
                             err, err_size))
            return false;
        out->seed_count = i + 1;
        p += item + 1;
    }
    out->host = strdup(out->seeds[0].host);
    if (!out->host)
        return fail(err, err_size, "redis: out of memory");
    out->port = out->seeds[0].port;
    return true;
}

/* redis-cluster://[userinfo@]h:p[,h:p...] (a cluster has one database:
 * no /db, and no query). */
static bool parse_cluster(const char *rest, sl_redis_target *out, char *err, size_t err_size)
{
    size_t len = strcspn(rest, "/?#");
    const char *hosts;
    if (!take_userinfo(rest, len, out, &hosts, err, err_size))
        return false;
    if (!parse_seeds(hosts, len - (size_t)(hosts - rest), REDIS_DEFAULT_PORT, out, err, err_size))
        return false;
    const char *end = rest + len;
    if (*end == '/' && end[1] == '\0')
        return true;
    if (*end)
        return fail(err, err_size,
                    "redis: a cluster URL is only its seed nodes "
                    "(redis-cluster://host:port,host:port; a cluster has no /db)");
    return true;
}

/* redis-sentinel://[userinfo@]h:p[,h:p...]/MASTER_NAME[/db] */
static bool parse_sentinel(const char *rest, sl_redis_target *out, char *err, size_t err_size)
{
    size_t len = strcspn(rest, "/?#");
    const char *hosts;
    if (!take_userinfo(rest, len, out, &hosts, err, err_size))
        return false;
    if (!parse_seeds(hosts, len - (size_t)(hosts - rest), SENTINEL_DEFAULT_PORT, out, err,
                     err_size))
        return false;
    const char *end = rest + len;
    size_t name_len = *end == '/' ? strcspn(end + 1, "/?#") : 0;
    if (name_len == 0)
        return fail(err, err_size,
                    "redis: missing the primary's name "
                    "(redis-sentinel://host:26379,host:26379/MASTER_NAME)");
    for (size_t i = 0; i < name_len; i++) {
        char c = end[1 + i];
        if (!is_alnum(c) && c != '-' && c != '_' && c != '.')
            return fail(err, err_size,
                        "redis: the primary's name may hold only letters, digits, '-', '_' "
                        "and '.'");
    }
    out->master_name = strndup(end + 1, name_len);
    if (!out->master_name)
        return fail(err, err_size, "redis: out of memory");
    end += 1 + name_len;
    if (*end == '/') {
        size_t db_len = strcspn(end + 1, "?#");
        if (!parse_db(end + 1, db_len, &out->db))
            return fail(err, err_size,
                        "redis: the database (/db) must be an integer between 0 and %d",
                        INT_MAX);
        end += 1 + db_len;
    }
    if (*end)
        return fail(err, err_size,
                    "redis: unexpected text after redis-sentinel://hosts/MASTER_NAME/db");
    return true;
}

static bool parse_tcp(const char *rest, sl_redis_target *out, char *err, size_t err_size)
{
    /* The last '@' ends the user info: an unencoded '@', '/' or '?' in a
     * password then still lands in the password, not in the host. */
    const char *at = strrchr(rest, '@');
    const char *hp = rest;
    if (at) {
        if (!set_userinfo(out, rest, (size_t)(at - rest), err, err_size))
            return false;
        hp = at + 1;
    }
    size_t hp_len = strcspn(hp, "/?#");
    const char *end = hp + hp_len;
    if (!parse_authority(hp, hp_len, REDIS_DEFAULT_PORT, &out->host, &out->port, err, err_size))
        return false;
    bool db_seen = false;
    if (*end == '/') {
        size_t db_len = strcspn(end + 1, "?#");
        if (db_len > 0) {
            if (!parse_db(end + 1, db_len, &out->db))
                return fail(err, err_size,
                            "redis: the database (/db) must be an integer between 0 and %d",
                            INT_MAX);
            db_seen = true;
        }
        end += 1 + db_len;
    }
    if (*end == '#')
        return fail(err, err_size, "redis: unexpected '#' in the URL");
    return *end != '?' || parse_query(end + 1, out, db_seen, err, err_size);
}

static bool parse_unix(const char *rest, sl_redis_target *out, char *err, size_t err_size)
{
    const char *path = rest;
    if (*path != '/') {
        /* unix://user:password@/path: the user info ends at the first "@/"
         * (socket paths such as /run/redis@main/ keep their '@'). */
        const char *at = strstr(rest, "@/");
        if (!at)
            return fail(err, err_size,
                        "redis: unix socket path must be absolute (unix:///path/to/redis.sock)");
        if (!set_userinfo(out, rest, (size_t)(at - rest), err, err_size))
            return false;
        path = at + 1;
    }
    size_t path_len = strcspn(path, "?#");
    if (path_len >= sizeof(((struct sockaddr_un *)NULL)->sun_path))
        return fail(err, err_size, "redis: unix socket path is too long (at most %zu bytes)",
                    sizeof(((struct sockaddr_un *)NULL)->sun_path) - 1);
    if (path_len < 2)
        return fail(err, err_size, "redis: missing unix socket path (unix:///path/to/redis.sock)");
    out->unix_path = strndup(path, path_len);
    if (!out->unix_path)
        return fail(err, err_size, "redis: out of memory");
    const char *end = path + path_len;
    if (*end == '#')
        return fail(err, err_size, "redis: unexpected '#' in the URL");
    return *end != '?' || parse_query(end + 1, out, false, err, err_size);
}

bool sl_redis_target_parse(const char *url, sl_redis_target *out, char *err, size_t err_size)
{
    memset(out, 0, sizeof *out);
    if (!url || !*url)
        return fail(err, err_size, "redis: empty URL");
    for (const char *p = url; *p; p++) {
        if ((unsigned char)*p <= ' ' || *p == 0x7f)
            return fail(err, err_size,
                        "redis: URL must not contain spaces or control characters "
                        "(percent-encode them in a password)");
    }
    bool ok;
    if (strncasecmp(url, "redis-cluster://", 16) == 0) {
        out->mode = SL_REDIS_CLUSTER;
        ok = parse_cluster(url + 16, out, err, err_size);
    } else if (strncasecmp(url, "rediss-cluster://", 17) == 0) {
        out->mode = SL_REDIS_CLUSTER;
        out->tls = true;
        ok = parse_cluster(url + 17, out, err, err_size);
    } else if (strncasecmp(url, "redis-sentinel://", 17) == 0) {
        out->mode = SL_REDIS_SENTINEL;
        ok = parse_sentinel(url + 17, out, err, err_size);
    } else if (strncasecmp(url, "redis://", 8) == 0)
        ok = parse_tcp(url + 8, out, err, err_size);
    else if (strncasecmp(url, "unix://", 7) == 0)
        ok = parse_unix(url + 7, out, err, err_size);
    else if (strncasecmp(url, "rediss://", 9) == 0) {
        out->tls = true;
        ok = parse_tcp(url + 9, out, err, err_size);
    }
    else
        ok = fail(err, err_size,
                  "redis: must be a redis://host:port/db, rediss://, unix:///path/to/redis.sock, "
                  "redis-cluster://host:port,... or redis-sentinel://host:port,.../NAME URL");
    if (!ok)
        sl_redis_target_clear(out);
    return ok;
}

/* Writes s percent-encoded except for RFC 3986 unreserved characters. */
static void put_encoded(FILE *f, const char *s)
{
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (is_alnum((char)c) || c == '-' || c == '.' || c == '_' || c == '~')
            fputc(c, f);
        else
            fprintf(f, "%%%02X", c);
    }
}

char *sl_redis_target_redacted(const sl_redis_target *t)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    if (!f)
        return NULL;
    if (t->mode == SL_REDIS_CLUSTER)
        fputs(t->tls ? "rediss-cluster://" : "redis-cluster://", f);
    else if (t->mode == SL_REDIS_SENTINEL)
        fputs("redis-sentinel://", f);
    else
        fputs(t->unix_path ? "unix://" : t->tls ? "rediss://" : "redis://", f);
    if (t->username || t->password) {
        if (t->username)
            put_encoded(f, t->username);
        fputs(t->password ? ":***@" : "@", f);
    }
    if (t->seeds) {
        for (size_t i = 0; i < t->seed_count; i++) {
            bool v6 = strchr(t->seeds[i].host, ':') != NULL;
            fprintf(f, "%s%s%s%s:%d", i ? "," : "", v6 ? "[" : "", t->seeds[i].host,
                    v6 ? "]" : "", t->seeds[i].port);
        }
        if (t->master_name)
            fprintf(f, "/%s/%d", t->master_name, t->db);
    } else if (t->unix_path) {
        fputs(t->unix_path, f);
        if (t->db)
            fprintf(f, "?db=%d", t->db);
    } else if (t->host) {
        bool v6 = strchr(t->host, ':') != NULL;
        fprintf(f, "%s%s%s:%d/%d", v6 ? "[" : "", t->host, v6 ? "]" : "", t->port, t->db);
    }
    if (fclose(f) != 0) {
        free(buf);
        return NULL;
    }
    return buf;
}

static bool copy_string(const char *from, char **to)
{
    *to = from ? strdup(from) : NULL;
    return !from || *to;
}

bool sl_redis_target_node(const sl_redis_target *t, const char *host, int port,
                          sl_redis_target *out)
{
    memset(out, 0, sizeof *out);
    out->mode = SL_REDIS_STANDALONE;
    out->port = port;
    out->db = t->db;
    out->tls = t->tls;
    out->tls_options.no_verify = t->tls_options.no_verify;
    const sl_redis_tls_options *o = &t->tls_options;
    if (copy_string(host, &out->host) && copy_string(t->username, &out->username) &&
        copy_string(t->password, &out->password) && copy_string(o->ca_file, &out->tls_options.ca_file) &&
        copy_string(o->cert_file, &out->tls_options.cert_file) &&
        copy_string(o->key_file, &out->tls_options.key_file) &&
        copy_string(o->server_name, &out->tls_options.server_name))
        return true;
    sl_redis_target_clear(out);
    return false;
}

bool sl_redis_target_copy(const sl_redis_target *t, sl_redis_target *out)
{
    if (!sl_redis_target_node(t, t->host, t->port, out))
        return false;
    out->mode = t->mode;
    bool ok = copy_string(t->unix_path, &out->unix_path) &&
              copy_string(t->master_name, &out->master_name);
    if (ok && t->seed_count > 0) {
        out->seeds = calloc(t->seed_count, sizeof *out->seeds);
        ok = out->seeds != NULL;
        for (size_t i = 0; ok && i < t->seed_count; i++) {
            out->seed_count = i + 1; /* freed by clear if a later one fails */
            out->seeds[i].port = t->seeds[i].port;
            ok = copy_string(t->seeds[i].host, &out->seeds[i].host);
        }
    }
    if (!ok)
        sl_redis_target_clear(out);
    return ok;
}

static bool same_string(const char *a, const char *b)
{
    return (!a && !b) || (a && b && strcmp(a, b) == 0);
}

bool sl_redis_target_same(const sl_redis_target *a, const sl_redis_target *b)
{
    if (a->mode != b->mode || !same_string(a->host, b->host) || a->port != b->port ||
        !same_string(a->unix_path, b->unix_path) || !same_string(a->username, b->username) ||
        !same_string(a->password, b->password) || a->db != b->db || a->tls != b->tls ||
        !same_string(a->master_name, b->master_name) || a->seed_count != b->seed_count)
        return false;
    for (size_t i = 0; i < a->seed_count; i++)
        if (!same_string(a->seeds[i].host, b->seeds[i].host) || a->seeds[i].port != b->seeds[i].port)
            return false;
    return true;
}

void sl_redis_target_clear(sl_redis_target *t)
{
    free(t->host);
    for (size_t i = 0; i < t->seed_count; i++)
        free(t->seeds[i].host);
    free(t->seeds);
    free(t->master_name);
    free(t->unix_path);
    free(t->username);
    if (t->password) {
        /* Do not leave the secret in freed heap memory. */
        explicit_bzero(t->password, strlen(t->password));
        free(t->password);
    }
    free(t->tls_options.ca_file);
    free(t->tls_options.cert_file);
    free(t->tls_options.key_file);
    free(t->tls_options.server_name);
    memset(t, 0, sizeof *t);
}
