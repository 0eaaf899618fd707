/* test_envelope.c - job element -> HTTP request: every status and reason,
 * with hostile input (header smuggling, SSRF urls, path tricks, oversize,
 * broken JSON). Pure: no Redis, no clock. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "job/envelope.h"

static const char *const allow[] = {"https://a.example/v1", "http://b.example/", "https://c.example"};

static sl_job_rules rules(void)
{
    return (sl_job_rules){
        .endpoint = "https://api.partner.example/v1/hook/",
        .allow_urls = allow,
        .allow_url_count = sizeof allow / sizeof allow[0],
        .idempotency_header = "Idempotency-Key",
    };
}

static char err[512];

/* Parses a NUL-terminated element with the default rules. The element is
 * copied into an exact-size buffer without a terminator, so reading past
 * `len` is caught by ASan. */
static sl_job_status parse_with(const sl_job_rules *r, const char *element, size_t len,
                                sl_job_request *out)
{
    char *copy = malloc(len ? len : 1);
    cr_assert_not_null(copy);
    memcpy(copy, element, len);
    memset(err, 'Z', sizeof err);
    sl_job_status st = sl_job_parse(copy, len, r, out, err, sizeof err);
    free(copy);
    cr_assert(memchr(err, '\0', sizeof err), "err not terminated");
    if (st == SL_JOB_OK)
        cr_assert_eq(err[0], '\0', "err set on success: %s", err);
    else
        cr_assert_neq(err[0], '\0', "no message for status %d", st);
    return st;
}

static sl_job_status parse(const char *element, sl_job_request *out)
{
    sl_job_rules r = rules();
    return parse_with(&r, element, strlen(element), out);
}

/* Expects `status` and an error message containing `needle`; checks the
 * request was left zeroed. */
static void expect(const char *element, sl_job_status status, const char *needle)
{
    sl_job_request out;
    sl_job_status st = parse(element, &out);
    cr_assert_eq(st, status, "%s: status %d, expected %d (%s)", element, st, status, err);
    if (status == SL_JOB_OK) {
        sl_job_request_clear(&out);
        return;
    }
    cr_assert(strstr(err, needle), "%s: message '%s' lacks '%s'", element, err, needle);
    sl_job_request zero = {0};
    cr_assert(memcmp(&out, &zero, sizeof out) == 0, "%s: request not cleared", element);
    /* Messages are safe to log: no raw control characters. */
    for (const char *p = err; *p; p++)
        cr_assert((unsigned char)*p >= 0x20 && (unsigned char)*p < 0x7f, "%s: raw byte in '%s'",
                  element, err);
}

Test(envelope, reasons)
{
    cr_assert_null(sl_job_status_reason(SL_JOB_OK));
    cr_assert_str_eq(sl_job_status_reason(SL_JOB_MALFORMED), "malformed");
    cr_assert_str_eq(sl_job_status_reason(SL_JOB_TOO_LARGE), "too_large");
    cr_assert_str_eq(sl_job_status_reason(SL_JOB_BAD_HEADER), "bad_header");
    cr_assert_str_eq(sl_job_status_reason(SL_JOB_URL_NOT_ALLOWED), "url_not_allowed");
    cr_assert_str_eq(sl_job_status_reason(SL_JOB_NO_MEMORY), "no_memory");
}

Test(envelope, empty_object_takes_the_defaults)
{
    sl_job_request out;
    cr_assert_eq(parse(" {} \n", &out), SL_JOB_OK, "%s", err);
    cr_assert_null(out.id);
    cr_assert_str_eq(out.method, "POST");
    cr_assert_str_eq(out.url, "https://api.partner.example/v1/hook/"); /* unchanged */
    cr_assert_not_null(out.body);
    cr_assert_eq(out.body_len, 0);
    cr_assert_str_eq(out.body, "");
    cr_assert_not(out.body_is_json);
    cr_assert_eq(out.header_count, 0);
    cr_assert_null(out.headers);
    cr_assert_eq(out.deadline_ms, 0);
    sl_job_request_clear(&out);
    sl_job_request zero = {0};
    cr_assert(memcmp(&out, &zero, sizeof out) == 0);
    sl_job_request_clear(&out); /* twice is fine */
}

