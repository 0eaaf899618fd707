/* redis_url.c - parsing redis://, rediss:// and unix:// URLs without leaking secrets.
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
    sl_authority authority;
    switch (sl_authority_parse(hp, hp_len, &authority)) {
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
    out->host = strdup(authority.host);
    if (!out->host)
        return fail(err, err_size, "redis: out of memory");
    out->port = authority.port ? authority.port : REDIS_DEFAULT_PORT;
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
    if (strncasecmp(url, "redis://", 8) == 0)
        ok = parse_tcp(url + 8, out, err, err_size);
    else if (strncasecmp(url, "unix://", 7) == 0)
        ok = parse_unix(url + 7, out, err, err_size);
    else if (strncasecmp(url, "rediss://", 9) == 0) {
        out->tls = true;
        ok = parse_tcp(url + 9, out, err, err_size);
    }
    else
        ok = fail(err, err_size,
                  "redis: must be a redis://host:port/db or unix:///path/to/redis.sock URL");
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
    fputs(t->unix_path ? "unix://" : t->tls ? "rediss://" : "redis://", f);
    if (t->username || t->password) {
        if (t->username)
            put_encoded(f, t->username);
        fputs(t->password ? ":***@" : "@", f);
    }
    if (t->unix_path) {
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

void sl_redis_target_clear(sl_redis_target *t)
{
    free(t->host);
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
