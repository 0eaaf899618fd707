/* test_cluster_slots.c - key slots, the CLUSTER SLOTS map, and what a
 * routed reply means (src/redis/cluster_slots.c). Replies are written in
 * RESP and read by hiredis's own reader, as the router gets them. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include <hiredis/hiredis.h>

#include "redis/cluster_slots.h"
#include "resp_text.h"

static redisReply error_reply(const char *text)
{
    return (redisReply){.type = REDIS_REPLY_ERROR, .str = (char *)(uintptr_t)text,
                        .len = strlen(text)};
}

static unsigned slot_of(const char *key)
{
    return sl_cluster_key_slot(key, strlen(key));
}

Test(cluster_slots, crc16_is_xmodem_as_the_cluster_spec)
{
    cr_assert_eq(sl_cluster_crc16("123456789", 9), 0x31C3);
    cr_assert_eq(slot_of("123456789"), 12739);
    cr_assert_eq(sl_cluster_crc16("", 0), 0);
    cr_assert_eq(slot_of("foo"), 12182);
}

Test(cluster_slots, a_hash_tag_picks_the_slot)
{
    cr_assert_eq(slot_of("{user1000}.following"), slot_of("{user1000}.followers"));
    cr_assert_eq(slot_of("{user1000}.following"), slot_of("user1000"));
    cr_assert_eq(slot_of("{user1000}.following"), 3443);
    /* every key of a tenant lands where the tenant's name does */
    cr_assert_eq(slot_of("sluice:{acme}:queue"), slot_of("acme"));
    cr_assert_eq(slot_of("sluice:{acme}:inflight"), slot_of("acme"));
    cr_assert_neq(slot_of("sluice:{acme}:queue"), 2232); /* the whole key's */
}

Test(cluster_slots, the_spec_s_odd_tags)
{
    /* an empty tag: the whole key is hashed */
    cr_assert_eq(slot_of("foo{}{bar}"), 8363);
    /* the tag runs from the first '{' to the first '}' after it */
    cr_assert_eq(slot_of("foo{{bar}}zap"), slot_of("{bar"));
    cr_assert_eq(slot_of("foo{{bar}}zap"), 4015);
    cr_assert_eq(slot_of("foo{bar}{zap}"), slot_of("bar"));
    /* no closing brace: the whole key */
    cr_assert_eq(slot_of("foo{bar"), sl_cluster_crc16("foo{bar", 7) & 16383);
    /* a '}' before the '{' does not close it */
    cr_assert_eq(slot_of("}foo{bar}"), slot_of("bar"));
    cr_assert_eq(slot_of("{}"), sl_cluster_crc16("{}", 2) & 16383);
}

Test(cluster_slots, a_key_with_nul_bytes_hashes_all_its_bytes)
{
    cr_assert_eq(sl_cluster_key_slot("a\0{b}", 5), slot_of("b"));
    cr_assert_neq(sl_cluster_key_slot("a\0b", 3), slot_of("a"));
}

/* Three primaries, as redis 7 answers (id and a metadata array after
 * host and port), a replica for each. */
#define THREE_SHARDS                                                                               \
    "*3\r\n"                                                                                       \
    "*4\r\n:0\r\n:5460\r\n*4\r\n$9\r\n127.0.0.1\r\n:7000\r\n$2\r\nid\r\n*0\r\n"                    \
    "*3\r\n$9\r\n127.0.0.1\r\n:7003\r\n$2\r\nr1\r\n"                                               \
    "*4\r\n:5461\r\n:10922\r\n*3\r\n$9\r\n127.0.0.1\r\n:7001\r\n$2\r\nid\r\n"                      \
    "*3\r\n$9\r\n127.0.0.1\r\n:7004\r\n$2\r\nr2\r\n"                                               \
    "*3\r\n:10923\r\n:16383\r\n*2\r\n$9\r\n127.0.0.1\r\n:7002\r\n"

