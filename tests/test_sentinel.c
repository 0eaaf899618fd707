/* test_sentinel.c - reading what sentinels and nodes answer
 * (src/redis/sentinel.c): replies are built from raw protocol bytes by
 * hiredis's own reader, as they come off the wire. */
#include <criterion/criterion.h>
#include <string.h>

#include "redis/sentinel.h"
#include "resp_text.h"

static sl_sentinel_answer master_addr(const char *resp, sl_sentinel_addr *addr, char *err)
{
    redisReply *reply = resp_text_reply(resp);
    sl_sentinel_answer answer = sl_sentinel_parse_master_addr(reply, addr, err, 256);
    freeReplyObject(reply);
    return answer;
}

Test(sentinel, master_addr_reads_host_and_port)
{
    sl_sentinel_addr addr;
    char err[256];
    cr_assert_eq(master_addr("*2\r\n$9\r\n127.0.0.1\r\n$4\r\n6380\r\n", &addr, err),
                 SL_SENTINEL_FOUND);
    cr_assert_str_eq(addr.host, "127.0.0.1");
    cr_assert_eq(addr.port, 6380);
    cr_assert_eq(master_addr("*2\r\n$3\r\n::1\r\n:6379\r\n", &addr, err), SL_SENTINEL_FOUND);
    cr_assert_str_eq(addr.host, "::1");
    cr_assert_eq(addr.port, 6379);
    cr_assert_eq(master_addr("*2\r\n$15\r\nredis-0.example\r\n$4\r\n6379\r\n", &addr, err),
                 SL_SENTINEL_FOUND);
    cr_assert_str_eq(addr.host, "redis-0.example");
}

Test(sentinel, master_addr_nil_is_an_unknown_name)
{
    sl_sentinel_addr addr;
    char err[256];
    cr_assert_eq(master_addr("*-1\r\n", &addr, err), SL_SENTINEL_UNKNOWN);
    cr_assert_eq(master_addr("$-1\r\n", &addr, err), SL_SENTINEL_UNKNOWN);
}

