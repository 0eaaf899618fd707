/* http1_response.h - an incremental parser of one HTTP/1.1 response, as
 * the client that sent the request reads it (pure: bytes in, state out).
 *
 * The head is read a whole line at a time: the caller keeps the bytes the
 * parser did not take and offers them again, with more, once more have
 * arrived. Body bytes are taken as they come and discarded (sluice only
 * needs the status and Retry-After). Interim 1xx responses are skipped. */
#ifndef SLUICE_HTTP1_RESPONSE_H
#define SLUICE_HTTP1_RESPONSE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "job/ratelimit_headers.h"

/* The most a response's head (status line and header lines) may take. */
#define SL_H1_HEAD_MAX ((size_t)64 << 10)

typedef enum sl_h1_progress {
    SL_H1_MORE,  /* needs more bytes */
    SL_H1_DONE,  /* the response ended; later bytes are not its */
    SL_H1_ERROR, /* not a valid response; see error */
} sl_h1_progress;

typedef enum sl_h1_state {
    SL_H1_STATUS_LINE,
    SL_H1_HEADER_LINE,
    SL_H1_BODY_LENGTH,   /* Content-Length bytes */
    SL_H1_BODY_TO_CLOSE, /* neither length nor chunks: the body ends with the connection */
    SL_H1_CHUNK_SIZE,
    SL_H1_CHUNK_DATA,
    SL_H1_CHUNK_END,     /* the CRLF after a chunk's data */
    SL_H1_TRAILER_LINE,
    SL_H1_FINISHED,
} sl_h1_state;

typedef struct sl_h1_response {
    /* What the response says; complete once SL_H1_DONE is returned. */
    int status;
    char retry_after[128]; /* the final response's Retry-After, truncated */
    bool has_retry_after;
    sl_ratelimit_raw ratelimit; /* the final response's rate-limit headers */
    bool keep_alive;       /* the connection may carry another request */
    const char *error;     /* static text, once SL_H1_ERROR is returned */
    /* Parsing state. */
    sl_h1_state state;
    bool head_request;     /* a response to HEAD has no body whatever it says */
    bool http10;
    bool connection_close, connection_keep_alive;
    bool chunked;
    bool has_length;
    uint64_t length;       /* Content-Length */
    uint64_t remaining;    /* bytes left of the body or of the current chunk */
    size_t head_bytes;     /* of the current head, against SL_H1_HEAD_MAX */
    bool started;          /* any byte of the response arrived */
} sl_h1_response;

/* Ready to read the response to a request (head_request: it was a HEAD). */
void sl_h1_response_start(sl_h1_response *r, bool head_request);
/* Takes what it can of data[0, len) and says so in *used: whole lines of
 * the head, any bytes of the body. DONE, MORE or ERROR (r->error says why). */
sl_h1_progress sl_h1_response_feed(sl_h1_response *r, const char *data, size_t len, size_t *used);
/* The peer closed the connection: DONE where that ends the body (one read
 * to the close), else ERROR. */
sl_h1_progress sl_h1_response_eof(sl_h1_response *r);

#endif
