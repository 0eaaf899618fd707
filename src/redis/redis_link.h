/* redis_link.h - one connection to a Redis server, over TCP, a unix socket
 * or TLS, on a libevent base: the transport under redis_conn, notify and
 * the CLI. hiredis does the protocol only (its formatter and its I/O-free
 * reader); the link owns the socket (a bufferevent, an OpenSSL one for
 * rediss://) and bounds every wait: connecting, the TLS handshake, and the
 * silence while replies are due.
 *
 * Replies come in the order the commands went, each to its command's
 * callback. A link that fails or is closed calls every pending callback
 * with NULL, then its event callback once with up = false and why; it
 * never reconnects (the owner opens a new link, after its own backoff). */
#ifndef SLUICE_REDIS_LINK_H
#define SLUICE_REDIS_LINK_H

#include <stdbool.h>
#include <stddef.h>

#include <event2/event.h>
#include <hiredis/hiredis.h>

#include "config/redis_url.h"

typedef struct sl_redis_link sl_redis_link;

/* Every wait of a link, in milliseconds (> 0). */
typedef struct sl_redis_link_timeouts {
    int connect_ms;   /* from open until the TCP (or unix) connect completes */
    int handshake_ms; /* from then until the TLS handshake completes */
    int reply_ms;     /* longest silence while a reply is due */
} sl_redis_link_timeouts;

/* Options of one command (sl_redis_link_send flags). */
enum {
    /* The callback owns the reply (frees it with freeReplyObject). */
    SL_LINK_KEEP_REPLY = 1,
    /* A (P)SUBSCRIBE: the callback receives this and every later message,
     * and the silence of an idle subscription is no timeout. */
    SL_LINK_SUBSCRIBE = 2,
};

/* A command's reply, or NULL if the link closed before it came. Unless
 * SL_LINK_KEEP_REPLY, the reply is freed after the callback returns. The
 * callback may send and close, but not free the link. */
typedef void (*sl_redis_link_reply_fn)(redisReply *reply, void *arg);
/* up: connected (TLS handshake done), commands may go. !up: the link is
 * closed for good, why says what happened ("connect timed out after 5000
 * ms", "certificate verify failed: ...", valid until the link is freed);
 * the owner may free the link from inside this call, and must free it
 * some time. */
typedef void (*sl_redis_link_event_fn)(void *arg, bool up, const char *why);
/* Sees every reply before its callback (NULL: none), e.g. to count errors. */
typedef void (*sl_redis_link_tap_fn)(void *arg, const redisReply *reply);

/* Starts connecting to target (which must outlive the link; TLS if
 * target->tls). on_event follows, from the loop, never from inside this
 * call. NULL with the reason in err when it cannot even start (the name
 * does not resolve, a TLS file is unusable, out of memory). */
sl_redis_link *sl_redis_link_open(struct event_base *base, const sl_redis_target *target,
                                  const sl_redis_link_timeouts *timeouts,
                                  sl_redis_link_event_fn on_event, sl_redis_link_tap_fn tap,
                                  void *arg, char *err, size_t err_size);

/* Queues a command (argvlen NULL: strlen of each argument) whose reply
 * goes to fn(reply, fn_arg). False, and no callback, if the link is not up
 * or memory ran out. */
bool sl_redis_link_send_argv(sl_redis_link *link, int argc, const char **argv,
                             const size_t *argvlen, sl_redis_link_reply_fn fn, void *fn_arg,
                             unsigned flags);

/* The same for a command already in the protocol (cmd[0..len), copied). */
bool sl_redis_link_send_formatted(sl_redis_link *link, const char *cmd, size_t len,
                                  sl_redis_link_reply_fn fn, void *fn_arg, unsigned flags);

/* True between on_event(up) and the link's closing. */
bool sl_redis_link_up(const sl_redis_link *link);

/* Closes the link because of why: pending callbacks get NULL and on_event
 * reports why, from the loop on its next turn. Safe from any callback. */
void sl_redis_link_close(sl_redis_link *link, const char *why);

/* Closes at once and frees: pending callbacks get NULL, on_event is not
 * called. NULL is a no-op. Not from a reply callback. */
void sl_redis_link_free(sl_redis_link *link);

#endif