Test(cluster_slots, three_shards_make_a_map)
{
    redisReply *r = resp_text_reply(THREE_SHARDS);
    sl_cluster_map m;
    char err[128] = "";
    cr_assert(sl_cluster_map_parse(r, "seed", &m, err, sizeof err), "%s", err);
    cr_assert_eq(m.primary_count, 3);
    cr_assert_str_eq(m.primaries[0].host, "127.0.0.1");
    cr_assert_eq(m.primaries[0].port, 7000);
    cr_assert_eq(m.primaries[2].port, 7002);
    cr_assert_eq(m.owner[0], 0);
    cr_assert_eq(m.owner[5460], 0);
    cr_assert_eq(m.owner[5461], 1);
    cr_assert_eq(m.owner[10922], 1);
    cr_assert_eq(m.owner[10923], 2);
    cr_assert_eq(m.owner[16383], 2);
    cr_assert_eq(sl_cluster_map_find(&m, "127.0.0.1", 7001), 1);
    cr_assert_eq(sl_cluster_map_find(&m, "127.0.0.1", 7003), -1);
    sl_cluster_map_clear(&m);
    freeReplyObject(r);
}

Test(cluster_slots, one_primary_with_several_ranges_is_one_primary)
{
    redisReply *r = resp_text_reply("*2\r\n"
                         "*3\r\n:0\r\n:9\r\n*2\r\n$1\r\nh\r\n:1\r\n"
                         "*3\r\n:20\r\n:29\r\n*2\r\n$1\r\nh\r\n:1\r\n");
    sl_cluster_map m;
    char err[128];
    cr_assert(sl_cluster_map_parse(r, "seed", &m, err, sizeof err), "%s", err);
    cr_assert_eq(m.primary_count, 1);
    cr_assert_eq(m.owner[25], 0);
    cr_assert_eq(m.owner[15], SL_CLUSTER_NO_OWNER, "a hole stays without owner");
    sl_cluster_map_clear(&m);
    freeReplyObject(r);
}

Test(cluster_slots, an_empty_host_is_the_node_that_answered)
{
    redisReply *r = resp_text_reply("*1\r\n*3\r\n:0\r\n:16383\r\n*2\r\n$0\r\n\r\n:7000\r\n");
    sl_cluster_map m;
    char err[128];
    cr_assert(sl_cluster_map_parse(r, "10.0.0.5", &m, err, sizeof err), "%s", err);
    cr_assert_str_eq(m.primaries[0].host, "10.0.0.5");
    sl_cluster_map_clear(&m);
    freeReplyObject(r);
}

/* cluster-preferred-endpoint-type unknown-endpoint: the endpoint is nil,
 * meaning the node asked, at the port given. */
Test(cluster_slots, a_nil_host_is_the_node_that_answered)
{
    redisReply *r = resp_text_reply("*2\r\n"
                         "*3\r\n:0\r\n:9\r\n*2\r\n$-1\r\n:7000\r\n"
                         "*3\r\n:10\r\n:16383\r\n*2\r\n$-1\r\n:7001\r\n");
    sl_cluster_map m;
    char err[128];
    cr_assert(sl_cluster_map_parse(r, "10.0.0.5", &m, err, sizeof err), "%s", err);
    cr_assert_eq(m.primary_count, 2);
    cr_assert_str_eq(m.primaries[0].host, "10.0.0.5");
    cr_assert_eq(m.primaries[0].port, 7000);
    cr_assert_str_eq(m.primaries[1].host, "10.0.0.5");
    cr_assert_eq(m.primaries[1].port, 7001);
    cr_assert_eq(m.owner[5], 0);
    cr_assert_eq(m.owner[100], 1);
    sl_cluster_map_clear(&m);
    freeReplyObject(r);
}

Test(cluster_slots, an_unknown_endpoint_leaves_its_range_without_owner)
{
    redisReply *r = resp_text_reply("*2\r\n"
                         "*3\r\n:0\r\n:9\r\n*2\r\n$1\r\n?\r\n:7000\r\n"
                         "*3\r\n:10\r\n:16383\r\n*2\r\n$3\r\n::1\r\n:7001\r\n");
    sl_cluster_map m;
    char err[128];
    cr_assert(sl_cluster_map_parse(r, "seed", &m, err, sizeof err), "%s", err);
    cr_assert_eq(m.primary_count, 1);
    cr_assert_eq(m.owner[5], SL_CLUSTER_NO_OWNER);
    cr_assert_str_eq(m.primaries[0].host, "::1");
    sl_cluster_map_clear(&m);
    freeReplyObject(r);
}

