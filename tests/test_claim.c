/* test_claim.c - lua/claim.lua and lua/ack.lua on a real redis-server,
 * called through the daemon's own encoders (src/redis/claim.h). */
#include <cjson/cJSON.h>
#include <criterion/criterion.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "admission/admission.h"
#include "base/hex.h"
#include "redis/claim.h"
#include "redis/reslot.h"
#include "redis_fixture.h"
#include "resp_text.h"

#define SEC INT64_C(1000000)
#define MAX_BATCH 1000

static redis_fixture fx;
static char claim_sha[41], ack_sha[41], reslot_sha[41];
static sl_argv args;
static sl_tenant_keys keys;
static int claim_calls;

static void setup(void)
{
    redis_fixture_start(&fx);
    redis_fixture_load(&fx, "claim", claim_sha);
    redis_fixture_load(&fx, "ack", ack_sha);
    redis_fixture_load(&fx, "reslot", reslot_sha);
    sl_argv_init(&args);
    cr_assert(sl_tenant_keys_init(&keys, "sluice", "acme"));
}

static void teardown(void)
{
    sl_argv_free(&args);
    sl_tenant_keys_free(&keys);
    redis_fixture_stop(&fx);
}

TestSuite(claim, .init = setup, .fini = teardown, .timeout = 60);

static sl_claim_params params(int64_t rate_milli, int64_t lookahead_us, int batch)
{
    return (sl_claim_params){
        .prefix = "sluice", .tenant = "acme", .capacity = 1000, .rate_milli = rate_milli,
        .lookahead_us = lookahead_us, .refill_us = lookahead_us / 4, .lease_us = 30 * SEC, .batch = batch,
    };
}

/* The first_seen_us of the claimed job id's record ("attempts:first_seen
 * in base 36:job", lua/job_record.lua). */
static int64_t record_first_seen(const char *jobs_key, const char *id)
{
    redisReply *r = redisCommand(fx.conn, "HGET %s %s", jobs_key, id);
    cr_assert(r && r->type == REDIS_REPLY_STRING, "no record for %s", id);
    const char *first = strchr(r->str, ':');
    cr_assert_not_null(first, "record %s", r->str);
    int64_t seen = (int64_t)strtoll(first + 1, NULL, 36);
    freeReplyObject(r);
    return seen;
}

/* A claim's result; jobs are copied so that tests can keep them. */
typedef struct claimed {
    sl_claim_result result;
    char id[MAX_BATCH][64];
    char job[MAX_BATCH][256]; /* the first 255 bytes */
    size_t job_len[MAX_BATCH];
    char reasons[256]; /* the dead letters by reason: "overflow=7 expired=1" */
    int64_t slot[MAX_BATCH], lease[MAX_BATCH], attempts[MAX_BATCH], first_seen[MAX_BATCH];
} claimed;

static claimed *claim(const sl_claim_params *p)
{
    char prefix[32];
    snprintf(prefix, sizeof prefix, "t%d-", claim_calls++);
    sl_tenant_keys tk;
    cr_assert(sl_tenant_keys_init(&tk, p->prefix, p->tenant));
    sl_claim_build(&args, claim_sha, &tk, p, prefix);
    const char **argv = sl_argv_finish(&args);
    cr_assert_not_null(argv);
    redisReply *reply = redisCommandArgv(fx.conn, (int)args.count, argv, args.lengths);
    static sl_claimed_job jobs[MAX_BATCH];
    claimed *c = calloc(1, sizeof *c);
    char err[256];
    cr_assert(sl_claim_parse(reply, prefix, p->lease_us, &c->result, jobs, MAX_BATCH, err,
                             sizeof err),
              "%s", err);
    for (size_t i = 0; i < c->result.job_count; i++) {
        snprintf(c->id[i], sizeof c->id[i], "%.*s", (int)jobs[i].id_len, jobs[i].id);
        snprintf(c->job[i], sizeof c->job[i], "%.*s", (int)jobs[i].job_len, jobs[i].job);
        c->job_len[i] = jobs[i].job_len;
        c->slot[i] = jobs[i].slot_us;
        c->lease[i] = jobs[i].lease;
        c->attempts[i] = jobs[i].attempts;
        c->first_seen[i] = jobs[i].first_seen_us;
        if (jobs[i].attempts == 0 && jobs[i].first_seen_us == 0) /* new: its record has it */
            c->first_seen[i] = record_first_seen(tk.jobs, c->id[i]);
    }
    sl_tenant_keys_free(&tk);
    size_t used = 0;
    for (size_t i = 0; i < c->result.dead_reason_count; i++) {
        const char *reason;
        size_t len;
        int64_t n;
        sl_claim_dead_reason(&c->result, i, &reason, &len, &n);
        used += (size_t)snprintf(c->reasons + used, sizeof c->reasons - used, "%s%.*s=%lld",
                                 i ? " " : "", (int)len, reason, (long long)n);
    }
    c->result.dead_reasons = NULL; /* it pointed into the freed reply */
    freeReplyObject(reply);
    return c;
}

static void send_ack(void)
{
    const char **argv = sl_argv_finish(&args);
    redisReply *reply = redisCommandArgv(fx.conn, (int)args.count, argv, args.lengths);
    cr_assert(reply && reply->type == REDIS_REPLY_ARRAY, "ack failed: %s",
              reply && reply->str ? reply->str : "no reply");
    freeReplyObject(reply);
}

static void push(const char *job)
{
    freeReplyObject(redisCommand(fx.conn, "LPUSH %s %s", keys.queue, job));
}

/* Pushes n jobs {"n":0} .. {"n":n-1}, oldest first. */
static void push_numbered(int n)
{
    for (int i = 0; i < n; i++) {
        char job[32];
        snprintf(job, sizeof job, "{\"n\":%d}", i);
        push(job);
    }
}

static long long count(const char *command, const char *key)
{
    redisReply *reply = redisCommand(fx.conn, command, key);
    cr_assert(reply && reply->type == REDIS_REPLY_INTEGER);
    long long n = reply->integer;
    freeReplyObject(reply);
    return n;
}

/* The string (or status) reply of command on key, as a string the caller
 * frees. */
static char *string_reply(const char *command, const char *key)
{
    redisReply *reply = redisCommand(fx.conn, command, key);
    cr_assert(reply && (reply->type == REDIS_REPLY_STRING || reply->type == REDIS_REPLY_STATUS),
              "%s on %s: no string", command, key);
    char *text = strdup(reply->str);
    freeReplyObject(reply);
    return text;
}

/* The newest dead-letter record, as a string the caller frees. */
static char *newest_dead_letter(void)
{
    return string_reply("LINDEX %s 0", keys.dlq);
}

Test(claim, gives_fifo_jobs_slots_one_interval_apart)
{
    for (int i = 0; i < 5; i++) {
        char job[32];
        snprintf(job, sizeof job, "{\"body\":\"job %d\"}", i);
        push(job);
    }
    sl_claim_params p = params(10000, 2 * SEC, 100); /* 10/s */
    claimed *c = claim(&p);
    cr_assert_eq(c->result.job_count, 5);
    for (int i = 0; i < 5; i++) {
        char expect[32];
        snprintf(expect, sizeof expect, "{\"body\":\"job %d\"}", i);
        cr_assert_str_eq(c->job[i], expect, "FIFO");
        cr_assert_eq(c->slot[i] - c->slot[0], i * 100000, "slot %d", i);
        cr_assert_eq(c->lease[i], c->slot[i] + 30 * SEC);
        cr_assert_eq(c->attempts[i], 0);
        for (int j = 0; j < i; j++)
            cr_assert_str_neq(c->id[i], c->id[j], "ids are unique");
    }
    cr_assert_eq(c->result.queue_len, 0);
    cr_assert_eq(c->result.next_us, 0, "queue empty: idle");
    cr_assert_eq(count("ZCARD %s", keys.inflight), 5);
    cr_assert_eq(count("HLEN %s", keys.jobs), 5);
    free(c);
}

Test(claim, claims_only_within_the_lookahead)
{
    for (int i = 0; i < 5; i++)
        push("{}");
    sl_claim_params p = params(1000, 100000, 100); /* 1/s, 100 ms ahead */
    claimed *c = claim(&p);
    cr_assert_eq(c->result.job_count, 1);
    cr_assert_eq(c->result.queue_len, 4);
    /* the next slot is 1 s after the first: claim again refill_us (a
     * quarter of the lookahead here: 25 ms) before it */
    cr_assert_eq(c->result.next_us, c->slot[0] + SEC - 25000);
    free(c);
    claimed *again = claim(&p);
    cr_assert_eq(again->result.job_count, 0, "nothing new inside the lookahead yet");
    free(again);
}

Test(claim, batch_bounds_a_claim)
{
    for (int i = 0; i < 30; i++)
        push("{}");
    sl_claim_params p = params(1000000, SEC, 10); /* 1000/s */
    claimed *c = claim(&p);
    cr_assert_eq(c->result.job_count, 10);
    cr_assert_leq(c->result.next_us, c->result.now_us, "more is ready: claim again at once");
    free(c);
}

