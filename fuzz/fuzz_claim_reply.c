/* fuzz_claim_reply.c - the claim, ack and reslot reply codecs on whatever a Redis
 * (or something posing as one) might send: the bytes go through hiredis's
 * I/O-free reader (redisReaderFeed / redisReaderGetReply, the code that
 * reads the socket in the daemon), and every reply it yields is handed to
 * sl_claim_parse, as a claim reply, to sl_reslot_parse, as a reslot
 * reply, and to sl_redis_is_noscript, the one reading the daemon makes of
 * an ack reply (anything else is logged).
 *
 * Input: byte 0 picks the batch (the most jobs a claim may return, 0..31)
 * and byte 1 the size of the pieces the reader is fed in (1..256); the rest
 * is the RESP stream.
 *
 * Checked, beyond memory safety (ASan sees any read outside the reply):
 * a parsed claim holds at most the batch; every job's element, a retried
 * job's id and every dead-letter reason lie in strings of the reply, a new
 * job's id in the job's id_buf; every lease is the slot + lease_us; a
 * reslot reply taken gives its slots in order; a refusal says why.
 *
 * Not fuzzed: array lengths over 100,000 (resp_stream.h says why). */
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <hiredis/hiredis.h>

#include "redis/claim.h"
#include "redis/redis_errors.h"
#include "redis/redis_conn.h"
#include "redis/reslot.h"
#include "resp_stream.h"
#include "violation.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define BATCH_MAX 32
#define FUZZ_LEASE_US INT64_C(40000000)
/* Touches every byte of s[0, len) so ASan checks the span lies in memory
 * the reply owns. */
static unsigned touch(const char *s, size_t len)
{
    unsigned sum = 0;
    for (size_t i = 0; i < len; i++)
        sum += (unsigned char)s[i];
    return sum;
}

static void check_reply(const redisReply *reply, void *arg)
{
    size_t batch = *(const size_t *)arg;
    sl_claimed_job jobs[BATCH_MAX];
    sl_claim_result result;
    char err[256];
    err[0] = '\0';
    volatile unsigned sink = 0;
    if (sl_claim_parse(reply, "fuzz.", FUZZ_LEASE_US, &result, jobs, batch, err, sizeof err)) {
        if (result.job_count > batch || reply->type != REDIS_REPLY_ARRAY)
            sl_fuzz_violation("claim parsed %zu jobs for a batch of %zu", result.job_count, batch);
        for (size_t i = 0; i < result.job_count; i++) {
            if (!jobs[i].id || !jobs[i].job)
                sl_fuzz_violation("claim job %zu without id or element", i);
            if (jobs[i].lease != jobs[i].slot_us + FUZZ_LEASE_US)
                sl_fuzz_violation("claim job %zu's lease is not its slot + lease_us", i);
            sink += touch(jobs[i].id, jobs[i].id_len) + touch(jobs[i].job, jobs[i].job_len);
        }
        for (size_t i = 0; i < result.dead_reason_count; i++) {
            const char *reason;
            size_t len;
            int64_t count;
            sl_claim_dead_reason(&result, i, &reason, &len, &count);
            sink += touch(reason, len) + (unsigned)count;
        }
    } else if (err[0] == '\0') {
        sl_fuzz_violation("claim refused without a message");
    }
    int64_t now_us;
    size_t slots;
    err[0] = '\0';
    if (sl_reslot_parse(reply, &now_us, &slots, err, sizeof err)) {
        for (size_t i = 0; i + 1 < slots; i++)
            if (sl_reslot_slot(reply, i + 1) < sl_reslot_slot(reply, i))
                sl_fuzz_violation("reslot slot %zu before slot %zu", i + 1, i);
        if (slots == 0)
            sl_fuzz_violation("reslot taken with no slot");
    } else if (err[0] == '\0') {
        sl_fuzz_violation("reslot refused without a message");
    }
    sink += sl_redis_is_noscript(reply);
    if (reply->type == REDIS_REPLY_ERROR || reply->type == REDIS_REPLY_STATUS)
        sink += sl_redis_error_transient(reply->str); /* how the daemon reads an error reply */
    (void)sink;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 2)
        return 0;
    size_t batch = data[0] % BATCH_MAX;
    size_t piece = 1 + data[1];
    data += 2;
    size -= 2;
    sl_fuzz_resp_stream(data, size, piece, check_reply, &batch);
    return 0;
}
