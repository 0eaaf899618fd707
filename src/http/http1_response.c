/* http1_response.c - the HTTP/1.1 response parser. See http1_response.h.
 *
 * Framing follows RFC 9112 section 6.3: no body for HEAD, 1xx, 204 and
 * 304; chunked when Transfer-Encoding ends in chunked; else
 * Content-Length; else the body runs to the close of the connection. */
#include <string.h>
#include <strings.h>

#include "base/hex.h"
#include "http/http1_response.h"

void sl_h1_response_start(sl_h1_response *r, bool head_request)
{
    memset(r, 0, sizeof *r);
    r->state = SL_H1_STATUS_LINE;
    r->head_request = head_request;
}

static sl_h1_progress fail(sl_h1_response *r, const char *why)
{
    r->error = why;
    r->state = SL_H1_FINISHED;
    return SL_H1_ERROR;
}

static sl_h1_progress finish(sl_h1_response *r)
{
    r->state = SL_H1_FINISHED;
    return SL_H1_DONE;
}

static bool is_ows(char c)
{
    return c == ' ' || c == '\t';
}

/* "HTTP/1.x NNN[ reason]" */
static sl_h1_progress parse_status_line(sl_h1_response *r, const char *line, size_t len)
{
    if (len < 12 || memcmp(line, "HTTP/1.", 7) != 0 || (line[7] != '0' && line[7] != '1') ||
        line[8] != ' ')
        return fail(r, "bad status line");
    int status = 0;
    for (size_t i = 9; i < 12; i++) {
        if (line[i] < '0' || line[i] > '9')
            return fail(r, "bad status code");
        status = status * 10 + (line[i] - '0');
    }
    if (status < 100 || (len > 12 && line[12] != ' '))
        return fail(r, "bad status code");
    /* Each response (an interim one included) starts afresh. */
    bool head_request = r->head_request;
    size_t head_bytes = r->head_bytes;
    sl_h1_response_start(r, head_request);
    r->head_bytes = head_bytes;
    r->started = true;
    r->status = status;
    r->http10 = line[7] == '0';
    r->state = SL_H1_HEADER_LINE;
    return SL_H1_MORE;
}

/* Whether the comma-separated list value[0, len) holds token. */
static bool list_has(const char *value, size_t len, const char *token)
{
    size_t tlen = strlen(token), i = 0;
    while (i < len) {
        while (i < len && (is_ows(value[i]) || value[i] == ','))
            i++;
        size_t start = i;
        while (i < len && value[i] != ',')
            i++;
        size_t end = i;
        while (end > start && is_ows(value[end - 1]))
            end--;
        if (end - start == tlen && strncasecmp(value + start, token, tlen) == 0)
            return true;
    }
    return false;
}

/* Whether the last coding of the list value[0, len) is token. */
static bool list_ends_with(const char *value, size_t len, const char *token)
{
    size_t end = len;
    while (end > 0 && (is_ows(value[end - 1]) || value[end - 1] == ','))
        end--;
    size_t start = end;
    while (start > 0 && value[start - 1] != ',' && !is_ows(value[start - 1]))
        start--;
    size_t tlen = strlen(token);
    return end - start == tlen && strncasecmp(value + start, token, tlen) == 0;
}

static bool name_is(const char *name, size_t len, const char *expected)
{
    return strlen(expected) == len && strncasecmp(name, expected, len) == 0;
}

static sl_h1_progress parse_content_length(sl_h1_response *r, const char *value, size_t len)
{
    if (len == 0)
        return fail(r, "bad Content-Length");
    uint64_t n = 0;
    for (size_t i = 0; i < len; i++) {
        if (value[i] < '0' || value[i] > '9' || n > (UINT64_MAX - 9) / 10)
            return fail(r, "bad Content-Length");
        n = n * 10 + (uint64_t)(value[i] - '0');
    }
    if (r->has_length && r->length != n)
        return fail(r, "conflicting Content-Length headers");
    r->has_length = true;
    r->length = n;
    return SL_H1_MORE;
}

static sl_h1_progress parse_header_line(sl_h1_response *r, const char *line, size_t len)
{
    if (is_ows(line[0]))
        return SL_H1_MORE; /* obsolete line folding: a continuation we need none of */
    const char *colon = memchr(line, ':', len);
    if (!colon || colon == line)
        return fail(r, "bad header line");
    size_t name_len = (size_t)(colon - line);
    const char *value = colon + 1;
    size_t value_len = len - name_len - 1;
    while (value_len > 0 && is_ows(value[0])) {
        value++;
        value_len--;
    }
    while (value_len > 0 && is_ows(value[value_len - 1]))
        value_len--;

    if (name_is(line, name_len, "Content-Length"))
        return parse_content_length(r, value, value_len);
    if (name_is(line, name_len, "Transfer-Encoding")) {
        r->chunked = list_ends_with(value, value_len, "chunked");
    } else if (name_is(line, name_len, "Connection")) {
        r->connection_close |= list_has(value, value_len, "close");
        r->connection_keep_alive |= list_has(value, value_len, "keep-alive");
    } else if (name_is(line, name_len, "Retry-After")) {
        size_t n = value_len < sizeof r->retry_after - 1 ? value_len : sizeof r->retry_after - 1;
        memcpy(r->retry_after, value, n);
        r->retry_after[n] = '\0';
        r->has_retry_after = true;
    } else {
        sl_ratelimit_capture(&r->ratelimit, line, name_len, value, value_len);
    }
    return SL_H1_MORE;
}