Test(claim, acks_done_retry_dead_and_stale_leases)
{
    push("{\"id\":\"a\"}");
    push("{\"id\":\"b\"}");
    push("{\"id\":\"c\"}");
    sl_claim_params p = params(1000000, SEC, 10);
    claimed *c = claim(&p);
    cr_assert_eq(c->result.job_count, 3);
    sl_ack_start(&args, ack_sha, &keys, "acme");
    sl_ack_done(&args, c->id[0], c->lease[0]);
    sl_ack_retry(&args, c->id[1], c->lease[1], 0, "HTTP 503");
    sl_ack_dead(&args, c->id[2], c->lease[2], "http_4xx", 404, true, "HTTP 404");
    sl_ack_done(&args, c->id[2], c->lease[2]); /* already gone: stale */
    cr_assert_eq(sl_ack_op_count(&args), 4 * 3 + 2 + 4);
    send_ack();
    cr_assert_eq(count("ZCARD %s", keys.inflight), 0);
    cr_assert_eq(count("ZCARD %s", keys.retry), 1);
    cr_assert_eq(count("HLEN %s", keys.jobs), 1, "only the retrying job keeps its record");

    char *dead = newest_dead_letter();
    cr_assert_not_null(strstr(dead, "\"reason\":\"http_4xx\""), "%s", dead);
    cr_assert_not_null(strstr(dead, "\"http_status\":404"), "%s", dead);
    cr_assert_not_null(strstr(dead, "\"attempts\":1"), "%s", dead);
    cr_assert_not_null(strstr(dead, "\"tenant\":\"acme\""), "%s", dead);
    cr_assert_not_null(strstr(dead, "\"job\":\"{\\\"id\\\":\\\"c\\\"}\""), "%s", dead);
    char first_seen[64];
    snprintf(first_seen, sizeof first_seen, "\"first_seen_ms\":%lld", (long long)(c->first_seen[2] / 1000));
    cr_assert_not_null(strstr(dead, first_seen), "%s lacks %s", dead, first_seen);
    cr_assert_not_null(strstr(dead, "\"dead_at_ms\":"), "%s", dead);
    free(dead);

    /* the retry goes before new jobs, with its id and one attempt counted */
    push("{\"id\":\"new\"}");
    claimed *r = claim(&p);
    cr_assert_eq(r->result.job_count, 2);
    cr_assert_str_eq(r->id[0], c->id[1]);
    cr_assert_eq(r->attempts[0], 1);
    cr_assert_eq(r->first_seen[0], c->first_seen[1], "first seen at its first claim");
    cr_assert_str_eq(r->job[0], "{\"id\":\"b\"}");
    cr_assert_gt(r->first_seen[1], c->first_seen[1], "the new job is first seen now");
    cr_assert_str_eq(r->job[1], "{\"id\":\"new\"}");
    /* an ack with the old lease, once that lease passed, no longer applies
     * (one ahead is trusted: see the next test) */
    sl_ack_start(&args, ack_sha, &keys, "acme");
    sl_ack_now(&args, c->lease[1]);
    sl_ack_done(&args, c->id[1], c->lease[1] - 1);
    send_ack();
    cr_assert_eq(count("ZCARD %s", keys.inflight), 2);
    free(c);
    free(r);
}

/* Sends the ack batch in args; returns its applied count, stale in *stale. */
static long long send_ack_counted(long long *stale)
{
    const char **argv = sl_argv_finish(&args);
    redisReply *reply = redisCommandArgv(fx.conn, (int)args.count, argv, args.lengths);
    cr_assert(reply && reply->type == REDIS_REPLY_ARRAY && reply->elements >= 2, "ack failed: %s",
              reply && reply->str ? reply->str : "no reply");
    long long applied = reply->element[0]->integer;
    *stale = reply->element[1]->integer;
    freeReplyObject(reply);
    return applied;
}

/* A done whose lease lies ahead is applied without reading the lease back
 * (nobody else can hold it before it passes): ZREM's count still tells a
 * job acked twice. One whose lease passed is checked: it applies while the
 * job still holds that lease, not once a claim reaped and leased it again. */
Test(claim, done_trusts_a_lease_ahead_and_checks_one_that_passed)
{
    for (int i = 0; i < 3; i++)
        push("{}");
    sl_claim_params p = params(1000000, SEC, 10);
    claimed *c = claim(&p);
    cr_assert_eq(c->result.job_count, 3);
    long long stale;

    sl_ack_start(&args, ack_sha, &keys, "acme");
    sl_ack_done(&args, c->id[0], c->lease[0]);
    sl_ack_done(&args, c->id[0], c->lease[0]); /* twice: the second is stale */
    cr_assert_eq(send_ack_counted(&stale), 1, "applied");
    cr_assert_eq(stale, 1);
    sl_ack_start(&args, ack_sha, &keys, "acme");
    sl_ack_done(&args, c->id[0], c->lease[0]); /* acked already */
    cr_assert_eq(send_ack_counted(&stale), 0, "applied");
    cr_assert_eq(stale, 1);
    /* a lease that is not a number is checked, and found stale */
    redisReply *odd = redisCommand(fx.conn, "EVALSHA %s 5 %s %s %s %s %s acme done %s 12x", ack_sha,
                                   keys.inflight, keys.jobs, keys.retry, keys.dlq, keys.shape,
                                   c->id[1]);
    cr_assert(odd && odd->type == REDIS_REPLY_ARRAY && odd->elements == 2, "%s",
              odd && odd->str ? odd->str : "no reply");
    cr_assert_eq(odd->element[0]->integer, 0, "applied");
    cr_assert_eq(odd->element[1]->integer, 1, "stale");
    freeReplyObject(odd);

    /* past both leases, not reaped: the held one applies, a wrong one not */
    sl_ack_start(&args, ack_sha, &keys, "acme");
    sl_ack_now(&args, c->lease[2] + 1);
    sl_ack_done(&args, c->id[1], c->lease[1] - 1);
    sl_ack_done(&args, c->id[2], c->lease[2]);
    cr_assert_eq(send_ack_counted(&stale), 1, "applied");
    cr_assert_eq(stale, 1);
    cr_assert_eq(count("ZCARD %s", keys.inflight), 1);
    cr_assert_eq(count("HLEN %s", keys.jobs), 1);

    /* reaped and leased again: the old holder's done is stale */
    p.now_us = c->lease[1] + 1;
    claimed *again = claim(&p);
    cr_assert_eq(again->result.reaped, 1);
    cr_assert_eq(again->result.job_count, 1);
    cr_assert_str_eq(again->id[0], c->id[1]);
    sl_ack_start(&args, ack_sha, &keys, "acme");
    sl_ack_now(&args, c->lease[1] + 2);
    sl_ack_done(&args, c->id[1], c->lease[1]);
    cr_assert_eq(send_ack_counted(&stale), 0, "applied");
    cr_assert_eq(stale, 1);
    cr_assert_eq(count("ZCARD %s", keys.inflight), 1, "the new holder keeps its lease");
    cr_assert_eq(count("HLEN %s", keys.jobs), 1);
    free(c);
    free(again);
}

Test(claim, expired_leases_are_reclaimed_with_their_record)
{
    push("{\"body\":1}");
    sl_claim_params p = params(1000000, SEC, 10);
    p.lease_us = 1; /* the worker "dies" at once */
    claimed *c = claim(&p);
    cr_assert_eq(c->result.job_count, 1);
    claimed *again = claim(&p);
    cr_assert_eq(again->result.reaped, 1);
    cr_assert_eq(again->result.job_count, 1);
    cr_assert_str_eq(again->id[0], c->id[0], "same job, same Idempotency-Key");
    cr_assert_eq(again->attempts[0], 0, "a crash is not an attempt");
    cr_assert_eq(again->first_seen[0], c->first_seen[0]);
    cr_assert_str_eq(again->job[0], "{\"body\":1}");
    free(c);
    free(again);
}

Test(claim, records_keep_any_job_and_unreadable_ones_are_dead_lettered_whole)
{
    const char *odd = "raw:0:12:\nline two: \"quoted\"";
    push(odd);
    push("{}");
    sl_claim_params p = params(1000000, SEC, 10);
    p.raw = true;
    claimed *c = claim(&p);
    cr_assert_eq(c->result.job_count, 2);
    sl_ack_start(&args, ack_sha, &keys, "acme");
    sl_ack_retry(&args, c->id[0], c->lease[0], 0, "HTTP 500");
    send_ack();
    /* a record this version did not write: an ack that must read it back
     * (a retry) leaves it leased */
    freeReplyObject(redisCommand(fx.conn, "HSET %s %s %s", keys.jobs, c->id[1], "not a record"));
    sl_ack_start(&args, ack_sha, &keys, "acme");
    sl_ack_retry(&args, c->id[1], c->lease[1], 0, "HTTP 500");
    send_ack();
    cr_assert_eq(count("ZCARD %s", keys.inflight), 1, "the unreadable record stays leased");

    /* the retry comes back whole; the unreadable record, due as a retry, is dead-lettered */
    freeReplyObject(redisCommand(fx.conn, "ZREM %s %s", keys.inflight, c->id[1]));
    freeReplyObject(redisCommand(fx.conn, "ZADD %s 0 %s", keys.retry, c->id[1]));
    claimed *again = claim(&p);
    cr_assert_eq(again->result.job_count, 1);
    cr_assert_str_eq(again->job[0], odd);
    cr_assert_eq(again->attempts[0], 1);
    cr_assert_eq(again->first_seen[0], c->first_seen[0]);
    cr_assert_str_eq(again->reasons, "bad_record=1");
    char *dead = newest_dead_letter();
    cr_assert_not_null(strstr(dead, "\"reason\":\"bad_record\""), "%s", dead);
    cr_assert_not_null(strstr(dead, "\"job\":\"not a record\""), "%s", dead);
    free(dead);
    cr_assert_eq(count("HLEN %s", keys.jobs), 1, "only the retried job keeps a record");
    cr_assert_eq(count("ZCARD %s", keys.retry), 0);
    free(c);
    free(again);
}

