/* http_client.h - asynchronous HTTP requests on a libevent base.
 *
 * One client per worker thread. Plain http:// URLs go through sluice's own
 * HTTP/1.1 client (http1_client.h), the rest (https://, credentials in the
 * URL, a proxy set in the environment) through libcurl (http_curl.h).
 * Connections are kept alive and reused across requests to the same host.
 * Callbacks run on the base's thread. */
#ifndef SLUICE_HTTP_CLIENT_H
#define SLUICE_HTTP_CLIENT_H

#include <stdbool.h>
#include <stddef.h>

#include <event2/event.h>

#include "http/http_exchange.h"

typedef struct sl_http_client sl_http_client;

/* A client on base; NULL (message in err) if it cannot be set up. */
sl_http_client *sl_http_client_new(struct event_base *base, char *err, size_t err_size);
/* Cancels outstanding requests (their callbacks are not called) and frees. */
void sl_http_client_free(sl_http_client *client);
/* Starts a request; done(arg, result) is called exactly once, later, from
 * the event loop (never from inside this call). False if it cannot start. */
bool sl_http_send(sl_http_client *client, const sl_http_request *request, sl_http_done_fn done,
                  void *arg);

#endif
