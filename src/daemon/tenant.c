/* tenant.c - one tenant's pipeline on its worker thread:
 *
 *   claim (one Lua round trip for a batch of jobs and their slots)
 *   -> wait for each job's slot (one timer for the head of a FIFO)
 *   -> deliver over HTTP (bounded by concurrency)
 *   -> decide the outcome (outcome.c) -> batch the ack (one round trip).
 *
 * Nothing is lost on any path: a job is acked done, retried, released
 * back or dead-lettered; if even the ack cannot reach Redis, its lease
 * expires and any worker claims it again. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "admission/admission.h"
#include "job/backoff.h"
#include "base/log.h"
#include "base/monotonic.h"
#include "job/outcome.h"
#include "job/pacing.h"
#include "daemon/worker_t.h"

#define CLAIM_BATCH 512
#define MAX_WAITING (4 * CLAIM_BATCH) /* claimed jobs held before claiming more */
/* A shaped tenant claims again while the jobs it holds last REFILL_US
 * more (claim.lua), and then what departs in the LOOKAHEAD_INTERVALS
 * intervals after that: some 20 jobs per claim. It acks about
 * BATCH_INTERVALS jobs per round trip: under 0.2 Redis calls per job at
 * any rate where that fits in the bounds below. */
#define BATCH_INTERVALS 10
#define REFILL_US 50000               /* a claim reply may take this long */
#define LOOKAHEAD_INTERVALS 20
#define LOOKAHEAD_MAX_US 250000       /* claim at most this far ahead */
#define LEASE_MARGIN_US 10000000      /* a lease outlives slot + timeout by 10 s */
#define SEND_EARLY_US 20              /* timers fire a little late; don't add to it */
#define ACK_FLUSH_ARGS 1024           /* flush an ack batch this large at once */
#define ACK_BATCH_ARGS (3 * BATCH_INTERVALS) /* a delivered job's outcome is 3 arguments */
#define ACK_DELAY_MIN_US 2000         /* else within BATCH_INTERVALS intervals, */
#define ACK_DELAY_MAX_US 100000       /* but 2 to 100 ms */
#define IDLE_MIN_MS 10
#define IDLE_MAX_MS 1000              /* SPEC: polling backs off to at most 1 s */
#define IDLE_NOTIFIED_MAX_MS 30000    /* with keyspace notifications: a safety net */
#define RETRY_AFTER_ERROR_US 1000000
#define SATURATED_AFTER_US 10000      /* a head job this overdue means saturated */

static void release_due(tenant *t);
static void ack_flush(tenant *t);

/* ---- helpers ---- */

static void arm(struct event *timer, int64_t delay_us)
{
    if (delay_us < 0)
        delay_us = 0;
    struct timeval tv = {(time_t)(delay_us / 1000000), (suseconds_t)(delay_us % 1000000)};
    evtimer_add(timer, &tv);
}

static void job_free(job *j)
{
    if (!j)
        return;
    sl_job_request_clear(&j->request);
    sl_request_headers_clear(&j->headers);
    free(j);
}

static void push_waiting(tenant *t, job *j)
{
    j->next = NULL;
    if (t->tail)
        t->tail->next = j;
    else
        t->head = j;
    t->tail = j;
    t->waiting++;
    sl_gauge_set(&t->metrics.waiting, (int64_t)t->waiting);
}

static job *pop_waiting(tenant *t)
{
    job *j = t->head;
    t->head = j->next;
    if (!t->head)
        t->tail = NULL;
    t->waiting--;
    sl_gauge_set(&t->metrics.waiting, (int64_t)t->waiting);
    j->next = NULL;
    return j;
}

static void link_flying(tenant *t, job *j)
{
    j->prev_flying = NULL;
    j->next_flying = t->flying;
    if (t->flying)
        t->flying->prev_flying = j;
    t->flying = j;
    t->in_flight++;
    sl_gauge_set(&t->metrics.in_flight, (int64_t)t->in_flight);
}