Test(claim, done_forgets_the_job_without_reading_its_record)
{
    /* A delivered job has nothing left to keep: done drops the lease and
     * the record whatever the record holds, and never reads its bytes
     * (the ack reads records only for retry and dead). */
    push("{\"body\":1}");
    sl_claim_params p = params(1000000, SEC, 10);
    claimed *c = claim(&p);
    cr_assert_eq(c->result.job_count, 1);
    freeReplyObject(redisCommand(fx.conn, "HSET %s %s %s", keys.jobs, c->id[0], "not a record"));
    sl_ack_start(&args, ack_sha, &keys, "acme");
    sl_ack_done(&args, c->id[0], c->lease[0]);
    const char **argv = sl_argv_finish(&args);
    redisReply *reply = redisCommandArgv(fx.conn, (int)args.count, argv, args.lengths);
    cr_assert(reply && reply->type == REDIS_REPLY_ARRAY && reply->elements >= 2);
    cr_assert_eq(reply->element[0]->integer, 1, "applied");
    cr_assert_eq(reply->element[1]->integer, 0, "stale");
    freeReplyObject(reply);
    cr_assert_eq(count("ZCARD %s", keys.inflight), 0);
    cr_assert_eq(count("HLEN %s", keys.jobs), 0);
    free(c);
}

Test(claim, release_hands_jobs_back_in_order_without_an_attempt)
{
    push_numbered(12);
    sl_claim_params p = params(1000000, SEC, 20);
    claimed *c = claim(&p);
    cr_assert_eq(c->result.job_count, 12);
    /* order_us decides, not the ids (which sort in claim order): hand
     * them back reversed and they must come back reversed */
    sl_ack_start(&args, ack_sha, &keys, "acme");
    for (int i = 0; i < 12; i++)
        sl_ack_release(&args, c->id[i], c->lease[i], 11 - i);
    send_ack();
    claimed *again = claim(&p);
    cr_assert_eq(again->result.job_count, 12);
    for (int i = 0; i < 12; i++) {
        cr_assert_str_eq(again->id[i], c->id[11 - i], "handed back out of order at %d", i);
        cr_assert_eq(again->attempts[i], 0);
    }
    free(c);
    free(again);
}

/* claim.lua reads the queue's head in chunks (the first sized by
 * max_job_bytes, then doubling) and trims it once: a batch larger than
 * many chunks takes exactly the oldest jobs, in order, and leaves the rest. */
Test(claim, a_claim_reads_the_queue_in_chunks_and_trims_exactly_what_it_took)
{
    push_numbered(700);
    sl_claim_params p = params(1000000000, SEC, 600); /* 1,000,000/s */
    claimed *c = claim(&p);
    cr_assert_eq(c->result.job_count, 600);
    cr_assert_eq(c->result.queue_len, 100);
    for (int i = 0; i < 600; i++) {
        char expect[32];
        snprintf(expect, sizeof expect, "{\"n\":%d}", i);
        cr_assert_str_eq(c->job[i], expect, "FIFO at %d", i);
    }
    cr_assert_eq(count("LLEN %s", keys.queue), 100);
    claimed *rest = claim(&p);
    cr_assert_eq(rest->result.job_count, 100);
    cr_assert_str_eq(rest->job[0], "{\"n\":600}");
    cr_assert_str_eq(rest->job[99], "{\"n\":699}");
    cr_assert_eq(count("EXISTS %s", keys.queue), 0);
    cr_assert_eq(count("HLEN %s", keys.jobs), 700);
    free(c);
    free(rest);
}

/* A claim of 64 jobs or more writes its records into a hash table, not
 * the listpack Redis keeps a small hash in (searched end to end for every
 * field set or deleted): it sets one over-long field with its first
 * record and removes it before the rest, so the hash holds exactly the
 * claimed jobs. A smaller claim leaves the hash as Redis makes it. */
Test(claim, a_large_claim_writes_its_records_into_a_table_and_leaves_no_other_field)
{
    push_numbered(74);
    sl_claim_params p = params(1000000000, SEC, 10);
    claimed *small = claim(&p);
    cr_assert_eq(small->result.job_count, 10);
    char *before = string_reply("OBJECT ENCODING %s", keys.jobs);
    cr_assert_str_neq(before, "hashtable", "10 records: Redis's own choice (listpack, ziplist)");
    p.batch = 64;
    claimed *large = claim(&p);
    cr_assert_eq(large->result.job_count, 64);
    char *after = string_reply("OBJECT ENCODING %s", keys.jobs);
    cr_assert_str_eq(after, "hashtable");
    cr_assert_eq(count("HLEN %s", keys.jobs), 74, "the claimed jobs and nothing else");
    for (int i = 0; i < 64; i++) {
        redisReply *r = redisCommand(fx.conn, "HGET %s %s", keys.jobs, large->id[i]);
        cr_assert(r && r->type == REDIS_REPLY_STRING && strstr(r->str, large->job[i]),
                  "record of %s", large->id[i]);
        freeReplyObject(r);
    }
    free(before);
    free(after);
    free(small);
    free(large);
}

/* A limit's field (or its expiry, field NULL) as a string the caller frees. */
static char *limit_field(const char *tenant, const char *limit, const char *field)
{
    char key[SL_KEY_MAX];
    sl_limit_key(key, "sluice", tenant, limit);
    redisReply *reply = field ? redisCommand(fx.conn, "HGET %s %s", key, field)
                              : redisCommand(fx.conn, "PEXPIRETIME %s", key);
    cr_assert(reply && (reply->type == REDIS_REPLY_STRING || reply->type == REDIS_REPLY_INTEGER),
              "%s %s", key, field ? field : "expiry");
    char *text = reply->type == REDIS_REPLY_STRING ? strdup(reply->str) : NULL;
    if (!text && asprintf(&text, "%lld", reply->integer) < 0)
        text = NULL;
    freeReplyObject(reply);
    cr_assert_not_null(text);
    return text;
}

/* claim.lua stores a limit that keeps its whole state (all but the
 * sliding log) once per claim, with its last state: one claim of 5 jobs
 * leaves each limit exactly as 5 claims of one job at the same time do. */
Test(claim, limits_stored_once_per_claim_equal_one_store_per_job)
{
    /* in the year 2100, so that no key a claim writes expires during the
     * test (PEXPIREAT is on Redis's clock): expiry is not what is compared */
    int64_t now = INT64_C(4102444800000000);
    sl_claim_limit limits[] = {
        {"bucket", "token_bucket", 10, 7000, false},
        {"police", "policing", 9, 5000, false},
        {"counter", "sliding_window_counter", 50, 60000, false},
        {"window", "fixed_window", 50, 60000, false},
    };
    const char *tenants[] = {"acme", "solo"};
    for (int k = 0; k < 2; k++) {
        sl_claim_params p = params(20000000, SEC, k == 0 ? 5 : 1); /* 20,000/s */
        p.tenant = tenants[k];
        p.now_us = now;
        p.limits = limits;
        p.limit_count = 4;
        sl_tenant_keys tk;
        cr_assert(sl_tenant_keys_init(&tk, "sluice", tenants[k]));
        for (int i = 0; i < 5; i++)
            freeReplyObject(redisCommand(fx.conn, "LPUSH %s {}", tk.queue));
        sl_tenant_keys_free(&tk);
        int got = 0;
        for (int i = 0; i < 5 && got < 5; i++) {
            claimed *c = claim(&p);
            got += (int)c->result.job_count;
            free(c);
        }
        cr_assert_eq(got, 5, "%s", tenants[k]);
    }
    const char *fields[][3] = {{"bucket", "tokens", "last"}, {"police", "level", "last"},
                               {"counter", "cur", "window"}, {"window", "count", "window"}};
    for (int i = 0; i < 4; i++) {
        for (int f = 0; f < 3; f++) {
            const char *field = f == 0 ? NULL : fields[i][f];
            char *batched = limit_field("acme", fields[i][0], field);
            char *single = limit_field("solo", fields[i][0], field);
            cr_assert_str_eq(batched, single, "%s %s: %s against %s", fields[i][0], field ? field : "expiry", batched, single);
            free(batched);
            free(single);
        }
    }
}

