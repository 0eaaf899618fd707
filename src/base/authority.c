/* authority.c - host[:port], parsed once for every caller (authority.h). */
#include <arpa/inet.h>
#include <string.h>

#include "base/authority.h"

static bool is_digit(char c)
{
    return c >= '0' && c <= '9';
}

static bool is_alnum(char c)
{
    return is_digit(c) || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}

bool sl_port_parse(const char *text, size_t len, int *out)
{
    if (len == 0 || len > 5)
        return false;
    int port = 0;
    for (size_t i = 0; i < len; i++) {
        if (!is_digit(text[i]))
            return false;
        port = port * 10 + (text[i] - '0');
    }
    if (port < 1 || port > 65535)
        return false;
    *out = port;
    return true;
}

bool sl_host_valid(const char *host)
{
    size_t len = strlen(host);
    if (len == 0 || len > 253)
        return false;
    if (strchr(host, ':')) {
        struct in6_addr a6;
        return inet_pton(AF_INET6, host, &a6) == 1;
    }
    bool all_numeric = true;
    size_t label = 0;
    for (size_t i = 0; i < len; i++) {
        char c = host[i];
        if (c == '.') {
            /* A trailing dot (fully qualified name) is allowed, an empty
             * label elsewhere is not. */
            if (label == 0 || host[i - 1] == '-')
                return false;
            label = 0;
            continue;
        }
        if (!is_alnum(c) && c != '-' && c != '_')
            return false;
        if (label == 0 && c == '-')
            return false;
        if (!is_digit(c))
            all_numeric = false;
        if (++label > 63)
            return false;
    }
    if (label > 0 && host[len - 1] == '-')
        return false;
    if (all_numeric) {
        /* Looks like IPv4: must be one ("1.2.3.999" is no host name). */
        struct in_addr a4;
        return inet_pton(AF_INET, host, &a4) == 1;
    }
    return true;
}

static bool copy_host(sl_authority *out, const char *host, size_t len)
{
    if (len > SL_HOST_MAX)
        return false;
    memcpy(out->host, host, len);
    out->host[len] = '\0';
    return true;
}

sl_authority_status sl_authority_parse(const char *text, size_t len, sl_authority *out)
{
    const char *end = text + len, *host = text, *port = NULL;
    size_t host_len;
    out->bracketed = len > 0 && text[0] == '[';
    if (out->bracketed) {
        const char *close = memchr(text, ']', len);
        if (!close)
            return SL_AUTHORITY_UNCLOSED_BRACKET;
        host = text + 1;
        host_len = (size_t)(close - host);
        if (close + 1 < end) {
            if (close[1] != ':')
                return SL_AUTHORITY_AFTER_BRACKET;
            port = close + 2;
        }
    } else {
        const char *colon = memchr(text, ':', len);
        if (colon && memchr(colon + 1, ':', (size_t)(end - colon - 1)))
            return SL_AUTHORITY_UNBRACKETED_V6;
        host_len = colon ? (size_t)(colon - text) : len;
        port = colon ? colon + 1 : NULL;
    }
    if (host_len == 0)
        return SL_AUTHORITY_NO_HOST;
    if (!copy_host(out, host, host_len) || !sl_host_valid(out->host))
        return SL_AUTHORITY_BAD_HOST;
    /* Brackets are for IPv6 only, and IPv6 needs them. */
    if (out->bracketed != (strchr(out->host, ':') != NULL))
        return out->bracketed ? SL_AUTHORITY_BAD_HOST : SL_AUTHORITY_UNBRACKETED_V6;
    out->port = 0;
    if (port && !sl_port_parse(port, (size_t)(end - port), &out->port))
        return SL_AUTHORITY_BAD_PORT;
    return SL_AUTHORITY_OK;
}

const char *sl_authority_status_text(sl_authority_status status)
{
    switch (status) {
    case SL_AUTHORITY_OK:
        return "is valid";
    case SL_AUTHORITY_NO_HOST:
        return "must have a host";
    case SL_AUTHORITY_BAD_HOST:
        return "has an invalid host";
    case SL_AUTHORITY_UNCLOSED_BRACKET:
        return "is missing ']' after the IPv6 address";
    case SL_AUTHORITY_AFTER_BRACKET:
        return "has unexpected text after the IPv6 address";
    case SL_AUTHORITY_UNBRACKETED_V6:
        return "must put an IPv6 address in brackets, e.g. [::1]:6379";
    case SL_AUTHORITY_BAD_PORT:
        return "has an invalid port (1..65535)";
    }
    return "has an invalid host";
}
