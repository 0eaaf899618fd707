/* cluster_slots.c - see cluster_slots.h. */
#include "redis/cluster_slots.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

uint16_t sl_cluster_crc16(const char *buf, size_t len)
{
    uint16_t crc = 0;
    for (size_t i = 0; i < len; i++) {
        crc ^= (uint16_t)((uint8_t)buf[i] << 8);
        for (int bit = 0; bit < 8; bit++)
            crc = (crc & 0x8000) ? (uint16_t)((crc << 1) ^ 0x1021) : (uint16_t)(crc << 1);
    }
    return crc;
}

unsigned sl_cluster_key_slot(const char *key, size_t len)
{
    const char *open = memchr(key, '{', len);
    if (open) {
        size_t after = (size_t)(open - key) + 1;
        const char *close = memchr(open + 1, '}', len - after);
        if (close && close > open + 1)
            return sl_cluster_crc16(open + 1, (size_t)(close - open - 1)) & (SL_CLUSTER_SLOTS - 1);
    }
    return sl_cluster_crc16(key, len) & (SL_CLUSTER_SLOTS - 1);
}

void sl_cluster_map_clear(sl_cluster_map *m)
{
    free(m->primaries);
    memset(m, 0, sizeof *m);
}

int sl_cluster_map_find(const sl_cluster_map *m, const char *host, int port)
{
    for (size_t i = 0; i < m->primary_count; i++)
        if (m->primaries[i].port == port && strcmp(m->primaries[i].host, host) == 0)
            return (int)i;
    return -1;
}

/* A slot number of the reply: an integer 0..16383. */
static bool slot_number(const redisReply *r, unsigned *out)
{
    if (r->type != REDIS_REPLY_INTEGER || r->integer < 0 || r->integer >= SL_CLUSTER_SLOTS)
        return false;
    *out = (unsigned)r->integer;
    return true;
}

/* The primary of one range (host, port[, id, ...]) into *node. Returns
 * NULL if usable, "unknown" if the node has no endpoint to give (the
 * range stays without owner), or the reason it is malformed. */
static const char *read_node(const redisReply *r, const char *asked_host, sl_cluster_node *node)
{
    if (r->type != REDIS_REPLY_ARRAY || r->elements < 2)
        return "its primary is not an array of host and port";
    const redisReply *host = r->element[0], *port = r->element[1];
    if (port->type != REDIS_REPLY_INTEGER || port->integer < 1 || port->integer > 65535)
        return "its primary's port is not 1..65535";
    /* nil (cluster-preferred-endpoint-type unknown-endpoint) and "" both
     * mean "the node you asked, at this port". */
    bool asked = host->type == REDIS_REPLY_NIL;
    if (!asked && host->type != REDIS_REPLY_STRING)
        return "its primary's host is not a string";
    if (!asked && host->len == 1 && host->str[0] == '?')
        return "unknown";
    asked = asked || host->len == 0;
    const char *name = asked ? asked_host : host->str;
    size_t len = asked ? strlen(asked_host) : host->len;
    if (len > SL_HOST_MAX || memchr(name, '\0', len))
        return "its primary's host is not a host name or address";
    memcpy(node->host, name, len);
    node->host[len] = '\0';
    if (!sl_host_valid(node->host))
        return "its primary's host is not a host name or address";
    node->port = (int)port->integer;
    return NULL;
}

/* The index of node in out, added if new; -1 if out of memory. */
static int add_primary(sl_cluster_map *out, const sl_cluster_node *node, size_t *capacity)
{
    int found = sl_cluster_map_find(out, node->host, node->port);
    if (found >= 0)
        return found;
    if (out->primary_count == *capacity) {
        size_t grown = *capacity ? *capacity * 2 : 4;
        sl_cluster_node *p = realloc(out->primaries, grown * sizeof *p);
        if (!p)
            return -1;
        out->primaries = p;
        *capacity = grown;
    }
    out->primaries[out->primary_count] = *node;
    return (int)out->primary_count++;
}

static bool refuse(sl_cluster_map *out, char *err, size_t err_size, size_t range, const char *why)
{
    if (range == SIZE_MAX)
        snprintf(err, err_size, "CLUSTER SLOTS: %s", why);
    else
        snprintf(err, err_size, "CLUSTER SLOTS range %zu: %s", range, why);
    sl_cluster_map_clear(out);
    return false;
}

bool sl_cluster_map_parse(const redisReply *reply, const char *asked_host, sl_cluster_map *out,
                          char *err, size_t err_size)
{
    memset(out, 0, sizeof *out);
    for (size_t s = 0; s < SL_CLUSTER_SLOTS; s++)
        out->owner[s] = SL_CLUSTER_NO_OWNER;
    if (!reply)
        return refuse(out, err, err_size, SIZE_MAX, "no reply");
    if (reply->type == REDIS_REPLY_ERROR)
        return refuse(out, err, err_size, SIZE_MAX, reply->str);
    if (reply->type != REDIS_REPLY_ARRAY)
        return refuse(out, err, err_size, SIZE_MAX, "the reply is not an array");
    if (reply->elements == 0)
        return refuse(out, err, err_size, SIZE_MAX, "no slot is served");
    size_t capacity = 0;
    for (size_t i = 0; i < reply->elements; i++) {
        const redisReply *range = reply->element[i];
        unsigned start, end;
        if (range->type != REDIS_REPLY_ARRAY || range->elements < 3)
            return refuse(out, err, err_size, i, "not an array of start, end and primary");
        if (!slot_number(range->element[0], &start) || !slot_number(range->element[1], &end))
            return refuse(out, err, err_size, i, "a slot that is not an integer 0..16383");
        if (start > end)
            return refuse(out, err, err_size, i, "start > end");
        sl_cluster_node node;
        const char *why = read_node(range->element[2], asked_host, &node);
        if (why && strcmp(why, "unknown") != 0)
            return refuse(out, err, err_size, i, why);
        int index = SL_CLUSTER_NO_OWNER;
        if (!why) {
            index = add_primary(out, &node, &capacity);
            if (index < 0)
                return refuse(out, err, err_size, SIZE_MAX, "out of memory");
        }
        for (unsigned s = start; s <= end; s++) {
            if (out->owner[s] != SL_CLUSTER_NO_OWNER)
                return refuse(out, err, err_size, i, "a slot listed twice");
            out->owner[s] = (uint16_t)index;
        }
    }
    if (out->primary_count == 0)
        return refuse(out, err, err_size, SIZE_MAX, "no primary with a known address");
    return true;
}