/* The retry set is read batch + 1 at a time: retries dropped on the way
 * (their record gone) make a claim read on, in order, and the dropped ones
 * leave the set with the claimed ones. */
Test(claim, retries_past_one_read_of_the_retry_set_keep_their_order)
{
    for (int i = 0; i < 10; i++)
        push("{}");
    sl_claim_params p = params(1000000000, SEC, 10);
    claimed *c = claim(&p);
    cr_assert_eq(c->result.job_count, 10);
    sl_ack_start(&args, ack_sha, &keys, "acme");
    for (int i = 0; i < 10; i++)
        sl_ack_release(&args, c->id[i], c->lease[i], i);
    send_ack();
    for (int i = 0; i < 3; i++) /* acked elsewhere: nothing to deliver */
        freeReplyObject(redisCommand(fx.conn, "HDEL %s %s", keys.jobs, c->id[i]));
    p.batch = 4; /* reads 5 retries, drops 3, claims 2, reads on */
    claimed *r = claim(&p);
    cr_assert_eq(r->result.job_count, 4);
    for (int i = 0; i < 4; i++)
        cr_assert_str_eq(r->id[i], c->id[3 + i], "retry %d out of order", i);
    cr_assert_eq(count("ZCARD %s", keys.retry), 3);
    cr_assert_eq(count("ZCARD %s", keys.inflight), 4);
    free(c);
    free(r);
}

Test(claim, overflow_dead_letters_the_newest_excess)
{
    for (int i = 0; i < 10; i++) {
        char job[16];
        snprintf(job, sizeof job, "j%d", i);
        push(job);
    }
    sl_claim_params p = params(1000, 1, 10); /* 1/s, claims one now */
    p.capacity = 3;
    p.overflow_dead_letter = true;
    p.raw = true;
    claimed *c = claim(&p);
    cr_assert_eq(c->result.dead_lettered, 7);
    cr_assert_str_eq(c->reasons, "overflow=7");
    cr_assert_eq(c->result.job_count, 1);
    cr_assert_str_eq(c->job[0], "j0", "the oldest job survives");
    cr_assert_eq(count("LLEN %s", keys.queue), 2, "j1 and j2 wait");
    char *dead = newest_dead_letter();
    cr_assert_not_null(strstr(dead, "\"reason\":\"overflow\""), "%s", dead);
    cr_assert_not_null(strstr(dead, "\"job\":\"j3\""), "newest first into the list: %s", dead);
    free(dead);
    free(c);
}

/* The schedule's capacity (overflow dead-letter) stops a claim where the
 * shaping model says the bucket is full, in claim.lua's plain run too: at
 * a whole interval (1/s, the run's own arithmetic) and at one that is not
 * (3/s). */
Test(claim, a_full_schedule_stops_the_claim_where_the_model_does)
{
    const int64_t now = INT64_C(4102444800000000); /* 2100: nothing expires meanwhile */
    const int64_t rates[] = {1000, 3000};
    for (int r = 0; r < 2; r++) {
        freeReplyObject(redisCommand(fx.conn, "DEL %s %s %s %s", keys.queue, keys.shape,
                                     keys.inflight, keys.jobs));
        sl_claim_params p = params(rates[r], 10 * SEC, 10);
        p.capacity = 3;
        p.overflow_dead_letter = true;
        p.raw = true;
        p.now_us = now;
        sl_shaping_state model = {0};
        const sl_bucket_params bucket = {3, rates[r]};
        for (int i = 0; i < 3; i++)
            push("x");
        claimed *c = claim(&p);
        cr_assert_eq(c->result.job_count, 3, "rate %" PRId64, rates[r]);
        for (int i = 0; i < 3; i++) {
            sl_verdict v = sl_shaping_admit(&model, &bucket, now);
            cr_assert(v.allowed);
            cr_assert_eq(c->slot[i], now + v.wait_us, "rate %" PRId64 " job %d", rates[r], i);
        }
        /* at the second slot the bucket holds the third job and 2 queued:
         * the first fits, the second finds the schedule full */
        p.now_us = c->slot[1];
        push("x");
        push("x");
        claimed *full = claim(&p);
        sl_verdict v = sl_shaping_admit(&model, &bucket, p.now_us);
        cr_assert(v.allowed);
        cr_assert_eq(full->result.job_count, 1, "rate %" PRId64, rates[r]);
        cr_assert_eq(full->slot[0], p.now_us + v.wait_us, "rate %" PRId64, rates[r]);
        v = sl_shaping_admit(&model, &bucket, p.now_us);
        cr_assert_not(v.allowed);
        cr_assert_eq(full->result.dead_lettered, 0);
        cr_assert_eq(full->result.next_us, p.now_us + v.wait_us, "rate %" PRId64 ": full", rates[r]);
        free(c);
        free(full);
    }
}

Test(claim, overflow_wait_never_drops)
{
    for (int i = 0; i < 10; i++)
        push("x");
    sl_claim_params p = params(1000, 1, 10);
    p.capacity = 3;
    p.raw = true;
    claimed *c = claim(&p);
    cr_assert_eq(c->result.dead_lettered, 0);
    cr_assert_str_eq(c->reasons, "");
    cr_assert_eq(count("LLEN %s", keys.queue), 9);
    free(c);
}

Test(claim, expired_jobs_take_no_slot)
{
    push("{\"deadline\":1000,\"body\":\"stale\"}");
    push("{\"body\":\"fresh\"}");
    sl_claim_params p = params(1000, 100000, 10); /* 1/s */
    claimed *c = claim(&p);
    cr_assert_eq(c->result.dead_lettered, 1);
    cr_assert_eq(c->result.job_count, 1);
    cr_assert_str_eq(c->job[0], "{\"body\":\"fresh\"}");
    cr_assert_eq(c->slot[0], c->result.now_us, "the fresh job leaves at once");
    char *dead = newest_dead_letter();
    cr_assert_not_null(strstr(dead, "\"reason\":\"expired\""), "%s", dead);
    free(dead);
    free(c);
}

Test(claim, max_wait_expires_retries_that_wait_too_long)
{
    push("{}");
    sl_claim_params p = params(1000000, SEC, 10);
    p.max_wait_us = 500000;
    claimed *c = claim(&p);
    sl_ack_start(&args, ack_sha, &keys, "acme");
    sl_ack_retry(&args, c->id[0], c->lease[0], 800000, "HTTP 500"); /* due in 0.8 s */
    send_ack();
    claimed *again = claim(&p);
    cr_assert_eq(again->result.job_count, 0);
    cr_assert_eq(again->result.dead_lettered, 1, "slot 0.8 s after first seen > 0.5 s");
    char *dead = newest_dead_letter();
    cr_assert_not_null(strstr(dead, "\"reason\":\"expired\""), "%s", dead);
    cr_assert_not_null(strstr(dead, "\"attempts\":1"), "%s", dead);
    free(dead);
    free(c);
    free(again);
}

Test(claim, limit_dead_letter_consumes_nothing_else)
{
    for (int i = 0; i < 5; i++)
        push("{}");
    sl_claim_limit limits[] = {
        {"quota", "fixed_window", 2, 86400000, true},
        {"burst", "token_bucket", 100, 1000, false},
    };
    sl_claim_params p = params(1000000, SEC, 10);
    p.limits = limits;
    p.limit_count = 2;
    claimed *c = claim(&p);
    cr_assert_eq(c->result.job_count, 2, "exactly the quota");
    cr_assert_eq(c->result.dead_lettered, 3);
    cr_assert_str_eq(c->reasons, "limit:quota=3");
    char *dead = newest_dead_letter();
    cr_assert_not_null(strstr(dead, "\"reason\":\"limit:quota\""), "%s", dead);
    free(dead);
    /* the denied jobs took no token: 100 - 2 left */
    redisReply *tokens = redisCommand(fx.conn, "HGET sluice:{acme}:limit:burst tokens");
    int64_t left = strtoll(tokens->str, NULL, 10); /* nano-tokens, refilled 1 ms between the slots */
    cr_assert(left >= 98 * INT64_C(1000000000) && left < 99 * INT64_C(1000000000), "%" PRId64, left);
    freeReplyObject(tokens);
    free(c);
}

Test(claim, limit_delay_holds_the_queue_in_order)
{
    push("{\"n\":1}");
    push("{\"n\":2}");
    push("{\"n\":3}");
    sl_claim_limit limits[] = {{"per_sec", "sliding_window_log", 2, 1000, false}};
    sl_claim_params p = params(1000000, SEC / 10, 10);
    p.limits = limits;
    p.limit_count = 1;
    claimed *c = claim(&p);
    cr_assert_eq(c->result.job_count, 2);
    cr_assert_eq(c->result.dead_lettered, 0, "delay never drops");
    cr_assert_eq(c->result.queue_len, 1);
    /* held until the first entry leaves the 1 s window */
    cr_assert_eq(c->result.next_us, c->slot[0] + SEC);
    redisReply *head = redisCommand(fx.conn, "LINDEX %s -1", keys.queue);
    cr_assert_str_eq(head->str, "{\"n\":3}");
    freeReplyObject(head);
    free(c);
}