Test(sentinel, master_addr_refuses_what_is_not_an_address)
{
    static const struct {
        const char *resp, *reason;
    } cases[] = {
        {"-ERR unknown command 'SENTINEL'\r\n", "error reply: ERR unknown command 'SENTINEL'"},
        {"+OK\r\n", "not a [host, port] reply"},
        {"*1\r\n$9\r\n127.0.0.1\r\n", "not a [host, port] reply"},
        {"*3\r\n$1\r\na\r\n$1\r\nb\r\n$1\r\nc\r\n", "not a [host, port] reply"},
        {"*2\r\n:1\r\n$4\r\n6379\r\n", "the host is not a string"},
        {"*2\r\n$9\r\n127.0.0.1\r\n*0\r\n", "the port is not a string or an integer"},
        {"*2\r\n$9\r\n127.0.0.1\r\n$1\r\n0\r\n", "port '0' is not 1..65535"},
        {"*2\r\n$9\r\n127.0.0.1\r\n$5\r\n65536\r\n", "port '65536' is not 1..65535"},
        {"*2\r\n$9\r\n127.0.0.1\r\n:-1\r\n", "port '-1' is not 1..65535"},
        {"*2\r\n$9\r\n127.0.0.1\r\n$3\r\n6x9\r\n", "port '6x9' is not 1..65535"},
        {"*2\r\n$0\r\n\r\n$4\r\n6379\r\n", "host '' is not a host name or address"},
        {"*2\r\n$7\r\na b\"c\nd\r\n$4\r\n6379\r\n", "host 'a b?c?d' is not a host name or address"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        sl_sentinel_addr addr;
        char err[256] = "";
        cr_assert_eq(master_addr(cases[i].resp, &addr, err), SL_SENTINEL_BAD, "case %zu", i);
        cr_assert_str_eq(err, cases[i].reason, "case %zu", i);
    }
}

Test(sentinel, master_addr_quotes_a_long_host_shortly)
{
    char resp[1200], host[1001];
    memset(host, 'a', 1000);
    host[1000] = '\0';
    snprintf(resp, sizeof resp, "*2\r\n$1000\r\n%s\r\n$4\r\n6379\r\n", host);
    sl_sentinel_addr addr;
    char err[256];
    cr_assert_eq(master_addr(resp, &addr, err), SL_SENTINEL_BAD);
    cr_assert_lt(strlen(err), 120);
    cr_assert(strstr(err, "...' is not a host name or address"), "%s", err);
}

Test(sentinel, master_addr_without_a_reply)
{
    sl_sentinel_addr addr;
    char err[256];
    cr_assert_eq(sl_sentinel_parse_master_addr(NULL, &addr, err, sizeof err), SL_SENTINEL_BAD);
    cr_assert_str_eq(err, "no reply");
}

static sl_sentinel_role role_of(const char *resp, char *err)
{
    redisReply *reply = resp_text_reply(resp);
    sl_sentinel_role role = sl_sentinel_parse_role(reply, err, 256);
    freeReplyObject(reply);
    return role;
}

Test(sentinel, role_reads_the_first_element)
{
    char err[256];
    cr_assert_eq(role_of("*3\r\n$6\r\nmaster\r\n:3129659\r\n*0\r\n", err), SL_ROLE_MASTER);
    cr_assert_eq(role_of("*5\r\n$5\r\nslave\r\n$9\r\n127.0.0.1\r\n:9839\r\n$9\r\nconnected\r\n"
                         ":3167038\r\n",
                         err),
                 SL_ROLE_REPLICA);
    cr_assert_eq(role_of("*2\r\n$8\r\nsentinel\r\n*1\r\n$8\r\nmymaster\r\n", err), SL_ROLE_SENTINEL);
}

Test(sentinel, role_refuses_the_rest)
{
    static const struct {
        const char *resp, *reason;
    } cases[] = {
        {"-NOAUTH Authentication required.\r\n", "error reply: NOAUTH Authentication required."},
        {"+master\r\n", "not a ROLE reply"},
        {"*0\r\n", "not a ROLE reply"},
        {"*1\r\n:1\r\n", "not a ROLE reply"},
        {"*1\r\n$7\r\nprimary\r\n", "unknown role 'primary'"},
        {"*1\r\n$7\r\nmasterx\r\n", "unknown role 'masterx'"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char err[256] = "";
        cr_assert_eq(role_of(cases[i].resp, err), SL_ROLE_BAD, "case %zu", i);
        cr_assert_str_eq(err, cases[i].reason, "case %zu", i);
    }
}

/* A pub/sub message on channel with payload, as the sentinel sends it. */
static sl_sentinel_switch switch_of(const char *channel, const char *payload, sl_sentinel_addr *to,
                                    char *err)
{
    char resp[512];
    snprintf(resp, sizeof resp, "*3\r\n$7\r\nmessage\r\n$%zu\r\n%s\r\n$%zu\r\n%s\r\n",
             strlen(channel), channel, strlen(payload), payload);
    redisReply *reply = resp_text_reply(resp);
    sl_sentinel_switch s = sl_sentinel_parse_switch(reply, "mymaster", to, err, 256);
    freeReplyObject(reply);
    return s;
}

Test(sentinel, switch_master_for_our_name)
{
    sl_sentinel_addr to;
    char err[256];
    cr_assert_eq(switch_of("+switch-master", "mymaster 127.0.0.1 6379 127.0.0.1 6380", &to, err),
                 SL_SWITCH_OURS);
    cr_assert_str_eq(to.host, "127.0.0.1");
    cr_assert_eq(to.port, 6380);
    cr_assert_eq(switch_of("+switch-master", "mymaster ::1 6379 ::1 7000", &to, err),
                 SL_SWITCH_OURS);
    cr_assert_str_eq(to.host, "::1");
    cr_assert_eq(to.port, 7000);
}

Test(sentinel, switch_master_of_another_name_or_channel)
{
    sl_sentinel_addr to;
    char err[256];
    cr_assert_eq(switch_of("+switch-master", "other 127.0.0.1 6379 127.0.0.1 6380", &to, err),
                 SL_SWITCH_OTHER);
    cr_assert_eq(switch_of("+switch-master", "mymaster2 127.0.0.1 6379 127.0.0.1 6380", &to, err),
                 SL_SWITCH_OTHER);
    cr_assert_eq(switch_of("+switch-master", "xmymaster 127.0.0.1 6379 127.0.0.1 6380", &to, err),
                 SL_SWITCH_OTHER);
    cr_assert_eq(switch_of("+sdown", "master mymaster 127.0.0.1 6379", &to, err), SL_SWITCH_OTHER);
    /* the confirmation of the subscription */
    redisReply *confirm = resp_text_reply("*3\r\n$9\r\nsubscribe\r\n$14\r\n+switch-master\r\n:1\r\n");
    cr_assert_eq(sl_sentinel_parse_switch(confirm, "mymaster", &to, err, sizeof err),
                 SL_SWITCH_OTHER);
    freeReplyObject(confirm);
    cr_assert_eq(sl_sentinel_parse_switch(NULL, "mymaster", &to, err, sizeof err), SL_SWITCH_OTHER);
}

Test(sentinel, switch_master_malformed)
{
    static const struct {
        const char *payload, *reason;
    } cases[] = {
        {"mymaster 127.0.0.1 6379 127.0.0.1", "+switch-master message is not 'NAME oldip oldport newip newport'"},
        {"", "+switch-master message is not 'NAME oldip oldport newip newport'"},
        {"127.0.0.1 6379 127.0.0.1 6380", "+switch-master message is not 'NAME oldip oldport newip newport'"},
        {"mymaster 127.0.0.1 6379 127.0.0.1 6380 ", "+switch-master message is not 'NAME oldip oldport newip newport'"},
        {"mymaster 127.0.0.1 6379 127.0.0.1 80x", "port '80x' is not 1..65535"},
        {"mymaster 127.0.0.1 6379 bad_host! 6380", "host 'bad_host!' is not a host name or address"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        sl_sentinel_addr to;
        char err[256] = "";
        cr_assert_eq(switch_of("+switch-master", cases[i].payload, &to, err), SL_SWITCH_BAD,
                     "case %zu", i);
        cr_assert_str_eq(err, cases[i].reason, "case %zu", i);
    }
}

Test(sentinel, the_sentinel_that_answered_goes_first)
{
    size_t order[] = {0, 1, 2, 3};
    sl_sentinel_promote(order, 4, 2);
    cr_assert(order[0] == 2 && order[1] == 0 && order[2] == 1 && order[3] == 3);
    sl_sentinel_promote(order, 4, 0);
    cr_assert(order[0] == 2 && order[1] == 0 && order[2] == 1 && order[3] == 3);
    sl_sentinel_promote(order, 4, 3);
    cr_assert(order[0] == 3 && order[1] == 2 && order[2] == 0 && order[3] == 1);
    sl_sentinel_promote(order, 4, 4); /* out of range: unchanged */
    cr_assert(order[0] == 3 && order[1] == 2 && order[2] == 0 && order[3] == 1);
}

Test(sentinel, a_sentinel_that_named_a_replica_goes_last)
{
    size_t order[] = {0, 1, 2, 3};
    sl_sentinel_demote(order, 4, 0);
    cr_assert(order[0] == 1 && order[1] == 2 && order[2] == 3 && order[3] == 0);
    sl_sentinel_demote(order, 4, 1);
    cr_assert(order[0] == 1 && order[1] == 3 && order[2] == 0 && order[3] == 2);
    sl_sentinel_demote(order, 4, 3); /* already last: unchanged */
    cr_assert(order[0] == 1 && order[1] == 3 && order[2] == 0 && order[3] == 2);
    sl_sentinel_demote(order, 4, 4); /* out of range: unchanged */
    cr_assert(order[0] == 1 && order[1] == 3 && order[2] == 0 && order[3] == 2);
}

Test(sentinel, a_stale_sentinel_stops_being_asked_first)
{
    /* Sentinel 0 is cut off and names the old primary; 1 and 2 know the
     * new one. 0 answers first and is promoted, ROLE says replica, so it
     * is demoted: the next resolution asks 1 first, which is right and
     * promoted, and 0 is not asked first again. */
    size_t order[] = {1, 2, 0};
    sl_sentinel_promote(order, 3, 2);
    cr_assert(order[0] == 0);
    sl_sentinel_demote(order, 3, 0);
    cr_assert(order[0] == 1 && order[1] == 2 && order[2] == 0);
    sl_sentinel_promote(order, 3, 0);
    cr_assert(order[0] == 1 && order[1] == 2 && order[2] == 0);
}

Test(sentinel, readonly_is_a_demoted_primary)
{
    redisReply *ro = resp_text_reply("-READONLY You can't write against a read only replica.\r\n");
    redisReply *other = resp_text_reply("-READONLYX no\r\n");
    redisReply *ok = resp_text_reply("+OK\r\n");
    cr_assert(sl_sentinel_reply_readonly(ro));
    cr_assert_not(sl_sentinel_reply_readonly(other));
    cr_assert_not(sl_sentinel_reply_readonly(ok));
    cr_assert_not(sl_sentinel_reply_readonly(NULL));
    freeReplyObject(ro);
    freeReplyObject(other);
    freeReplyObject(ok);
}
