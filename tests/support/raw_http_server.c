/* raw_http_server.c - see raw_http_server.h. */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <unistd.h>

#include "raw_http_server.h"

#define POLL_MS 50
#define EXTRA_AFTER_MS 20

/* Waits up to POLL_MS for fd to be readable; false if s is stopping. */
static bool wait_readable(raw_http_server *s, int fd)
{
    while (!atomic_load(&s->stop)) {
        struct pollfd p = {.fd = fd, .events = POLLIN};
        if (poll(&p, 1, POLL_MS) > 0)
            return true;
    }
    return false;
}

/* Reads one request (head, then Content-Length bytes of body) into
 * s->last_request; false on close, error or stop. */
static bool read_request(raw_http_server *s, int fd)
{
    size_t len = 0, need = 0;
    while (need == 0 || len < need) {
        if (len == sizeof s->last_request || !wait_readable(s, fd))
            return false;
        ssize_t n = read(fd, s->last_request + len, sizeof s->last_request - len);
        if (n <= 0)
            return false;
        len += (size_t)n;
        if (need == 0) {
            char *end = memmem(s->last_request, len, "\r\n\r\n", 4);
            if (!end)
                continue;
            size_t head = (size_t)(end - s->last_request) + 4;
            size_t body = 0;
            for (char *line = s->last_request; line < end; line = strstr(line, "\r\n") + 2)
                if (strncasecmp(line, "Content-Length:", 15) == 0)
                    body = strtoul(line + 15, NULL, 10);
            need = head + body;
        }
    }
    atomic_store(&s->last_request_len, len);
    return true;
}

static void serve_connection(raw_http_server *s, int fd)
{
    while (read_request(s, fd)) {
        size_t step = atomic_fetch_add(&s->replies, 1);
        if (step >= s->script_len)
            return;
        const raw_reply *r = &s->script[step];
        if (r->action == RAW_CLOSE)
            return;
        if (r->action == RAW_SILENCE) {
            char byte;
            while (wait_readable(s, fd) && read(fd, &byte, 1) > 0)
                ;
            return;
        }
        size_t len = strlen(r->text);
        if (write(fd, r->text, len) != (ssize_t)len || r->action == RAW_ANSWER_AND_CLOSE)
            return;
        if (r->action == RAW_ANSWER_THEN_EXTRA) {
            /* apart from the answer, so the client has taken the answer alone */
            poll(NULL, 0, EXTRA_AFTER_MS);
            len = strlen(s->extra);
            if (write(fd, s->extra, len) != (ssize_t)len)
                return;
        }
    }
}

static void *serve(void *arg)
{
    raw_http_server *s = arg;
    while (wait_readable(s, s->listen_fd)) {
        int fd = accept(s->listen_fd, NULL, NULL);
        if (fd < 0)
            continue;
        atomic_fetch_add(&s->accepted, 1);
        serve_connection(s, fd);
        close(fd);
    }
    return NULL;
}

bool raw_http_server_start_with_extra(raw_http_server *s, const raw_reply *script, size_t script_len,
                                      const char *extra)
{
    memset(s, 0, sizeof *s);
    s->script = script;
    s->script_len = script_len;
    s->extra = extra;
    s->listen_fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (s->listen_fd < 0)
        return false;
    struct sockaddr_in addr = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t len = sizeof addr;
    if (bind(s->listen_fd, (struct sockaddr *)&addr, sizeof addr) != 0 ||
        listen(s->listen_fd, 16) != 0 ||
        getsockname(s->listen_fd, (struct sockaddr *)&addr, &len) != 0 ||
        pthread_create(&s->thread, NULL, serve, s) != 0) {
        close(s->listen_fd);
        return false;
    }
    s->port = ntohs(addr.sin_port);
    return true;
}

bool raw_http_server_start(raw_http_server *s, const raw_reply *script, size_t script_len)
{
    return raw_http_server_start_with_extra(s, script, script_len, "");
}

void raw_http_server_stop(raw_http_server *s)
{
    atomic_store(&s->stop, true);
    pthread_join(s->thread, NULL);
    close(s->listen_fd);
}