/* The map of a malformed reply is refused, with why. */
static void refused(const char *text, const char *why)
{
    redisReply *r = resp_text_reply(text);
    sl_cluster_map m;
    char err[160] = "";
    cr_assert_not(sl_cluster_map_parse(r, "seed", &m, err, sizeof err), "accepted %s", text);
    cr_assert(strstr(err, why), "\"%s\" does not say \"%s\"", err, why);
    cr_assert_eq(m.primaries, NULL);
    cr_assert_eq(m.primary_count, 0);
    freeReplyObject(r);
}

Test(cluster_slots, malformed_maps_are_refused_with_the_reason)
{
    refused("-ERR This instance has cluster support disabled\r\n", "cluster support disabled");
    refused("+OK\r\n", "not an array");
    refused("*0\r\n", "no slot is served");
    refused("*1\r\n:5\r\n", "range 0: not an array");
    refused("*1\r\n*2\r\n:0\r\n:5\r\n", "range 0: not an array of start, end and primary");
    refused("*1\r\n*3\r\n:-1\r\n:5\r\n*2\r\n$1\r\nh\r\n:1\r\n", "0..16383");
    refused("*1\r\n*3\r\n:0\r\n:16384\r\n*2\r\n$1\r\nh\r\n:1\r\n", "0..16383");
    refused("*1\r\n*3\r\n$1\r\n0\r\n:5\r\n*2\r\n$1\r\nh\r\n:1\r\n", "0..16383");
    refused("*1\r\n*3\r\n:9\r\n:5\r\n*2\r\n$1\r\nh\r\n:1\r\n", "start > end");
    refused("*1\r\n*3\r\n:0\r\n:5\r\n:7\r\n", "primary is not an array");
    refused("*1\r\n*3\r\n:0\r\n:5\r\n*1\r\n$1\r\nh\r\n", "primary is not an array");
    refused("*1\r\n*3\r\n:0\r\n:5\r\n*2\r\n$1\r\nh\r\n:0\r\n", "port");
    refused("*1\r\n*3\r\n:0\r\n:5\r\n*2\r\n$1\r\nh\r\n:65536\r\n", "port");
    refused("*1\r\n*3\r\n:0\r\n:5\r\n*2\r\n$1\r\nh\r\n$4\r\n7000\r\n", "port");
    refused("*1\r\n*3\r\n:0\r\n:5\r\n*2\r\n:1\r\n:7000\r\n", "host is not a string");
    refused("*1\r\n*3\r\n:0\r\n:5\r\n*2\r\n$5\r\nh st!\r\n:7000\r\n", "not a host name");
    refused("*2\r\n*3\r\n:0\r\n:5\r\n*2\r\n$1\r\nh\r\n:1\r\n"
            "*3\r\n:5\r\n:9\r\n*2\r\n$1\r\ng\r\n:1\r\n",
            "range 1: a slot listed twice");
    refused("*1\r\n*3\r\n:0\r\n:5\r\n*2\r\n$1\r\n?\r\n:1\r\n", "no primary with a known address");
}

Test(cluster_slots, no_reply_is_refused)
{
    sl_cluster_map m;
    char err[64];
    cr_assert_not(sl_cluster_map_parse(NULL, "seed", &m, err, sizeof err));
    cr_assert_str_eq(err, "CLUSTER SLOTS: no reply");
}

Test(cluster_slots, a_long_host_is_refused_not_truncated)
{
    char text[700], host[300];
    memset(host, 'a', 260);
    host[260] = '\0';
    snprintf(text, sizeof text, "*1\r\n*3\r\n:0\r\n:5\r\n*2\r\n$260\r\n%s\r\n:1\r\n", host);
    refused(text, "not a host name");
}

/* Every prefix of a good reply, and every byte of it flipped, is parsed
 * or refused without harm (ASan watches the reads). */
