/* loopback_endpoint.c - see loopback_endpoint.h. */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <unistd.h>

#include <openssl/err.h>
#include <openssl/ssl.h>

#include "loopback_endpoint.h"

#define POLL_MS 50
#define REQUEST_MAX 16384

static const char ANSWER[] = "HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Type: text/plain\r\n\r\nok";

typedef struct connection {
    loopback_endpoint *e;
    int fd;
    SSL *ssl; /* NULL: plain */
} connection;

/* Waits up to POLL_MS at a time for fd to be readable; false if the
 * endpoint is stopping. */
static bool wait_readable(loopback_endpoint *e, int fd)
{
    while (!atomic_load(&e->stop)) {
        struct pollfd p = {.fd = fd, .events = POLLIN};
        if (poll(&p, 1, POLL_MS) > 0)
            return true;
    }
    return false;
}

static ssize_t conn_read(connection *c, char *buf, size_t len)
{
    if (!c->ssl || SSL_pending(c->ssl) == 0)
        if (!wait_readable(c->e, c->fd))
            return -1;
    if (c->ssl) {
        int n = SSL_read(c->ssl, buf, (int)len);
        return n > 0 ? n : -1;
    }
    return read(c->fd, buf, len);
}

static bool conn_write(connection *c, const char *buf, size_t len)
{
    if (c->ssl)
        return SSL_write(c->ssl, buf, (int)len) == (int)len;
    return write(c->fd, buf, len) == (ssize_t)len;
}

/* The value of header `name` (with its colon) in head, copied into out. */
static void header_value(const char *head, const char *end, const char *name, char *out,
                         size_t size)
{
    size_t name_len = strlen(name);
    out[0] = '\0';
    for (const char *line = head; line && line < end; line = strstr(line, "\r\n")) {
        line += line == head ? 0 : 2;
        if (strncasecmp(line, name, name_len) != 0)
            continue;
        const char *v = line + name_len;
        while (*v == ' ')
            v++;
        size_t len = strcspn(v, "\r\n");
        snprintf(out, size, "%.*s", (int)(len < size ? len : size - 1), v);
        return;
    }
}

/* Reads one request (head, then Content-Length bytes of body) and notes
 * its key; false on close, error or stop. Pipelined bytes beyond the
 * request are not expected of sluice's clients and are dropped. */
static bool read_request(connection *c, char *buf)
{
    size_t len = 0, need = 0;
    while (need == 0 || len < need) {
        if (len == REQUEST_MAX)
            return false;
        ssize_t n = conn_read(c, buf + len, REQUEST_MAX - len);
        if (n <= 0)
            return false;
        len += (size_t)n;
        if (need == 0) {
            char *end = memmem(buf, len, "\r\n\r\n", 4);
            if (!end)
                continue;
            *end = '\0';
            char length[32];
            header_value(buf, end, "Content-Length:", length, sizeof length);
            need = (size_t)(end - buf) + 4 + strtoul(length, NULL, 10);
            char key[64];
            header_value(buf, end, "Idempotency-Key:", key, sizeof key);
            pthread_mutex_lock(&c->e->lock);
            if (c->e->requests < LOOPBACK_KEYS_MAX)
                snprintf(c->e->keys[c->e->requests], sizeof c->e->keys[0], "%s", key);
            c->e->requests++;
            pthread_mutex_unlock(&c->e->lock);
        }
    }
    return true;
}