/* The blank line after the headers: how (and whether) a body follows. */
static sl_h1_progress end_of_head(sl_h1_response *r)
{
    if (r->status == 101)
        return fail(r, "unexpected 101 Switching Protocols");
    if (r->status < 200) { /* interim (100 Continue, 103 Early Hints): the real one follows */
        r->state = SL_H1_STATUS_LINE;
        return SL_H1_MORE;
    }
    r->keep_alive = !r->connection_close && (!r->http10 || r->connection_keep_alive);
    if (r->head_request || r->status == 204 || r->status == 304)
        return finish(r);
    if (r->chunked) {
        r->state = SL_H1_CHUNK_SIZE;
        return SL_H1_MORE;
    }
    if (r->has_length) {
        r->remaining = r->length;
        r->state = SL_H1_BODY_LENGTH;
        return r->remaining == 0 ? finish(r) : SL_H1_MORE;
    }
    r->keep_alive = false;
    r->state = SL_H1_BODY_TO_CLOSE;
    return SL_H1_MORE;
}

/* "1a2b[;extensions]" */
static sl_h1_progress parse_chunk_size(sl_h1_response *r, const char *line, size_t len)
{
    uint64_t size = 0;
    size_t i = 0;
    for (; i < len; i++) {
        int d = sl_hex_digit(line[i]);
        if (d < 0)
            break;
        if (size > (UINT64_MAX >> 4))
            return fail(r, "chunk size too large");
        size = size << 4 | (uint64_t)d;
    }
    while (i < len && is_ows(line[i]))
        i++;
    if (i == 0 || (i < len && line[i] != ';'))
        return fail(r, "bad chunk size");
    r->remaining = size;
    r->state = size == 0 ? SL_H1_TRAILER_LINE : SL_H1_CHUNK_DATA;
    return SL_H1_MORE;
}

/* One whole line (CRLF or a bare LF removed) in the current state. */
static sl_h1_progress take_line(sl_h1_response *r, const char *line, size_t len)
{
    switch (r->state) {
    case SL_H1_STATUS_LINE:
        if (len == 0 && !r->started)
            return SL_H1_MORE; /* tolerated: an empty line before the status line */
        return parse_status_line(r, line, len);
    case SL_H1_HEADER_LINE:
        return len == 0 ? end_of_head(r) : parse_header_line(r, line, len);
    case SL_H1_CHUNK_SIZE:
        return parse_chunk_size(r, line, len);
    case SL_H1_CHUNK_END:
        if (len != 0)
            return fail(r, "no line end after chunk data");
        r->state = SL_H1_CHUNK_SIZE;
        return SL_H1_MORE;
    case SL_H1_TRAILER_LINE:
        return len == 0 ? finish(r) : SL_H1_MORE;
    default:
        return fail(r, "parser misuse");
    }
}

static bool reads_lines(sl_h1_state state)
{
    return state == SL_H1_STATUS_LINE || state == SL_H1_HEADER_LINE ||
           state == SL_H1_CHUNK_SIZE || state == SL_H1_CHUNK_END || state == SL_H1_TRAILER_LINE;
}

sl_h1_progress sl_h1_response_feed(sl_h1_response *r, const char *data, size_t len, size_t *used)
{
    size_t at = 0;
    sl_h1_progress progress = r->state == SL_H1_FINISHED ? SL_H1_DONE : SL_H1_MORE;
    while (progress == SL_H1_MORE && at < len) {
        if (reads_lines(r->state)) {
            const char *nl = memchr(data + at, '\n', len - at);
            bool in_head = r->state == SL_H1_STATUS_LINE || r->state == SL_H1_HEADER_LINE;
            if (in_head && r->head_bytes + (nl ? (size_t)(nl - (data + at)) : len - at) > SL_H1_HEAD_MAX)
                return fail(r, "response head too large");
            if (!nl)
                break;
            size_t line_len = (size_t)(nl - (data + at));
            if (in_head)
                r->head_bytes += line_len + 1;
            if (line_len > 0 && data[at + line_len - 1] == '\r')
                line_len--;
            progress = take_line(r, data + at, line_len);
            at = (size_t)(nl - data) + 1;
        } else if (r->state == SL_H1_BODY_TO_CLOSE) {
            at = len;
        } else { /* SL_H1_BODY_LENGTH or SL_H1_CHUNK_DATA */
            uint64_t n = len - at < r->remaining ? len - at : r->remaining;
            at += (size_t)n;
            r->remaining -= n;
            if (r->remaining == 0) {
                if (r->state == SL_H1_BODY_LENGTH)
                    progress = finish(r);
                else
                    r->state = SL_H1_CHUNK_END;
            }
        }
    }
    *used = at;
    return progress;
}

sl_h1_progress sl_h1_response_eof(sl_h1_response *r)
{
    if (r->state == SL_H1_BODY_TO_CLOSE)
        return finish(r);
    if (r->state == SL_H1_FINISHED)
        return r->error ? SL_H1_ERROR : SL_H1_DONE;
    return fail(r, r->started ? "connection closed before the response ended"
                              : "connection closed before a response");
}
