/* claim.h - the claim and ack scripts' calls, encoded and decoded.
 *
 * Pure: builds argument vectors and reads replies; sending is the caller's.
 * See lua/claim.lua and lua/ack.lua for what the scripts do. */
#ifndef SLUICE_CLAIM_H
#define SLUICE_CLAIM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <hiredis/hiredis.h>

#include "admission/settings.h"
#include "job/adaptive.h"
#include "redis/keys.h"
#include "redis/redis_argv.h"

#define SL_CLAIM_ID_PREFIX_SIZE 12 /* 11 characters and the NUL */

typedef struct sl_claim_limit {
    const char *name;
    const char *type;      /* the lua script name, e.g. "fixed_window" */
    int64_t first, second; /* capacity, rate_milli or max, window_ms */
    bool dead_letter;      /* on_deny "dead-letter", else "delay" */
} sl_claim_limit;

typedef struct sl_claim_params {
    const char *prefix;
    const char *tenant;
    int64_t capacity;
    int64_t rate_milli;
    bool overflow_dead_letter;
    bool raw;             /* format "raw" */
    int64_t max_wait_us;  /* 0: none */
    int64_t lookahead_us; /* claim what departs before now + lookahead */
    int64_t refill_us;    /* claim again when the next slot is this near */
    int64_t lease_us;     /* a claimed job is reclaimable after slot + lease */
    int batch;            /* most jobs per call */
    int64_t max_job_bytes; /* larger jobs are dead-lettered too_large; 0: SL_JOB_MAX_BYTES_DEFAULT */
    int64_t now_us;       /* the claim's time; 0: Redis's clock (tests pass one) */
    const sl_claim_limit *limits;
    size_t limit_count;
    int64_t concurrency;        /* the file's; the settings may override it */
    int64_t adaptive_min_milli; /* the file's adaptive bounds; max 0: not adaptive */
    int64_t adaptive_max_milli;
} sl_claim_params;


/* The longest id prefix sl_claim_parse takes: a new job's id is the
 * prefix and its place in the reply in hex, written into id_buf. */
#define SL_CLAIM_ID_PREFIX_MAX 32
#define SL_CLAIM_ID_MAX (SL_CLAIM_ID_PREFIX_MAX + 16) /* no NUL */

/* One claimed job; id (unless it is id_buf) and job point into the reply
 * it was parsed from. */
typedef struct sl_claimed_job {
    const char *id;
    size_t id_len;
    char id_buf[SL_CLAIM_ID_MAX]; /* a new job's id (id_len bytes, no NUL) */
    int64_t slot_us;
    int64_t lease;        /* the lease token acks must present */
    int64_t attempts;     /* HTTP attempts made before this one */
    int64_t first_seen_us; /* when a claim first saw it queued (max_wait counts from
                              it); 0 for a new job, whose record holds it */
    const char *job;      /* the element as the producer pushed it */
    size_t job_len;
} sl_claimed_job;

typedef struct sl_claim_result {
    int64_t now_us;       /* Redis time of the claim */
    int64_t next_us;      /* claim again at; <= now_us: at once; 0: idle */
    int64_t queue_len;
    int64_t reaped;       /* expired leases returned */
    int64_t dead_lettered;
    /* The dead letters by reason: dead_reason_count pairs of a string and
     * an integer, in the reply; see sl_claim_dead_reason. */
    const redisReply *dead_reasons;
    size_t dead_reason_count;
    size_t job_count;
    /* The effective settings this claim applied (the fleet's settings
     * hash over the file's, see lua/claim.lua). */
    int64_t rate_milli;
    sl_rate_source rate_source;
    int64_t concurrency;      /* 0 if the call passed none */
    int64_t paused_until_ms;  /* > 0: paused, nothing claimed */
} sl_claim_result;


/* Writes to out the 11-character id prefix of one claim call: 64 random
 * bits in the URL-safe base64 alphabet (short: every claimed job stores
 * its id twice in Redis). */
void sl_claim_id_prefix(uint64_t random, char out[SL_CLAIM_ID_PREFIX_SIZE]);

/* Resets a and builds EVALSHA sha ... for lua/claim.lua on keys (p's
 * tenant's, under p's prefix; copied into a). id_prefix must be unique per
 * call (random): new claimed jobs get ids id_prefix + their hex index. */
void sl_claim_build(sl_argv *a, const char *sha, const sl_tenant_keys *keys,
                    const sl_claim_params *p, const char *id_prefix);

/* Reads claim.lua's reply to a call built with id_prefix (at most
 * SL_CLAIM_ID_PREFIX_MAX bytes) and lease_us into out and jobs (at most
 * max_jobs; the script never returns more than the batch): the reply
 * leaves out what these tell (a new job's id, every lease). False with a
 * message on a malformed reply. jobs[] point into reply: copy before
 * freeing it. */
bool sl_claim_parse(const redisReply *reply, const char *id_prefix, int64_t lease_us,
                    sl_claim_result *out, sl_claimed_job *jobs, size_t max_jobs, char *err,
                    size_t err_size);

/* The i-th (< dead_reason_count) reason of a parsed reply: its text
 * (pointing into the reply, len bytes) and how many jobs it took. */
void sl_claim_dead_reason(const sl_claim_result *r, size_t i, const char **reason, size_t *len,
                          int64_t *count);

/* Resets a and starts an ack batch for one tenant; then add ops. */
void sl_ack_start(sl_argv *a, const char *sha, const sl_tenant_keys *keys, const char *tenant);
/* Ops an ack batch holds so far. */
size_t sl_ack_op_count(const sl_argv *a);
void sl_ack_done(sl_argv *a, const char *id, int64_t lease);
void sl_ack_retry(sl_argv *a, const char *id, int64_t lease, int64_t delay_us, const char *error);
/* Hands a job back unsent, due at Redis's now + order_us: give the jobs of
 * one hand-back increasing order_us to keep their order. */
void sl_ack_release(sl_argv *a, const char *id, int64_t lease, int64_t order_us);
/* attempted: an HTTP attempt was made (it counts in the record's attempts). */
void sl_ack_dead(sl_argv *a, const char *id, int64_t lease, const char *reason, int http_status,
                 bool attempted, const char *error);
void sl_ack_pause(sl_argv *a, int64_t delay_us);
/* The batch's time, us (> 0), instead of Redis's TIME: for tests. */
void sl_ack_now(sl_argv *a, int64_t now_us);
/* The batch's outcomes for the adaptive rate (job/adaptive.h): ack.lua
 * steps the rate in the settings hash by them, p's parameters, the file's
 * start_rate_milli when it has none yet, at now_us (0: Redis's TIME). */
void sl_ack_adaptive(sl_argv *a, const sl_adaptive_batch *b, const sl_adaptive_params *p,
                     int64_t start_rate_milli, int64_t now_us);

#endif
