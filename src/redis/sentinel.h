/* sentinel.h - what the sentinels and the nodes they name say, read
 * without I/O: the reply of SENTINEL get-master-addr-by-name, the reply
 * of ROLE, and a +switch-master message. Every reply is outside input
 * (a sentinel may be misconfigured, or not a sentinel at all): anything
 * but the expected shape is refused with a reason in words, never quoted
 * raw beyond a short, printable excerpt. */
#ifndef SLUICE_SENTINEL_H
#define SLUICE_SENTINEL_H

#include <stdbool.h>
#include <stddef.h>

#include <hiredis/hiredis.h>

#include "base/authority.h"

/* A node's address as a sentinel gives it. */
typedef struct sl_sentinel_addr {
    char host[SL_HOST_MAX + 1]; /* an IPv4/IPv6 address or a DNS name */
    int port;                   /* 1..65535 */
} sl_sentinel_addr;

typedef enum sl_sentinel_answer {
    SL_SENTINEL_FOUND,   /* *addr is the primary */
    SL_SENTINEL_UNKNOWN, /* nil: the sentinel monitors no primary of that name */
    SL_SENTINEL_BAD,     /* an error reply or a malformed one; err says which */
} sl_sentinel_answer;

/* Reads the reply of SENTINEL get-master-addr-by-name: [host, port] or
 * nil. On SL_SENTINEL_BAD err holds why ("error reply: ERR unknown
 * command ...", "port '0x' is not 1..65535", ...). */
sl_sentinel_answer sl_sentinel_parse_master_addr(const redisReply *reply, sl_sentinel_addr *addr,
                                                 char *err, size_t err_size);

typedef enum sl_sentinel_role {
    SL_ROLE_MASTER,
    SL_ROLE_REPLICA,  /* "slave" */
    SL_ROLE_SENTINEL,
    SL_ROLE_BAD,      /* an error reply or not a ROLE reply; err says which */
} sl_sentinel_role;

/* Reads the reply of ROLE: an array whose first element is "master",
 * "slave" or "sentinel". */
sl_sentinel_role sl_sentinel_parse_role(const redisReply *reply, char *err, size_t err_size);

typedef enum sl_sentinel_switch {
    SL_SWITCH_OURS,  /* our primary moved to *to */
    SL_SWITCH_OTHER, /* another primary's (or not a +switch-master message) */
    SL_SWITCH_BAD,   /* a +switch-master message for us that cannot be read */
} sl_sentinel_switch;

/* Reads one message of a SUBSCRIBE +switch-master: ["message",
 * "+switch-master", "NAME oldip oldport newip newport"]. Subscription
 * confirmations and other channels are SL_SWITCH_OTHER. */
sl_sentinel_switch sl_sentinel_parse_switch(const redisReply *reply, const char *master_name,
                                            sl_sentinel_addr *to, char *err, size_t err_size);

/* The sentinel at position answered: move it to the front of order (the
 * sentinels' indexes in the order they are asked), keeping the others'
 * order, so the next resolution asks it first. */
void sl_sentinel_promote(size_t *order, size_t count, size_t position);

/* The sentinel at position named a node that is not the primary (a stale
 * sentinel, cut off from the others): move it to the back of order,
 * keeping the others' order, so the next resolution asks the others
 * first. Out of range: order unchanged. */
void sl_sentinel_demote(size_t *order, size_t count, size_t position);

/* "host:port" or "[v6]:port": an address as messages show it. */
void sl_sentinel_addr_format(const char *host, int port, char *out, size_t out_size);

/* True for an error reply saying the node is a replica now (READONLY):
 * the primary moved under the connection. */
bool sl_sentinel_reply_readonly(const redisReply *reply);

#endif