Test(cluster_slots, damaged_replies_never_crash)
{
    const char *good = THREE_SHARDS;
    size_t len = strlen(good);
    char copy[1024];
    cr_assert_lt(len, sizeof copy);
    for (size_t at = 0; at < len; at++) {
        for (int flip = 0; flip < 3; flip++) {
            memcpy(copy, good, len);
            copy[at] = flip == 0 ? '1' : flip == 1 ? '*' : ':';
            redisReader *reader = redisReaderCreate();
            redisReaderFeed(reader, copy, len);
            void *reply = NULL;
            if (redisReaderGetReply(reader, &reply) == REDIS_OK && reply) {
                sl_cluster_map m;
                char err[128];
                if (sl_cluster_map_parse(reply, "seed", &m, err, sizeof err)) {
                    cr_assert_gt(m.primary_count, 0);
                    for (size_t s = 0; s < SL_CLUSTER_SLOTS; s++)
                        cr_assert(m.owner[s] == SL_CLUSTER_NO_OWNER ||
                                  m.owner[s] < m.primary_count);
                    sl_cluster_map_clear(&m);
                }
                freeReplyObject(reply);
            }
            redisReaderFree(reader);
        }
    }
}

Test(cluster_slots, replies_are_classified)
{
    redisReply r = error_reply("MOVED 3999 127.0.0.1:6381");
    cr_assert_eq(sl_cluster_reply_classify(&r), SL_CLUSTER_REPLY_MOVED);
    r = error_reply("ASK 3999 127.0.0.1:6381");
    cr_assert_eq(sl_cluster_reply_classify(&r), SL_CLUSTER_REPLY_ASK);
    r = error_reply("TRYAGAIN Multiple keys request during rehashing of slot");
    cr_assert_eq(sl_cluster_reply_classify(&r), SL_CLUSTER_REPLY_TRYAGAIN);
    r = error_reply("CLUSTERDOWN The cluster is down");
    cr_assert_eq(sl_cluster_reply_classify(&r), SL_CLUSTER_REPLY_TRYAGAIN);
    r = error_reply("CLUSTERDOWN Hash slot not served");
    cr_assert_eq(sl_cluster_reply_classify(&r), SL_CLUSTER_REPLY_TRYAGAIN);
    r = error_reply("NOSCRIPT No matching script. Please use EVAL.");
    cr_assert_eq(sl_cluster_reply_classify(&r), SL_CLUSTER_REPLY_NOSCRIPT);
    r = error_reply("READONLY You can't write against a read only replica.");
    cr_assert_eq(sl_cluster_reply_classify(&r), SL_CLUSTER_REPLY_FIND_PRIMARY);
    r = error_reply("LOADING Redis is loading the dataset in memory");
    cr_assert_eq(sl_cluster_reply_classify(&r), SL_CLUSTER_REPLY_FIND_PRIMARY);
    r = error_reply("MASTERDOWN Link with MASTER is down");
    cr_assert_eq(sl_cluster_reply_classify(&r), SL_CLUSTER_REPLY_FIND_PRIMARY);
}

Test(cluster_slots, a_command_s_own_answers_are_done)
{
    cr_assert_eq(sl_cluster_reply_classify(NULL), SL_CLUSTER_REPLY_DONE);
    redisReply r = error_reply("ERR wrong number of arguments");
    cr_assert_eq(sl_cluster_reply_classify(&r), SL_CLUSTER_REPLY_DONE);
    r = error_reply("MOVEDX 1 h:1");
    cr_assert_eq(sl_cluster_reply_classify(&r), SL_CLUSTER_REPLY_DONE);
    r = error_reply("ASKING");
    cr_assert_eq(sl_cluster_reply_classify(&r), SL_CLUSTER_REPLY_DONE);
    r = (redisReply){.type = REDIS_REPLY_STRING, .str = (char *)(uintptr_t)"MOVED 1 h:1", .len = 11};
    cr_assert_eq(sl_cluster_reply_classify(&r), SL_CLUSTER_REPLY_DONE, "a value, not an error");
    r = (redisReply){.type = REDIS_REPLY_INTEGER, .integer = 3};
    cr_assert_eq(sl_cluster_reply_classify(&r), SL_CLUSTER_REPLY_DONE);
}