Test(claim, pause_moves_the_schedule_for_the_whole_fleet)
{
    push("{}");
    sl_ack_start(&args, ack_sha, &keys, "acme");
    sl_ack_pause(&args, 2 * SEC);
    send_ack();
    sl_claim_params p = params(1000000, SEC / 10, 10);
    claimed *c = claim(&p);
    cr_assert_eq(c->result.job_count, 0);
    cr_assert_gt(c->result.next_us, c->result.now_us + SEC, "paused for about 2 s");
    cr_assert_leq(c->result.next_us, c->result.now_us + 2 * SEC);
    free(c);
}

/* The schedule as stored: next_free and frac (0 when absent). */
static sl_shaping_state stored_schedule(void)
{
    redisReply *reply = redisCommand(fx.conn, "HMGET %s next_free frac", keys.shape);
    cr_assert(reply && reply->type == REDIS_REPLY_ARRAY && reply->elements == 2);
    sl_shaping_state s = {
        .next_free = reply->element[0]->str ? strtoll(reply->element[0]->str, NULL, 10) : 0,
        .frac = reply->element[1]->str ? strtoll(reply->element[1]->str, NULL, 10) : 0,
    };
    freeReplyObject(reply);
    return s;
}

/* ack.lua's pause is the shaping model's (sl_shaping_pause): what it
 * stores, and when it leaves the schedule alone. */
Test(claim, ack_pause_is_the_shaping_models_pause)
{
    int64_t before = redis_fixture_now_us(&fx);
    sl_ack_start(&args, ack_sha, &keys, "acme");
    sl_ack_pause(&args, 2 * SEC);
    send_ack();
    int64_t after = redis_fixture_now_us(&fx);
    sl_shaping_state stored = stored_schedule();
    cr_assert(stored.next_free >= before + 2 * SEC && stored.next_free <= after + 2 * SEC,
              "next_free %" PRId64 " not 2 s after the ack", stored.next_free);
    sl_shaping_state model = {.next_free = 0};
    cr_assert(sl_shaping_pause(&model, stored.next_free));
    cr_assert_eq(stored.frac, model.frac);
    cr_assert_eq(count("PEXPIRETIME %s", keys.shape), model.expire_at_ms);

    /* A schedule that runs past the pause is left as it was. */
    freeReplyObject(redisCommand(fx.conn, "HSET %s next_free %" PRId64 " frac 7", keys.shape,
                                 after + 60 * SEC));
    sl_ack_start(&args, ack_sha, &keys, "acme");
    sl_ack_pause(&args, 2 * SEC);
    send_ack();
    stored = stored_schedule();
    cr_assert_eq(stored.next_free, after + 60 * SEC);
    cr_assert_eq(stored.frac, 7);
    model = (sl_shaping_state){.next_free = after + 60 * SEC, .frac = 7};
    cr_assert_not(sl_shaping_pause(&model, redis_fixture_now_us(&fx) + 2 * SEC));
}

Test(claim_ids, prefixes_are_short_url_safe_and_keep_every_bit)
{
    char a[SL_CLAIM_ID_PREFIX_SIZE], b[SL_CLAIM_ID_PREFIX_SIZE];
    sl_claim_id_prefix(0, a);
    cr_assert_str_eq(a, "AAAAAAAAAAA");
    sl_claim_id_prefix(UINT64_MAX, a);
    cr_assert_str_eq(a, "__________P", "60 bits of ones, then the top 4");
    for (int bit = 0; bit < 64; bit++) {
        sl_claim_id_prefix(UINT64_C(1) << bit, b);
        cr_assert_str_neq(b, "AAAAAAAAAAA", "bit %d lost", bit);
    }
}

/* ---- issue 13: oversize jobs, the reply's byte bound, overflow, max_wait ---- */

#define MIB (1024 * 1024)

/* LPUSHes len bytes: `tag` then filler x's. */
static void push_sized(const char *tag, size_t len)
{
    char *job = malloc(len);
    cr_assert_not_null(job);
    memset(job, 'x', len);
    memcpy(job, tag, strlen(tag));
    redisReply *reply = redisCommand(fx.conn, "LPUSH %s %b", keys.queue, job, len);
    cr_assert(reply && reply->type == REDIS_REPLY_INTEGER);
    freeReplyObject(reply);
    free(job);
}

/* The dead-letter list, oldest first, each record parsed (caller frees
 * with cJSON_Delete); returns how many. */
static size_t dead_letters(cJSON **out, size_t max)
{
    redisReply *reply = redisCommand(fx.conn, "LRANGE %s 0 -1", keys.dlq);
    cr_assert(reply && reply->type == REDIS_REPLY_ARRAY);
    size_t n = reply->elements;
    cr_assert_leq(n, max);
    for (size_t i = 0; i < n; i++) {
        out[i] = cJSON_ParseWithLength(reply->element[n - 1 - i]->str, reply->element[n - 1 - i]->len);
        cr_assert_not_null(out[i], "dead letter %zu is not JSON", i);
    }
    freeReplyObject(reply);
    return n;
}

static const char *record_string(const cJSON *record, const char *field)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(record, field);
    cr_assert(cJSON_IsString(v), "dead letter field %s is not a string", field);
    return v->valuestring;
}

static int64_t redis_now(void)
{
    return redis_fixture_now_us(&fx);
}

Test(claim, oversize_jobs_are_dead_lettered_whole_and_never_claimed)
{
    const size_t big = 5 * MIB;
    push("small 1");
    push_sized("big", big);
    push("small 2");
    sl_claim_params p = params(1000000, SEC, 100); /* max_job_bytes: the 1 MiB default */
    p.raw = true;
    claimed *c = claim(&p);
    cr_assert_eq(c->result.job_count, 1, "the big job is not claimed");
    cr_assert_str_eq(c->job[0], "small 1");
    cr_assert_str_eq(c->reasons, "too_large=1");
    cr_assert_leq(c->result.next_us, c->result.now_us, "the claim read its bytes: again at once");
    cr_assert_eq(count("HLEN %s", keys.jobs), 1, "no record for the big job");
    redisReply *records = redisCommand(fx.conn, "HVALS %s", keys.jobs);
    cr_assert(records && records->type == REDIS_REPLY_ARRAY && records->elements == 1);
    cr_assert_lt(records->element[0]->len, 64, "the record is small 1's");
    freeReplyObject(records);

    cJSON *dead[4];
    cr_assert_eq(dead_letters(dead, 4), 1);
    cr_assert_str_eq(record_string(dead[0], "reason"), "too_large");
    const char *job = record_string(dead[0], "job");
    cr_assert_eq(strlen(job), big, "the job is kept whole");
    cr_assert_eq(strncmp(job, "big", 3), 0);
    cr_assert_eq(strspn(job + 3, "x"), big - 3);
    cr_assert(cJSON_IsNull(cJSON_GetObjectItemCaseSensitive(dead[0], "id")), "it never had an id");
    cJSON_Delete(dead[0]);

    claimed *again = claim(&p);
    cr_assert_eq(again->result.job_count, 1);
    cr_assert_str_eq(again->job[0], "small 2");
    cr_assert_eq(count("LLEN %s", keys.queue), 0);
    free(c);
    free(again);

    /* max_job_bytes is the tenant's: 5 MiB passes under a limit of 8 MiB,
     * alone in its reply though it is over the reply's bound */
    push_sized("big again", big);
    push("small 3");
    p.max_job_bytes = 8 * MIB;
    claimed *alone = claim(&p);
    cr_assert_eq(alone->result.job_count, 1);
    cr_assert_eq(alone->job_len[0], big);
    cr_assert_eq(alone->result.dead_lettered, 0);
    cr_assert_leq(alone->result.next_us, alone->result.now_us);
    claimed *last = claim(&p);
    cr_assert_eq(last->result.job_count, 1);
    cr_assert_str_eq(last->job[0], "small 3");
    free(alone);
    free(last);
}

Test(claim, a_reply_is_bounded_in_bytes_and_the_rest_comes_next)
{
    const size_t size = 900 * 1024; /* under max_job_bytes; 4 fit the 4 MiB bound, 5 do not */
    for (int i = 0; i < 10; i++) {
        char tag[16];
        snprintf(tag, sizeof tag, "job %d ", i);
        push_sized(tag, size);
    }
    sl_claim_params p = params(1000000, SEC, 100);
    p.raw = true;
    int next = 0, claims = 0;
    const size_t expect[] = {4, 4, 2};
    while (next < 10) {
        cr_assert_lt(claims, 3, "more claims than the bound needs");
        claimed *c = claim(&p);
        cr_assert_eq(c->result.job_count, expect[claims], "claim %d: %zu jobs", claims,
                     c->result.job_count);
        cr_assert_eq(c->result.dead_lettered, 0);
        for (size_t i = 0; i < c->result.job_count; i++, next++) {
            char tag[16];
            snprintf(tag, sizeof tag, "job %d ", next);
            cr_assert_eq(strncmp(c->job[i], tag, strlen(tag)), 0, "FIFO, nothing lost: %.8s", c->job[i]);
            cr_assert_eq(c->job_len[i], size);
        }
        if (next < 10)
            cr_assert_leq(c->result.next_us, c->result.now_us, "the rest: at once");
        free(c);
        claims++;
    }
    cr_assert_eq(count("HLEN %s", keys.jobs), 10);
    cr_assert_eq(count("LLEN %s", keys.queue), 0);
    cr_assert_eq(count("LLEN %s", keys.dlq), 0);
}

