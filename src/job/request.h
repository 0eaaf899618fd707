/* request.h - the header lines of a job's HTTP request (pure). */
#ifndef SLUICE_REQUEST_H
#define SLUICE_REQUEST_H

#include <stdbool.h>
#include <stddef.h>

#include "config/config.h"
#include "job/envelope.h"

typedef struct sl_request_headers {
    const char **lines; /* "Name: value", count of them */
    size_t count;
    char *storage;      /* owns the text of lines */
} sl_request_headers;

/* Builds the headers of one delivery: the tenant's (they win over a job's
 * header of the same name, so producers cannot replace credentials), the
 * job's own, the idempotency header with `key`, and Content-Type when
 * neither set one (application/json for a JSON body, else
 * application/octet-stream). False if out of memory. Clear with
 * sl_request_headers_clear. */
bool sl_request_headers_build(const sl_tenant_config *tenant, const sl_job_request *job,
                              const char *key, sl_request_headers *out);
void sl_request_headers_clear(sl_request_headers *h);

#endif
