/* raw_http_server.h - a scripted HTTP/1.1 endpoint on a loopback port for
 * testing an HTTP client byte by byte: it answers each request it reads
 * with the next reply of its script, exactly as written, and can close the
 * connection after a reply, instead of one, or never answer. One thread,
 * one connection at a time. */
#ifndef SLUICE_TEST_RAW_HTTP_SERVER_H
#define SLUICE_TEST_RAW_HTTP_SERVER_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>

typedef enum raw_action {
    RAW_ANSWER,           /* write text, keep the connection */
    RAW_ANSWER_AND_CLOSE, /* write text, then close */
    RAW_CLOSE,            /* close without a word */
    RAW_SILENCE,          /* never answer; wait for the client to go */
    RAW_ANSWER_THEN_EXTRA, /* write text, a moment later the server's extra, unasked; keep it */
} raw_action;

typedef struct raw_reply {
    raw_action action;
    const char *text;
} raw_reply;

typedef struct raw_http_server {
    int listen_fd;
    int port;
    pthread_t thread;
    const raw_reply *script;
    size_t script_len;
    const char *extra;      /* what RAW_ANSWER_THEN_EXTRA writes unasked */
    atomic_size_t replies;  /* script steps taken */
    atomic_int accepted;    /* connections */
    atomic_bool stop;
    char last_request[8192]; /* the latest request, head and body */
    atomic_size_t last_request_len;
} raw_http_server;

/* Starts s on a free 127.0.0.1 port with script (which must outlive it);
 * false if it cannot listen. */
bool raw_http_server_start(raw_http_server *s, const raw_reply *script, size_t script_len);
/* The same, with the bytes RAW_ANSWER_THEN_EXTRA sends after its answer. */
bool raw_http_server_start_with_extra(raw_http_server *s, const raw_reply *script, size_t script_len,
                                      const char *extra);
/* Stops the thread and closes the port. */
void raw_http_server_stop(raw_http_server *s);

#endif
