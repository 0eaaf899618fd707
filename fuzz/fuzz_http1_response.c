/* fuzz_http1_response.c - the HTTP/1.1 response parser, read the way the
 * own client reads a socket (src/http/http1_client.c, read_some): bytes
 * arrive in recv()-sized pieces into one 8 KiB input buffer, each arrival
 * is offered to sl_h1_response_feed once, the bytes it did not take stay at
 * the front of the buffer, a full buffer with no progress is an error, and
 * the end of the input is the peer's close (sl_h1_response_eof).
 *
 * Input: byte 0 bit 0 = the request was HEAD; bytes 1-2 seed the sizes of
 * the pieces; the rest is what the server sent.
 *
 * Checked, beyond memory safety: the parser never claims more bytes than it
 * was given, and where the pieces end does not change the outcome. Every
 * input is read twice, once in the pieces the seed picks and once in pieces
 * as large as the buffer takes; both must end the same way (DONE or ERROR),
 * after the same number of bytes, with the same status, keep-alive and
 * Retry-After. */
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "http/http1_response.h"
#include "violation.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* READ_BUFFER_SIZE of src/http/http1_client.c (file-local there). */
#define CLIENT_BUFFER_SIZE 8192

typedef struct outcome {
    sl_h1_progress progress;
    bool buffer_full;  /* the client's own error: a line longer than its buffer */
    size_t consumed;   /* bytes of the input the response took */
    int status;
    bool keep_alive;
    bool has_retry_after;
    char retry_after[sizeof ((sl_h1_response *)0)->retry_after];
} outcome;

/* The size of the next piece: often tiny, sometimes all the room there is. */
static size_t next_piece(uint32_t *state, size_t room)
{
    if (*state == 0)
        return room; /* the reference reading: as much as fits */
    *state ^= *state << 13;
    *state ^= *state >> 17;
    *state ^= *state << 5;
    size_t n;
    switch (*state & 3) {
    case 0: n = 1; break;
    case 1: n = 1 + (*state >> 2) % 16; break;
    case 2: n = 1 + (*state >> 2) % 1024; break;
    default: n = room; break;
    }
    return n < room ? n : room;
}

static void read_response(const char *in, size_t in_size, bool head_request, uint32_t seed,
                          outcome *out)
{
    char buffer[CLIENT_BUFFER_SIZE];
    sl_h1_response r;
    sl_h1_response_start(&r, head_request);
    memset(out, 0, sizeof *out);
    size_t buffered = 0, offered = 0, taken = 0;
    sl_h1_progress progress = SL_H1_MORE;
    for (;;) {
        if (offered == in_size) { /* recv() returned 0 */
            progress = sl_h1_response_eof(&r);
            break;
        }
        size_t n = next_piece(&seed, sizeof buffer - buffered);
        if (n > in_size - offered)
            n = in_size - offered;
        memcpy(buffer + buffered, in + offered, n);
        buffered += n;
        offered += n;
        size_t used = (size_t)-1;
        progress = sl_h1_response_feed(&r, buffer, buffered, &used);
        if (used > buffered)
            sl_fuzz_violation("feed took %zu bytes of %zu", used, buffered);
        taken += used;
        memmove(buffer, buffer + used, buffered - used);
        buffered -= used;
        if (progress != SL_H1_MORE)
            break;
        if (buffered == sizeof buffer) {
            out->buffer_full = true;
            progress = SL_H1_ERROR;
            break;
        }
    }
    out->progress = progress;
    out->consumed = taken;
    if (progress == SL_H1_ERROR && !out->buffer_full && !r.error)
        sl_fuzz_violation("ERROR without r.error");
    if (progress == SL_H1_DONE) {
        if (r.status < 200 || r.status > 999 || r.status == 101)
            sl_fuzz_violation("DONE with status %d", r.status);
        if (memchr(r.retry_after, '\0', sizeof r.retry_after) == NULL)
            sl_fuzz_violation("retry_after not NUL-terminated");
        out->status = r.status;
        out->keep_alive = r.keep_alive;
        out->has_retry_after = r.has_retry_after;
        memcpy(out->retry_after, r.retry_after, sizeof out->retry_after);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 3)
        return 0;
    bool head_request = data[0] & 1;
    uint32_t seed = (uint32_t)data[1] << 8 | data[2];
    seed = seed * 2654435761u | 1; /* never 0: 0 is the reference reading */
    const char *in = (const char *)data + 3;
    size_t in_size = size - 3;

    outcome pieces, whole;
    read_response(in, in_size, head_request, seed, &pieces);
    read_response(in, in_size, head_request, 0, &whole);
    if (pieces.progress != whole.progress)
        sl_fuzz_violation("pieces end with %d, whole with %d", pieces.progress, whole.progress);
    if (pieces.progress == SL_H1_DONE &&
        (pieces.consumed != whole.consumed || pieces.status != whole.status ||
         pieces.keep_alive != whole.keep_alive || pieces.has_retry_after != whole.has_retry_after ||
         strcmp(pieces.retry_after, whole.retry_after) != 0))
        sl_fuzz_violation("pieces and whole differ: taken %zu/%zu, status %d/%d, keep-alive %d/%d, "
                          "Retry-After \"%s\"/\"%s\"", pieces.consumed, whole.consumed, pieces.status,
                          whole.status, pieces.keep_alive, whole.keep_alive, pieces.retry_after,
                          whole.retry_after);
    return 0;
}
