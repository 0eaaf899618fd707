/* claim.c - see claim.h. */
#include <stdio.h>
#include <string.h>

#include "base/hex.h"
#include "job/envelope.h"
#include "redis/claim.h"

#define CLAIM_FIXED_KEYS 6
/* now, next, queue_len, reaped, dead_lettered, reasons, rate_milli,
 * rate_source, concurrency, paused_until, retried */
#define REPLY_HEADER 11
#define REPLY_PER_JOB 2 /* slot, job */
#define RETRIED_PER_JOB 4 /* place, id, attempts, first_seen */
#define ACK_HEADER_ARGS 11 /* EVALSHA sha 7 seven-keys tenant */

void sl_claim_id_prefix(uint64_t random, char out[SL_CLAIM_ID_PREFIX_SIZE])
{
    static const char alphabet[] =
        "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
    for (int i = 0; i < SL_CLAIM_ID_PREFIX_SIZE - 1; i++, random >>= 6)
        out[i] = alphabet[random & 63];
    out[SL_CLAIM_ID_PREFIX_SIZE - 1] = '\0';
}

void sl_claim_build(sl_argv *a, const char *sha, const sl_tenant_keys *keys,
                    const sl_claim_params *p, const char *id_prefix)
{
    sl_argv_reset(a);
    sl_argv_add_str(a, "EVALSHA");
    sl_argv_add_str(a, sha);
    sl_argv_add_int(a, (int64_t)(CLAIM_FIXED_KEYS + p->limit_count + 1));
    sl_argv_add_str(a, keys->queue);
    sl_argv_add_str(a, keys->shape);
    sl_argv_add_str(a, keys->inflight);
    sl_argv_add_str(a, keys->jobs);
    sl_argv_add_str(a, keys->retry);
    sl_argv_add_str(a, keys->dlq);
    for (size_t i = 0; i < p->limit_count; i++) {
        char key[SL_KEY_MAX];
        sl_limit_key(key, p->prefix, p->tenant, p->limits[i].name);
        sl_argv_add_str(a, key);
    }
    sl_argv_add_str(a, keys->settings);
    sl_argv_add_int(a, p->capacity);
    sl_argv_add_int(a, p->rate_milli);
    sl_argv_add_str(a, p->overflow_dead_letter ? "dead-letter" : "wait");
    sl_argv_add_int(a, p->max_wait_us);
    sl_argv_add_int(a, p->lookahead_us);
    sl_argv_add_int(a, p->batch);
    sl_argv_add_int(a, p->lease_us);
    sl_argv_add_str(a, id_prefix);
    sl_argv_add_str(a, p->tenant);
    sl_argv_add_str(a, p->raw ? "raw" : "envelope");
    sl_argv_add_int(a, p->refill_us);
    sl_argv_add_int(a, p->max_job_bytes > 0 ? p->max_job_bytes : (int64_t)SL_JOB_MAX_BYTES_DEFAULT);
    sl_argv_add_int(a, p->now_us);
    sl_argv_add_int(a, (int64_t)p->limit_count);
    for (size_t i = 0; i < p->limit_count; i++) {
        const sl_claim_limit *l = &p->limits[i];
        sl_argv_add_str(a, l->name);
        sl_argv_add_str(a, l->type);
        sl_argv_add_int(a, l->first);
        sl_argv_add_int(a, l->second);
        sl_argv_add_str(a, l->dead_letter ? "dead-letter" : "delay");
    }
    sl_argv_add_int(a, p->concurrency);
    sl_argv_add_int(a, p->adaptive_min_milli);
    sl_argv_add_int(a, p->adaptive_max_milli);
}

/* The reply's rate source; false if it names none. */
static bool rate_source_of(const redisReply *r, sl_rate_source *out)
{
    if (r->type != REDIS_REPLY_STRING)
        return false;
    return sl_rate_source_parse(r->str, out);
}

static bool integer_at(const redisReply *reply, size_t i, int64_t *out)
{
    if (reply->element[i]->type != REDIS_REPLY_INTEGER)
        return false;
    *out = reply->element[i]->integer;
    return true;
}

/* The jobs of a parsed reply, as new ones: an id of id_prefix and the
 * place in hex, no attempt made, the lease slot + lease_us. */