Test(claim, overflow_dead_letters_only_queued_jobs_exactly_the_excess)
{
    /* 4 claimed at 1/s (3 of them not departed yet), one of those back as a retry */
    int64_t t0 = redis_now();
    for (int i = 0; i < 4; i++) {
        char job[16];
        snprintf(job, sizeof job, "a%d", i);
        push(job);
    }
    sl_claim_params p = params(1000, 10 * SEC, 100); /* 1/s, 10 s ahead */
    p.raw = true;
    p.now_us = t0;
    claimed *c = claim(&p);
    cr_assert_eq(c->result.job_count, 4);
    sl_ack_start(&args, ack_sha, &keys, "acme");
    sl_ack_retry(&args, c->id[3], c->lease[3], 60 * SEC, "HTTP 500"); /* due past the lookahead */
    send_ack();
    cr_assert_eq(count("ZCARD %s", keys.retry), 1);
    for (int i = 0; i < 6; i++) {
        char job[16];
        snprintf(job, sizeof job, "b%d", i);
        push(job);
    }
    /* level: 6 queued + 1 retry + 2 claimed not departed = 9; capacity 2:
     * 7 too many, but only the 6 queued can go */
    p.capacity = 2;
    p.overflow_dead_letter = true;
    claimed *over = claim(&p);
    cr_assert_eq(over->result.dead_lettered, 6);
    cr_assert_str_eq(over->reasons, "overflow=6");
    cr_assert_eq(over->result.job_count, 0);
    cr_assert_eq(over->result.queue_len, 0);
    cJSON *dead[16];
    cr_assert_eq(dead_letters(dead, 16), 6);
    for (int i = 0; i < 6; i++) { /* the newest first */
        char job[16];
        snprintf(job, sizeof job, "b%d", 5 - i);
        cr_assert_str_eq(record_string(dead[i], "reason"), "overflow");
        cr_assert_str_eq(record_string(dead[i], "job"), job, "record %d", i);
        cJSON_Delete(dead[i]);
    }
    cr_assert_eq(count("ZCARD %s", keys.retry), 1, "the retry stays");
    cr_assert_eq(count("ZCARD %s", keys.inflight), 3, "the claimed jobs stay");
    free(c);
    free(over);
}

/* Claims at `now` with p; returns the reply (caller frees). */
static claimed *claim_at(sl_claim_params *p, int64_t now)
{
    p->now_us = now;
    return claim(p);
}

/* The checkpoints stored in the shape hash: how many (0: no field). */
static int stored_checkpoints(void)
{
    redisReply *reply = redisCommand(fx.conn, "HGET %s seen", keys.shape);
    cr_assert(reply);
    int n = 0;
    if (reply->type == REDIS_REPLY_STRING) {
        n = 1;
        for (size_t i = 0; i < reply->len; i++)
            n += reply->str[i] == ',';
    }
    freeReplyObject(reply);
    return n;
}

Test(claim, max_wait_counts_from_the_first_claim_that_saw_the_job_queued)
{
    int64_t t0 = redis_now();
    for (int i = 0; i < 10; i++) {
        char job[16];
        snprintf(job, sizeof job, "j%d", i);
        push(job);
    }
    sl_claim_params p = params(1000, SEC / 2, 100); /* 1/s: one job per claim */
    p.raw = true;
    p.max_wait_us = 5 * SEC;
    p.lease_us = 1000 * SEC;
    for (int k = 0; k <= 5; k++) {
        claimed *c = claim_at(&p, t0 + k * SEC);
        cr_assert_eq(c->result.job_count, 1, "claim %d", k);
        char job[16];
        snprintf(job, sizeof job, "j%d", k);
        cr_assert_str_eq(c->job[0], job);
        cr_assert_eq(c->first_seen[0], t0, "j%d was queued when the first claim looked", k);
        free(c);
    }
    /* 6 s after the backlog was first seen: everything left waited too long */
    claimed *late = claim_at(&p, t0 + 6 * SEC);
    cr_assert_eq(late->result.job_count, 0);
    cr_assert_str_eq(late->reasons, "expired=4");
    cr_assert_eq(late->result.queue_len, 0);
    cJSON *dead[8];
    cr_assert_eq(dead_letters(dead, 8), 4);
    for (int i = 0; i < 4; i++) {
        char job[16];
        snprintf(job, sizeof job, "j%d", 6 + i);
        cr_assert_str_eq(record_string(dead[i], "job"), job);
        cr_assert_str_eq(record_string(dead[i], "reason"), "expired");
        const cJSON *first_seen = cJSON_GetObjectItemCaseSensitive(dead[i], "first_seen_ms");
        cr_assert_eq((int64_t)first_seen->valuedouble, t0 / 1000);
        cJSON_Delete(dead[i]);
    }
    cr_assert_eq(stored_checkpoints(), 0, "the queue is empty: nothing to remember");
    free(late);
}

Test(claim, max_wait_does_not_expire_later_pushes_early)
{
    int64_t t0 = redis_now();
    push("a0");
    push("a1");
    push("a2");
    sl_claim_params p = params(1000, SEC / 2, 100);
    p.raw = true;
    p.max_wait_us = 2500000;
    p.lease_us = 1000 * SEC;
    claimed *c = claim_at(&p, t0);
    cr_assert_str_eq(c->job[0], "a0");
    free(c);
    /* the newest queued job overflows (its checkpoint must not cover the
     * job pushed in its place), then two pushes: the b's were first seen
     * at t0 + 1 s, not at t0 */
    p.capacity = 1;
    p.overflow_dead_letter = true;
    claimed *over = claim_at(&p, t0 + SEC / 5);
    cr_assert_str_eq(over->reasons, "overflow=1");
    cr_assert_eq(over->result.job_count, 0);
    free(over);
    p.overflow_dead_letter = false;
    push("b0");
    push("b1");
    const char *order[] = {"a1", "b0", "b1"};
    const int64_t seen_at[] = {t0, t0 + SEC, t0 + SEC};
    for (int k = 0; k < 3; k++) {
        claimed *d = claim_at(&p, t0 + (k + 1) * SEC);
        cr_assert_eq(d->result.job_count, 1, "%s expired early", order[k]);
        cr_assert_str_eq(d->job[0], order[k]);
        cr_assert_eq(d->first_seen[0], seen_at[k], "%s first seen at %" PRId64 ", not %" PRId64,
                     order[k], d->first_seen[0] - t0, seen_at[k] - t0);
        free(d);
    }
    cr_assert_eq(count("LLEN %s", keys.dlq), 1, "only the overflow");
}

Test(claim, max_wait_checkpoints_are_capped_and_only_ever_later)
{
    int64_t t0 = redis_now();
    sl_claim_params p = params(1000, SEC / 2, 100);
    p.raw = true;
    p.lease_us = 1000 * SEC;
    int pushed = 0, taken = 0;
    for (int k = 0; k < 180; k++) {
        /* three pushes before each of the first 60 claims: the queue grows
         * by two a claim, and each claim adds a checkpoint */
        for (int i = 0; k < 60 && i < 3; i++) {
            char job[16];
            snprintf(job, sizeof job, "%d", k);
            push(job);
            pushed++;
        }
        claimed *c = claim_at(&p, t0 + k * SEC);
        cr_assert_eq(c->result.job_count, 1, "claim %d", k);
        int pushed_before = atoi(c->job[0]);
        cr_assert_geq(c->first_seen[0], t0 + pushed_before * SEC,
                      "claim %d: pushed before claim %d, seen at %" PRId64 " s", k, pushed_before,
                      (c->first_seen[0] - t0) / SEC);
        cr_assert_leq(c->first_seen[0], t0 + k * SEC);
        taken++;
        cr_assert_leq(stored_checkpoints(), 32, "claim %d", k);
        if (k == 59) {
            cr_assert_eq(stored_checkpoints(), 32, "capped, not emptied");
            cr_assert_eq(count("PTTL %s", keys.shape), -1, "kept while jobs wait");
        }
        free(c);
    }
    cr_assert_eq(taken, pushed, "nothing lost");
    cr_assert_eq(stored_checkpoints(), 0);
    cr_assert_neq(count("PTTL %s", keys.shape), -1, "the schedule expires again by itself");
}

/* ---- the fleet's settings (issue 16, lua/claim.lua "Settings") ---- */

static void settings_set(const char *field, const char *value)
{
    freeReplyObject(redisCommand(fx.conn, "HSET %s %s %s", keys.settings, field, value));
}