static void unlink_flying(tenant *t, job *j)
{
    if (j->prev_flying)
        j->prev_flying->next_flying = j->next_flying;
    else
        t->flying = j->next_flying;
    if (j->next_flying)
        j->next_flying->prev_flying = j->prev_flying;
    t->in_flight--;
    sl_gauge_set(&t->metrics.in_flight, (int64_t)t->in_flight);
}

/* ---- acks ---- */

/* Outcomes gather until the first has waited ack_delay_us and there are
 * BATCH_INTERVALS of them, or it has waited ACK_DELAY_MAX_US: a tenant far
 * below its rate (bound by its concurrency or a slow endpoint) then still
 * acks about BATCH_INTERVALS jobs per round trip, not one or two. While
 * draining, nothing waits. Called after outcomes are added (more than once
 * is harmless). */
static void ack_added(tenant *t)
{
    if (t->ack_filling.count == 0)
        return;
    if (t->ack_first_us == 0) {
        t->ack_first_us = sl_monotonic_us();
        arm(t->ack_timer, t->ack_delay_us);
    }
    if (t->worker->draining || t->ack_filling.count >= ACK_FLUSH_ARGS ||
        (t->ack_filling.count >= ACK_BATCH_ARGS &&
         sl_monotonic_us() - t->ack_first_us >= t->ack_delay_us))
        ack_flush(t);
}

static void on_ack_reply(redisReply *reply, void *arg)
{
    tenant *t = arg;
    t->ack_outstanding = false;
    if (!reply || sl_redis_is_noscript(reply)) {
        t->ack_resend = true; /* resent by sl_tenant_resume once ready */
        if (reply)
            sl_redis_conn_reload_scripts(t->worker->redis);
        return;
    }
    if (reply->type == REDIS_REPLY_ERROR)
        SL_LOG(SL_LOG_ERROR, "msg=\"ack failed; leases will expire and the jobs be retried\" tenant=%s error=\"%s\"",
               t->name, reply->str);
    if (t->ack_due)
        ack_flush(t);
}

static void ack_flush(tenant *t)
{
    worker *w = t->worker;
    evtimer_del(t->ack_timer);
    const char *sha = sl_redis_conn_sha(w->redis, "ack");
    if (t->ack_outstanding || !sha) {
        t->ack_due = true; /* the reply, or readiness, flushes again */
        return;
    }
    t->ack_due = false;
    if (!t->ack_resend) {
        if (t->ack_filling.count == 0)
            return;
        sl_ack_start(&t->ack_sending, sha, &t->keys, t->name);
        for (size_t i = 0; i < t->ack_filling.count; i++)
            sl_argv_add(&t->ack_sending, t->ack_filling.text + t->ack_filling.offsets[i],
                        t->ack_filling.lengths[i]);
        sl_argv_reset(&t->ack_filling);
        t->ack_first_us = 0;
    }
    const char **argv = sl_argv_finish(&t->ack_sending);
    if (!argv) {
        SL_LOG(SL_LOG_ERROR, "msg=\"out of memory building an ack\" tenant=%s", t->name);
        return;
    }
    t->ack_resend = !sl_redis_conn_send(w->redis, (int)t->ack_sending.count, argv,
                                        t->ack_sending.lengths, on_ack_reply, t);
    t->ack_outstanding = !t->ack_resend;
    /* a resend leaves what gathered meanwhile (its timer is gone) to the reply */
    t->ack_due = t->ack_filling.count > 0;
}

static void on_ack_timer(evutil_socket_t fd, short kind, void *arg)
{
    (void)fd;
    (void)kind;
    tenant *t = arg;
    int64_t waited = sl_monotonic_us() - t->ack_first_us;
    if (!t->worker->draining && t->ack_filling.count < ACK_BATCH_ARGS && waited < ACK_DELAY_MAX_US)
        arm(t->ack_timer, ACK_DELAY_MAX_US - waited); /* for more outcomes, or the longest wait */
    else
        ack_flush(t);
}

