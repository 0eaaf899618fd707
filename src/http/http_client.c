/* http_client.c - chooses the client of each request. See http_client.h. */
#include <stdlib.h>
#include <stdio.h>

#include "http/http1_client.h"
#include "http/http_client.h"
#include "http/http_curl.h"

struct sl_http_client {
    sl_h1_client *own;   /* http:// */
    sl_curl_client *curl;
    bool proxied;        /* a proxy is set for http://: libcurl honours it */
};

/* The variables libcurl reads for a proxy of http:// URLs. */
static bool http_proxy_set(void)
{
    static const char *const names[] = {"http_proxy", "all_proxy", "ALL_PROXY"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        const char *value = getenv(names[i]);
        if (value && *value)
            return true;
    }
    return false;
}

sl_http_client *sl_http_client_new(struct event_base *base, char *err, size_t err_size)
{
    sl_http_client *client = calloc(1, sizeof *client);
    if (!client) {
        snprintf(err, err_size, "http client: out of memory");
        return NULL;
    }
    client->proxied = http_proxy_set();
    client->curl = sl_curl_client_new(base, err, err_size);
    client->own = client->curl ? sl_h1_client_new(base, err, err_size) : NULL;
    if (!client->own) {
        sl_http_client_free(client);
        return NULL;
    }
    return client;
}

void sl_http_client_free(sl_http_client *client)
{
    if (!client)
        return;
    sl_h1_client_free(client->own);
    sl_curl_client_free(client->curl);
    free(client);
}

bool sl_http_send(sl_http_client *client, const sl_http_request *request, sl_http_done_fn done,
                  void *arg)
{
    sl_h1_target target;
    if (!client->proxied && sl_h1_target_parse(request->url, &target))
        return sl_h1_send(client->own, &target, request, done, arg);
    return sl_curl_send(client->curl, request, done, arg);
}
