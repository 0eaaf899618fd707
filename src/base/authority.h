/* authority.h - the one parser of "host[:port]": a DNS name, an IPv4
 * address, or an IPv6 address in brackets, then an optional decimal port.
 * Pure; every place that reads a host and port (the Redis URL, the admin
 * address, endpoint URLs, the HTTP/1.1 client's target) goes through it,
 * so they agree on what a host is. Nothing here quotes its input: an
 * authority may sit next to a password. */
#ifndef SLUICE_AUTHORITY_H
#define SLUICE_AUTHORITY_H

#include <stdbool.h>
#include <stddef.h>

/* Why an authority was refused; each caller words its own message. */
typedef enum sl_authority_status {
    SL_AUTHORITY_OK,
    SL_AUTHORITY_NO_HOST,          /* "" or ":80" */
    SL_AUTHORITY_BAD_HOST,         /* not a valid name or address, or too long */
    SL_AUTHORITY_UNCLOSED_BRACKET, /* "[::1" */
    SL_AUTHORITY_AFTER_BRACKET,    /* "[::1]x": only ":port" may follow "]" */
    SL_AUTHORITY_UNBRACKETED_V6,   /* "::1" or "::1:80": IPv6 needs brackets */
    SL_AUTHORITY_BAD_PORT,         /* a port that is not 1..65535 (or "host:") */
} sl_authority_status;

#define SL_HOST_MAX 253 /* the longest DNS name */

typedef struct sl_authority {
    char host[SL_HOST_MAX + 1]; /* NUL-terminated; IPv6 without brackets */
    int port;                   /* 1..65535, or 0 when the text names none */
    bool bracketed;             /* the host was an IPv6 literal in [] */
} sl_authority;

/* Parses text[0, len) (no userinfo, no path) into *out. On failure *out is
 * unspecified. A bracketed host must be an IPv6 address; an unbracketed
 * one must be a DNS name or an IPv4 address. */
sl_authority_status sl_authority_parse(const char *text, size_t len, sl_authority *out);

/* A short English description of a status, e.g. "has an invalid port
 * (1..65535)", for callers with no wording of their own. */
const char *sl_authority_status_text(sl_authority_status status);

/* True if host (NUL-terminated, IPv6 without brackets) is a DNS name
 * (letters, digits, '-', '_', labels of 1..63, a trailing dot allowed), an
 * IPv4 address, or an IPv6 address. */
bool sl_host_valid(const char *host);

/* Parses the decimal port in text[0, len) (1..65535); false on anything else. */
bool sl_port_parse(const char *text, size_t len, int *out);

#endif