static void release_job(tenant *t, job *j)
{
    /* The batch's size so far orders the jobs handed back within it. */
    sl_ack_release(&t->ack_filling, j->id, j->lease, (int64_t)t->ack_filling.count);
    sl_counter_add(&t->metrics.released, 1);
    ack_added(t);
    job_free(j);
}

static void dead_letter_job(tenant *t, job *j, const char *reason, int status, bool attempted,
                            const char *error)
{
    sl_ack_dead(&t->ack_filling, j->id, j->lease, reason, status, attempted, error);
    sl_counter_add(&t->metrics.dead_lettered, 1);
    sl_label_add(&t->metrics.dead_reasons, reason, strlen(reason), 1);
    ack_added(t);
    job_free(j);
}

static void retry_job(tenant *t, job *j, int64_t delay_us, const char *error)
{
    sl_ack_retry(&t->ack_filling, j->id, j->lease, delay_us, error);
    sl_counter_add(&t->metrics.retried, 1);
    job_free(j);
}

/* ---- delivery ---- */

/* "HTTP 503", or the transport's error when there was no response. */
static void describe_failure(const sl_http_result *result, char *out, size_t size)
{
    if (result->status)
        snprintf(out, size, "HTTP %d", result->status);
    else
        snprintf(out, size, "%s", result->error ? result->error : "no response");
}

static void on_delivered(void *arg, const sl_http_result *result)
{
    job *j = arg;
    tenant *t = j->tenant;
    worker *w = t->worker;
    unlink_flying(t, j);
    sl_status_add(&t->metrics.responses, result->status);
    sl_histogram_observe(&t->metrics.latency, &sl_latency_bounds, result->elapsed_us);

    const sl_retry_config *retry = &t->config->retry;
    sl_outcome outcome = sl_outcome_decide(result->status, result->retry_after,
                                           (int)j->attempts + 1, (int)retry->max_attempts,
                                           retry->base_ms, retry->max_ms,
                                           sl_worker_now_us() / 1000, sl_random_u64(&w->rng));
    char error[200] = ""; /* what went wrong, for the retry or dead letter */
    if (outcome.kind != SL_OUTCOME_DELIVERED)
        describe_failure(result, error, sizeof error);
    switch (outcome.kind) {
    case SL_OUTCOME_DELIVERED:
        sl_ack_done(&t->ack_filling, j->id, j->lease);
        sl_counter_add(&t->metrics.delivered, 1);
        job_free(j);
        break;
    case SL_OUTCOME_PAUSE_RETRY:
        /* Fleet-wide: no slot of this tenant before the pause ends. The
         * jobs already given slots inside the pause go back to be claimed
         * again after it. */
        sl_ack_pause(&t->ack_filling, outcome.delay_ms * 1000);
        while (t->head)
            release_job(t, pop_waiting(t));
        retry_job(t, j, outcome.delay_ms * 1000, error);
        ack_flush(t); /* the rest of the fleet must hear of the pause at once */
        break;
    case SL_OUTCOME_RETRY:
        retry_job(t, j, outcome.delay_ms * 1000, error);
        break;
    case SL_OUTCOME_DEAD:
        dead_letter_job(t, j, outcome.reason, result->status, true, error);
        break;
    }
    ack_added(t);
    release_due(t);
}

/* Parses the job and starts its request; a job that cannot be sent as it
 * is goes to the dead-letter list with the precise reason. */