Test(envelope, full_envelope)
{
    sl_job_request out;
    const char *job = "{\"id\":\"order-42 a\",\"body\":\"a\\nb\\u00e9\\\"\",\"method\":\"PUT\","
                      "\"headers\":{\"X-A\":\"  one\\ttwo \",\"Content-Type\":\"text/plain\","
                      "\"X-Obs\":\"caf\xc3\xa9\"},"
                      "\"path\":\"/orders/42?x=1&y=/../z\",\"deadline\":1700000000000}";
    cr_assert_eq(parse(job, &out), SL_JOB_OK, "%s", err);
    cr_assert_str_eq(out.id, "order-42 a");
    cr_assert_str_eq(out.method, "PUT");
    cr_assert_str_eq(out.url, "https://api.partner.example/v1/hook/orders/42?x=1&y=/../z");
    cr_assert_eq(out.body_len, 6);
    cr_assert(memcmp(out.body, "a\nb\xc3\xa9\"", 7) == 0);
    cr_assert_not(out.body_is_json);
    cr_assert_eq(out.deadline_ms, INT64_C(1700000000000));
    cr_assert_eq(out.header_count, 3);
    cr_assert_str_eq(out.headers[0].name, "X-A");
    cr_assert_str_eq(out.headers[0].value, "one\ttwo"); /* OWS trimmed, HTAB kept */
    cr_assert_str_eq(out.headers[1].name, "Content-Type");
    cr_assert_str_eq(out.headers[1].value, "text/plain");
    cr_assert_str_eq(out.headers[2].value, "caf\xc3\xa9");
    sl_job_request_clear(&out);
}

Test(envelope, json_bodies_are_forwarded_verbatim)
{
    const struct {
        const char *job, *body;
    } cases[] = {
        {"{\"body\": {\"n\": 12345678901234567890, \"a\":[1,2.50,\"\\u00e9\"]} }",
         "{\"n\": 12345678901234567890, \"a\":[1,2.50,\"\\u00e9\"]}"},
        {"{\"body\":1e400}", "1e400"},
        {"{\"body\":-0.5E+3}", "-0.5E+3"},
        {"{\"body\":null}", "null"},
        {"{\"body\":true,\"id\":\"x\"}", "true"},
        {"{\"id\":\"x\",\"body\":[ ]\t}", "[ ]"},
        {"{\"b\\u006fdy\":{}}", "{}"}, /* an escaped key is still "body" */
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        sl_job_request out;
        cr_assert_eq(parse(cases[i].job, &out), SL_JOB_OK, "%s: %s", cases[i].job, err);
        cr_assert(out.body_is_json, "%s", cases[i].job);
        cr_assert_eq(out.body_len, strlen(cases[i].body), "%s", cases[i].job);
        cr_assert_str_eq(out.body, cases[i].body);
        sl_job_request_clear(&out);
    }
}

Test(envelope, null_means_absent_for_optional_keys)
{
    sl_job_request out;
    cr_assert_eq(parse("{\"id\":null,\"headers\":null,\"method\":null,\"path\":null,"
                       "\"url\":null,\"deadline\":null}",
                       &out),
                 SL_JOB_OK, "%s", err);
    cr_assert_null(out.id);
    cr_assert_str_eq(out.method, "POST");
    cr_assert_eq(out.body_len, 0);
    sl_job_request_clear(&out);
}

