/* sentinel.c - see sentinel.h. */
#include "redis/sentinel.h"

#include <stdio.h>
#include <string.h>

#define EXCERPT_MAX 60 /* of an outside string quoted in a reason */

/* text[0, len) for a message: at most EXCERPT_MAX bytes, anything not
 * printable ASCII (a quote, a control byte) as '?', so a hostile reply
 * cannot forge a log line. */
static void excerpt(const char *text, size_t len, char *out, size_t out_size)
{
    size_t n = len < EXCERPT_MAX ? len : EXCERPT_MAX;
    if (n >= out_size)
        n = out_size - 1;
    for (size_t i = 0; i < n; i++) {
        unsigned char ch = (unsigned char)text[i];
        out[i] = ch >= 0x20 && ch < 0x7f && ch != '"' ? (char)ch : '?';
    }
    out[n] = '\0';
    if (len > n && n >= 3)
        memcpy(out + n - 3, "...", 3);
}

/* An error reply's text as a reason: "error reply: ERR ...". */
static void error_reason(const redisReply *reply, char *err, size_t err_size)
{
    char text[EXCERPT_MAX + 1];
    excerpt(reply->str ? reply->str : "", reply->str ? reply->len : 0, text, sizeof text);
    snprintf(err, err_size, "error reply: %s", text);
}

static bool is_string(const redisReply *r)
{
    return r && (r->type == REDIS_REPLY_STRING || r->type == REDIS_REPLY_STATUS) && r->str;
}

/* host[0, len) and port text as an address; false with err if either is
 * not one. */
static bool read_addr(const char *host, size_t host_len, const char *port, size_t port_len,
                      sl_sentinel_addr *addr, char *err, size_t err_size)
{
    char shown[EXCERPT_MAX + 1];
    if (host_len == 0 || host_len > SL_HOST_MAX || memchr(host, '\0', host_len)) {
        excerpt(host, host_len, shown, sizeof shown);
        snprintf(err, err_size, "host '%s' is not a host name or address", shown);
        return false;
    }
    memcpy(addr->host, host, host_len);
    addr->host[host_len] = '\0';
    if (!sl_host_valid(addr->host)) {
        excerpt(host, host_len, shown, sizeof shown);
        snprintf(err, err_size, "host '%s' is not a host name or address", shown);
        return false;
    }
    if (!sl_port_parse(port, port_len, &addr->port)) {
        excerpt(port, port_len, shown, sizeof shown);
        snprintf(err, err_size, "port '%s' is not 1..65535", shown);
        return false;
    }
    return true;
}

sl_sentinel_answer sl_sentinel_parse_master_addr(const redisReply *reply, sl_sentinel_addr *addr,
                                                 char *err, size_t err_size)
{
    if (!reply) {
        snprintf(err, err_size, "no reply");
        return SL_SENTINEL_BAD;
    }
    if (reply->type == REDIS_REPLY_NIL)
        return SL_SENTINEL_UNKNOWN;
    if (reply->type == REDIS_REPLY_ERROR) {
        error_reason(reply, err, err_size);
        return SL_SENTINEL_BAD;
    }
    if (reply->type != REDIS_REPLY_ARRAY || reply->elements != 2) {
        snprintf(err, err_size, "not a [host, port] reply");
        return SL_SENTINEL_BAD;
    }
    const redisReply *host = reply->element[0], *port = reply->element[1];
    if (!is_string(host)) {
        snprintf(err, err_size, "the host is not a string");
        return SL_SENTINEL_BAD;
    }
    char port_text[24];
    const char *port_str = NULL;
    size_t port_len = 0;
    if (is_string(port)) {
        port_str = port->str;
        port_len = port->len;
    } else if (port && port->type == REDIS_REPLY_INTEGER) {
        port_len = (size_t)snprintf(port_text, sizeof port_text, "%lld", port->integer);
        port_str = port_text;
    } else {
        snprintf(err, err_size, "the port is not a string or an integer");
        return SL_SENTINEL_BAD;
    }
    if (!read_addr(host->str, host->len, port_str, port_len, addr, err, err_size))
        return SL_SENTINEL_BAD;
    return SL_SENTINEL_FOUND;
}