static void send_job(tenant *t, job *j)
{
    /* A job that waited so long (the endpoint was slower than the rate)
     * that its lease would run out mid-request goes back instead: once the
     * lease is gone another worker may claim and send it too. */
    int64_t lease_local = j->lease - t->worker->clock_offset_us;
    if (sl_worker_now_us() + t->config->timeout_ms * 1000 >= lease_local) {
        release_job(t, j);
        return;
    }
    char err[256];
    sl_job_status status = sl_job_parse(j->element, j->element_len, &t->rules, &j->request, err,
                                        sizeof err);
    if (status == SL_JOB_NO_MEMORY) {
        release_job(t, j);
        return;
    }
    if (status != SL_JOB_OK) {
        dead_letter_job(t, j, sl_job_status_reason(status), 0, false, err);
        return;
    }
    const char *key = j->request.id ? j->request.id : j->id;
    if (!sl_request_headers_build(t->config, &j->request, key, &j->headers)) {
        release_job(t, j);
        return;
    }
    sl_http_request request = {
        .method = j->request.method,
        .url = j->request.url,
        .headers = j->headers.lines,
        .header_count = j->headers.count,
        .body = j->request.body,
        .body_len = j->request.body_len,
        .timeout_ms = t->config->timeout_ms,
    };
    link_flying(t, j);
    if (!sl_http_send(t->worker->http, &request, on_delivered, j)) {
        unlink_flying(t, j);
        SL_LOG(SL_LOG_ERROR, "msg=\"cannot start an HTTP request\" tenant=%s", t->name);
        release_job(t, j);
    }
}

/* A job leaves at its slot (timers may fire a hair early) and as the pace allows (exactly). */
static bool head_may_leave(const tenant *t, int64_t now)
{
    return t->head->send_at_us <= now + SEND_EARLY_US &&
           sl_pace_allows_at(&t->pace, t->interval_us) <= now;
}

static int64_t head_departure(const tenant *t)
{
    int64_t pace = sl_pace_allows_at(&t->pace, t->interval_us);
    return t->head->send_at_us > pace ? t->head->send_at_us : pace;
}

/* Before the job leaves the waiting list: the pace reads the head's slot. */
static void note_departure(tenant *t, const job *j, int64_t now)
{
    sl_histogram_observe(&t->metrics.lateness, &sl_lateness_bounds, now - j->send_at_us);
    sl_pace_note(&t->pace, t->interval_us, head_departure(t), now);
}

/* One line per departure: tenant, claim id, slot and departure on Redis's
 * clock (as best this host knows it), and the departure on this host's. */
static void trace_departure(const tenant *t, const job *j, int64_t now)
{
    int64_t offset = t->worker->clock_offset_us;
    fprintf(t->worker->trace, "%s\t%s\t%" PRId64 "\t%" PRId64 "\t%" PRId64 "\n", t->name, j->id,
            j->send_at_us + offset, now + offset, now);
}

/* Sends every waiting job whose time has come, within concurrency; arms
 * the timer for the next one. */
static void release_due(tenant *t)
{
    size_t concurrency = (size_t)t->config->concurrency;
    int64_t now = sl_worker_now_us();
    while (t->head && t->in_flight < concurrency && head_may_leave(t, now)) {
        note_departure(t, t->head, now);
        if (t->worker->trace)
            trace_departure(t, t->head, now);
        send_job(t, pop_waiting(t));
        now = sl_worker_now_us();
    }
    if (t->head && t->in_flight < concurrency)
        arm(t->release_timer, head_departure(t) - now);
    /* Claim again while the schedule in Redis still runs ahead of now: a
     * claim after its last slot restarts it at Redis's now, and the time
     * between is lost to the rate. So when late departures leave many
     * jobs waiting, claims still go by time (up to MAX_WAITING). Waiting
     * jobs are in slot order: the tail's is the latest slot claimed. */
    bool running_low = t->waiting < MAX_WAITING / 2 || t->tail->send_at_us - now < REFILL_US;
    if (running_low && !evtimer_pending(t->claim_timer, NULL))
        sl_tenant_claim(t);
}

static void on_release_timer(evutil_socket_t fd, short kind, void *arg)
{
    (void)fd;
    (void)kind;
    release_due(arg);
}

/* ---- claims ---- */

static void schedule_claim(tenant *t, int64_t delay_us)
{
    arm(t->claim_timer, delay_us);
}