static bool jobs_of(const redisReply *reply, const char *id_prefix, int64_t lease_us,
                    sl_claimed_job *jobs, size_t count, char *err, size_t err_size)
{
    size_t prefix_len = strlen(id_prefix); /* <= SL_CLAIM_ID_PREFIX_MAX */
    for (size_t j = 0; j < count; j++) {
        size_t at = REPLY_HEADER + j * REPLY_PER_JOB;
        sl_claimed_job *job = &jobs[j];
        const redisReply *element = reply->element[at + 1];
        if (!integer_at(reply, at, &job->slot_us) || element->type != REDIS_REPLY_STRING ||
            job->slot_us > INT64_MAX - lease_us) {
            snprintf(err, err_size, "claim: job %zu of the reply is not a slot and a string", j);
            return false;
        }
        memcpy(job->id_buf, id_prefix, prefix_len);
        job->id_len = prefix_len + sl_hex_write(job->id_buf + prefix_len, j);
        job->id = job->id_buf;
        job->lease = job->slot_us + lease_us;
        job->attempts = 0;
        job->first_seen_us = 0;
        job->job = element->str;
        job->job_len = element->len;
    }
    return true;
}

/* The jobs a parsed reply says are not new: their ids, attempts and
 * first_seen, by place (increasing, each below count). */
static bool retried_of(const redisReply *retried, sl_claimed_job *jobs, size_t count, char *err,
                       size_t err_size)
{
    bool ok = retried->type == REDIS_REPLY_ARRAY && retried->elements % RETRIED_PER_JOB == 0;
    size_t next_place = 0; /* places increase */
    for (size_t i = 0; ok && i < retried->elements; i += RETRIED_PER_JOB) {
        struct redisReply *const *e = retried->element + i;
        ok = e[0]->type == REDIS_REPLY_INTEGER && e[0]->integer >= 0 &&
             (size_t)e[0]->integer >= next_place && (size_t)e[0]->integer < count &&
             e[1]->type == REDIS_REPLY_STRING && e[2]->type == REDIS_REPLY_INTEGER &&
             e[2]->integer >= 0 && e[3]->type == REDIS_REPLY_INTEGER;
        if (!ok)
            break;
        sl_claimed_job *job = &jobs[e[0]->integer];
        next_place = (size_t)e[0]->integer + 1;
        job->id = e[1]->str;
        job->id_len = e[1]->len;
        job->attempts = e[2]->integer;
        job->first_seen_us = e[3]->integer;
    }
    if (!ok)
        snprintf(err, err_size,
                 "claim: retried jobs are not (place, id, attempts, first_seen) in order");
    return ok;
}

bool sl_claim_parse(const redisReply *reply, const char *id_prefix, int64_t lease_us,
                    sl_claim_result *out, sl_claimed_job *jobs, size_t max_jobs, char *err,
                    size_t err_size)
{
    if (strlen(id_prefix) > SL_CLAIM_ID_PREFIX_MAX || lease_us < 0) {
        snprintf(err, err_size, "claim: id prefix over %d bytes or a negative lease",
                 SL_CLAIM_ID_PREFIX_MAX);
        return false;
    }
    if (!reply) {
        snprintf(err, err_size, "claim: no reply");
        return false;
    }
    if (reply->type == REDIS_REPLY_ERROR) {
        snprintf(err, err_size, "claim: %s", reply->str);
        return false;
    }
    if (reply->type != REDIS_REPLY_ARRAY || reply->elements < REPLY_HEADER ||
        (reply->elements - REPLY_HEADER) % REPLY_PER_JOB) {
        snprintf(err, err_size, "claim: unexpected reply (type %d, %zu elements)", reply->type,
                 reply->type == REDIS_REPLY_ARRAY ? reply->elements : 0);
        return false;
    }
    if (!integer_at(reply, 0, &out->now_us) || !integer_at(reply, 1, &out->next_us) ||
        !integer_at(reply, 2, &out->queue_len) || !integer_at(reply, 3, &out->reaped) ||
        !integer_at(reply, 4, &out->dead_lettered)) {
        snprintf(err, err_size, "claim: reply header is not 5 integers");
        return false;
    }
    if (!integer_at(reply, 6, &out->rate_milli) || !rate_source_of(reply->element[7], &out->rate_source) ||
        !integer_at(reply, 8, &out->concurrency) || !integer_at(reply, 9, &out->paused_until_ms)) {
        snprintf(err, err_size, "claim: reply settings are not rate, source, concurrency, paused_until");
        return false;
    }
    const redisReply *reasons = reply->element[5];
    bool reasons_ok = reasons->type == REDIS_REPLY_ARRAY && reasons->elements % 2 == 0;
    for (size_t i = 0; reasons_ok && i < reasons->elements; i += 2)
        reasons_ok = reasons->element[i]->type == REDIS_REPLY_STRING &&
                     reasons->element[i + 1]->type == REDIS_REPLY_INTEGER;
    if (!reasons_ok) {
        snprintf(err, err_size, "claim: dead-letter reasons are not (string, integer) pairs");
        return false;
    }
    out->dead_reasons = reasons;
    out->dead_reason_count = reasons->elements / 2;
    out->job_count = (reply->elements - REPLY_HEADER) / REPLY_PER_JOB;
    if (out->job_count > max_jobs) {
        snprintf(err, err_size, "claim: %zu jobs, more than the batch of %zu", out->job_count,
                 max_jobs);
        return false;
    }
    return jobs_of(reply, id_prefix, lease_us, jobs, out->job_count, err, err_size) &&
           retried_of(reply->element[10], jobs, out->job_count, err, err_size);
}