/* The code of an error reply, its first word, compared whole. */
static bool code_is(const redisReply *reply, const char *code)
{
    size_t len = strlen(code);
    return reply->len >= len && memcmp(reply->str, code, len) == 0 &&
           (reply->len == len || reply->str[len] == ' ');
}

sl_cluster_reply_kind sl_cluster_reply_classify(const redisReply *reply)
{
    if (!reply || reply->type != REDIS_REPLY_ERROR || !reply->str)
        return SL_CLUSTER_REPLY_DONE;
    if (code_is(reply, "MOVED"))
        return SL_CLUSTER_REPLY_MOVED;
    if (code_is(reply, "ASK"))
        return SL_CLUSTER_REPLY_ASK;
    if (code_is(reply, "TRYAGAIN") || code_is(reply, "CLUSTERDOWN"))
        return SL_CLUSTER_REPLY_TRYAGAIN;
    if (code_is(reply, "NOSCRIPT"))
        return SL_CLUSTER_REPLY_NOSCRIPT;
    if (code_is(reply, "READONLY") || code_is(reply, "LOADING") || code_is(reply, "MASTERDOWN"))
        return SL_CLUSTER_REPLY_FIND_PRIMARY;
    return SL_CLUSTER_REPLY_DONE;
}

bool sl_cluster_redirect_parse(const char *text, sl_cluster_redirect *out)
{
    const char *rest;
    if (strncmp(text, "MOVED ", 6) == 0)
        rest = text + 6;
    else if (strncmp(text, "ASK ", 4) == 0)
        rest = text + 4;
    else
        return false;
    const char *space = strchr(rest, ' ');
    if (!space || space == rest || space - rest > 5)
        return false;
    unsigned slot = 0;
    for (const char *p = rest; p < space; p++) {
        if (*p < '0' || *p > '9')
            return false;
        slot = slot * 10 + (unsigned)(*p - '0');
    }
    if (slot >= SL_CLUSTER_SLOTS)
        return false;
    const char *addr = space + 1;
    const char *colon = strrchr(addr, ':');
    if (!colon || !sl_port_parse(colon + 1, strlen(colon + 1), &out->port))
        return false;
    size_t len = (size_t)(colon - addr);
    bool bracketed = len >= 2 && addr[0] == '[' && addr[len - 1] == ']';
    if (bracketed) {
        addr++;
        len -= 2;
    }
    if (len > SL_HOST_MAX)
        return false;
    memcpy(out->host, addr, len);
    out->host[len] = '\0';
    if ((len > 0 && !sl_host_valid(out->host)) || (bracketed && !strchr(out->host, ':')))
        return false;
    out->slot = slot;
    return true;
}

bool sl_cluster_primaries_changed(const sl_cluster_map *a, const sl_cluster_map *b)
{
    if (a->primary_count != b->primary_count)
        return true;
    for (size_t i = 0; i < a->primary_count; i++)
        if (a->primaries[i].port != b->primaries[i].port ||
            strcmp(a->primaries[i].host, b->primaries[i].host) != 0)
            return true;
    return false;
}

long sl_cluster_refresh_gap(long gap_ms, sl_cluster_round round, bool asked)
{
    if (round == SL_CLUSTER_ROUND_NEWS || (round == SL_CLUSTER_ROUND_NO_NEWS && !asked))
        return SL_CLUSTER_REFRESH_MIN_MS;
    long next = gap_ms < SL_CLUSTER_GAP_MIN_MS / 2 ? SL_CLUSTER_GAP_MIN_MS : gap_ms * 2;
    return next > SL_CLUSTER_GAP_MAX_MS ? SL_CLUSTER_GAP_MAX_MS : next;
}

long sl_cluster_refresh_delay(long asked_ms, long gap_ms, int64_t since_round_ms)
{
    long delay = asked_ms > SL_CLUSTER_REFRESH_MIN_MS ? asked_ms : SL_CLUSTER_REFRESH_MIN_MS;
    if (since_round_ms < 0)
        since_round_ms = 0;
    if (since_round_ms < gap_ms && gap_ms - since_round_ms > delay)
        delay = (long)(gap_ms - since_round_ms);
    return delay;
}

sl_cluster_ask_where sl_cluster_ask_target(const sl_cluster_map *m, const sl_cluster_node *extra,
                                           size_t extra_count, const char *host, int port,
                                           size_t *index)
{
    int found = sl_cluster_map_find(m, host, port);
    if (found >= 0) {
        *index = (size_t)found;
        return SL_CLUSTER_ASK_MAP;
    }
    for (size_t i = 0; i < extra_count; i++)
        if (extra[i].port == port && strcmp(extra[i].host, host) == 0) {
            *index = i;
            return SL_CLUSTER_ASK_EXTRA;
        }
    return extra_count < SL_CLUSTER_EXTRA_MAX ? SL_CLUSTER_ASK_CONNECT : SL_CLUSTER_ASK_REFUSE;
}