Test(envelope, invalid_json_is_malformed)
{
    const char *bad[] = {
        "",         "   ",          "{",           "{\"id\":}",       "{'id':'x'}",
        "{} x",     "{}{}",         "{\"body\":01}", "{\"body\":+1}", "{\"body\":1.}",
        "{\"body\":.5}", "{\"body\":NaN}", "{\"body\":[1,]}", "{\"body\":tru}",
        "{\"id\":\"a\nb\"}", /* raw control character inside a string */
        "{\"body\":\"\\x41\"}", "{\"body\":\"\\u12\"}", "{\"body\":\"abc}",
        "{\"body\":\"\\ud800\"}", /* lone surrogate: cJSON refuses it */
        "{\"id\" \"x\"}", "{,}", "\xef\xbb\xbf{}",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        expect(bad[i], SL_JOB_MALFORMED, "invalid JSON");
}

Test(envelope, embedded_nul_is_refused_not_truncated)
{
    /* A literal NUL byte in the element (len covers it). */
    sl_job_request out;
    sl_job_rules r = rules();
    const char job[] = "{\"id\":\"a\0b\"}";
    cr_assert_eq(parse_with(&r, job, sizeof job - 1, &out), SL_JOB_MALFORMED);
    cr_assert(strstr(err, "invalid JSON"), "%s", err);
    expect("{\"body\":\"secret\\u0000tail\"}", SL_JOB_MALFORMED, "body: \\u0000");
    expect("{\"id\":\"a\\u0000\"}", SL_JOB_MALFORMED, "id: \\u0000");
    expect("{\"body\":{\"k\":[\"\\u0000\"]}}", SL_JOB_MALFORMED, "body: \\u0000");
    expect("{\"id\\u0000x\":1}", SL_JOB_MALFORMED, "\\u0000");
    expect("{\"headers\":{\"X-A\":\"ok\",\"X-B\":\"v\\u0000Evil: 1\"}}", SL_JOB_BAD_HEADER,
           "headers.\"X-B\"");
    expect("{\"headers\":{\"X-C\\u0000\":\"v\"}}", SL_JOB_BAD_HEADER, "NUL");
    /* "\\u0000" is an escaped backslash then "u0000": a fine string. */
    expect("{\"body\":\"\\\\u0000\"}", SL_JOB_OK, NULL);
}

Test(envelope, non_objects_are_malformed)
{
    const char *bad[] = {"[]", "[{\"id\":\"x\"}]", "\"x\"", "42", "null", "true", " -1 "};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        expect(bad[i], SL_JOB_MALFORMED, "must be a JSON object");
}

Test(envelope, unknown_and_duplicate_keys_are_malformed)
{
    expect("{\"bdoy\":\"x\"}", SL_JOB_MALFORMED, "unknown key \"bdoy\"");
    expect("{\"Body\":\"x\"}", SL_JOB_MALFORMED, "unknown key \"Body\"");
    expect("{\"id\":\"a\",\"id\":\"b\"}", SL_JOB_MALFORMED, "id: set twice");
    expect("{\"url\":\"https://a.example/v1\",\"url\":\"https://evil.example\"}",
           SL_JOB_MALFORMED, "url: set twice");
    expect("{\"a\":1,\"b\":2,\"c\":3,\"d\":4,\"e\":5,\"f\":6,\"g\":7,\"h\":8,\"i\":9}",
           SL_JOB_MALFORMED, "unknown key");
    expect("{\"path\":\"/x\",\"url\":\"https://a.example/v1/x\"}", SL_JOB_MALFORMED,
           "set only one");
}

Test(envelope, wrong_types_name_the_key)
{
    expect("{\"id\":42}", SL_JOB_MALFORMED, "id: must be a string, got a number");
    expect("{\"id\":\"\"}", SL_JOB_MALFORMED, "id: must be 1..200");
    expect("{\"id\":\"a\\r\\nX-Evil: 1\"}", SL_JOB_MALFORMED, "id: must be printable ASCII");
    expect("{\"id\":\"caf\xc3\xa9\"}", SL_JOB_MALFORMED, "id: must be printable ASCII");
    expect("{\"id\":\" x\"}", SL_JOB_MALFORMED, "id: must not start or end");
    expect("{\"id\":\"x \"}", SL_JOB_MALFORMED, "id: must not start or end");
    expect("{\"headers\":[\"X-A: 1\"]}", SL_JOB_MALFORMED, "headers: must be an object");
    expect("{\"headers\":{\"X-A\":5}}", SL_JOB_MALFORMED, "headers.X-A: must be a string");
    expect("{\"headers\":{\"X-A\":null}}", SL_JOB_MALFORMED, "headers.X-A: must be a string");
    expect("{\"method\":1}", SL_JOB_MALFORMED, "method: must be a string");
    expect("{\"path\":[\"/x\"]}", SL_JOB_MALFORMED, "path: must be a string");
    expect("{\"url\":{}}", SL_JOB_MALFORMED, "url: must be a string");
    const char *bad_deadlines[] = {"-1", "1.5", "\"1700000000000\"", "1e300", "9007199254740992", "9007199254740993",
                                   "true", "[]"};
    for (size_t i = 0; i < sizeof bad_deadlines / sizeof bad_deadlines[0]; i++) {
        char job[128];
        snprintf(job, sizeof job, "{\"deadline\":%s}", bad_deadlines[i]);
        expect(job, SL_JOB_MALFORMED, "deadline:");
    }
}

Test(envelope, ids_up_to_200_printable_characters)
{
    char job[512], id[256];
    memset(id, 'k', 200);
    id[200] = '\0';
    id[7] = '~';
    snprintf(job, sizeof job, "{\"id\":\"%s\"}", id);
    sl_job_request out;
    cr_assert_eq(parse(job, &out), SL_JOB_OK, "%s", err);
    cr_assert_str_eq(out.id, id);
    sl_job_request_clear(&out);
    id[200] = 'k';
    id[201] = '\0';
    snprintf(job, sizeof job, "{\"id\":\"%s\"}", id);
    expect(job, SL_JOB_MALFORMED, "got 201");
}

Test(envelope, deadlines)
{
    const struct {
        const char *text;
        int64_t ms;
    } good[] = {{"0", 0}, {"1700000000000", INT64_C(1700000000000)}, {"1.7e12", INT64_C(1700000000000)},
                {"9007199254740991", INT64_C(9007199254740991)}, {"2.0", 2}};
    for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) {
        char job[128];
        snprintf(job, sizeof job, "{\"deadline\":%s}", good[i].text);
        sl_job_request out;
        cr_assert_eq(parse(job, &out), SL_JOB_OK, "%s: %s", job, err);
        cr_assert_eq(out.deadline_ms, good[i].ms, "%s", job);
        sl_job_request_clear(&out);
    }
}

