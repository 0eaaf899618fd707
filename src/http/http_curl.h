/* http_curl.h - asynchronous HTTP requests with libcurl's multi-socket
 * API, driven by a libevent base (the shape of curl's hiperfifo example):
 * the client for https:// and whatever http1_client.h leaves to it.
 *
 * Connections are kept alive and reused across requests to the same host.
 * Callbacks run on the base's thread. */
#ifndef SLUICE_HTTP_CURL_H
#define SLUICE_HTTP_CURL_H

#include <stdbool.h>
#include <stddef.h>

#include <event2/event.h>

#include "http/http_exchange.h"

typedef struct sl_curl_client sl_curl_client;

/* A client on base; NULL (message in err) if libcurl fails to set up. */
sl_curl_client *sl_curl_client_new(struct event_base *base, char *err, size_t err_size);
/* Cancels outstanding requests (their callbacks are not called) and frees. */
void sl_curl_client_free(sl_curl_client *client);
/* Starts a request; done(arg, result) is called exactly once, later, from
 * the event loop (never from inside this call). False if it cannot start. */
bool sl_curl_send(sl_curl_client *client, const sl_http_request *request, sl_http_done_fn done,
                  void *arg);

#endif
