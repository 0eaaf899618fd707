/* url_policy.c - the path and url rules of a job (see url_policy.h). */
#include "job/url_policy.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

static bool starts_with_ci(const char *s, const char *prefix)
{
    return strncasecmp(s, prefix, strlen(prefix)) == 0;
}

/* The checks path and url share. `s` is the whole text; the path part is
 * [path_start, first '?'). Returns NULL or what is wrong. */
static const char *url_text_error(const char *s, size_t path_start)
{
    for (const char *p = s; *p; p++) {
        unsigned char ch = (unsigned char)*p;
        if (ch <= 0x20 || ch >= 0x7f)
            return "must be printable ASCII without spaces (percent-encode the rest)";
        if (ch == '\\')
            return "must not contain '\\'";
        if (ch == '#')
            return "must not contain a fragment ('#')";
    }
    /* An encoded NUL, in the path or the query, ends a string early in a
     * downstream written in C, or in the log line that quotes it. */
    for (const char *p = s + path_start; (p = strchr(p, '%')) != NULL; p++)
        if (strncmp(p, "%00", 3) == 0)
            return "must not contain an encoded NUL (%00)";
    size_t end = path_start + strcspn(s + path_start, "?");
    /* An encoded slash can become a separator in a downstream that
     * decodes before routing. */
    for (size_t i = path_start; i + 3 <= end; i++)
        if (s[i] == '%' && (strncasecmp(s + i, "%2f", 3) == 0 || strncasecmp(s + i, "%5c", 3) == 0))
            return "must not contain an encoded '/' or '\\' in the path";
    /* Dot segments: curl and servers resolve them, so "/v1/../admin" would
     * leave an allowed prefix or the endpoint's path. */
    size_t i = path_start;
    while (i < end) {
        if (s[i] == '/') {
            i++;
            continue;
        }
        size_t dots = 0;
        bool only_dots = true;
        while (i < end && s[i] != '/') {
            if (s[i] == '.') {
                dots++;
                i++;
            } else if (strncasecmp(s + i, "%2e", 3) == 0 && i + 3 <= end) {
                dots++;
                i += 3;
            } else {
                only_dots = false;
                i++;
            }
        }
        if (only_dots && (dots == 1 || dots == 2))
            return "must not contain '.' or '..' segments";
    }
    return NULL;
}

const char *sl_job_path_error(const char *path)
{
    if (path[0] != '/')
        return "must start with '/'";
    if (path[1] == '/')
        return "must not start with '//'";
    return url_text_error(path, 0);
}

/* Where the path of an http(s) URL starts (after the authority), 0 if it
 * has another scheme. */
static size_t url_path_start(const char *url)
{
    size_t skip;
    if (starts_with_ci(url, "http://"))
        skip = 7;
    else if (starts_with_ci(url, "https://"))
        skip = 8;
    else
        return 0;
    return skip + strcspn(url + skip, "/?");
}

/* Byte for byte and at a boundary, so "https://a.example/v1" admits
 * neither "https://a.example/v10" nor "https://a.example/v1.evil". */
static bool prefix_allows(const char *prefix, const char *url)
{
    size_t n = strlen(prefix);
    if (n == 0 || strncmp(url, prefix, n) != 0)
        return false;
    char last = prefix[n - 1], next = url[n];
    return last == '/' || last == '?' || next == '\0' || next == '/' || next == '?';
}

const char *sl_job_url_error(const char *url, const char *const *allow, size_t allow_count)
{
    size_t start = url_path_start(url);
    if (start == 0)
        return "must be an http:// or https:// URL";
    const char *why = url_text_error(url, start);
    if (why)
        return why;
    for (size_t i = 0; i < allow_count; i++)
        if (prefix_allows(allow[i], url))
            return NULL;
    return allow_count ? "matches no allow_urls prefix"
                       : "not allowed (the tenant has no allow_urls)";
}

char *sl_job_url_join(const char *endpoint, const char *path)
{
    size_t elen = strlen(endpoint), plen = strlen(path);
    while (elen > 0 && endpoint[elen - 1] == '/')
        elen--;
    char *url = malloc(elen + plen + 1);
    if (url) {
        memcpy(url, endpoint, elen);
        memcpy(url + elen, path, plen + 1);
    }
    return url;
}