Test(envelope, methods)
{
    const char *good[] = {"GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS"};
    for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) {
        char job[64];
        snprintf(job, sizeof job, "{\"method\":\"%s\"}", good[i]);
        sl_job_request out;
        cr_assert_eq(parse(job, &out), SL_JOB_OK, "%s: %s", job, err);
        cr_assert_str_eq(out.method, good[i]);
        sl_job_request_clear(&out);
    }
    const char *bad[] = {"post", "Get", "CONNECT", "TRACE", "", "POST ", "POST\\r\\nHost: x",
                         "PO ST", "FOO"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char job[64];
        snprintf(job, sizeof job, "{\"method\":\"%s\"}", bad[i]);
        expect(job, SL_JOB_MALFORMED, "method:");
    }
    expect("{\"method\":\"HEAD\",\"body\":\"x\"}", SL_JOB_MALFORMED, "HEAD");
    expect("{\"method\":\"HEAD\",\"body\":\"\"}", SL_JOB_OK, NULL);
    expect("{\"method\":\"GET\",\"body\":{\"q\":1}}", SL_JOB_OK, NULL);
}

Test(envelope, header_smuggling_is_refused)
{
    const char *bad[] = {
        "{\"headers\":{\"X-A\\r\\nX-Evil\":\"1\"}}",
        "{\"headers\":{\"X-A\\nX-Evil\":\"1\"}}",
        "{\"headers\":{\"X-A\":\"v\\r\\nX-Evil: 1\"}}",
        "{\"headers\":{\"X-A\":\"v\\r\\n\\r\\nGET /admin HTTP/1.1\"}}",
        "{\"headers\":{\"X-A\":\"v\\nX-Evil: 1\"}}",
        "{\"headers\":{\"X-A\":\"v\\rX\"}}",
        "{\"headers\":{\"X-A\":\"v\\u007f\"}}",
        "{\"headers\":{\"X-A\":\"v\\u001b[31m\"}}",
        "{\"headers\":{\"\":\"v\"}}",
        "{\"headers\":{\"X A\":\"v\"}}",
        "{\"headers\":{\"X-A:\":\"v\"}}",
        "{\"headers\":{\"X-A\\t\":\"v\"}}",
        "{\"headers\":{\"X(A)\":\"v\"}}",
        "{\"headers\":{\"X-\\u00e9\":\"v\"}}",
        "{\"headers\":{\"X-A\":\"1\",\"x-a\":\"2\"}}",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        expect(bad[i], SL_JOB_BAD_HEADER, "headers.");
    expect("{\"headers\":{\"X-A\":\"v\\r\\nX-Evil: 1\"}}", SL_JOB_BAD_HEADER,
           "headers.X-A: value contains control character 0x0d");
    expect("{\"headers\":{\"X-A\\r\\nX-Evil\":\"1\"}}", SL_JOB_BAD_HEADER,
           "headers.\"X-A\\x0d\\x0aX-Evil\": name is not an HTTP token");
}

Test(envelope, producers_may_not_set_transport_headers)
{
    const char *names[] = {"Host",       "host",       "Content-Length", "content-length",
                           "Transfer-Encoding", "TRANSFER-ENCODING", "Connection", "Expect",
                           "Upgrade",    "TE",         "te",             "Trailer",
                           "Keep-Alive", "Proxy-Authorization", "proxy-connection",
                           "Idempotency-Key", "idempotency-key"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        char job[128];
        snprintf(job, sizeof job, "{\"headers\":{\"%s\":\"x\"}}", names[i]);
        expect(job, SL_JOB_BAD_HEADER, "may not be set by a job");
    }
    /* Near misses are ordinary headers. */
    const char *fine[] = {"Hosts", "X-Host", "Proxy", "TEA", "Content-Type", "Authorization",
                          "Idempotency-Keys", "x!#$%&'*+-.^_`|~9"};
    for (size_t i = 0; i < sizeof fine / sizeof fine[0]; i++) {
        char job[128];
        snprintf(job, sizeof job, "{\"headers\":{\"%s\":\"x\"}}", fine[i]);
        expect(job, SL_JOB_OK, NULL);
    }
    /* Another configured idempotency header name. */
    sl_job_rules r = rules();
    r.idempotency_header = "X-Dedup";
    sl_job_request out;
    const char *job = "{\"headers\":{\"x-dedup\":\"1\"}}";
    cr_assert_eq(parse_with(&r, job, strlen(job), &out), SL_JOB_BAD_HEADER);
    job = "{\"headers\":{\"Idempotency-Key\":\"1\"}}";
    cr_assert_eq(parse_with(&r, job, strlen(job), &out), SL_JOB_OK, "%s", err);
    sl_job_request_clear(&out);
}

Test(envelope, error_messages_echo_little_producer_data)
{
    char *job = malloc(30000), *p = job;
    cr_assert_not_null(job);
    p += sprintf(p, "{\"headers\":{\"");
    for (int i = 0; i < 5000; i++)
        p += sprintf(p, "\\r\\n");
    sprintf(p, "\":\"v\"}}");
    sl_job_request out;
    cr_assert_eq(parse(job, &out), SL_JOB_BAD_HEADER);
    cr_assert_lt(strlen(err), 320, "message of %zu bytes", strlen(err));
    cr_assert(strstr(err, "..."), "%s", err);
    free(job);
    expect("{\"bdoyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyy\":1}",
           SL_JOB_MALFORMED, "yyy...\"");
    /* An error with a tiny or no buffer still returns the status. */
    cr_assert_eq(sl_job_parse("[]", 2, &(sl_job_rules){.endpoint = "http://x"}, &out, NULL, 0),
                 SL_JOB_MALFORMED);
    char tiny[4];
    cr_assert_eq(sl_job_parse("[]", 2, &(sl_job_rules){.endpoint = "http://x"}, &out, tiny,
                              sizeof tiny),
                 SL_JOB_MALFORMED);
    cr_assert_eq(strlen(tiny), 3);
}

Test(envelope, paths)
{
    const struct {
        const char *path, *url;
    } good[] = {
        {"/x", "https://api.partner.example/v1/hook/x"},
        {"/", "https://api.partner.example/v1/hook/"},
        {"/a/.../b", "https://api.partner.example/v1/hook/a/.../b"},
        {"/a/.b/c..", "https://api.partner.example/v1/hook/a/.b/c.."},
        {"/q?next=%2Fhome&x=/../y", "https://api.partner.example/v1/hook/q?next=%2Fhome&x=/../y"},
        {"/@evil.example/", "https://api.partner.example/v1/hook/@evil.example/"},
        {"/caf%C3%A9", "https://api.partner.example/v1/hook/caf%C3%A9"},
    };
    for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) {
        char job[256];
        snprintf(job, sizeof job, "{\"path\":\"%s\"}", good[i].path);
        sl_job_request out;
        cr_assert_eq(parse(job, &out), SL_JOB_OK, "%s: %s", job, err);
        cr_assert_str_eq(out.url, good[i].url);
        sl_job_request_clear(&out);
    }
    const char *bad[] = {
        "//evil.com/x", "//", "x", "", "evil.com", "/a/../b", "/..", "/a/..", "/./a", "/a/.",
        "/%2e%2e/admin", "/%2E./admin", "/.%2e", "/%2e/", "/a\\\\b", "/a b", "/a\\tb",
        "/a\\r\\nHost: evil", "/a\\u0085", "/caf\xc3\xa9", "/a#frag", "/a%2fb", "/a%5Cb",
        "/a\\u007f",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char job[256];
        snprintf(job, sizeof job, "{\"path\":\"%s\"}", bad[i]);
        expect(job, SL_JOB_MALFORMED, "path: ");
    }
    /* The endpoint's trailing slashes are dropped before the path. */
    sl_job_rules r = rules();
    r.endpoint = "http://h.example//";
    sl_job_request out;
    const char *job = "{\"path\":\"/p\"}";
    cr_assert_eq(parse_with(&r, job, strlen(job), &out), SL_JOB_OK, "%s", err);
    cr_assert_str_eq(out.url, "http://h.example/p");
    sl_job_request_clear(&out);
}