sl_sentinel_role sl_sentinel_parse_role(const redisReply *reply, char *err, size_t err_size)
{
    if (!reply) {
        snprintf(err, err_size, "no reply");
        return SL_ROLE_BAD;
    }
    if (reply->type == REDIS_REPLY_ERROR) {
        error_reason(reply, err, err_size);
        return SL_ROLE_BAD;
    }
    if (reply->type != REDIS_REPLY_ARRAY || reply->elements == 0 || !is_string(reply->element[0])) {
        snprintf(err, err_size, "not a ROLE reply");
        return SL_ROLE_BAD;
    }
    const redisReply *role = reply->element[0];
    if (role->len == 6 && memcmp(role->str, "master", 6) == 0)
        return SL_ROLE_MASTER;
    if ((role->len == 5 && memcmp(role->str, "slave", 5) == 0) ||
        (role->len == 7 && memcmp(role->str, "replica", 7) == 0))
        return SL_ROLE_REPLICA;
    if (role->len == 8 && memcmp(role->str, "sentinel", 8) == 0)
        return SL_ROLE_SENTINEL;
    char shown[EXCERPT_MAX + 1];
    excerpt(role->str, role->len, shown, sizeof shown);
    snprintf(err, err_size, "unknown role '%s'", shown);
    return SL_ROLE_BAD;
}

/* The start of the space-separated word that ends just before end
 * (text[0, end)); *start = where it begins. False if there is no word or
 * no space before it (the name must come first). */
static bool word_before(const char *text, size_t end, size_t *start)
{
    size_t i = end;
    while (i > 0 && text[i - 1] != ' ')
        i--;
    if (i == end || i == 0)
        return false;
    *start = i;
    return true;
}

sl_sentinel_switch sl_sentinel_parse_switch(const redisReply *reply, const char *master_name,
                                            sl_sentinel_addr *to, char *err, size_t err_size)
{
    if (!reply || reply->type != REDIS_REPLY_ARRAY || reply->elements != 3)
        return SL_SWITCH_OTHER;
    const redisReply *kind = reply->element[0], *channel = reply->element[1],
                     *payload = reply->element[2];
    if (!is_string(kind) || kind->len != 7 || memcmp(kind->str, "message", 7) != 0 ||
        !is_string(channel) || channel->len != 14 || memcmp(channel->str, "+switch-master", 14) != 0)
        return SL_SWITCH_OTHER;
    if (!is_string(payload)) {
        snprintf(err, err_size, "+switch-master message is not a string");
        return SL_SWITCH_BAD;
    }
    /* "NAME oldip oldport newip newport": the four addresses are read
     * from the end, so the name is whatever comes before them. */
    const char *text = payload->str;
    size_t len = payload->len, word[4], end = len;
    for (int i = 3; i >= 0; i--) {
        if (!word_before(text, end, &word[i])) {
            snprintf(err, err_size, "+switch-master message is not 'NAME oldip oldport newip newport'");
            return SL_SWITCH_BAD;
        }
        end = word[i] - 1; /* the space before this word */
    }
    size_t name_len = end;
    if (name_len != strlen(master_name) || memcmp(text, master_name, name_len) != 0)
        return SL_SWITCH_OTHER;
    if (!read_addr(text + word[2], word[3] - 1 - word[2], text + word[3], len - word[3], to, err,
                   err_size))
        return SL_SWITCH_BAD;
    return SL_SWITCH_OURS;
}

void sl_sentinel_promote(size_t *order, size_t count, size_t position)
{
    if (position == 0 || position >= count)
        return;
    size_t first = order[position];
    memmove(order + 1, order, position * sizeof *order);
    order[0] = first;
}

void sl_sentinel_demote(size_t *order, size_t count, size_t position)
{
    if (position >= count)
        return;
    size_t last = order[position];
    memmove(order + position, order + position + 1, (count - 1 - position) * sizeof *order);
    order[count - 1] = last;
}

bool sl_sentinel_reply_readonly(const redisReply *reply)
{
    return reply && reply->type == REDIS_REPLY_ERROR && reply->str &&
           strncmp(reply->str, "READONLY", 8) == 0 && (reply->str[8] == ' ' || reply->str[8] == '\0');
}

void sl_sentinel_addr_format(const char *host, int port, char *out, size_t out_size)
{
    if (strchr(host, ':'))
        snprintf(out, out_size, "[%s]:%d", host, port);
    else
        snprintf(out, out_size, "%s:%d", host, port);
}