static void settings_unset(const char *field)
{
    freeReplyObject(redisCommand(fx.conn, "HDEL %s %s", keys.settings, field));
}

Test(claim, a_rate_override_changes_the_schedule_from_the_next_claim_and_unset_returns_to_the_file)
{
    for (int i = 0; i < 30; i++)
        push("{}");
    int64_t t0 = redis_now();
    sl_claim_params p = params(10000, 500000, 5); /* 10/s: slots 100 ms apart */
    claimed *c = claim_at(&p, t0);
    cr_assert_eq(c->result.job_count, 5);
    cr_assert_eq(c->slot[1] - c->slot[0], 100000);
    cr_assert_eq(c->result.rate_milli, 10000);
    cr_assert_eq(c->result.rate_source, SL_RATE_FILE);
    free(c);

    settings_set("rate", "20000"); /* 20/s */
    c = claim_at(&p, t0 + 500000);
    cr_assert_eq(c->result.rate_source, SL_RATE_OVERRIDE);
    cr_assert_eq(c->result.rate_milli, 20000);
    cr_assert_geq(c->result.job_count, 2);
    cr_assert_eq(c->slot[1] - c->slot[0], 50000, "the override spaces slots 1/20 s apart");
    free(c);

    /* A reload with another file rate does not erase the override: it
     * lives in Redis, and every claim reads it. */
    sl_claim_params reloaded = params(2000, 500000, 5);
    c = claim_at(&reloaded, t0 + SEC);
    cr_assert_eq(c->result.rate_source, SL_RATE_OVERRIDE);
    cr_assert_eq(c->result.rate_milli, 20000);
    free(c);

    settings_unset("rate");
    c = claim_at(&p, t0 + 3 * SEC);
    cr_assert_eq(c->result.rate_source, SL_RATE_FILE);
    cr_assert_eq(c->result.rate_milli, 10000);
    cr_assert_geq(c->result.job_count, 2);
    cr_assert_eq(c->slot[1] - c->slot[0], 100000, "back to the file's 10/s");
    free(c);
}

Test(claim, a_pause_claims_nothing_until_paused_until)
{
    for (int i = 0; i < 3; i++)
        push("{}");
    int64_t t0 = redis_now();
    int64_t until_ms = t0 / 1000 + 5000;
    char until[32];
    snprintf(until, sizeof until, "%" PRId64, until_ms);
    settings_set("paused_until", until);
    sl_claim_params p = params(10000, 500000, 10);
    claimed *c = claim_at(&p, t0);
    cr_assert_eq(c->result.job_count, 0, "paused: nothing claimed");
    cr_assert_eq(c->result.next_us, until_ms * 1000, "claim again when the pause ends");
    cr_assert_eq(c->result.paused_until_ms, until_ms);
    cr_assert_eq(c->result.queue_len, 3);
    cr_assert_eq(count("LLEN %s", keys.queue), 3, "the queue is untouched");
    free(c);

    c = claim_at(&p, until_ms * 1000 - 1);
    cr_assert_eq(c->result.job_count, 0, "still paused a microsecond before its end");
    free(c);
    c = claim_at(&p, until_ms * 1000);
    cr_assert_eq(c->result.job_count, 3, "claims again once the pause ended");
    cr_assert_eq(c->result.paused_until_ms, 0);
    free(c);
}

Test(claim, capacity_and_concurrency_overrides_beat_the_file)
{
    for (int i = 0; i < 10; i++)
        push("{}");
    sl_claim_params p = params(1000, 100000, 100);
    p.overflow_dead_letter = true;
    p.capacity = 1000;
    p.concurrency = 16;
    settings_set("capacity", "4");
    settings_set("concurrency", "3");
    claimed *c = claim(&p);
    cr_assert_eq(c->result.concurrency, 3);
    cr_assert_eq(c->result.dead_lettered, 6, "the overridden capacity of 4 drops the rest");
    free(c);
    settings_unset("concurrency");
    settings_set("capacity", "not a number"); /* ignored: the file's value holds */
    c = claim(&p);
    cr_assert_eq(c->result.concurrency, 16);
    cr_assert_eq(c->result.dead_lettered, 0);
    free(c);
}

Test(claim, the_adaptive_rate_counts_only_for_an_adaptive_tenant_within_its_bounds)
{
    push("{}");
    settings_set("adaptive_rate", "500000");
    sl_claim_params p = params(10000, 100000, 10);
    claimed *c = claim(&p);
    cr_assert_eq(c->result.rate_source, SL_RATE_FILE, "not adaptive: the file's rate");
    free(c);
    p.adaptive_min_milli = 5000;
    p.adaptive_max_milli = 200000;
    c = claim(&p);
    cr_assert_eq(c->result.rate_source, SL_RATE_ADAPTIVE);
    cr_assert_eq(c->result.rate_milli, 200000, "clamped to max");
    free(c);
    settings_set("rate", "7000");
    c = claim(&p);
    cr_assert_eq(c->result.rate_source, SL_RATE_OVERRIDE, "an override beats the adaptive rate");
    cr_assert_eq(c->result.rate_milli, 7000);
    free(c);
}

Test(claim, the_script_and_its_c_model_agree_on_the_effective_settings)
{
    const char *fields[] = {"", "0", "12", "abc", "1e3", "-5", "9999999999999999"};
    sl_claim_params p = params(10000, 100000, 10);
    p.concurrency = 16;
    p.adaptive_min_milli = 5000;
    p.adaptive_max_milli = 200000;
    sl_settings_file file = {10000, 1000, 16, 5000, 200000};
    for (size_t r = 0; r < 7; r++)
        for (size_t a = 0; a < 7; a++) {
            freeReplyObject(redisCommand(fx.conn, "DEL %s", keys.settings));
            if (*fields[r])
                settings_set("rate", fields[r]);
            if (*fields[a])
                settings_set("adaptive_rate", fields[a]);
            settings_set("concurrency", fields[(r + a) % 7][0] ? fields[(r + a) % 7] : "x");
            sl_settings s = {
                .rate_milli = sl_settings_field(fields[r]),
                .adaptive_rate_milli = sl_settings_field(fields[a]),
                .concurrency = sl_settings_field(fields[(r + a) % 7]),
            };
            sl_settings_effective e = sl_settings_apply(&s, &file, 0);
            claimed *c = claim(&p);
            cr_assert_eq(c->result.rate_milli, e.rate_milli, "rate %s adaptive %s", fields[r],
                         fields[a]);
            cr_assert_eq(c->result.rate_source, e.rate_source, "rate %s adaptive %s", fields[r],
                         fields[a]);
            cr_assert_eq(c->result.concurrency, e.concurrency, "concurrency %s",
                         fields[(r + a) % 7]);
            free(c);
        }
}

/* ---- reslot: new slots for jobs a fleet member owes late ---- */

/* Asks count new slots at rate_milli and now (0: Redis's clock) through
 * the daemon's encoder and decoder; fills slots, returns the reply's now. */
static int64_t reslot(int64_t rate_milli, size_t count, int64_t now, int64_t *slots)
{
    sl_reslot_build(&args, reslot_sha, &keys, rate_milli, count, now);
    const char **argv = sl_argv_finish(&args);
    redisReply *reply = redisCommandArgv(fx.conn, (int)args.count, argv, args.lengths);
    int64_t reply_now;
    size_t got;
    char err[256];
    cr_assert(sl_reslot_parse(reply, &reply_now, &got, err, sizeof err), "%s", err);
    cr_assert_eq(got, count);
    for (size_t i = 0; i < got; i++)
        slots[i] = sl_reslot_slot(reply, i);
    freeReplyObject(reply);
    return reply_now;
}

Test(claim, reslot_gives_the_schedules_next_slots_as_the_shaping_model_does)
{
    /* 3/s: the exact schedule holds a fraction; slots follow the last one
     * claimed, then the next claim follows them */
    for (int i = 0; i < 3; i++)
        push("{}");
    sl_claim_params p = params(3000, 2 * SEC, 2);
    claimed *c = claim(&p);
    cr_assert_eq(c->result.job_count, 2);
    sl_shaping_state model = stored_schedule();
    int64_t now = c->result.now_us + 1000;
    int64_t slots[5];
    cr_assert_eq(reslot(3000, 5, now, slots), now);
    sl_bucket_params bucket = {.capacity = 1000000, .rate_milli = 3000};
    for (size_t i = 0; i < 5; i++) {
        sl_verdict v = sl_shaping_admit(&model, &bucket, now);
        cr_assert(v.allowed);
        cr_assert_eq(slots[i], now + v.wait_us, "slot %zu: %" PRId64 ", the model %" PRId64, i,
                     slots[i], now + v.wait_us);
    }
    cr_assert_gt(slots[0], c->slot[1], "after every slot given before");
    sl_shaping_state stored = stored_schedule();
    cr_assert_eq(stored.next_free, model.next_free);
    cr_assert_eq(stored.frac, model.frac);
    cr_assert_eq(count("PEXPIRETIME %s", keys.shape), -1, "a job still queued: `seen` holds it");
    p.now_us = now;
    p.lookahead_us = 10 * SEC;
    free(c);
    c = claim(&p);
    cr_assert_eq(c->result.job_count, 1);
    cr_assert_gt(c->slot[0], slots[4], "the next claim's slot comes after them");
    free(c);
}