Test(envelope, urls_must_match_an_allowed_prefix_at_a_boundary)
{
    const char *good[] = {
        "https://a.example/v1",       "https://a.example/v1/x",   "https://a.example/v1?q=1",
        "https://a.example/v1/x/y?z", "http://b.example/",        "http://b.example/anything/else",
        "https://c.example",          "https://c.example/x",      "https://c.example?x",
        "https://a.example/v1/q?next=%2F",
    };
    for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) {
        char job[256];
        snprintf(job, sizeof job, "{\"url\":\"%s\"}", good[i]);
        sl_job_request out;
        cr_assert_eq(parse(job, &out), SL_JOB_OK, "%s: %s", job, err);
        cr_assert_str_eq(out.url, good[i]);
        sl_job_request_clear(&out);
    }
    const char *bad[] = {
        "https://a.example/v10",
        "https://a.example/v1.evil",
        "https://a.example/v",
        "https://a.example.evil.com/v1",
        "https://a.example/v1@evil.com",
        "https://c.example.evil.com",
        "https://c.example:8443/x",
        "https://c.example@evil.com/",
        "https://c.exampl",
        "http://a.example/v1/x",       /* other scheme than the prefix */
        "HTTPS://A.EXAMPLE/v1/x",      /* prefixes compare exactly */
        "https://a.example/v1/../admin",
        "https://a.example/v1/%2e%2E/admin",
        "https://a.example/v1/..",
        "https://a.example/v1/.%2fadmin",
        "https://a.example/v1/x%2F..%2Fadmin",
        "https://a.example/v1\\\\@evil.com",
        "https://a.example/v1/x y",
        "https://a.example/v1/x\\r\\nHost: evil",
        "https://a.example/v1/x\\t",
        "https://a.example/v1/\xc3\xa9",
        "https://a.example/v1#x",
        "ftp://a.example/v1/x",
        "file:///etc/passwd",
        "//a.example/v1/x",
        "/v1/x",
        "",
        "http://169.254.169.254/latest/meta-data/",
        "http://b.example",            /* the prefix ends in '/': the url must reach it */
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char job[256];
        snprintf(job, sizeof job, "{\"url\":\"%s\"}", bad[i]);
        expect(job, SL_JOB_URL_NOT_ALLOWED, "url: ");
    }
    /* Without allow_urls no url is allowed. */
    sl_job_rules r = rules();
    r.allow_url_count = 0;
    sl_job_request out;
    const char *job = "{\"url\":\"https://a.example/v1/x\"}";
    cr_assert_eq(parse_with(&r, job, strlen(job), &out), SL_JOB_URL_NOT_ALLOWED);
    cr_assert(strstr(err, "no allow_urls"), "%s", err);
}

