/* http1_request.c - http:// URLs and request heads. See http1_request.h. */
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "http/http1_request.h"
#include "base/authority.h"

/* host[:port] or [v6][:port] in authority[0, len), by the one authority
 * parser (base/authority.h), so this client takes exactly the hosts the
 * config accepted. "host:" with an empty port is refused; config refuses
 * such an endpoint or allow_urls prefix first (http_url_error), so none
 * reaches here. */
static bool set_authority(const char *authority, size_t len, sl_h1_target *t)
{
    sl_authority a;
    if (sl_authority_parse(authority, len, &a) != SL_AUTHORITY_OK)
        return false;
    int port = a.port ? a.port : 80;
    snprintf(t->host, sizeof t->host, "%s", a.host);
    snprintf(t->port, sizeof t->port, "%d", port);
    /* The Host header: the host as the URL wrote it, and the port unless 80. */
    if (port == 80)
        snprintf(t->authority, sizeof t->authority, a.bracketed ? "[%s]" : "%s", a.host);
    else
        snprintf(t->authority, sizeof t->authority, a.bracketed ? "[%s]:%d" : "%s:%d", a.host,
                 port);
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
    if (!set_authority(authority, authority_len, t))
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
