/* test_http1.c - the pure parts of the HTTP/1.1 client: the response
 * parser (whole, split at every byte, malformed), http:// URLs and
 * request heads. */
#include <stdio.h>
#include <string.h>

#include <criterion/criterion.h>

#include "http/http1_request.h"
#include "http/http1_response.h"

/* Feeds text as a reader would: in pieces of `piece` bytes, keeping what
 * the parser did not take and offering it again with the next piece.
 * Returns the final progress; *left is how many bytes were not taken. */
static sl_h1_progress feed_in_pieces(sl_h1_response *r, const char *text, size_t piece, size_t *left)
{
    char pending[4096];
    size_t pending_len = 0, at = 0, len = strlen(text);
    sl_h1_progress p = SL_H1_MORE;
    while (at < len && p == SL_H1_MORE) {
        size_t n = len - at < piece ? len - at : piece;
        cr_assert_lt(pending_len + n, sizeof pending);
        memcpy(pending + pending_len, text + at, n);
        pending_len += n;
        at += n;
        size_t used;
        p = sl_h1_response_feed(r, pending, pending_len, &used);
        memmove(pending, pending + used, pending_len - used);
        pending_len -= used;
    }
    *left = pending_len + (len - at);
    return p;
}

static sl_h1_progress parse_whole(sl_h1_response *r, const char *text, bool head_request)
{
    sl_h1_response_start(r, head_request);
    size_t left;
    sl_h1_progress p = feed_in_pieces(r, text, strlen(text), &left);
    cr_assert_eq(left, 0, "%zu bytes of the response were not taken", left);
    return p;
}

/* The same outcome however the bytes arrive: the response is split at
 * every point (two pieces) and fed a byte at a time. */
static void assert_same_in_pieces(const char *text, sl_h1_progress expected, int status)
{
    size_t len = strlen(text);
    for (size_t piece = 1; piece <= len; piece++) {
        sl_h1_response r;
        sl_h1_response_start(&r, false);
        size_t left;
        sl_h1_progress p = feed_in_pieces(&r, text, piece, &left);
        cr_assert_eq(p, expected, "pieces of %zu bytes: progress %d", piece, p);
        cr_assert_eq(r.status, status, "pieces of %zu bytes: status %d", piece, r.status);
        cr_assert_eq(left, 0, "pieces of %zu bytes: %zu left", piece, left);
    }
}

Test(h1_response, content_length_body_and_keep_alive)
{
    sl_h1_response r;
    cr_assert_eq(parse_whole(&r, "HTTP/1.1 201 Created\r\nContent-Length: 5\r\nX-A: b\r\n\r\nhello", false),
                 SL_H1_DONE);
    cr_assert_eq(r.status, 201);
    cr_assert(r.keep_alive);
    cr_assert_not(r.has_retry_after);
}

Test(h1_response, a_body_split_anywhere_parses_the_same)
{
    assert_same_in_pieces("HTTP/1.1 200 OK\r\nContent-Length: 11\r\n\r\nhello world", SL_H1_DONE, 200);
    assert_same_in_pieces("HTTP/1.1 202 Accepted\r\nTransfer-Encoding: chunked\r\n\r\n"
                          "5;ext=1\r\nhello\r\n6\r\n world\r\n0\r\nX-Trailer: t\r\n\r\n",
                          SL_H1_DONE, 202);
    assert_same_in_pieces("HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 204 No Content\r\n\r\n", SL_H1_DONE,
                          204);
}

Test(h1_response, bytes_after_the_response_are_not_taken)
{
    sl_h1_response r;
    sl_h1_response_start(&r, false);
    const char *text = "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nokHTTP/1.1 200 OK\r\n";
    size_t used;
    cr_assert_eq(sl_h1_response_feed(&r, text, strlen(text), &used), SL_H1_DONE);
    cr_assert_eq(used, strlen("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"));
}

Test(h1_response, chunked_ends_at_the_last_chunk_and_its_trailers)
{
    sl_h1_response r;
    sl_h1_response_start(&r, false);
    const char *text = "HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip, chunked\r\n\r\n"
                       "A\r\n0123456789\r\n0\r\n";
    size_t used;
    cr_assert_eq(sl_h1_response_feed(&r, text, strlen(text), &used), SL_H1_MORE,
                 "trailers may still follow the last chunk");
    cr_assert_eq(sl_h1_response_feed(&r, "\r\n", 2, &used), SL_H1_DONE);
    cr_assert(r.keep_alive);
}