Test(cluster_slots, redirects_name_slot_host_and_port)
{
    sl_cluster_redirect to;
    cr_assert(sl_cluster_redirect_parse("MOVED 3999 127.0.0.1:6381", &to));
    cr_assert_eq(to.slot, 3999);
    cr_assert_str_eq(to.host, "127.0.0.1");
    cr_assert_eq(to.port, 6381);
    cr_assert(sl_cluster_redirect_parse("ASK 0 redis-2.example:7000", &to));
    cr_assert_eq(to.slot, 0);
    cr_assert_str_eq(to.host, "redis-2.example");
    cr_assert(sl_cluster_redirect_parse("MOVED 16383 ::1:7000", &to));
    cr_assert_eq(to.slot, 16383);
    cr_assert_str_eq(to.host, "::1");
    cr_assert_eq(to.port, 7000);
    cr_assert(sl_cluster_redirect_parse("MOVED 1 [fe80::1]:7001", &to));
    cr_assert_str_eq(to.host, "fe80::1");
    cr_assert_eq(to.port, 7001);
    cr_assert(sl_cluster_redirect_parse("MOVED 7 :6380", &to));
    cr_assert_str_eq(to.host, "", "no host: the node that answered");
    cr_assert_eq(to.port, 6380);
}

Test(cluster_slots, bad_redirects_are_refused)
{
    sl_cluster_redirect to;
    const char *bad[] = {
        "MOVED",  "MOVED 3999", "MOVED 3999 127.0.0.1", "MOVED 16384 h:1", "MOVED -1 h:1",
        "MOVED 99999999999 h:1", "MOVED x h:1", "MOVED  h:1", "MOVED 1 h:0", "MOVED 1 h:65536",
        "MOVED 1 h:", "MOVED 1 h:7x", "MOVED 1 h st:1", "MOVED 1 [h]:1", "ASK 1 h", "ERR 1 h:1",
        "moved 1 h:1", "",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        cr_assert_not(sl_cluster_redirect_parse(bad[i], &to), "accepted \"%s\"", bad[i]);
}

/* A map of primaries at 127.0.0.1 with these ports (no slots). */
static sl_cluster_map ports_map(const int *ports, size_t count)
{
    sl_cluster_map m = {.primary_count = count};
    m.primaries = calloc(count ? count : 1, sizeof *m.primaries);
    cr_assert(m.primaries);
    for (size_t i = 0; i < count; i++) {
        strcpy(m.primaries[i].host, "127.0.0.1");
        m.primaries[i].port = ports[i];
    }
    return m;
}

Test(cluster_slots, primaries_change_by_number_address_or_order)
{
    sl_cluster_map a = ports_map((const int[]){7000, 7001, 7002}, 3);
    sl_cluster_map same = ports_map((const int[]){7000, 7001, 7002}, 3);
    sl_cluster_map reordered = ports_map((const int[]){7001, 7000, 7002}, 3);
    sl_cluster_map other = ports_map((const int[]){7000, 7001, 7005}, 3);
    sl_cluster_map fewer = ports_map((const int[]){7000, 7001}, 2);
    cr_assert_not(sl_cluster_primaries_changed(&a, &same));
    cr_assert(sl_cluster_primaries_changed(&a, &reordered)); /* a SCAN cursor would move */
    cr_assert(sl_cluster_primaries_changed(&a, &other));
    cr_assert(sl_cluster_primaries_changed(&a, &fewer));
    strcpy(same.primaries[1].host, "127.0.0.2");
    cr_assert(sl_cluster_primaries_changed(&a, &same));
    sl_cluster_map_clear(&a);
    sl_cluster_map_clear(&same);
    sl_cluster_map_clear(&reordered);
    sl_cluster_map_clear(&other);
    sl_cluster_map_clear(&fewer);
}

Test(cluster_slots, a_round_without_news_widens_the_gap_news_resets_it)
{
    long gap = SL_CLUSTER_REFRESH_MIN_MS;
    gap = sl_cluster_refresh_gap(gap, SL_CLUSTER_ROUND_NO_NEWS, true);
    cr_assert_eq(gap, SL_CLUSTER_GAP_MIN_MS);
    gap = sl_cluster_refresh_gap(gap, SL_CLUSTER_ROUND_FAILED, false);
    cr_assert_eq(gap, 2 * SL_CLUSTER_GAP_MIN_MS);
    for (int i = 0; i < 20; i++)
        gap = sl_cluster_refresh_gap(gap, SL_CLUSTER_ROUND_NO_NEWS, true);
    cr_assert_eq(gap, SL_CLUSTER_GAP_MAX_MS);
    cr_assert_eq(sl_cluster_refresh_gap(gap, SL_CLUSTER_ROUND_NEWS, true),
                 SL_CLUSTER_REFRESH_MIN_MS);
    /* the periodic round, asked for by no one, finds the cluster quiet: a
     * node lost after it is looked for at once, not after a wide gap */
    cr_assert_eq(sl_cluster_refresh_gap(gap, SL_CLUSTER_ROUND_NO_NEWS, false),
                 SL_CLUSTER_REFRESH_MIN_MS);
}

Test(cluster_slots, an_asked_refresh_waits_out_the_gap)
{
    /* a burst is one refresh: never sooner than the minimum */
    cr_assert_eq(sl_cluster_refresh_delay(0, SL_CLUSTER_REFRESH_MIN_MS, INT64_MAX),
                 SL_CLUSTER_REFRESH_MIN_MS);
    /* a round long ago: the minimum, whatever the gap */
    cr_assert_eq(sl_cluster_refresh_delay(0, SL_CLUSTER_GAP_MAX_MS, 60000),
                 SL_CLUSTER_REFRESH_MIN_MS);
    /* a round that ended 1 s ago with a 5 s gap: 4 s more (a slot no one
     * serves, asked about by every claim, is not probed every 100 ms) */
    cr_assert_eq(sl_cluster_refresh_delay(0, SL_CLUSTER_GAP_MAX_MS, 1000),
                 SL_CLUSTER_GAP_MAX_MS - 1000);
    cr_assert_eq(sl_cluster_refresh_delay(0, SL_CLUSTER_GAP_MAX_MS, 0), SL_CLUSTER_GAP_MAX_MS);
    /* what the caller asked, if later */
    cr_assert_eq(sl_cluster_refresh_delay(8000, SL_CLUSTER_GAP_MAX_MS, 0), 8000);
}

Test(cluster_slots, an_ask_outside_the_map_connects_within_a_bound)
{
    sl_cluster_map m = ports_map((const int[]){7000, 7001, 7002}, 3);
    sl_cluster_node extra[SL_CLUSTER_EXTRA_MAX] = {{"127.0.0.1", 7010}};
    size_t i = 99;
    cr_assert_eq(sl_cluster_ask_target(&m, extra, 1, "127.0.0.1", 7001, &i), SL_CLUSTER_ASK_MAP);
    cr_assert_eq(i, 1);
    cr_assert_eq(sl_cluster_ask_target(&m, extra, 1, "127.0.0.1", 7010, &i),
                 SL_CLUSTER_ASK_EXTRA);
    cr_assert_eq(i, 0);
    /* an empty new primary importing its first slot: connected on demand */
    cr_assert_eq(sl_cluster_ask_target(&m, extra, 1, "127.0.0.1", 7011, &i),
                 SL_CLUSTER_ASK_CONNECT);
    /* a node naming ever new addresses: no more than the bound */
    for (size_t k = 1; k < SL_CLUSTER_EXTRA_MAX; k++)
        extra[k] = (sl_cluster_node){"127.0.0.1", 7020 + (int)k};
    cr_assert_eq(sl_cluster_ask_target(&m, extra, SL_CLUSTER_EXTRA_MAX, "127.0.0.1", 7011, &i),
                 SL_CLUSTER_ASK_REFUSE);
    cr_assert_eq(sl_cluster_ask_target(&m, extra, SL_CLUSTER_EXTRA_MAX, "127.0.0.1", 7000, &i),
                 SL_CLUSTER_ASK_MAP);
    sl_cluster_map_clear(&m);
}