Test(claim, reslot_restarts_an_idle_schedule_at_now_and_uses_redis_time)
{
    int64_t slots[3];
    int64_t before = redis_fixture_now_us(&fx);
    int64_t now = reslot(1000000, 3, 0, slots);
    cr_assert_geq(now, before);
    cr_assert_eq(slots[0], now, "an idle schedule: the first slot is now");
    cr_assert_eq(slots[1], now + 1000);
    cr_assert_eq(slots[2], now + 2000);
    cr_assert_eq(count("PEXPIRETIME %s", keys.shape), (now + 3000 + 999) / 1000,
                 "it expires once its next slot passes");
}

Test(claim, reslot_keeps_a_shape_hash_that_holds_checkpoints)
{
    /* claim.lua's `seen` must not expire with the schedule */
    freeReplyObject(redisCommand(fx.conn, "HSET %s seen 3:1", keys.shape));
    int64_t slots[1];
    reslot(1000000, 1, 0, slots);
    cr_assert_eq(count("PEXPIRETIME %s", keys.shape), -1);
}

Test(claim, reslot_refuses_bad_arguments_naming_them)
{
    const char *cases[][3] = {{"0", "1", "0"}, {"1000", "0", "0"}, {"1000", "100001", "0"},
                              {"x", "1", "0"}, {"1000", "1", "-5"}};
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        const char *argv[] = {"EVALSHA", reslot_sha, "1", keys.shape, cases[i][0], cases[i][1],
                              cases[i][2]};
        redisReply *reply = redisCommandArgv(fx.conn, 7, argv, NULL);
        int64_t now;
        size_t n;
        char err[256];
        cr_assert_not(sl_reslot_parse(reply, &now, &n, err, sizeof err));
        cr_assert(strstr(err, "reslot: ERR reslot: ARGV["), "case %zu: %s", i, err);
        freeReplyObject(reply);
    }
}

static redisReply *integers(size_t n, const long long *values)
{
    redisReply *r = calloc(1, sizeof *r);
    r->type = REDIS_REPLY_ARRAY;
    r->elements = n;
    r->element = calloc(n, sizeof *r->element);
    for (size_t i = 0; i < n; i++) {
        r->element[i] = calloc(1, sizeof *r->element[i]);
        r->element[i]->type = REDIS_REPLY_INTEGER;
        r->element[i]->integer = values[i];
    }
    return r;
}

Test(claim_ids, a_reslot_reply_that_lies_is_refused_with_the_reason)
{
    int64_t now;
    size_t n;
    char err[256];
    cr_assert_not(sl_reslot_parse(NULL, &now, &n, err, sizeof err));
    cr_assert_str_eq(err, "reslot: no reply");
    redisReply *only_now = integers(1, (long long[]){5});
    cr_assert_not(sl_reslot_parse(only_now, &now, &n, err, sizeof err));
    cr_assert(strstr(err, "expected an array"), "%s", err);
    freeReplyObject(only_now);
    redisReply *backwards = integers(3, (long long[]){5, 10, 9});
    cr_assert_not(sl_reslot_parse(backwards, &now, &n, err, sizeof err));
    cr_assert(strstr(err, "slot 2 comes before"), "%s", err);
    freeReplyObject(backwards);
    redisReply *good = integers(3, (long long[]){5, 9, 10});
    cr_assert(sl_reslot_parse(good, &now, &n, err, sizeof err), "%s", err);
    cr_assert_eq(now, 5);
    cr_assert_eq(n, 2);
    cr_assert_eq(sl_reslot_slot(good, 1), 10);
    good->element[2]->type = REDIS_REPLY_STRING;
    cr_assert_not(sl_reslot_parse(good, &now, &n, err, sizeof err));
    cr_assert(strstr(err, "element 3 is not an integer"), "%s", err);
    good->element[2]->type = REDIS_REPLY_INTEGER;
    freeReplyObject(good);
}

/* The header of a claim reply (11 fields) with `retried` as given, then
 * two jobs at slots 100 and 200. */
static char *claim_reply(const char *retried)
{
    char *text;
    cr_assert(asprintf(&text,
                       "*15\r\n:1\r\n:0\r\n:0\r\n:0\r\n:0\r\n*0\r\n:1000\r\n$4\r\nfile\r\n:4\r\n:0\r\n"
                       "%s:100\r\n$3\r\n{a}\r\n:200\r\n$3\r\n{b}\r\n",
                       retried) > 0);
    return text;
}

/* The reply leaves out what the call tells: a new job's id (the prefix
 * and its place in hex) and every lease (slot + lease_us); a retried
 * job's id, attempts and first_seen come by place. A Redis that lies
 * about them is refused with the reason. */
Test(claim_ids, a_claim_reply_gives_ids_and_leases_by_the_call_and_refuses_lies)
{
    sl_claim_result r;
    sl_claimed_job jobs[4];
    char err[256];
    char *text = claim_reply("*4\r\n:1\r\n$5\r\nold.7\r\n:2\r\n:77\r\n");
    redisReply *good = resp_text_reply(text);
    cr_assert(sl_claim_parse(good, "P.", 40, &r, jobs, 4, err, sizeof err), "%s", err);
    cr_assert_eq(r.job_count, 2);
    cr_assert_eq(jobs[0].id_len, 3);
    cr_assert(memcmp(jobs[0].id, "P.0", 3) == 0);
    cr_assert_eq(jobs[0].lease, 140);
    cr_assert_eq(jobs[0].attempts, 0);
    cr_assert(memcmp(jobs[1].id, "old.7", 5) == 0 && jobs[1].id_len == 5);
    cr_assert_eq(jobs[1].attempts, 2);
    cr_assert_eq(jobs[1].first_seen_us, 77);
    cr_assert_eq(jobs[1].lease, 240);
    cr_assert(memcmp(jobs[1].job, "{b}", 3) == 0);
    freeReplyObject(good);
    free(text);

    const char *lies[] = {
        "*4\r\n:2\r\n$5\r\nold.7\r\n:2\r\n:77\r\n",                           /* no job 2 */
        "*8\r\n:1\r\n$1\r\na\r\n:0\r\n:1\r\n:0\r\n$1\r\nb\r\n:0\r\n:1\r\n",   /* out of order */
        "*4\r\n:0\r\n:5\r\n:0\r\n:1\r\n",                                     /* id not a string */
        "*3\r\n:0\r\n$1\r\na\r\n:0\r\n",                                      /* not 4 a job */
        "*4\r\n:0\r\n$1\r\na\r\n:-1\r\n:1\r\n",                               /* attempts < 0 */
    };
    for (size_t i = 0; i < sizeof lies / sizeof *lies; i++) {
        text = claim_reply(lies[i]);
        redisReply *lie = resp_text_reply(text);
        cr_assert_not(sl_claim_parse(lie, "P.", 40, &r, jobs, 4, err, sizeof err), "lie %zu", i);
        cr_assert(strstr(err, "retried jobs are not (place, id, attempts, first_seen) in order"),
                  "lie %zu: %s", i, err);
        freeReplyObject(lie);
        free(text);
    }
    redisReply *overflow = resp_text_reply("*13\r\n:1\r\n:0\r\n:0\r\n:0\r\n:0\r\n*0\r\n:1000\r\n$4\r\nfile\r\n"
                                ":4\r\n:0\r\n*0\r\n:9223372036854775800\r\n$3\r\n{a}\r\n");
    cr_assert_not(sl_claim_parse(overflow, "P.", 40, &r, jobs, 4, err, sizeof err));
    cr_assert(strstr(err, "job 0 of the reply is not a slot and a string"), "%s", err);
    freeReplyObject(overflow);
    char long_prefix[SL_CLAIM_ID_PREFIX_MAX + 2];
    memset(long_prefix, 'p', sizeof long_prefix - 1);
    long_prefix[sizeof long_prefix - 1] = '\0';
    cr_assert_not(sl_claim_parse(NULL, long_prefix, 40, &r, jobs, 4, err, sizeof err));
    cr_assert(strstr(err, "id prefix over"), "%s", err);
}

/* A new job's id ends in its place written as claim.lua's
 * string.format('%x') writes it: lower case, no leading zeros. */
Test(claim_ids, new_job_ids_end_in_lower_case_hex_without_leading_zeros)
{
    const uint64_t values[] = {0, 9, 10, 15, 16, 255, 256, 511, 4096, UINT64_MAX};
    for (size_t i = 0; i < sizeof values / sizeof *values; i++) {
        char got[17] = {0}, want[17];
        size_t len = sl_hex_write(got, values[i]);
        snprintf(want, sizeof want, "%" PRIx64, values[i]);
        cr_assert_eq(len, strlen(want));
        cr_assert_str_eq(got, want);
    }
}
