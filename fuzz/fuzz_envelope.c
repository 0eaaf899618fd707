/* fuzz_envelope.c - the job envelope parser (sl_job_parse) against the two
 * promises a hostile producer must not break:
 *
 * SSRF: a job is accepted only for a URL that sluice's parsers and
 * libcurl's URL parser both place on an allowed destination, i.e. on the
 * scheme, host and port of the tenant's endpoint or of one of its
 * allow_urls. sluice's view is sl_authority_parse of the URL's authority
 * for every scheme, plus sl_h1_target_parse for the http:// URLs the own
 * client sends; libcurl's view is curl_url() with the flags libcurl itself
 * uses for CURLOPT_URL.
 *
 * Header injection: no control character reaches the wire. Every header
 * line the request is sent with (sl_request_headers_build, the lines both
 * HTTP clients send) holds none in its name and none but HTAB inside its
 * value (RFC 9110 field-content allows HTAB there); and for http:// URLs
 * the own client's whole request head (sl_h1_request_head) is exactly the
 * expected number of CRLF-ended lines with no other CR, LF, NUL or control
 * byte, and a request line of three fields.
 *
 * Input: byte 0 picks one of the rule sets below; the rest is the list
 * element. A broken promise is a sl_fuzz_violation (a message, then abort). */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <curl/curl.h>

#include "base/authority.h"
#include "config/config.h"
#include "http/http1_request.h"
#include "job/envelope.h"
#include "job/request.h"
#include "violation.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Tenants as an operator would write them: endpoints with and without a
 * path, allow_urls ending in '/', '?' or the bare authority, IPv4, IPv6,
 * other ports and both schemes. */
static const char *const allow_a[] = {"https://api.example.com/v1/", "http://10.0.0.7:8080/cb?",
                                      "https://partner.example.org"};
static const char *const allow_b[] = {"http://[::1]:9000/", "https://example.net/hook",
                                      "http://svc.internal"};
static const sl_job_rules rule_sets[] = {
    {.endpoint = "https://hooks.example.com/in", .allow_urls = allow_a, .allow_url_count = 3,
     .idempotency_header = "Idempotency-Key"},
    {.endpoint = "http://127.0.0.1:8081", .allow_urls = allow_b, .allow_url_count = 3,
     .idempotency_header = "X-Request-Id", .max_bytes = 4096},
    {.endpoint = "http://example.com/api/", .idempotency_header = "Idempotency-Key"},
    {.raw = true, .endpoint = "http://localhost/x", .idempotency_header = "Idempotency-Key"},
};
#define RULE_SET_COUNT (sizeof rule_sets / sizeof rule_sets[0])

typedef struct destination {
    char scheme[8];
    char host[SL_HOST_MAX + 1]; /* lowercase; IPv6 without brackets */
    int port;
} destination;

static void lowercase(char *s)
{
    for (; *s; s++)
        if (*s >= 'A' && *s <= 'Z')
            *s = (char)(*s - 'A' + 'a');
}

static bool set_host(destination *d, const char *host, size_t len)
{
    if (len >= 2 && host[0] == '[' && host[len - 1] == ']') {
        host++;
        len -= 2;
    }
    if (len == 0 || len >= sizeof d->host)
        return false;
    memcpy(d->host, host, len);
    d->host[len] = '\0';
    lowercase(d->host);
    return true;
}

static int default_port(const char *scheme)
{
    return strcmp(scheme, "https") == 0 ? 443 : strcmp(scheme, "http") == 0 ? 80 : 0;
}

/* Where libcurl sends url: CURLOPT_URL is parsed with these flags
 * (lib/url.c, parseurlandfillconn). */
static bool curl_destination(const char *url, destination *d)
{
    CURLU *h = curl_url();
    if (!h)
        sl_fuzz_violation("curl_url: out of memory");
    char *scheme = NULL, *host = NULL, *port = NULL;
    bool ok = curl_url_set(h, CURLUPART_URL, url, CURLU_GUESS_SCHEME | CURLU_NON_SUPPORT_SCHEME) ==
                  CURLUE_OK &&
              curl_url_get(h, CURLUPART_SCHEME, &scheme, 0) == CURLUE_OK &&
              curl_url_get(h, CURLUPART_HOST, &host, 0) == CURLUE_OK &&
              curl_url_get(h, CURLUPART_PORT, &port, CURLU_DEFAULT_PORT) == CURLUE_OK &&
              strlen(scheme) < sizeof d->scheme && set_host(d, host, strlen(host));
    if (ok) {
        strcpy(d->scheme, scheme);
        lowercase(d->scheme);
        d->port = atoi(port);
    }
    curl_free(scheme);
    curl_free(host);
    curl_free(port);
    curl_url_cleanup(h);
    return ok;
}