Test(h1_response, retry_after_comes_from_the_final_response)
{
    sl_h1_response r;
    cr_assert_eq(parse_whole(&r,
                             "HTTP/1.1 103 Early Hints\r\nRetry-After: 99\r\n\r\n"
                             "HTTP/1.1 429 Too Many Requests\r\nRetry-After:  7 \r\nContent-Length: 0\r\n\r\n",
                             false),
                 SL_H1_DONE);
    cr_assert_eq(r.status, 429);
    cr_assert(r.has_retry_after);
    cr_assert_str_eq(r.retry_after, "7");

    cr_assert_eq(parse_whole(&r, "HTTP/1.1 100 Continue\r\nRetry-After: 99\r\n\r\n"
                                 "HTTP/1.1 503 Busy\r\nContent-Length: 0\r\n\r\n", false),
                 SL_H1_DONE);
    cr_assert_eq(r.status, 503);
    cr_assert_not(r.has_retry_after, "the interim response's Retry-After is not the final one's");
}

Test(h1_response, rate_limit_headers_come_from_the_final_response)
{
    sl_h1_response r;
    cr_assert_eq(parse_whole(&r,
                             "HTTP/1.1 103 Early Hints\r\nX-RateLimit-Remaining: 0\r\n\r\n"
                             "HTTP/1.1 200 OK\r\nX-RateLimit-Reset:  9 \r\nRateLimit: d;r=0;t=4\r\n"
                             "RateLimit-Remaining: 0\r\nRateLimit-Reset: 3\r\nContent-Length: 0\r\n\r\n",
                             false),
                 SL_H1_DONE);
    cr_assert(r.ratelimit.any);
    cr_assert_str_eq(r.ratelimit.x_remaining, "", "the interim response's is not the final one's");
    cr_assert_str_eq(r.ratelimit.x_reset, "9");
    cr_assert_str_eq(r.ratelimit.ratelimit, "d;r=0;t=4");
    cr_assert_str_eq(r.ratelimit.remaining, "0");
    cr_assert_str_eq(r.ratelimit.reset, "3");
    cr_assert_eq(parse_whole(&r, "HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n", false), SL_H1_DONE);
    cr_assert_not(r.ratelimit.any);
}

Test(h1_response, no_body_for_head_204_and_304_whatever_the_length_says)
{
    sl_h1_response r;
    cr_assert_eq(parse_whole(&r, "HTTP/1.1 200 OK\r\nContent-Length: 1000\r\n\r\n", true), SL_H1_DONE);
    cr_assert(r.keep_alive);
    cr_assert_eq(parse_whole(&r, "HTTP/1.1 204 No Content\r\nContent-Length: 10\r\n\r\n", false),
                 SL_H1_DONE);
    cr_assert_eq(parse_whole(&r, "HTTP/1.1 304 Not Modified\r\nTransfer-Encoding: chunked\r\n\r\n", false),
                 SL_H1_DONE);
}

Test(h1_response, without_length_the_body_runs_to_the_close)
{
    sl_h1_response r;
    cr_assert_eq(parse_whole(&r, "HTTP/1.1 200 OK\r\n\r\nsome body", false), SL_H1_MORE);
    cr_assert_not(r.keep_alive);
    cr_assert_eq(sl_h1_response_eof(&r), SL_H1_DONE);
    cr_assert_eq(r.status, 200);
}

Test(h1_response, which_connections_stay_open)
{
    sl_h1_response r;
    parse_whole(&r, "HTTP/1.1 200 OK\r\nConnection: Close\r\nContent-Length: 0\r\n\r\n", false);
    cr_assert_not(r.keep_alive);
    parse_whole(&r, "HTTP/1.0 200 OK\r\nContent-Length: 0\r\n\r\n", false);
    cr_assert_not(r.keep_alive, "HTTP/1.0 closes unless it says keep-alive");
    parse_whole(&r, "HTTP/1.0 200 OK\r\nConnection: foo, keep-alive\r\nContent-Length: 0\r\n\r\n", false);
    cr_assert(r.keep_alive);
    parse_whole(&r, "HTTP/1.1 200 OK\r\nConnection: upgrade\r\nContent-Length: 0\r\n\r\n", false);
    cr_assert(r.keep_alive);
}