Test(envelope, oversize_is_too_large_before_parsing)
{
    sl_job_rules r = rules();
    r.max_bytes = 16;
    sl_job_request out;
    const char *fits = "{\"body\":\"12345\"}"; /* exactly 16 bytes */
    cr_assert_eq(strlen(fits), 16);
    cr_assert_eq(parse_with(&r, fits, 16, &out), SL_JOB_OK, "%s", err);
    sl_job_request_clear(&out);
    cr_assert_eq(parse_with(&r, "{\"body\":\"123456\"}", 17, &out), SL_JOB_TOO_LARGE);
    cr_assert(strstr(err, "17 bytes"), "%s", err);
    /* Checked first: invalid JSON that is too large is too_large. */
    cr_assert_eq(parse_with(&r, "not json at all, and long", 25, &out), SL_JOB_TOO_LARGE);
    r.raw = true;
    cr_assert_eq(parse_with(&r, "raw raw raw raw raw", 19, &out), SL_JOB_TOO_LARGE);
    cr_assert_eq(parse_with(&r, "raw raw raw raw ", 16, &out), SL_JOB_OK);
    sl_job_request_clear(&out);
}

Test(envelope, default_limit_is_one_mebibyte)
{
    sl_job_rules r = rules(); /* max_bytes 0 */
    size_t n = SL_JOB_MAX_BYTES_DEFAULT;
    char *job = malloc(n + 1);
    cr_assert_not_null(job);
    memcpy(job, "{\"body\":\"", 9);
    memset(job + 9, 'a', n - 11);
    memcpy(job + n - 2, "\"}", 2);
    sl_job_request out;
    cr_assert_eq(parse_with(&r, job, n, &out), SL_JOB_OK, "%s", err);
    cr_assert_eq(out.body_len, n - 11);
    sl_job_request_clear(&out);
    job[n] = ' ';
    cr_assert_eq(parse_with(&r, job, n + 1, &out), SL_JOB_TOO_LARGE);
    free(job);
}

