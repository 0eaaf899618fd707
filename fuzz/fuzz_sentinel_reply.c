/* fuzz_sentinel_reply.c - what sentinels and the nodes they name answer
 * (src/redis/sentinel.h), on whatever a sentinel (or something posing as
 * one) might send: each reply of the RESP stream is read as the answer to
 * SENTINEL get-master-addr-by-name, as a ROLE reply, as a +switch-master
 * message for the name "mymaster", and as a READONLY error.
 *
 * Input: byte 0 is the feed size (1..256); the rest is the RESP stream.
 *
 * Checked, beyond memory safety: an address read is a valid host
 * (sl_host_valid) and a port in 1..65535, so a link is never opened to
 * something else; a refusal says why, in a reason that is safe in a log
 * line (printable ASCII, no '"'); a master name never matches another. */
#include <stdint.h>
#include <string.h>

#include "base/authority.h"
#include "redis/sentinel.h"
#include "resp_stream.h"
#include "violation.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_reason(const char *what, const char *err)
{
    if (err[0] == '\0')
        sl_fuzz_violation("%s refused without a reason", what);
    for (const char *p = err; *p; p++)
        if ((unsigned char)*p < 0x20 || (unsigned char)*p >= 0x7f || *p == '"')
            sl_fuzz_violation("%s: reason with byte 0x%02x", what, (unsigned char)*p);
}

static void check_addr(const char *what, const sl_sentinel_addr *addr)
{
    if (!sl_host_valid(addr->host) || addr->port < 1 || addr->port > 65535)
        sl_fuzz_violation("%s: accepted an address that is not one (port %d)", what, addr->port);
}

static void check_reply(const redisReply *reply, void *arg)
{
    (void)arg;
    sl_sentinel_addr addr;
    char err[160];
    err[0] = '\0';
    switch (sl_sentinel_parse_master_addr(reply, &addr, err, sizeof err)) {
    case SL_SENTINEL_FOUND:
        check_addr("get-master-addr-by-name", &addr);
        break;
    case SL_SENTINEL_BAD:
        check_reason("get-master-addr-by-name", err);
        break;
    case SL_SENTINEL_UNKNOWN:
        if (reply->type != REDIS_REPLY_NIL)
            sl_fuzz_violation("an unknown name from a reply that is not nil");
        break;
    }
    err[0] = '\0';
    if (sl_sentinel_parse_role(reply, err, sizeof err) == SL_ROLE_BAD)
        check_reason("ROLE", err);
    err[0] = '\0';
    switch (sl_sentinel_parse_switch(reply, "mymaster", &addr, err, sizeof err)) {
    case SL_SWITCH_OURS: {
        const redisReply *payload = reply->element[2];
        if (payload->len < 9 || memcmp(payload->str, "mymaster ", 9) != 0)
            sl_fuzz_violation("+switch-master of another name taken as ours");
        check_addr("+switch-master", &addr);
        break;
    }
    case SL_SWITCH_BAD:
        check_reason("+switch-master", err);
        break;
    case SL_SWITCH_OTHER:
        break;
    }
    volatile bool readonly = sl_sentinel_reply_readonly(reply);
    (void)readonly;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    size_t piece = 1 + data[0];
    sl_fuzz_resp_stream(data + 1, size - 1, piece, check_reply, NULL);
    return 0;
}