static void accept_job(tenant *t, const sl_claimed_job *c, int64_t claim_now_us)
{
    sl_histogram_observe(&t->metrics.shaping_delay, &sl_shaping_delay_bounds,
                         c->slot_us - claim_now_us);
    /* One allocation: the job, then its id and element behind it. */
    job *j = calloc(1, sizeof *j + c->id_len + 1 + c->job_len + 1);
    if (!j)
        return; /* its lease expires and it is claimed again */
    j->id = j->text;
    memcpy(j->id, c->id, c->id_len);
    j->element = j->text + c->id_len + 1;
    memcpy(j->element, c->job, c->job_len);
    j->tenant = t;
    j->lease = c->lease;
    j->attempts = c->attempts;
    j->send_at_us = c->slot_us - t->worker->clock_offset_us;
    j->element_len = c->job_len;
    push_waiting(t, j);
}

static void count_claim(tenant *t, const sl_claim_result *result)
{
    sl_tenant_metrics *m = &t->metrics;
    sl_gauge_set(&m->queue_depth, result->queue_len);
    sl_counter_add(&m->claimed, result->job_count);
    sl_counter_add(&m->dead_lettered, (uint64_t)result->dead_lettered);
    for (size_t i = 0; i < result->dead_reason_count; i++) {
        const char *reason;
        size_t len;
        int64_t n;
        sl_claim_dead_reason(result, i, &reason, &len, &n);
        sl_label_add(&m->dead_reasons, reason, len, (uint64_t)n);
    }
    if (result->job_count > 0 || result->dead_lettered > 0)
        atomic_store_explicit(&m->active, true, memory_order_relaxed);
}

static void on_claim_reply(redisReply *reply, void *arg)
{
    tenant *t = arg;
    worker *w = t->worker;
    t->claim_outstanding = false;
    if (!reply)
        return; /* connection lost: sl_tenant_resume claims again */
    if (sl_redis_is_noscript(reply)) {
        sl_redis_conn_reload_scripts(w->redis);
        return;
    }
    int64_t received = sl_worker_now_us();
    sl_claimed_job jobs[CLAIM_BATCH];
    sl_claim_result result;
    char err[256];
    if (!sl_claim_parse(reply, &result, jobs, CLAIM_BATCH, err, sizeof err)) {
        SL_LOG(SL_LOG_ERROR, "msg=\"claim failed\" tenant=%s error=\"%s\"", t->name, err);
        schedule_claim(t, RETRY_AFTER_ERROR_US);
        return;
    }
    sl_worker_observe_clock(w, result.now_us, t->claim_sent_us, received);
    count_claim(t, &result);
    for (size_t i = 0; i < result.job_count; i++)
        accept_job(t, &jobs[i], result.now_us);
    if (result.reaped)
        SL_LOG(SL_LOG_INFO, "msg=\"expired leases returned\" tenant=%s jobs=%" PRId64, t->name,
               result.reaped);

    if (w->draining) {
        sl_tenant_drain(t);
        return;
    }
    if (t->wake_pending) {
        t->wake_pending = false;
        t->idle_ms = IDLE_MIN_MS;
        schedule_claim(t, 0);
    } else if (result.job_count == 0 && result.next_us == 0) {
        schedule_claim(t, t->idle_ms * 1000); /* idle: poll, backing off */
        int64_t idle_max = w->notified ? IDLE_NOTIFIED_MAX_MS : IDLE_MAX_MS;
        t->idle_ms = t->idle_ms * 2 > idle_max ? idle_max : t->idle_ms * 2;
    } else {
        t->idle_ms = IDLE_MIN_MS;
        schedule_claim(t, result.next_us == 0 ? IDLE_MIN_MS * 1000 : result.next_us - result.now_us);
    }
    release_due(t);
}

/* The endpoint cannot keep up (all concurrency busy, the head job overdue):
 * more claims would only make jobs wait under lease; they wait in the
 * queue instead, and claims resume as the backlog drains. */
static bool saturated(const tenant *t)
{
    return t->head && t->in_flight >= (size_t)t->config->concurrency &&
           t->head->send_at_us + SATURATED_AFTER_US < sl_worker_now_us();
}

