/* http1_client.h - a lean HTTP/1.1 client for http:// URLs on a libevent
 * base: keep-alive connections pooled per host and port, names resolved
 * with evdns (kept 60 s), one send and one receive per request on a
 * reused connection. https and everything unusual stay with libcurl
 * (http_curl.h); http_client.h chooses.
 *
 * Why it exists: with libcurl, a request cost sluice ~31 us of CPU, more
 * than half of it in libcurl and the libc calls it makes (bench/RESULTS.md),
 * which kept throughput under its target on a 2-core box. */
#ifndef SLUICE_HTTP1_CLIENT_H
#define SLUICE_HTTP1_CLIENT_H

#include <stdbool.h>
#include <stddef.h>

#include <event2/event.h>

#include "http/http1_request.h"
#include "http/http_exchange.h"

typedef struct sl_h1_client sl_h1_client;

/* A client on base; NULL (message in err) if out of memory. */
sl_h1_client *sl_h1_client_new(struct event_base *base, char *err, size_t err_size);
/* Cancels outstanding requests (their callbacks are not called), closes
 * every connection and frees. */
void sl_h1_client_free(sl_h1_client *client);
/* Starts request to target (parsed from request->url); done(arg, result)
 * is called exactly once, later, from the event loop. False if it cannot
 * start (out of memory). */
bool sl_h1_send(sl_h1_client *client, const sl_h1_target *target, const sl_http_request *request,
                sl_http_done_fn done, void *arg);
/* Connections open (idle or busy), for tests. */
size_t sl_h1_connection_count(const sl_h1_client *client);

#endif