Test(envelope, raw_format_passes_anything_within_size)
{
    sl_job_rules r = rules();
    r.raw = true;
    const char raw[] = "not json {\"headers\":{\"Host\":\"x\"}}\r\n\0\xff binary";
    sl_job_request out;
    cr_assert_eq(parse_with(&r, raw, sizeof raw - 1, &out), SL_JOB_OK, "%s", err);
    cr_assert_eq(out.body_len, sizeof raw - 1);
    cr_assert(memcmp(out.body, raw, sizeof raw - 1) == 0);
    cr_assert_eq(out.body[out.body_len], '\0');
    cr_assert_not(out.body_is_json);
    cr_assert_str_eq(out.method, "POST");
    cr_assert_str_eq(out.url, r.endpoint);
    cr_assert_null(out.id);
    cr_assert_eq(out.header_count, 0);
    sl_job_request_clear(&out);
    cr_assert_eq(parse_with(&r, "", 0, &out), SL_JOB_OK);
    cr_assert_eq(out.body_len, 0);
    sl_job_request_clear(&out);
}

Test(envelope, reads_only_len_bytes)
{
    /* The element is a prefix of a longer buffer: what follows is ignored. */
    const char buf[] = "{\"id\":\"a\"}{\"id\":\"b\"}";
    sl_job_rules r = rules();
    sl_job_request out;
    cr_assert_eq(sl_job_parse(buf, 10, &r, &out, err, sizeof err), SL_JOB_OK, "%s", err);
    cr_assert_str_eq(out.id, "a");
    sl_job_request_clear(&out);
    cr_assert_eq(sl_job_parse(buf, 9, &r, &out, err, sizeof err), SL_JOB_MALFORMED);
}

Test(envelope, nesting_is_bounded)
{
    size_t depth = 100000;
    char *job = malloc(2 * depth + 16), *p = job;
    cr_assert_not_null(job);
    p += sprintf(p, "{\"body\":");
    memset(p, '[', depth);
    memset(p + depth, ']', depth);
    sprintf(p + 2 * depth, "}");
    expect(job, SL_JOB_MALFORMED, "nested too deeply");
    /* 300 levels are fine and forwarded as written. */
    p = job + sprintf(job, "{\"body\":");
    memset(p, '[', 300);
    memset(p + 300, ']', 300);
    sprintf(p + 600, "}");
    sl_job_request out;
    cr_assert_eq(parse(job, &out), SL_JOB_OK, "%s", err);
    cr_assert_eq(out.body_len, 600);
    sl_job_request_clear(&out);
    free(job);
}