static void assert_error(const char *text, const char *why)
{
    sl_h1_response r;
    sl_h1_response_start(&r, false);
    size_t used;
    sl_h1_progress p = sl_h1_response_feed(&r, text, strlen(text), &used);
    if (p == SL_H1_MORE)
        p = sl_h1_response_eof(&r);
    cr_assert_eq(p, SL_H1_ERROR, "accepted: %s", text);
    cr_assert_str_eq(r.error, why, "for %s", text);
}

Test(h1_response, malformed_responses_say_what_is_wrong)
{
    assert_error("HTTP/2 200 OK\r\n\r\n", "bad status line");
    assert_error("ICY 200 OK\r\n\r\n", "bad status line");
    assert_error("HTTP/1.1 2x0 OK\r\n\r\n", "bad status code");
    assert_error("HTTP/1.1 099 Low\r\n\r\n", "bad status code");
    assert_error("HTTP/1.1 2000 OK\r\n\r\n", "bad status code");
    assert_error("HTTP/1.1 200 OK\r\nno colon here\r\n\r\n", "bad header line");
    assert_error("HTTP/1.1 200 OK\r\nContent-Length: 12a\r\n\r\n", "bad Content-Length");
    assert_error("HTTP/1.1 200 OK\r\nContent-Length: 99999999999999999999999\r\n\r\n",
                 "bad Content-Length");
    assert_error("HTTP/1.1 200 OK\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n",
                 "conflicting Content-Length headers");
    assert_error("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n", "bad chunk size");
    assert_error("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nabX\r\n",
                 "no line end after chunk data");
    assert_error("HTTP/1.1 101 Switching Protocols\r\n\r\n", "unexpected 101 Switching Protocols");
    assert_error("HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nshort", "connection closed before the response ended");
    assert_error("", "connection closed before a response");
}

Test(h1_response, a_head_larger_than_the_limit_is_refused)
{
    static char text[SL_H1_HEAD_MAX + 256];
    size_t len = (size_t)snprintf(text, sizeof text, "HTTP/1.1 200 OK\r\n");
    while (len + 40 < sizeof text)
        len += (size_t)snprintf(text + len, sizeof text - len, "X-Filler: %026zu\r\n", len);
    sl_h1_response r;
    sl_h1_response_start(&r, false);
    size_t used;
    cr_assert_eq(sl_h1_response_feed(&r, text, len, &used), SL_H1_ERROR);
    cr_assert_str_eq(r.error, "response head too large");
}

/* ---- URLs and request heads ---- */

Test(h1_target, splits_an_http_url)
{
    sl_h1_target t;
    cr_assert(sl_h1_target_parse("http://127.0.0.1:8080/hook/a?x=1&y=2#frag", &t));
    cr_assert_str_eq(t.host, "127.0.0.1");
    cr_assert_str_eq(t.port, "8080");
    cr_assert_str_eq(t.authority, "127.0.0.1:8080");
    cr_assert_eq(t.path_len, strlen("/hook/a?x=1&y=2"));
    cr_assert_eq(strncmp(t.path, "/hook/a?x=1&y=2", t.path_len), 0);

    cr_assert(sl_h1_target_parse("HTTP://Api.Example.com", &t));
    cr_assert_str_eq(t.host, "Api.Example.com");
    cr_assert_str_eq(t.port, "80");
    cr_assert_str_eq(t.authority, "Api.Example.com");
    cr_assert_eq(t.path_len, 0);

    cr_assert(sl_h1_target_parse("http://[::1]:9000/v6", &t));
    cr_assert_str_eq(t.host, "::1");
    cr_assert_str_eq(t.authority, "[::1]:9000");

    cr_assert(sl_h1_target_parse("http://h:80/x", &t));
    cr_assert_str_eq(t.authority, "h", "the default port is not named");
}

Test(h1_target, leaves_other_urls_to_libcurl)
{
    const char *others[] = {
        "https://example.com/",    "ftp://example.com/",     "http://user:pw@example.com/",
        "http://",                 "http://:80/",            "http://h:0/",
        "http://h:65536/",         "http://h:8x/",           "http://h/a b",
        "http://h/\xc3\xa9",       "http://[::1/",           "http://h\\x/",
        "http://h:123456/",        "http://[::1]x/",
    };
    for (size_t i = 0; i < sizeof others / sizeof others[0]; i++) {
        sl_h1_target t;
        cr_assert_not(sl_h1_target_parse(others[i], &t), "took %s", others[i]);
    }
}