/* Where sluice reads url to go: the scheme before "://" and the authority
 * up to the first '/', '?' or '#', through the one authority parser. */
static bool sluice_destination(const char *url, destination *d)
{
    const char *sep = strstr(url, "://");
    if (!sep || (size_t)(sep - url) >= sizeof d->scheme)
        return false;
    memcpy(d->scheme, url, (size_t)(sep - url));
    d->scheme[sep - url] = '\0';
    lowercase(d->scheme);
    const char *authority = sep + 3;
    sl_authority a;
    if (sl_authority_parse(authority, strcspn(authority, "/?#"), &a) != SL_AUTHORITY_OK)
        return false;
    if (!set_host(d, a.host, strlen(a.host)))
        return false;
    d->port = a.port ? a.port : default_port(d->scheme);
    return true;
}

/* What the own HTTP/1.1 client connects to, for the URLs it takes. */
static bool own_client_destination(const char *url, destination *d, sl_h1_target *t)
{
    if (!sl_h1_target_parse(url, t))
        return false;
    strcpy(d->scheme, "http");
    if (!set_host(d, t->host, strlen(t->host)))
        sl_fuzz_violation("own client host \"%s\" unusable", t->host);
    d->port = atoi(t->port);
    return true;
}

static bool same(const destination *a, const destination *b)
{
    return strcmp(a->scheme, b->scheme) == 0 && strcmp(a->host, b->host) == 0 &&
           a->port == b->port;
}

/* Whether d is the endpoint's destination or an allow_urls entry's, each
 * as read by the same parser that read d. */
static bool allowed(const sl_job_rules *rules, const destination *d,
                    bool (*read)(const char *, destination *))
{
    destination ok;
    if (read(rules->endpoint, &ok) && same(&ok, d))
        return true;
    for (size_t i = 0; i < rules->allow_url_count; i++)
        if (read(rules->allow_urls[i], &ok) && same(&ok, d))
            return true;
    return false;
}

static bool own_client_read(const char *url, destination *d)
{
    sl_h1_target t;
    return own_client_destination(url, d, &t);
}

static bool is_control(unsigned char ch)
{
    return ch < 0x20 || ch == 0x7f;
}

/* A header line "Name: value": a non-empty name without controls, spaces
 * or colons, then ": ", then a value with no control byte but HTAB. */
static void check_header_line(const char *line)
{
    const char *colon = strchr(line, ':');
    if (!colon || colon == line || colon[1] != ' ')
        sl_fuzz_violation("header line \"%s\" is not Name: value", line);
    for (const char *p = line; p < colon; p++)
        if (is_control((unsigned char)*p) || *p == ' ')
            sl_fuzz_violation("header line \"%s\": control byte or space in the name", line);
    for (const char *p = colon + 1; *p; p++)
        if (is_control((unsigned char)*p) && *p != '\t')
            sl_fuzz_violation("header line \"%s\": control byte in the value", line);
}

/* The own client's request head: lines CRLF-ended and nothing else. */
static void check_request_head(const sl_job_request *job, const sl_h1_target *t,
                               const sl_request_headers *h)
{
    size_t len = sl_h1_request_head(NULL, 0, job->method, t, h->lines, h->count, job->body_len);
    char *head = malloc(len + 1);
    if (!head)
        sl_fuzz_violation("request head: out of memory");
    if (sl_h1_request_head(head, len + 1, job->method, t, h->lines, h->count, job->body_len) != len)
        sl_fuzz_violation("request head: length differs between sizing and writing");
    size_t lines = 0, spaces_in_first = 0;
    for (size_t i = 0; i < len; i++) {
        unsigned char ch = (unsigned char)head[i];
        if (ch == '\r') {
            if (i + 1 >= len || head[i + 1] != '\n')
                sl_fuzz_violation("request head: CR without LF at %zu: %s", i, head);
            lines++;
            i++;
        } else if (is_control(ch) && ch != '\t') {
            sl_fuzz_violation("request head: control byte 0x%02x at %zu: %s", ch, i, head);
        } else if (lines == 0 && (ch == ' ' || ch == '\t')) {
            spaces_in_first += ch == ' ' ? 1 : 100;
        }
    }
    if (len < 4 || memcmp(head + len - 4, "\r\n\r\n", 4) != 0 || spaces_in_first != 2)
        sl_fuzz_violation("request head: no blank line at the end, or not 3 fields in the request line: %s", head);
    bool has_host = false;
    for (size_t i = 0; i < h->count; i++)
        has_host |= strncasecmp(h->lines[i], "Host:", 5) == 0;
    size_t expected = 1 + !has_host + h->count +
                      sl_h1_request_has_body(job->method, job->body_len) + 1;
    if (lines != expected)
        sl_fuzz_violation("request head: %zu lines, expected %zu: %s", lines, expected, head);
    free(head);
}