static void *serve_connection(void *arg)
{
    connection *c = arg;
    char *buf = malloc(REQUEST_MAX);
    bool ready = buf != NULL;
    if (ready && c->ssl) {
        SSL_set_fd(c->ssl, c->fd);
        /* the handshake blocks: bound it by the socket's timeout */
        struct timeval tv = {.tv_sec = 5};
        setsockopt(c->fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
        ready = SSL_accept(c->ssl) == 1;
    }
    while (ready && read_request(c, buf) && conn_write(c, ANSWER, sizeof ANSWER - 1))
        ;
    if (c->ssl) {
        SSL_shutdown(c->ssl);
        SSL_free(c->ssl);
    }
    close(c->fd);
    free(buf);
    atomic_fetch_sub(&c->e->connections, 1);
    free(c);
    return NULL;
}

static void *serve(void *arg)
{
    loopback_endpoint *e = arg;
    while (wait_readable(e, e->listen_fd)) {
        int fd = accept4(e->listen_fd, NULL, NULL, SOCK_CLOEXEC);
        if (fd < 0)
            continue;
        connection *c = calloc(1, sizeof *c);
        c->e = e;
        c->fd = fd;
        c->ssl = e->tls ? SSL_new(e->tls) : NULL;
        atomic_fetch_add(&e->connections, 1);
        pthread_t thread;
        if (pthread_create(&thread, NULL, serve_connection, c) == 0) {
            pthread_detach(thread);
        } else {
            if (c->ssl)
                SSL_free(c->ssl);
            close(fd);
            free(c);
            atomic_fetch_sub(&e->connections, 1);
        }
    }
    return NULL;
}

static bool fail(char *err, size_t err_size, const char *what)
{
    char detail[256];
    ERR_error_string_n(ERR_get_error(), detail, sizeof detail);
    snprintf(err, err_size, "%s: %s", what, detail);
    return false;
}

static bool listen_loopback(loopback_endpoint *e, char *err, size_t err_size)
{
    struct sockaddr_storage addr = {0};
    socklen_t len;
    if (e->ipv6) {
        struct sockaddr_in6 *a = (struct sockaddr_in6 *)&addr;
        a->sin6_family = AF_INET6;
        a->sin6_addr = in6addr_loopback;
        len = sizeof *a;
    } else {
        struct sockaddr_in *a = (struct sockaddr_in *)&addr;
        a->sin_family = AF_INET;
        a->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        len = sizeof *a;
    }
    e->listen_fd = socket(addr.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (e->listen_fd < 0 || bind(e->listen_fd, (struct sockaddr *)&addr, len) != 0 ||
        listen(e->listen_fd, 64) != 0 || getsockname(e->listen_fd, (struct sockaddr *)&addr, &len) != 0) {
        snprintf(err, err_size, "cannot listen on %s", e->ipv6 ? "[::1]" : "127.0.0.1");
        if (e->listen_fd >= 0)
            close(e->listen_fd);
        return false;
    }
    e->port = ntohs(e->ipv6 ? ((struct sockaddr_in6 *)&addr)->sin6_port
                            : ((struct sockaddr_in *)&addr)->sin_port);
    return true;
}

bool loopback_endpoint_start(loopback_endpoint *e, bool ipv6, const char *cert_path,
                             const char *key_path, char *err, size_t err_size)
{
    memset(e, 0, sizeof *e);
    e->ipv6 = ipv6;
    pthread_mutex_init(&e->lock, NULL);
    if (cert_path) {
        e->tls = SSL_CTX_new(TLS_server_method());
        if (!e->tls)
            return fail(err, err_size, "SSL_CTX_new");
        if (SSL_CTX_use_certificate_chain_file(e->tls, cert_path) != 1 ||
            SSL_CTX_use_PrivateKey_file(e->tls, key_path, SSL_FILETYPE_PEM) != 1) {
            SSL_CTX_free(e->tls);
            return fail(err, err_size, cert_path);
        }
    }
    if (!listen_loopback(e, err, err_size)) {
        SSL_CTX_free(e->tls);
        return false;
    }
    if (pthread_create(&e->thread, NULL, serve, e) != 0) {
        snprintf(err, err_size, "pthread_create");
        close(e->listen_fd);
        SSL_CTX_free(e->tls);
        return false;
    }
    return true;
}

size_t loopback_endpoint_requests(loopback_endpoint *e, char (*keys)[64], size_t max)
{
    pthread_mutex_lock(&e->lock);
    size_t n = e->requests;
    for (size_t i = 0; i < max && i < n && i < LOOPBACK_KEYS_MAX; i++)
        memcpy(keys[i], e->keys[i], sizeof keys[i]);
    pthread_mutex_unlock(&e->lock);
    return n;
}

void loopback_endpoint_stop(loopback_endpoint *e)
{
    atomic_store(&e->stop, true);
    pthread_join(e->thread, NULL);
    close(e->listen_fd);
    /* connection threads notice the flag within POLL_MS */
    for (int i = 0; i < 200 && atomic_load(&e->connections) > 0; i++)
        poll(NULL, 0, POLL_MS);
    SSL_CTX_free(e->tls);
    pthread_mutex_destroy(&e->lock);
}