/* The host[:port] rules are base/authority.h's, the same as the config's:
 * an empty port, a bad IPv4 or IPv6 literal and an unbracketed IPv6 host
 * go to libcurl (config refuses them before they get here). */
Test(h1_target, the_authority_is_the_one_parsers)
{
    sl_h1_target t;
    cr_assert(sl_h1_target_parse("http://[2001:db8::1]/x", &t));
    cr_assert_str_eq(t.host, "2001:db8::1");
    cr_assert_str_eq(t.port, "80");
    cr_assert_str_eq(t.authority, "[2001:db8::1]", "brackets kept, default port not named");
    cr_assert(sl_h1_target_parse("http://sink_1.local.:65535", &t));
    cr_assert_str_eq(t.authority, "sink_1.local.:65535");

    const char *refused[] = {
        "http://h:/",       "http://[::1]:/",  "http://1.2.3.999/", "http://[zz::1]/",
        "http://[h]/",      "http://::1/",     "http://-h/",        "http://a..b/",
    };
    for (size_t i = 0; i < sizeof refused / sizeof refused[0]; i++)
        cr_assert_not(sl_h1_target_parse(refused[i], &t), "took %s", refused[i]);
}

static const char *head_of(const char *method, const char *url, const char *const *headers, size_t n,
                           size_t body_len)
{
    static char out[1024];
    sl_h1_target t;
    cr_assert(sl_h1_target_parse(url, &t));
    size_t len = sl_h1_request_head(out, sizeof out, method, &t, headers, n, body_len);
    cr_assert_lt(len, sizeof out);
    cr_assert_eq(strlen(out), len);
    return out;
}

Test(h1_request, head_lines_and_content_length)
{
    const char *headers[] = {"Content-Type: application/json", "Idempotency-Key: abc"};
    cr_assert_str_eq(head_of("POST", "http://127.0.0.1:81/hook?a=1", headers, 2, 12),
                     "POST /hook?a=1 HTTP/1.1\r\nHost: 127.0.0.1:81\r\n"
                     "Content-Type: application/json\r\nIdempotency-Key: abc\r\n"
                     "Content-Length: 12\r\n\r\n");
    cr_assert_str_eq(head_of("GET", "http://h", NULL, 0, 0), "GET / HTTP/1.1\r\nHost: h\r\n\r\n");
    cr_assert_str_eq(head_of("GET", "http://h?q=1", NULL, 0, 3),
                     "GET /?q=1 HTTP/1.1\r\nHost: h\r\nContent-Length: 3\r\n\r\n",
                     "a GET with a body sends it");
    cr_assert_str_eq(head_of("HEAD", "http://h/x", NULL, 0, 3), "HEAD /x HTTP/1.1\r\nHost: h\r\n\r\n");
    cr_assert_str_eq(head_of("DELETE", "http://h/x", NULL, 0, 0),
                     "DELETE /x HTTP/1.1\r\nHost: h\r\nContent-Length: 0\r\n\r\n");
}

Test(h1_request, a_host_header_of_the_tenant_replaces_the_url_host)
{
    const char *headers[] = {"host: virtual.example"};
    cr_assert_str_eq(head_of("POST", "http://10.0.0.1/x", headers, 1, 0),
                     "POST /x HTTP/1.1\r\nhost: virtual.example\r\nContent-Length: 0\r\n\r\n");
}

Test(h1_request, a_small_buffer_gets_nothing_past_its_end_and_the_full_length)
{
    sl_h1_target t;
    cr_assert(sl_h1_target_parse("http://h/long/path", &t));
    char out[16];
    memset(out, 'Z', sizeof out);
    size_t need = sl_h1_request_head(out, 8, "POST", &t, NULL, 0, 5);
    cr_assert_eq(need, strlen("POST /long/path HTTP/1.1\r\nHost: h\r\nContent-Length: 5\r\n\r\n"));
    for (size_t i = 8; i < sizeof out; i++)
        cr_assert_eq(out[i], 'Z', "byte %zu written", i);
}