void sl_tenant_claim(tenant *t)
{
    worker *w = t->worker;
    const char *sha = sl_redis_conn_sha(w->redis, "claim");
    if (t->claim_outstanding || w->draining || t->retired || !sha || t->waiting >= MAX_WAITING ||
        !sl_worker_clock_ready(w) || saturated(t))
        return;
    evtimer_del(t->claim_timer);
    char id_prefix[SL_CLAIM_ID_PREFIX_SIZE + 1];
    sl_claim_id_prefix(sl_random_u64(&w->rng), id_prefix);
    strcat(id_prefix, ".");
    sl_claim_build(&w->claim_argv, sha, &t->claim, id_prefix);
    const char **argv = sl_argv_finish(&w->claim_argv);
    t->claim_sent_us = sl_worker_now_us();
    if (argv && sl_redis_conn_send(w->redis, (int)w->claim_argv.count, argv,
                                   w->claim_argv.lengths, on_claim_reply, t))
        t->claim_outstanding = true;
}

void sl_tenant_wake(tenant *t)
{
    t->idle_ms = IDLE_MIN_MS;
    if (t->claim_outstanding)
        t->wake_pending = true;
    else if (!t->head) /* jobs still waiting: their slots come first anyway */
        sl_tenant_claim(t);
}

static void on_claim_timer(evutil_socket_t fd, short kind, void *arg)
{
    (void)fd;
    (void)kind;
    sl_tenant_claim(arg);
}

/* ---- lifecycle ---- */

static int64_t clamp(int64_t v, int64_t low, int64_t high)
{
    return v < low ? low : v > high ? high : v;
}

/* How far ahead to claim: REFILL_US, which a claim reply has to arrive
 * before the jobs in hand run out (claiming only when they had, a stall
 * of this process or of Redis lost the schedule the time it lasted), then
 * LOOKAHEAD_INTERVALS intervals so that one claim serves many jobs; at
 * most 250 ms: slots already given keep the old rate after a reload, and
 * jobs already claimed wait out a pause, so this bounds how long either
 * takes to show. */
static int64_t lookahead_us(int64_t rate_milli)
{
    int64_t lookahead = REFILL_US + LOOKAHEAD_INTERVALS * SL_JOB / rate_milli;
    return lookahead < LOOKAHEAD_MAX_US ? lookahead : LOOKAHEAD_MAX_US;
}

/* How long outcomes gather before they are acked (at least: ack_added
 * also waits for BATCH_INTERVALS of them): BATCH_INTERVALS intervals,
 * within 2..100 ms. Longer would leave more delivered jobs to be
 * delivered again if this process died before acking them; and a 10 ms
 * floor was measured to make departures later at 100-10,000/s (up to 19 ms
 * at the p99 instead of under 1 ms, bench --only shaping), so fast tenants
 * keep acking every 2 ms. */
static int64_t ack_delay_us(int64_t rate_milli)
{
    return clamp(BATCH_INTERVALS * SL_JOB / rate_milli, ACK_DELAY_MIN_US, ACK_DELAY_MAX_US);
}

/* Makes config the tenant's rules for its next claims and departures;
 * false (nothing changed) if out of memory. */