/* A repeated header name is reported where it repeats, in envelope order,
 * after any earlier header's own fault. */
Test(envelope, the_first_repeated_header_is_named)
{
    expect("{\"headers\":{\"X-A\":\"1\",\"X-B\":\"2\",\"x-b\":\"3\",\"x-a\":\"4\"}}",
           SL_JOB_BAD_HEADER, "headers.x-b: set twice");
    expect("{\"headers\":{\"X-A\":\"1\",\"X B\":\"2\",\"x-a\":\"3\"}}", SL_JOB_BAD_HEADER,
           "headers.\"X B\": name is not an HTTP token");
    expect("{\"headers\":{\"X-A\":\"1\",\"x-A\":\"\\r\"}}", SL_JOB_BAD_HEADER,
           "headers.x-A: value contains control character 0x0d");
}

/* Tens of thousands of headers (as many as max_bytes allows) are checked
 * for repeats without comparing each with all before it. */
/* An envelope of n headers "X-0".."X-(n-1)", each with value v; the caller frees it. */
static char *job_with_headers(size_t n, const char *v, size_t *len)
{
    char *job = malloc(n * (24 + strlen(v)) + 32);
    cr_assert_not_null(job);
    *len = (size_t)sprintf(job, "{\"headers\":{");
    for (size_t i = 0; i < n; i++)
        *len += (size_t)sprintf(job + *len, "%s\"X-%zu\":\"%s\"", i ? "," : "", i, v);
    *len += (size_t)sprintf(job + *len, "}}");
    return job;
}

Test(envelope, a_hundred_headers_pass_and_one_more_is_bad_header)
{
    size_t len;
    char *job = job_with_headers(SL_JOB_HEADERS_MAX, "v", &len);
    sl_job_rules r = rules();
    sl_job_request out;
    cr_assert_eq(parse_with(&r, job, len, &out), SL_JOB_OK, "%s", err);
    cr_assert_eq(out.header_count, SL_JOB_HEADERS_MAX);
    cr_assert_str_eq(out.headers[SL_JOB_HEADERS_MAX - 1].name, "X-99");
    sl_job_request_clear(&out);
    sprintf(job + len - 2, ",\"x-0\":\"v\"}}"); /* the 101st, and a repeat */
    cr_assert_eq(parse_with(&r, job, len + 10, &out), SL_JOB_BAD_HEADER);
    cr_assert_str_eq(err, "headers: 101 of them, more than 100");
    free(job);
}

/* The job of issue 13: tens of thousands of tiny headers, under 1 MiB,
 * once took a worker 16 s; now it is refused before any header is
 * compared or copied. */
Test(envelope, tens_of_thousands_of_tiny_headers_are_bad_header)
{
    size_t len;
    char *job = job_with_headers(75000, "", &len);
    cr_assert_lt(len, SL_JOB_MAX_BYTES_DEFAULT);
    sl_job_rules r = rules();
    sl_job_request out;
    cr_assert_eq(parse_with(&r, job, len, &out), SL_JOB_BAD_HEADER);
    cr_assert_str_eq(err, "headers: 75000 of them, more than 100");
    cr_assert_null(out.headers);
    free(job);
}

Test(envelope, more_than_64_kib_of_headers_is_bad_header)
{
    size_t value_len = 32 * 1024 - 3; /* with "X-0" and "X-1": exactly 64 KiB */
    char *value = malloc(value_len + 2);
    cr_assert_not_null(value);
    memset(value, 'a', value_len);
    value[value_len] = '\0';
    size_t len;
    char *job = job_with_headers(2, value, &len);
    sl_job_rules r = rules();
    sl_job_request out;
    cr_assert_eq(parse_with(&r, job, len, &out), SL_JOB_OK, "%s", err);
    sl_job_request_clear(&out);
    free(job);
    value[value_len] = 'a'; /* one byte more */
    value[value_len + 1] = '\0';
    job = job_with_headers(2, value, &len);
    cr_assert_eq(parse_with(&r, job, len, &out), SL_JOB_BAD_HEADER);
    cr_assert_str_eq(err, "headers: 65538 bytes of names and values, more than 65536");
    free(job);
    free(value);
}
