/* url_policy.h - what a job may name as its "path" or "url": the rules that
 * keep a producer from reaching hosts or paths the tenant did not allow
 * (SSRF). Pure; the rules themselves are written out in envelope.h.
 *
 * Both texts are printable ASCII only, with no space, '\' or '#'; before
 * the first '?' they hold no dot segment ("." or ".." in any spelling,
 * %2e included) and no "%2f"/"%5c". A path starts with "/" but not "//"
 * and is appended to the endpoint. A url is http:// or https:// and must
 * start with an allow_urls prefix byte for byte, at a boundary.
 *
 * The host of a url is not parsed here: an allowed url starts with an
 * allow_urls prefix at a boundary, and config (http_url_error) refuses a
 * prefix that does not run past its host to a '/', so the url's
 * host[:port] is a validated prefix's, byte for byte. */
#ifndef SLUICE_URL_POLICY_H
#define SLUICE_URL_POLICY_H

#include <stddef.h>

/* NULL if path (NUL-terminated) may be appended to the endpoint, else why
 * not: a static English phrase that quotes nothing, e.g. "must start with '/'". */
const char *sl_job_path_error(const char *path);

/* NULL if url (NUL-terminated) is an http(s) URL that passes the text
 * rules and starts with one of allow[0, allow_count) at a boundary, else
 * why not (static English, quotes nothing). allow may be NULL when
 * allow_count is 0. */
const char *sl_job_url_error(const char *url, const char *const *allow, size_t allow_count);

/* endpoint with its trailing '/'s removed, then path: a malloc'd string
 * the caller frees, NULL when out of memory. Neither argument may be NULL. */
char *sl_job_url_join(const char *endpoint, const char *path);

#endif