void sl_claim_dead_reason(const sl_claim_result *r, size_t i, const char **reason, size_t *len,
                          int64_t *count)
{
    const redisReply *text = r->dead_reasons->element[2 * i];
    *reason = text->str;
    *len = text->len;
    *count = r->dead_reasons->element[2 * i + 1]->integer;
}

void sl_ack_start(sl_argv *a, const char *sha, const sl_tenant_keys *keys, const char *tenant)
{
    sl_argv_reset(a);
    sl_argv_add_str(a, "EVALSHA");
    sl_argv_add_str(a, sha);
    sl_argv_add_str(a, "7");
    sl_argv_add_str(a, keys->inflight);
    sl_argv_add_str(a, keys->jobs);
    sl_argv_add_str(a, keys->retry);
    sl_argv_add_str(a, keys->dlq);
    sl_argv_add_str(a, keys->shape);
    /* Touched only by an adaptive op: a tenant without one pays two
     * arguments, no command. */
    sl_argv_add_str(a, keys->settings);
    sl_argv_add_str(a, keys->events);
    sl_argv_add_str(a, tenant);
}

size_t sl_ack_op_count(const sl_argv *a)
{
    return a->count > ACK_HEADER_ARGS ? a->count - ACK_HEADER_ARGS : 0;
}

static void op_header(sl_argv *a, const char *op, const char *id, int64_t lease)
{
    sl_argv_add_str(a, op);
    sl_argv_add_str(a, id);
    sl_argv_add_int(a, lease);
}

void sl_ack_done(sl_argv *a, const char *id, int64_t lease)
{
    op_header(a, "done", id, lease);
}

void sl_ack_retry(sl_argv *a, const char *id, int64_t lease, int64_t delay_us, const char *error)
{
    op_header(a, "retry", id, lease);
    sl_argv_add_int(a, delay_us);
    sl_argv_add_str(a, error);
}

void sl_ack_release(sl_argv *a, const char *id, int64_t lease, int64_t order_us)
{
    op_header(a, "release", id, lease);
    sl_argv_add_int(a, order_us);
}

void sl_ack_dead(sl_argv *a, const char *id, int64_t lease, const char *reason, int http_status,
                 bool attempted, const char *error)
{
    op_header(a, "dead", id, lease);
    sl_argv_add_str(a, reason);
    sl_argv_add_int(a, http_status);
    sl_argv_add_int(a, attempted ? 1 : 0);
    sl_argv_add_str(a, error);
}

void sl_ack_pause(sl_argv *a, int64_t delay_us)
{
    sl_argv_add_str(a, "pause");
    sl_argv_add_int(a, delay_us);
}

void sl_ack_now(sl_argv *a, int64_t now_us)
{
    sl_argv_add_str(a, "now");
    sl_argv_add_int(a, now_us);
}

void sl_ack_adaptive(sl_argv *a, const sl_adaptive_batch *b, const sl_adaptive_params *p,
                     int64_t start_rate_milli, int64_t now_us)
{
    sl_argv_add_str(a, "adaptive");
    sl_argv_add_int(a, b->used);
    sl_argv_add_int(a, b->ok);
    sl_argv_add_int(a, b->limited);
    sl_argv_add_int(a, b->timeouts);
    sl_argv_add_int(a, b->errors_5xx);
    sl_argv_add_int(a, p->min_milli);
    sl_argv_add_int(a, p->max_milli);
    sl_argv_add_int(a, p->decrease_permille);
    sl_argv_add_int(a, p->increase_milli);
    sl_argv_add_int(a, p->cooldown_us);
    sl_argv_add_int(a, p->on_timeout ? 1 : 0);
    sl_argv_add_int(a, p->on_5xx ? 1 : 0);
    sl_argv_add_int(a, start_rate_milli);
    sl_argv_add_int(a, now_us);
}
