/* request.c - see request.h. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "job/request.h"

static bool tenant_sets(const sl_tenant_config *tenant, const char *name)
{
    for (size_t i = 0; i < tenant->header_count; i++)
        if (strcasecmp(tenant->headers[i].name, name) == 0)
            return true;
    return false;
}

bool sl_request_headers_build(const sl_tenant_config *tenant, const sl_job_request *job,
                              const char *key, sl_request_headers *out)
{
    memset(out, 0, sizeof *out);
    size_t max_lines = tenant->header_count + job->header_count + 2;
    size_t text = strlen(tenant->idempotency_header) + strlen(key) + 64;
    for (size_t i = 0; i < tenant->header_count; i++)
        text += strlen(tenant->headers[i].name) + strlen(tenant->headers[i].value) + 3;
    for (size_t i = 0; i < job->header_count; i++)
        text += strlen(job->headers[i].name) + strlen(job->headers[i].value) + 3;
    out->lines = malloc(max_lines * sizeof *out->lines);
    out->storage = malloc(text);
    if (!out->lines || !out->storage) {
        sl_request_headers_clear(out);
        return false;
    }
    char *at = out->storage;
    bool content_type = false;
    for (size_t i = 0; i < tenant->header_count + job->header_count; i++) {
        bool from_tenant = i < tenant->header_count;
        const char *name = from_tenant ? tenant->headers[i].name
                                       : job->headers[i - tenant->header_count].name;
        const char *value = from_tenant ? tenant->headers[i].value
                                        : job->headers[i - tenant->header_count].value;
        if (!from_tenant && tenant_sets(tenant, name))
            continue;
        content_type |= strcasecmp(name, "Content-Type") == 0;
        out->lines[out->count++] = at;
        at += sprintf(at, "%s: %s", name, value) + 1;
    }
    out->lines[out->count++] = at;
    at += sprintf(at, "%s: %s", tenant->idempotency_header, key) + 1;
    if (!content_type) {
        out->lines[out->count++] = at;
        sprintf(at, "Content-Type: %s",
                job->body_is_json ? "application/json" : "application/octet-stream");
    }
    return true;
}

void sl_request_headers_clear(sl_request_headers *h)
{
    free(h->lines);
    free(h->storage);
    memset(h, 0, sizeof *h);
}
