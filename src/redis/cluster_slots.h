/* cluster_slots.h - the pure part of Redis Cluster routing: which slot a
 * key hashes to, the slot map a CLUSTER SLOTS reply describes, and what a
 * node's reply to a routed command means (MOVED, ASK, TRYAGAIN, ...).
 * No I/O; cluster.c does the sending. A reply from the network is read
 * as hostile: a malformed one is refused with the reason, never trusted. */
#ifndef SLUICE_CLUSTER_SLOTS_H
#define SLUICE_CLUSTER_SLOTS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <hiredis/hiredis.h>

#include "base/authority.h"

/* Redis Cluster's fixed number of hash slots. */
#define SL_CLUSTER_SLOTS 16384
/* A slot no primary serves (a hole in the map). */
#define SL_CLUSTER_NO_OWNER UINT16_MAX

/* CRC16-CCITT (XMODEM: polynomial 0x1021, initial 0), the checksum the
 * cluster spec hashes keys with. */
uint16_t sl_cluster_crc16(const char *buf, size_t len);

/* The slot of key[0, len): of the part between the first '{' and the
 * first '}' after it if that part is not empty (the hash tag), else of the
 * whole key. */
unsigned sl_cluster_key_slot(const char *key, size_t len);

/* One primary of the map. */
typedef struct sl_cluster_node {
    char host[SL_HOST_MAX + 1]; /* IPv6 without brackets */
    int port;
} sl_cluster_node;

/* The cluster as one node sees it: the owner of every slot. */
typedef struct sl_cluster_map {
    uint16_t owner[SL_CLUSTER_SLOTS]; /* index into primaries, or SL_CLUSTER_NO_OWNER */
    sl_cluster_node *primaries;       /* malloc'd, in the order first met */
    size_t primary_count;
} sl_cluster_map;

/* Fills *out from a CLUSTER SLOTS reply that node asked_host answered (an
 * empty or nil host in the reply means that node, at the port given). A
 * range whose primary has no usable endpoint ("?") is left without owner. False, with the
 * reason in err ("range 2: start 9000 > end 10") and *out zeroed, for a
 * malformed reply, an error reply, overlapping ranges, or no range at
 * all; false with "out of memory" too. Free with sl_cluster_map_clear. */
bool sl_cluster_map_parse(const redisReply *reply, const char *asked_host, sl_cluster_map *out,
                          char *err, size_t err_size);

/* Frees what m owns and zeroes it; safe on a zeroed map. */
void sl_cluster_map_clear(sl_cluster_map *m);

/* The index of primary host:port in m, or -1. */
int sl_cluster_map_find(const sl_cluster_map *m, const char *host, int port);

/* What a routed command's reply asks of the router. */
typedef enum sl_cluster_reply_kind {
    SL_CLUSTER_REPLY_DONE,      /* a result, or an error that is the command's own */
    SL_CLUSTER_REPLY_MOVED,     /* the slot lives elsewhere now: update, resend there */
    SL_CLUSTER_REPLY_ASK,       /* the key is mid-migration: ASKING + resend there, once */
    SL_CLUSTER_REPLY_TRYAGAIN,  /* TRYAGAIN, CLUSTERDOWN: back off, resend */
    SL_CLUSTER_REPLY_NOSCRIPT,  /* the node lacks the scripts: load them, resend */
    SL_CLUSTER_REPLY_FIND_PRIMARY, /* READONLY, LOADING, MASTERDOWN: refresh, back off, resend */
} sl_cluster_reply_kind;

/* Classifies a reply (NULL: DONE; the caller handles a lost connection).
 * The code must be the whole first word of an error. */
sl_cluster_reply_kind sl_cluster_reply_classify(const redisReply *reply);

/* Where a MOVED or ASK error points. */
typedef struct sl_cluster_redirect {
    unsigned slot;
    char host[SL_HOST_MAX + 1]; /* "" when the error named none: the node that answered */
    int port;
} sl_cluster_redirect;

/* Parses "MOVED 3999 127.0.0.1:6381" or "ASK 3999 host:port" (text is
 * NUL-terminated). The port is after the last ':', so an IPv6 host comes
 * bare ("::1:7000") or bracketed ("[::1]:7000"); ":7000" leaves host
 * empty. False for anything else (a slot over 16383, a bad host or port). */
bool sl_cluster_redirect_parse(const char *text, sl_cluster_redirect *out);

/* An ASK may name a node that is not a primary of the map: an empty new
 * primary receiving its first slot (the way a shard is added). The
 * router connects to at most this many such nodes at once (a hostile
 * node naming ever new addresses cannot make it open more). */
#define SL_CLUSTER_EXTRA_MAX 4

typedef enum sl_cluster_ask_where {
    SL_CLUSTER_ASK_MAP,     /* a primary of the map: *index into m->primaries */
    SL_CLUSTER_ASK_EXTRA,   /* a node already connected outside the map: *index into extra */
    SL_CLUSTER_ASK_CONNECT, /* a node outside the map, room to connect to it */
    SL_CLUSTER_ASK_REFUSE,  /* no room: back off and refresh the map */
} sl_cluster_ask_where;

/* Where an ASK to host:port goes, given the map m and the extra nodes
 * (extra_count of them, at most SL_CLUSTER_EXTRA_MAX) already connected. */
sl_cluster_ask_where sl_cluster_ask_target(const sl_cluster_map *m, const sl_cluster_node *extra,
                                           size_t extra_count, const char *host, int port,
                                           size_t *index);

/* Whether b's primaries differ from a's in number, address or order: the
 * index of a primary is what callers key their per-primary state by (a
 * SCAN cursor), so a reorder is a change too. */
bool sl_cluster_primaries_changed(const sl_cluster_map *a, const sl_cluster_map *b);

/* Refreshes of the map asked for (MOVED, a slot no one serves, a lost
 * node) start at least SL_CLUSTER_REFRESH_MIN_MS after being asked (a
 * burst is one refresh) and at least a gap after the last round ended.
 * The gap is the minimum after a round that brought news, or that no one
 * asked for (the periodic one: a lost node right after it is looked for
 * at once), and doubles (SL_CLUSTER_GAP_MIN_MS up to SL_CLUSTER_GAP_MAX_MS)
 * after one that failed or was asked for and brought none: a slot no one
 * serves, asked about by steady traffic, does not open a probe every
 * 100 ms forever. */
#define SL_CLUSTER_REFRESH_MIN_MS 100
#define SL_CLUSTER_GAP_MIN_MS 250
#define SL_CLUSTER_GAP_MAX_MS 5000

typedef enum sl_cluster_round {
    SL_CLUSTER_ROUND_NEWS,    /* a map that changed something */
    SL_CLUSTER_ROUND_NO_NEWS, /* a map, the same as before */
    SL_CLUSTER_ROUND_FAILED,  /* no address gave a map */
} sl_cluster_round;

/* The gap after a round that ended so (asked: armed by an asked-for
 * refresh), from the gap before it. */
long sl_cluster_refresh_gap(long gap_ms, sl_cluster_round round, bool asked);
/* How long from now an asked-for refresh waits: asked_ms at least, the
 * minimum, and what is left of gap_ms since the last round ended
 * since_round_ms ago. */
long sl_cluster_refresh_delay(long asked_ms, long gap_ms, int64_t since_round_ms);

#endif
