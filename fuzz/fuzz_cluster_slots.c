/* fuzz_cluster_slots.c - Redis Cluster's parsers (src/redis/cluster_slots.c)
 * on whatever a node (or something posing as one) might send: every reply
 * the bytes make, read by hiredis's reader as the router reads it, is
 * parsed as a CLUSTER SLOTS map and classified as a routed command's
 * reply; an error reply's text is parsed as a MOVED/ASK target; and the
 * raw bytes are hashed to a key slot.
 *
 * Input: byte 0 picks the size of the pieces the reader is fed in
 * (1..256); the rest is the RESP stream (and the key).
 *
 * Checked, beyond memory safety: a map accepted has primaries, each with
 * a valid host and a port 1..65535, and every owner is a primary or none;
 * a refused map says why and owns nothing; a redirect accepted names a
 * slot below 16384 and a port 1..65535; a key's slot is below 16384.
 *
 * Not fuzzed: huge arrays (resp_stream.h says why). */
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/authority.h"
#include "redis/cluster_slots.h"
#include "resp_stream.h"
#include "violation.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_map(const redisReply *reply)
{
    sl_cluster_map *m = malloc(sizeof *m);
    if (!m)
        return;
    char err[256];
    err[0] = '\0';
    if (sl_cluster_map_parse(reply, "seed.example", m, err, sizeof err)) {
        if (m->primary_count == 0)
            sl_fuzz_violation("a map without primaries was accepted");
        for (size_t i = 0; i < m->primary_count; i++)
            if (!sl_host_valid(m->primaries[i].host) || m->primaries[i].port < 1 ||
                m->primaries[i].port > 65535)
                sl_fuzz_violation("primary %zu is %s:%d", i, m->primaries[i].host,
                                  m->primaries[i].port);
        for (size_t s = 0; s < SL_CLUSTER_SLOTS; s++)
            if (m->owner[s] != SL_CLUSTER_NO_OWNER && m->owner[s] >= m->primary_count)
                sl_fuzz_violation("slot %zu owned by primary %u of %zu", s, m->owner[s],
                                  m->primary_count);
        sl_cluster_map_clear(m);
    } else if (err[0] == '\0' || m->primaries || m->primary_count) {
        sl_fuzz_violation("a map refused without a message, or owning primaries");
    }
    free(m);
}

static void check_reply(const redisReply *reply, void *arg)
{
    (void)arg;
    check_map(reply);
    volatile unsigned sink = sl_cluster_reply_classify(reply);
    if (reply->type == REDIS_REPLY_ERROR && strlen(reply->str) == reply->len) {
        sl_cluster_redirect to;
        if (sl_cluster_redirect_parse(reply->str, &to) &&
            (to.slot >= SL_CLUSTER_SLOTS || to.port < 1 || to.port > 65535 ||
             (to.host[0] && !sl_host_valid(to.host))))
            sl_fuzz_violation("redirect to slot %u, %s:%d", to.slot, to.host, to.port);
    }
    (void)sink;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    size_t piece = 1 + data[0];
    data++;
    size--;
    if (sl_cluster_key_slot((const char *)data, size) >= SL_CLUSTER_SLOTS)
        sl_fuzz_violation("a key slot past 16383");
    sl_fuzz_resp_stream(data, size, piece, check_reply, NULL);
    return 0;
}
