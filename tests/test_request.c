/* test_request.c - the header lines of one delivery (job/request.h): the
 * tenant's headers win over a job's of the same name (a producer must not
 * replace credentials), then the job's own, the idempotency key, and a
 * Content-Type when nobody set one. Pure: no Redis, no clock. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "job/envelope.h"
#include "job/request.h"

/* A tenant config owning its strings, as config.c leaves it: headers
 * from name/value pairs (NULL-terminated), free with tenant_free. */
static sl_tenant_config tenant_with(const char *const *pairs, const char *idempotency_header)
{
    size_t n = 0;
    while (pairs && pairs[2 * n])
        n++;
    sl_tenant_config t = {
        .name = strdup("acme"),
        .endpoint = strdup("http://api.example/hook/"),
        .headers = calloc(n ? n : 1, sizeof(sl_header_config)),
        .header_count = n,
        .idempotency_header = strdup(idempotency_header),
    };
    cr_assert(t.name && t.endpoint && t.headers && t.idempotency_header);
    for (size_t i = 0; i < n; i++) {
        t.headers[i].name = strdup(pairs[2 * i]);
        t.headers[i].value = strdup(pairs[2 * i + 1]);
        cr_assert(t.headers[i].name && t.headers[i].value);
    }
    return t;
}

static void tenant_free(sl_tenant_config *t)
{
    for (size_t i = 0; i < t->header_count; i++) {
        free(t->headers[i].name);
        free(t->headers[i].value);
    }
    free(t->headers);
    free(t->name);
    free(t->endpoint);
    free(t->idempotency_header);
}

/* The tenant's credentials and one more header; the first `n` of them. */
static sl_tenant_config tenant(size_t n)
{
    const char *pairs[] = {"Authorization", "Bearer tenant-secret", "X-Tenant", "acme", NULL};
    pairs[2 * n] = NULL;
    return tenant_with(pairs, "Idempotency-Key");
}

/* Asserts the built lines are exactly `want` (NULL-terminated), in order. */
static void expect_lines(const sl_request_headers *h, const char *const *want)
{
    size_t n = 0;
    while (want[n])
        n++;
    for (size_t i = 0; i < h->count && i < n; i++)
        cr_assert_str_eq(h->lines[i], want[i], "line %zu", i);
    cr_assert_eq(h->count, n, "%zu lines, expected %zu", h->count, n);
}

static sl_job_request parsed(const char *element)
{
    static const char *const allow[] = {"http://other.example/"};
    sl_job_rules rules = {.endpoint = "http://api.example/hook/", .allow_urls = allow,
                          .allow_url_count = 1, .idempotency_header = "Idempotency-Key"};
    sl_job_request job;
    char err[256];
    sl_job_status st = sl_job_parse(element, strlen(element), &rules, &job, err, sizeof err);
    cr_assert_eq(st, SL_JOB_OK, "%s: %s", element, err);
    return job;
}

Test(request, tenant_headers_win_over_the_jobs_ignoring_case)
{
    sl_tenant_config t = tenant(2);
    sl_job_request job = parsed("{\"headers\":{\"authorization\":\"Bearer stolen\","
                                "\"x-TENANT\":\"evil\",\"X-Trace\":\"t1\"}}");
    sl_request_headers h;
    cr_assert(sl_request_headers_build(&t, &job, "k1", &h));
    expect_lines(&h, (const char *const[]){"Authorization: Bearer tenant-secret",
                                           "X-Tenant: acme", "X-Trace: t1",
                                           "Idempotency-Key: k1",
                                           "Content-Type: application/octet-stream", NULL});
    for (size_t i = 0; i < h.count; i++) {
        cr_assert_null(strstr(h.lines[i], "stolen"), "job value leaked: %s", h.lines[i]);
        cr_assert_null(strstr(h.lines[i], "evil"), "job value leaked: %s", h.lines[i]);
    }
    sl_request_headers_clear(&h);
    sl_job_request_clear(&job);
    tenant_free(&t);
}

Test(request, job_headers_follow_the_tenants_in_envelope_order)
{
    sl_tenant_config t = tenant(1);
    sl_job_request job = parsed("{\"headers\":{\"X-B\":\"2\",\"X-A\":\"1\",\"X-Empty\":\"\"}}");
    sl_request_headers h;
    cr_assert(sl_request_headers_build(&t, &job, "key", &h));
    expect_lines(&h, (const char *const[]){"Authorization: Bearer tenant-secret", "X-B: 2",
                                           "X-A: 1", "X-Empty: ", "Idempotency-Key: key",
                                           "Content-Type: application/octet-stream", NULL});
    sl_request_headers_clear(&h);
    sl_job_request_clear(&job);
    tenant_free(&t);
}

Test(request, the_idempotency_header_has_the_tenants_name_and_the_key)
{
    sl_tenant_config t = tenant_with(NULL, "X-Request-Id");
    sl_job_request job = parsed("{\"id\":\"order-17\"}");
    sl_request_headers h;
    /* The caller passes the key (the job's id, or one it assigned). */
    cr_assert(sl_request_headers_build(&t, &job, job.id, &h));
    expect_lines(&h, (const char *const[]){"X-Request-Id: order-17",
                                           "Content-Type: application/octet-stream", NULL});
    sl_request_headers_clear(&h);
    sl_job_request_clear(&job);
    tenant_free(&t);
}