static void check_accepted(const sl_job_rules *rules, const sl_job_request *job)
{
    /* SSRF: every reading of the URL lands on an allowed destination. */
    destination d = {.port = 0};
    if (!curl_destination(job->url, &d) || !allowed(rules, &d, curl_destination))
        sl_fuzz_violation("SSRF: libcurl goes to %s://%s:%d, not allowed, for %s", d.scheme, d.host,
                          d.port, job->url);
    if (!sluice_destination(job->url, &d) || !allowed(rules, &d, sluice_destination))
        sl_fuzz_violation("SSRF: sl_authority_parse reads %s://%s:%d, not allowed, for %s", d.scheme,
                          d.host, d.port, job->url);
    sl_h1_target target;
    bool own = own_client_destination(job->url, &d, &target);
    if (own && !allowed(rules, &d, own_client_read))
        sl_fuzz_violation("SSRF: the own client goes to %s://%s:%d, not allowed, for %s", d.scheme,
                          d.host, d.port, job->url);

    /* The request line's parts and the id (the idempotency key). */
    for (const char *p = job->url; *p; p++)
        if (is_control((unsigned char)*p) || *p == ' ')
            sl_fuzz_violation("url \"%s\" holds a control byte or space", job->url);
    for (const char *p = job->method; *p; p++)
        if (*p < 'A' || *p > 'Z')
            sl_fuzz_violation("method \"%s\" is not uppercase letters", job->method);
    if (job->id)
        for (const char *p = job->id; *p; p++)
            if (is_control((unsigned char)*p))
                sl_fuzz_violation("id \"%s\" holds a control byte", job->id);
    if (!job->body || job->body[job->body_len] != '\0')
        sl_fuzz_violation("body NULL or not NUL-terminated");

    /* Header injection: the lines both clients send. */
    char name[] = "Authorization", value[] = "Bearer tenant-secret", key_header[64];
    snprintf(key_header, sizeof key_header, "%s",
             rules->idempotency_header ? rules->idempotency_header : "Idempotency-Key");
    sl_header_config tenant_header = {.name = name, .value = value};
    sl_tenant_config tenant = {.headers = &tenant_header, .header_count = 1,
                               .idempotency_header = key_header};
    for (size_t i = 0; i < job->header_count; i++) {
        if (job->headers[i].name[0] == '\0')
            sl_fuzz_violation("header %zu has an empty name", i);
        for (const char *p = job->headers[i].name; *p; p++)
            if (is_control((unsigned char)*p) || *p == ' ' || *p == ':')
                sl_fuzz_violation("header name \"%s\" holds a control byte, space or colon", job->headers[i].name);
        for (const char *p = job->headers[i].value; *p; p++)
            if (is_control((unsigned char)*p) && *p != '\t')
                sl_fuzz_violation("header %s: value holds control byte 0x%02x", job->headers[i].name,
                                  (unsigned char)*p);
    }
    sl_request_headers h;
    if (!sl_request_headers_build(&tenant, job, job->id ? job->id : "assigned-id", &h))
        return; /* out of memory */
    for (size_t i = 0; i < h.count; i++)
        check_header_line(h.lines[i]);
    if (own)
        check_request_head(job, &target, &h);
    sl_request_headers_clear(&h);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    const sl_job_rules *rules = &rule_sets[data[0] % RULE_SET_COUNT];
    sl_job_request job;
    memset(&job, 0xa5, sizeof job); /* the parser must set all of it */
    char err[256];
    sl_job_status st = sl_job_parse((const char *)data + 1, size - 1, rules, &job, err, sizeof err);
    if (st == SL_JOB_OK) {
        check_accepted(rules, &job);
    } else {
        /* A refusal leaves nothing to free and a message safe to log. */
        if (job.id || job.method || job.url || job.headers || job.header_count || job.body ||
            job.body_len || job.body_is_json || job.deadline_ms || !memchr(err, '\0', sizeof err))
            sl_fuzz_violation("refused (%d) but the request is not zeroed, or err not terminated", st);
        for (const char *p = err; *p; p++)
            if (is_control((unsigned char)*p))
                sl_fuzz_violation("refusal message holds control byte 0x%02x: %s", (unsigned char)*p, err);
        if (st != SL_JOB_NO_MEMORY && !sl_job_status_reason(st))
            sl_fuzz_violation("status %d has no dead-letter reason", st);
    }
    sl_job_request_clear(&job);
    return 0;
}
