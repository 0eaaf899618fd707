/* admin.h - the admin HTTP endpoint: GET /metrics (Prometheus text),
 * /healthz (the process answers) and /readyz (ready to work), served by
 * evhttp on a thread of its own so that a slow scraper never delays a
 * departure. */
#ifndef SLUICE_ADMIN_H
#define SLUICE_ADMIN_H

#include <stdbool.h>
#include <stddef.h>

struct evbuffer;

/* What the endpoint asks of the daemon; called on the admin thread. */
typedef struct sl_admin_source {
    /* Appends the metrics text to out; false if it could not. */
    bool (*metrics)(void *ctx, struct evbuffer *out);
    /* True when ready; otherwise writes why (one line) to reason. */
    bool (*ready)(void *ctx, char *reason, size_t reason_size);
    void *ctx;
} sl_admin_source;

typedef struct sl_admin sl_admin;

/* Listens on host:port (port 0: any free port) and starts serving; source
 * must outlive the endpoint. NULL with the reason in err if it cannot
 * (address in use, ...). libevent must be set up for threads. */
sl_admin *sl_admin_start(const char *host, int port, const sl_admin_source *source, char *err,
                         size_t err_size);
/* The port it listens on. */
int sl_admin_port(const sl_admin *admin);
/* Stops serving, joins its thread and frees; NULL is a no-op. */
void sl_admin_stop(sl_admin *admin);

#endif
