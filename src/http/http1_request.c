/* http1_request.c - http:// URLs and request heads. See http1_request.h. */
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "http/http1_request.h"
#include "base/authority.h"

static bool copy_text(char *out, size_t out_size, const char *from, size_t len)
{
    if (len >= out_size)
        return false;
    memcpy(out, from, len);
    out[len] = '\0';
    return true;
}

static bool is_host_char(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' ||
           c == '.' || c == '_';
}

/* host[:port] or [v6][:port] in authority[0, len) */
static bool parse_authority(const char *authority, size_t len, sl_h1_target *t)
{
    const char *host = authority, *port = NULL;
    size_t host_len;
    if (len > 0 && authority[0] == '[') {
        const char *close = memchr(authority, ']', len);
        if (!close)
            return false;
        host = authority + 1;
        host_len = (size_t)(close - host);
        for (size_t i = 0; i < host_len; i++)
            if (!(is_host_char(host[i]) || host[i] == ':'))
                return false;
        const char *after = close + 1;
        if (after < authority + len) {
            if (*after != ':')
                return false;
            port = after + 1;
        }
    } else {
        const char *colon = memchr(authority, ':', len);
        host_len = colon ? (size_t)(colon - authority) : len;
        for (size_t i = 0; i < host_len; i++)
            if (!is_host_char(host[i]))
                return false;
        if (colon)
            port = colon + 1;
    }
    if (host_len == 0 || !copy_text(t->host, sizeof t->host, host, host_len))
        return false;
    int value = 80; /* "host" and "host:" */
    size_t port_len = port ? (size_t)(authority + len - port) : 0;
    if (port_len > 0 && !sl_port_parse(port, port_len, &value))
        return false;
    snprintf(t->port, sizeof t->port, "%d", value);
    bool bracketed = authority[0] == '[';
    if (value == 80)
        snprintf(t->authority, sizeof t->authority, bracketed ? "[%s]" : "%s", t->host);
    else
        snprintf(t->authority, sizeof t->authority, bracketed ? "[%s]:%d" : "%s:%d", t->host, value);
    return true;
}

bool sl_h1_target_parse(const char *url, sl_h1_target *t)
{
    static const char scheme[] = "http://";
    if (strncasecmp(url, scheme, sizeof scheme - 1) != 0)
        return false;
    for (const char *p = url; *p; p++)
        if (*p <= ' ' || *p >= 0x7f)
            return false;
    const char *authority = url + sizeof scheme - 1;
    size_t authority_len = strcspn(authority, "/?#");
    if (memchr(authority, '@', authority_len))
        return false;
    if (!parse_authority(authority, authority_len, t))
        return false;
    t->path = authority + authority_len;
    t->path_len = strcspn(t->path, "#");
    return true;
}

bool sl_h1_request_has_body(const char *method, size_t body_len)
{
    if (strcmp(method, "HEAD") == 0)
        return false;
    return body_len > 0 || strcmp(method, "GET") != 0;
}

/* Appends to out while it fits; counts the length regardless. */
typedef struct head_writer {
    char *out;
    size_t size, len;
} head_writer;

static void put(head_writer *w, const char *text, size_t len)
{
    if (w->len + len < w->size)
        memcpy(w->out + w->len, text, len);
    w->len += len;
}

static void put_str(head_writer *w, const char *text)
{
    put(w, text, strlen(text));
}

size_t sl_h1_request_head(char *out, size_t out_size, const char *method, const sl_h1_target *t,
                          const char *const *headers, size_t header_count, size_t body_len)
{
    head_writer w = {out, out_size, 0};
    put_str(&w, method);
    put_str(&w, " ");
    if (t->path_len == 0 || t->path[0] == '?')
        put_str(&w, "/"); /* "http://h" and "http://h?q" ask for "/" and "/?q" */
    put(&w, t->path, t->path_len);
    put_str(&w, " HTTP/1.1\r\n");
    bool has_host = false;
    for (size_t i = 0; i < header_count; i++)
        has_host |= strncasecmp(headers[i], "Host:", 5) == 0;
    if (!has_host) {
        put_str(&w, "Host: ");
        put_str(&w, t->authority);
        put_str(&w, "\r\n");
    }
    for (size_t i = 0; i < header_count; i++) {
        put_str(&w, headers[i]);
        put_str(&w, "\r\n");
    }
    if (sl_h1_request_has_body(method, body_len)) {
        char length[48];
        int n = snprintf(length, sizeof length, "Content-Length: %zu\r\n", body_len);
        put(&w, length, (size_t)n);
    }
    put_str(&w, "\r\n");
    if (w.len < out_size)
        out[w.len] = '\0';
    return w.len;
}