static bool apply_rules(tenant *t, const sl_tenant_config *config)
{
    const sl_config *process = t->worker->config;
    sl_claim_limit *limits = calloc(config->limit_count + 1, sizeof *limits);
    if (!limits)
        return false;
    for (size_t i = 0; i < config->limit_count; i++) {
        const sl_limit_config *l = &config->limits[i];
        limits[i] = (sl_claim_limit){l->name, sl_limit_type_name(l->type), l->first, l->second,
                                     l->on_deny == SL_ON_DENY_DEAD_LETTER};
    }
    free(t->limits);
    t->limits = limits;
    t->config = config;
    t->claim = (sl_claim_params){
        .prefix = process->prefix,
        .tenant = t->name,
        .capacity = config->capacity,
        .rate_milli = config->rate_milli,
        .overflow_dead_letter = config->overflow == SL_OVERFLOW_DEAD_LETTER,
        .raw = config->format == SL_FORMAT_RAW,
        .max_wait_us = config->max_wait_ms * 1000,
        .lookahead_us = lookahead_us(config->rate_milli),
        .refill_us = REFILL_US,
        .lease_us = config->timeout_ms * 1000 + LEASE_MARGIN_US,
        .batch = CLAIM_BATCH,
        .max_job_bytes = config->max_job_bytes,
        .limits = t->limits,
        .limit_count = config->limit_count,
    };
    t->rules = (sl_job_rules){
        .raw = config->format == SL_FORMAT_RAW,
        .max_bytes = (size_t)config->max_job_bytes,
        .endpoint = config->endpoint,
        .allow_urls = (const char *const *)config->allow_urls,
        .allow_url_count = config->allow_url_count,
        .idempotency_header = config->idempotency_header,
    };
    t->ack_delay_us = ack_delay_us(config->rate_milli);
    t->interval_us = SL_JOB / config->rate_milli;
    return true;
}

tenant *sl_tenant_new(worker *w, const char *name, const sl_tenant_config *config)
{
    tenant *t = calloc(1, sizeof *t);
    if (!t)
        return NULL;
    t->worker = w;
    snprintf(t->name, sizeof t->name, "%s", name);
    sl_tenant_metrics_init(&t->metrics);
    sl_tenant_keys_init(&t->keys, w->config->prefix, t->name);
    t->idle_ms = IDLE_MIN_MS;
    sl_argv_init(&t->ack_filling);
    sl_argv_init(&t->ack_sending);
    t->claim_timer = evtimer_new(w->base, on_claim_timer, t);
    t->release_timer = evtimer_new(w->base, on_release_timer, t);
    t->ack_timer = evtimer_new(w->base, on_ack_timer, t);
    if (!apply_rules(t, config) || !t->claim_timer || !t->release_timer || !t->ack_timer) {
        sl_tenant_free(t);
        return NULL;
    }
    return t;
}

bool sl_tenant_reconfigure(tenant *t, const sl_tenant_config *rules)
{
    if (!apply_rules(t, rules))
        return false;
    if (t->retired) {
        t->retired = false;
        sl_tenant_claim(t);
    }
    /* A new rate moves the next departures at once; the claim timer
     * follows the next claim's reply. */
    release_due(t);
    return true;
}

void sl_tenant_retire(tenant *t)
{
    t->retired = true;
    evtimer_del(t->claim_timer);
}

void sl_tenant_free(tenant *t)
{
    if (!t)
        return;
    while (t->head)
        job_free(pop_waiting(t));
    while (t->flying) {
        job *j = t->flying;
        unlink_flying(t, j);
        job_free(j);
    }
    if (t->claim_timer)
        event_free(t->claim_timer);
    if (t->release_timer)
        event_free(t->release_timer);
    if (t->ack_timer)
        event_free(t->ack_timer);
    sl_argv_free(&t->ack_filling);
    sl_argv_free(&t->ack_sending);
    free(t->limits);
    sl_tenant_metrics_clear(&t->metrics);
    free(t);
}

void sl_tenant_resume(tenant *t)
{
    ack_flush(t);
    if (t->worker->draining)
        return;
    sl_tenant_claim(t);
    release_due(t);
}

void sl_tenant_drain(tenant *t)
{
    evtimer_del(t->claim_timer);
    evtimer_del(t->release_timer);
    while (t->head)
        release_job(t, pop_waiting(t));
    ack_flush(t);
}

void sl_tenant_release_in_flight(tenant *t)
{
    while (t->flying) {
        job *j = t->flying;
        unlink_flying(t, j);
        release_job(t, j);
    }
    ack_flush(t);
}

bool sl_tenant_idle(const tenant *t)
{
    return !t->head && t->in_flight == 0 && !t->claim_outstanding && !t->ack_outstanding &&
           !t->ack_resend && t->ack_filling.count == 0;
}
