/* admin.c - see admin.h. */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include <event2/buffer.h>
#include <event2/event.h>
#include <event2/http.h>
#include <event2/keyvalq_struct.h>
#include <event2/util.h>

#include "daemon/admin.h"

#define ADMIN_TIMEOUT_S 10
#define ADMIN_MAX_HEADERS 8192

struct sl_admin {
    struct event_base *base;
    struct evhttp *http;
    int port;
    pthread_t thread;
    bool running;
    const sl_admin_source *source;
};

static void reply_text(struct evhttp_request *req, int code, const char *reason,
                       const char *content_type, struct evbuffer *body)
{
    evhttp_add_header(evhttp_request_get_output_headers(req), "Content-Type", content_type);
    evhttp_send_reply(req, code, reason, body);
}

static void on_request(struct evhttp_request *req, void *arg)
{
    sl_admin *admin = arg;
    const sl_admin_source *source = admin->source;
    struct evbuffer *body = evbuffer_new();
    if (!body) {
        evhttp_send_error(req, 500, "Out of memory");
        return;
    }
    enum evhttp_cmd_type method = evhttp_request_get_command(req);
    const char *path = evhttp_uri_get_path(evhttp_request_get_evhttp_uri(req));
    const char *plain = "text/plain; charset=utf-8";
    if (method != EVHTTP_REQ_GET && method != EVHTTP_REQ_HEAD) {
        evhttp_add_header(evhttp_request_get_output_headers(req), "Allow", "GET, HEAD");
        evbuffer_add_printf(body, "only GET and HEAD\n");
        reply_text(req, 405, "Method Not Allowed", plain, body);
    } else if (path && strcmp(path, "/metrics") == 0) {
        if (source->metrics(source->ctx, body))
            reply_text(req, 200, "OK", "text/plain; version=0.0.4; charset=utf-8", body);
        else
            evhttp_send_error(req, 500, "Out of memory");
    } else if (path && strcmp(path, "/healthz") == 0) {
        evbuffer_add_printf(body, "ok\n");
        reply_text(req, 200, "OK", plain, body);
    } else if (path && strcmp(path, "/readyz") == 0) {
        char reason[256] = "";
        bool ready = source->ready(source->ctx, reason, sizeof reason);
        evbuffer_add_printf(body, "%s\n", ready ? "ready" : reason);
        reply_text(req, ready ? 200 : 503, ready ? "OK" : "Service Unavailable", plain, body);
    } else {
        evbuffer_add_printf(body, "not found: try /metrics, /healthz or /readyz\n");
        reply_text(req, 404, "Not Found", plain, body);
    }
    evbuffer_free(body);
}

static void *admin_thread(void *arg)
{
    sl_admin *admin = arg;
    event_base_dispatch(admin->base);
    return NULL;
}

sl_admin *sl_admin_start(const char *host, int port, const sl_admin_source *source, char *err,
                         size_t err_size)
{
    sl_admin *admin = calloc(1, sizeof *admin);
    if (!admin) {
        snprintf(err, err_size, "admin: out of memory");
        return NULL;
    }
    admin->source = source;
    admin->base = event_base_new();
    admin->http = admin->base ? evhttp_new(admin->base) : NULL;
    if (!admin->http) {
        snprintf(err, err_size, "admin: out of memory");
        sl_admin_stop(admin);
        return NULL;
    }
    evhttp_set_timeout(admin->http, ADMIN_TIMEOUT_S);
    evhttp_set_max_headers_size(admin->http, ADMIN_MAX_HEADERS);
    evhttp_set_max_body_size(admin->http, 0);
    evhttp_set_allowed_methods(admin->http, EVHTTP_REQ_GET | EVHTTP_REQ_HEAD | EVHTTP_REQ_POST |
                                                EVHTTP_REQ_PUT | EVHTTP_REQ_DELETE);
    evhttp_set_gencb(admin->http, on_request, admin);
    struct evhttp_bound_socket *bound =
        evhttp_bind_socket_with_handle(admin->http, host, (ev_uint16_t)port);
    if (!bound) {
        snprintf(err, err_size, "admin: cannot listen on %s:%d: %s", host, port, strerror(errno));
        sl_admin_stop(admin);
        return NULL;
    }
    struct sockaddr_storage addr;
    socklen_t len = sizeof addr;
    if (getsockname(evhttp_bound_socket_get_fd(bound), (struct sockaddr *)&addr, &len) == 0)
        admin->port = ntohs(addr.ss_family == AF_INET6 ? ((struct sockaddr_in6 *)&addr)->sin6_port
                                                       : ((struct sockaddr_in *)&addr)->sin_port);
    if (pthread_create(&admin->thread, NULL, admin_thread, admin) != 0) {
        snprintf(err, err_size, "admin: cannot start its thread");
        sl_admin_stop(admin);
        return NULL;
    }
    admin->running = true;
    return admin;
}

int sl_admin_port(const sl_admin *admin)
{
    return admin->port;
}

void sl_admin_stop(sl_admin *admin)
{
    if (!admin)
        return;
    if (admin->running) {
        event_base_loopbreak(admin->base);
        pthread_join(admin->thread, NULL);
    }
    if (admin->http)
        evhttp_free(admin->http);
    if (admin->base)
        event_base_free(admin->base);
    free(admin);
}