Test(request, content_type_follows_the_body_unless_someone_set_one)
{
    sl_tenant_config t = tenant(0);
    sl_request_headers h;

    sl_job_request json = parsed("{\"body\":{\"n\":12345678901234567890}}");
    cr_assert(sl_request_headers_build(&t, &json, "k", &h));
    expect_lines(&h, (const char *const[]){"Idempotency-Key: k",
                                           "Content-Type: application/json", NULL});
    sl_request_headers_clear(&h);
    sl_job_request_clear(&json);

    sl_job_request text = parsed("{\"body\":\"plain\"}");
    cr_assert(sl_request_headers_build(&t, &text, "k", &h));
    expect_lines(&h, (const char *const[]){"Idempotency-Key: k",
                                           "Content-Type: application/octet-stream", NULL});
    sl_request_headers_clear(&h);
    sl_job_request_clear(&text);

    /* The job's own, in any case, replaces the default ... */
    sl_job_request own = parsed("{\"body\":{},\"headers\":{\"content-type\":\"text/csv\"}}");
    cr_assert(sl_request_headers_build(&t, &own, "k", &h));
    expect_lines(&h, (const char *const[]){"content-type: text/csv", "Idempotency-Key: k", NULL});
    sl_request_headers_clear(&h);

    /* ... and the tenant's replaces the job's. */
    sl_tenant_config with_ct =
        tenant_with((const char *const[]){"Content-Type", "application/x-ndjson", NULL},
                    "Idempotency-Key");
    cr_assert(sl_request_headers_build(&with_ct, &own, "k", &h));
    expect_lines(&h, (const char *const[]){"Content-Type: application/x-ndjson",
                                           "Idempotency-Key: k", NULL});
    sl_request_headers_clear(&h);
    sl_job_request_clear(&own);
    tenant_free(&with_ct);
    tenant_free(&t);
}

/* Method, url and body stay on the job request; the headers built for it
 * do not change them. */
Test(request, method_url_and_body_come_from_the_envelope)
{
    sl_tenant_config t = tenant(2);
    sl_job_request job = parsed("{\"id\":\"a1\",\"method\":\"PUT\",\"path\":\"/orders/7?x=1\","
                                "\"body\":[1, 2],\"headers\":{\"X-Trace\":\"t\"}}");
    sl_request_headers h;
    cr_assert(sl_request_headers_build(&t, &job, job.id, &h));
    cr_assert_str_eq(job.method, "PUT");
    cr_assert_str_eq(job.url, "http://api.example/hook/orders/7?x=1");
    cr_assert_eq(job.body_len, strlen("[1, 2]"));
    cr_assert_str_eq(job.body, "[1, 2]");
    expect_lines(&h, (const char *const[]){"Authorization: Bearer tenant-secret",
                                           "X-Tenant: acme", "X-Trace: t", "Idempotency-Key: a1",
                                           "Content-Type: application/json", NULL});
    sl_request_headers_clear(&h);
    sl_job_request_clear(&job);

    sl_job_request bare = parsed("{\"method\":\"GET\",\"url\":\"http://other.example/v2\"}");
    cr_assert(sl_request_headers_build(&t, &bare, "gen-1", &h));
    cr_assert_str_eq(bare.method, "GET");
    cr_assert_str_eq(bare.url, "http://other.example/v2");
    cr_assert_eq(bare.body_len, 0);
    expect_lines(&h, (const char *const[]){"Authorization: Bearer tenant-secret",
                                           "X-Tenant: acme", "Idempotency-Key: gen-1",
                                           "Content-Type: application/octet-stream", NULL});
    sl_request_headers_clear(&h);
    sl_job_request_clear(&bare);
    tenant_free(&t);
}

/* The text buffer is sized from the inputs: long names, values and key
 * must fit (ASan catches an overrun). */
Test(request, long_values_fit)
{
    static char big[20000], key[SL_JOB_ID_MAX + 1];
    memset(big, 'v', sizeof big - 1);
    memset(key, 'k', sizeof key - 1);
    sl_tenant_config t = tenant_with((const char *const[]){"X-Big-Tenant", big, NULL},
                                     "Idempotency-Key");
    sl_job_request job = {.header_count = 1, .body_is_json = true};
    job.headers = calloc(1, sizeof *job.headers);
    cr_assert_not_null(job.headers);
    job.headers[0].name = strdup("X-Big-Job");
    job.headers[0].value = strdup(big);
    sl_request_headers h;
    cr_assert(sl_request_headers_build(&t, &job, key, &h));
    cr_assert_eq(h.count, 4);
    cr_assert_eq(strlen(h.lines[0]), strlen("X-Big-Tenant: ") + sizeof big - 1);
    cr_assert_eq(strlen(h.lines[1]), strlen("X-Big-Job: ") + sizeof big - 1);
    cr_assert_eq(strlen(h.lines[2]), strlen("Idempotency-Key: ") + sizeof key - 1);
    cr_assert_str_eq(h.lines[3], "Content-Type: application/json");
    sl_request_headers_clear(&h);
    sl_job_request_clear(&job);
    tenant_free(&t);
}

Test(request, clear_is_safe_twice)
{
    sl_tenant_config t = tenant(0);
    sl_job_request job = {0};
    sl_request_headers h;
    cr_assert(sl_request_headers_build(&t, &job, "k", &h));
    sl_request_headers_clear(&h);
    cr_assert_null(h.lines);
    cr_assert_null(h.storage);
    cr_assert_eq(h.count, 0);
    sl_request_headers_clear(&h);
    tenant_free(&t);
}
