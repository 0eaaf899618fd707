/* tenant.c - one tenant's pipeline on its worker thread:
 *
 *   claim (one Lua round trip for a batch of jobs and their slots)
 *   -> wait for each job's slot (one timer for the head of a FIFO)
 *   -> deliver over HTTP (bounded by concurrency)
 *   -> decide the outcome (outcome.c) -> batch the ack (one round trip).
 *
 * This file does the I/O (timers, Redis calls, HTTP requests); what it
 * decides comes from pure code: when to claim and when a job may leave
 * (job/claim_policy.h, job/pacing.h), what an outcome means
 * (job/outcome.h), when an ack batch goes (ack_batch.h). What it needs of
 * its worker comes through sl_tenant_env (tenant.h).
 *
 * Nothing is lost on any path: a job is acked done, retried, released
 * back or dead-lettered; if even the ack cannot reach Redis, its lease
 * expires and any worker claims it again. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <event2/event.h>

#include "base/log.h"
#include "base/monotonic.h"
#include "base/realtime.h"
#include "daemon/ack_batch.h"
#include "daemon/tenant.h"
#include "job/adaptive.h"
#include "job/backoff.h"
#include "job/claim_policy.h"
#include "job/envelope.h"
#include "job/outcome.h"
#include "job/pacing.h"
#include "job/ratelimit_headers.h"
#include "job/request.h"
#include "redis/claim.h"
#include "redis/keys.h"
#include "redis/redis_errors.h"
#include "redis/reslot.h"

/* A claimed job, from its claim until its outcome is acked. */
typedef struct job {
    struct job *next; /* in the tenant's FIFO while waiting for its slot */
    struct job *prev_flying, *next_flying; /* in the tenant's list while sent */
    struct tenant *tenant;
    char *id;         /* the claim id (key of the jobs hash), in text */
    int64_t lease;
    int64_t attempts; /* made before this one */
    int64_t send_at_us; /* the slot on this machine's CLOCK_REALTIME */
    int64_t rate_milli; /* the tenant's rate when claimed: the pace it leaves at */
    int64_t slot_us;    /* the slot as the schedule gave it, on Redis's clock */
    char *element;      /* the job as pushed, in text, parsed only when it is
                           sent so that a claimed batch never stalls the loop */
    size_t element_len;
    sl_job_request request; /* parsed at send time */
    sl_request_headers headers;
    char text[];        /* id, NUL, element, NUL: one allocation per job */
} job;

/* The waiting jobs from the head through `last`: those whose slot came by
 * some time (count_due). Each job is passed once, as time goes on. */
typedef struct due_cursor {
    job *last;
    int64_t count;
} due_cursor;

/* One tenant served by a worker thread. */
struct tenant {
    sl_tenant_env *env;             /* the worker's, lent for the tenant's life */
    const sl_tenant_config *config; /* the worker's config owns it */
    sl_claim_params claim;
    size_t concurrency;   /* the last claim's effective one (settings over file) */
    int64_t rate_milli;   /* the last claim's effective rate */
    bool rate_adaptive;   /* ... and it is the adaptive rate */
    int64_t heard_rate_milli; /* the newest rate a claim or (adaptive) ack reply named */
    sl_claim_limit *limits;         /* owned, claim.limits points here; NULL: none */
    sl_tenant_keys keys;
    sl_job_rules rules;

    job *head, *tail;  /* claimed, waiting for their slot (slot order) */
    size_t waiting;
    /* What the tenant owes, for its pace in a fleet (count_due): the jobs
     * whose slot came, and those owed pace_rules.fleet_fresh_us or more. */
    due_cursor due, stale;
    sl_pace pace;         /* how fast late jobs may catch up (pacing.h) */
    sl_pace_rules pace_rules; /* its bound and catch-up, from the rate */
    job *flying;       /* HTTP requests under way */
    size_t in_flight;
    bool claim_outstanding;
    /* The jobs it owes late asked new slots (ask_for_slots): none leaves
     * and none is claimed until the reply gives them. */
    bool slots_asked;
    /* Asking failed: they go as if alone (pacing.h) until a claim takes jobs. */
    bool slots_refused;
    /* Until when the fleet may hold slots of this tenant's schedule
     * (pacing.h's backlog): INT64_MAX while claims leave jobs in the
     * queue; once one finds it drained, the slots others claimed before
     * still come, up to a lookahead after that claim. */
    int64_t backlog_until_us;
    bool retired;         /* left the configuration: no more claims */
    bool wake_pending;    /* a push was notified while a claim was out */
    int64_t claim_sent_us; /* local time the claim left: the reply's round trip */
    /* The outstanding claim's id prefix and lease_us: its reply's new jobs'
     * ids begin with it, and its leases are slot + lease_us (sl_claim_parse),
     * even should a reload change the tenant's meanwhile. */
    char claim_id_prefix[SL_CLAIM_ID_PREFIX_SIZE + 1];
    int64_t claim_lease_us;
    int64_t idle_ms;   /* polling backoff while the queue is empty */
    struct event *claim_timer;
    /* release_timer, ack_timer, resend_timer and pace's log are made when
     * the first jobs come (ready_for_jobs): most of many tenants stay idle
     * and never pay for them. NULL until then. */
    struct event *release_timer;

    sl_ack_batch acks;    /* outcomes on their way to Redis (ack_batch.h) */
    sl_adaptive_batch outcomes; /* an adaptive tenant's, since the last ack went */
    struct event *ack_timer;
    struct event *resend_timer; /* a failed ack's backoff */
    int claim_failures;   /* transient claim errors in a row: their backoff */
    int64_t busy_us;      /* sl_tenant_busy_at */
    unsigned generation;  /* of the configuration config points into */

    /* Read by the admin thread's scrapes. Made when a claim first finds
     * something to show (metrics_made): NULL before, as an idle tenant
     * shows no series. Only this thread stores it. */
    _Atomic(sl_tenant_metrics *) metrics;
    char name[]; /* as long as it is: allocated with the tenant */
};

static void release_due(tenant *t);
static bool ask_for_slots(tenant *t, sl_pace_due due);
static void ack_flush(tenant *t);

/* ---- helpers ---- */

static void arm(struct event *timer, int64_t delay_us)
{
    if (delay_us < 0)
        delay_us = 0;
    struct timeval tv = {(time_t)(delay_us / 1000000), (suseconds_t)(delay_us % 1000000)};
    evtimer_add(timer, &tv);
}

/* A timer not made yet (ready_for_jobs) is not armed. */
static void disarm(struct event *timer)
{
    if (timer)
        evtimer_del(timer);
}

/* The tenant's metrics, on its own thread; not NULL once it holds jobs
 * (ready_for_jobs). */
static sl_tenant_metrics *metrics(const tenant *t)
{
    return atomic_load_explicit(&t->metrics, memory_order_relaxed);
}

/* The tenant's metrics, made the first time; NULL if out of memory (what
 * they would count is not counted). */
static sl_tenant_metrics *metrics_made(tenant *t)
{
    sl_tenant_metrics *m = metrics(t);
    if (m)
        return m;
    if (!(m = malloc(sizeof *m))) {
        SL_LOG(SL_LOG_ERROR, "msg=\"out of memory making a tenant's metrics\" tenant=%s", t->name);
        return NULL;
    }
    sl_tenant_metrics_init(m);
    /* release: a scrape that sees the pointer sees them initialised */
    atomic_store_explicit(&t->metrics, m, memory_order_release);
    return m;
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
    sl_gauge_set(&metrics(t)->waiting, (int64_t)t->waiting);
}

/* The head j leaves the queue: it was counted first, if at all. */
static void cursor_pop(due_cursor *c, const job *j)
{
    if (c->count > 0)
        c->count--;
    if (c->last == j)
        c->last = NULL;
}

static job *pop_waiting(tenant *t)
{
    job *j = t->head;
    t->head = j->next;
    if (!t->head)
        t->tail = NULL;
    cursor_pop(&t->due, j);
    cursor_pop(&t->stale, j);
    t->waiting--;
    sl_gauge_set(&metrics(t)->waiting, (int64_t)t->waiting);
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
    sl_gauge_set(&metrics(t)->in_flight, (int64_t)t->in_flight);
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
    sl_gauge_set(&metrics(t)->in_flight, (int64_t)t->in_flight);
}

/* ---- acks ---- */

/* Called after outcomes are added (more than once is harmless): the
 * batch says when it goes (ack_batch.h). */
static void ack_added(tenant *t)
{
    sl_ack_step step = sl_ack_batch_added(&t->acks, t->env->draining, sl_monotonic_us);
    if (step.arm_us >= 0)
        arm(t->ack_timer, step.arm_us);
    if (step.flush)
        ack_flush(t);
}

/* Redis's clock now, as this host knows it. */
static int64_t redis_now_us(const tenant *t)
{
    return sl_realtime_us() + t->env->clock.offset_us;
}

/* The ack did not apply (connection lost, or Redis busy, loading, out of
 * memory...): send it again after a backoff, or leave its jobs to their
 * leases once a resend could not beat them (ack_batch.h). */
static void ack_failed(tenant *t, const char *error)
{
    sl_ack_resend r = sl_ack_batch_failed(&t->acks, redis_now_us(t));
    if (!r.give_up) {
        SL_LOG(SL_LOG_DEBUG, "msg=\"ack not applied, sending it again\" tenant=%s after_ms=%" PRId64
               " error=\"%s\"", t->name, r.after_us / 1000, error);
        arm(t->resend_timer, r.after_us);
        return;
    }
    SL_LOG(SL_LOG_WARNING, "msg=\"ack not applied before the leases end; they will return the jobs\" tenant=%s error=\"%s\"",
           t->name, error);
    if (r.flush)
        ack_flush(t);
}

static void on_ack_reply(redisReply *reply, void *arg)
{
    tenant *t = arg;
    if (sl_redis_is_noscript(reply)) {
        sl_ack_batch_replied(&t->acks, false); /* resent by sl_tenant_resume */
        sl_redis_client_reload_scripts(t->env->redis, t->keys.queue);
        return;
    }
    if (!reply || (reply->type == REDIS_REPLY_ERROR && sl_redis_error_transient(reply->str))) {
        ack_failed(t, reply ? reply->str : "connection lost");
        return;
    }
    bool flush = sl_ack_batch_replied(&t->acks, true);
    /* An adaptive op's reply names the rate after it: a decrease is heard
     * here before the next claim brings it (job/adaptive.h, echoes). */
    if (t->rate_adaptive && reply->type == REDIS_REPLY_ARRAY && reply->elements >= 3 &&
        reply->element[2]->type == REDIS_REPLY_INTEGER && reply->element[2]->integer > 0)
        t->heard_rate_milli = reply->element[2]->integer;
    if (reply->type == REDIS_REPLY_ERROR)
        SL_LOG(SL_LOG_ERROR, "msg=\"ack failed; leases will expire and the jobs be retried\" tenant=%s error=\"%s\"",
               t->name, reply->str);
    if (flush)
        ack_flush(t);
}

/* An adaptive tenant's outcomes since the last ack ride with the next
 * one: ack.lua steps the fleet's rate by them (job/adaptive.h). */
static void add_adaptive_op(tenant *t)
{
    const sl_adaptive_config *a = &t->config->adaptive;
    sl_adaptive_batch *o = &t->outcomes;
    if (a->enabled && o->used > 0) {
        sl_adaptive_params p = {
            .min_milli = a->min_milli,
            .max_milli = a->max_milli,
            .decrease_permille = a->decrease_permille,
            .increase_milli = a->increase_milli,
            .cooldown_us = a->cooldown_ms * 1000,
            .on_timeout = a->on_timeout,
            .on_5xx = a->on_5xx,
        };
        sl_ack_adaptive(&t->acks.filling, o, &p, t->config->rate_milli, 0);
    }
    *o = (sl_adaptive_batch){0};
}

static void ack_flush(tenant *t)
{
    sl_ack_batch *b = &t->acks;
    disarm(t->ack_timer);
    if (t->outcomes.used > 0)
        add_adaptive_op(t);
    if (!sl_ack_batch_take(b, sl_redis_client_sha(t->env->redis, "ack"), &t->keys, t->name))
        return;
    const char **argv = sl_argv_finish(&b->sending);
    if (!argv) {
        SL_LOG(SL_LOG_ERROR, "msg=\"out of memory building an ack\" tenant=%s", t->name);
        return;
    }
    sl_ack_batch_sent(b, sl_redis_client_send(t->env->redis, t->keys.queue, (int)b->sending.count,
                                              argv, b->sending.lengths, on_ack_reply, t));
}

static void on_ack_timer(evutil_socket_t fd, short kind, void *arg)
{
    (void)fd;
    (void)kind;
    tenant *t = arg;
    sl_ack_step step = sl_ack_batch_timer(&t->acks, t->env->draining, sl_monotonic_us());
    if (step.flush)
        ack_flush(t);
    else
        arm(t->ack_timer, step.arm_us);
}

static void on_resend_timer(evutil_socket_t fd, short kind, void *arg)
{
    (void)fd;
    (void)kind;
    tenant *t = arg;
    sl_ack_batch_backoff_over(&t->acks);
    ack_flush(t);
}

static void release_job(tenant *t, job *j)
{
    /* The batch's size so far orders the jobs handed back within it. */
    sl_ack_release(&t->acks.filling, j->id, j->lease, (int64_t)t->acks.filling.count);
    sl_ack_batch_lease(&t->acks, j->lease);
    sl_counter_add(&metrics(t)->released, 1);
    ack_added(t);
    job_free(j);
}

static void dead_letter_job(tenant *t, job *j, const char *reason, int status, bool attempted,
                            const char *error)
{
    sl_ack_dead(&t->acks.filling, j->id, j->lease, reason, status, attempted, error);
    sl_ack_batch_lease(&t->acks, j->lease);
    sl_counter_add(&metrics(t)->dead_lettered, 1);
    sl_label_add(&metrics(t)->dead_reasons, reason, strlen(reason), 1);
    ack_added(t);
    job_free(j);
}

static void retry_job(tenant *t, job *j, int64_t delay_us, const char *error)
{
    sl_ack_retry(&t->acks.filling, j->id, j->lease, delay_us, error);
    sl_ack_batch_lease(&t->acks, j->lease);
    sl_counter_add(&metrics(t)->retried, 1);
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

/* What an adaptive tenant's controller learns from one request, which
 * left at sent_rate_milli. paused: its rate-limit headers said nothing
 * remains for longer than the tenant's interval, which counts as a
 * refusal: the rate steps down before the endpoint has to refuse. */
static void count_outcome(tenant *t, const sl_http_result *result, bool paused,
                          int64_t sent_rate_milli)
{
    if (!t->config->adaptive.enabled)
        return;
    sl_adaptive_batch *o = &t->outcomes;
    int status = result->status;
    o->used++;
    if (status >= 200 && status <= 299)
        o->ok++;
    if (sl_adaptive_echo(sent_rate_milli, t->heard_rate_milli))
        return; /* a refusal of a pace already lowered: stepped down for once */
    if (status == 429 || status == 503 || paused)
        o->limited++;
    else if (status >= 500 && status <= 599)
        o->errors_5xx++;
    else if (status == 0 && result->timed_out)
        o->timeouts++;
}

/* Fleet-wide: no slot of this tenant for delay_ms. The jobs waiting for
 * slots inside the pause go back to be claimed again after it; those
 * whose slots lie past it keep them (released, their slots would be lost:
 * the schedule runs on from the last slot claimed, and each pause cost a
 * whole lookahead, 24/s at an endpoint allowing 40/s with a 25 ms
 * X-RateLimit-Reset). With none left, the tenant claims when the pause
 * ends rather than when the timer armed for the released jobs fires. The
 * caller adds its own job's op, then acks (at once: the rest of the fleet
 * must hear of the pause). */
static void pause_tenant(tenant *t, int64_t delay_ms)
{
    sl_ack_pause(&t->acks.filling, delay_ms * 1000);
    int64_t end_us = sl_realtime_us() + delay_ms * 1000;
    while (t->head && t->head->send_at_us < end_us) /* in slot order */
        release_job(t, pop_waiting(t));
    if (!t->head)
        arm(t->claim_timer, delay_ms * 1000);
}

static void on_delivered(void *arg, const sl_http_result *result)
{
    job *j = arg;
    tenant *t = j->tenant;
    unlink_flying(t, j);
    sl_status_add(&metrics(t)->responses, result->status);
    sl_histogram_observe(&metrics(t)->latency, &sl_latency_bounds, result->elapsed_us);

    const sl_retry_config *retry = &t->config->retry;
    sl_outcome outcome = sl_outcome_decide(result->status, result->retry_after,
                                           (int)j->attempts + 1, (int)retry->max_attempts,
                                           retry->base_ms, retry->max_ms,
                                           sl_realtime_us() / 1000, sl_random_u64(&t->env->rng));
    char error[200] = ""; /* what went wrong, for the retry or dead letter */
    if (outcome.kind != SL_OUTCOME_DELIVERED)
        describe_failure(result, error, sizeof error);
    /* The endpoint's rate-limit headers say none is left before a reset:
     * pause before it has to refuse (a Retry-After pause already does). */
    int64_t limit_pause_ms = 0;
    bool limit_pause = outcome.kind != SL_OUTCOME_PAUSE_RETRY &&
                       sl_ratelimit_pause(result->ratelimit, sl_realtime_us() / 1000,
                                          &limit_pause_ms) &&
                       limit_pause_ms > 0;
    count_outcome(t, result,
                  limit_pause && sl_adaptive_pause_slows(limit_pause_ms * 1000, j->rate_milli),
                  j->rate_milli);
    if (limit_pause)
        pause_tenant(t, limit_pause_ms);
    switch (outcome.kind) {
    case SL_OUTCOME_DELIVERED:
        sl_ack_done(&t->acks.filling, j->id, j->lease);
        sl_ack_batch_lease(&t->acks, j->lease);
        sl_counter_add(&metrics(t)->delivered, 1);
        job_free(j);
        break;
    case SL_OUTCOME_PAUSE_RETRY:
        /* Fleet-wide: no slot of this tenant before the pause ends. The
         * jobs already given slots inside the pause go back to be claimed
         * again after it. */
        pause_tenant(t, outcome.delay_ms);
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
    if (limit_pause)
        ack_flush(t);
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
    int64_t lease_local = j->lease - t->env->clock.offset_us;
    if (sl_claim_lease_too_short(lease_local, t->config->timeout_ms * 1000, sl_realtime_us())) {
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
        .ca_file = t->config->tls_ca_file,
        .cert_file = t->config->tls_cert_file,
        .key_file = t->config->tls_key_file,
    };
    link_flying(t, j);
    if (!sl_http_send(t->env->http, &request, on_delivered, j)) {
        unlink_flying(t, j);
        SL_LOG(SL_LOG_ERROR, "msg=\"cannot start an HTTP request\" tenant=%s", t->name);
        release_job(t, j);
    }
}

/* Counts the waiting jobs whose slot came by by_us; returns the first
 * whose slot has not. */
static job *cursor_advance(due_cursor *c, job *head, int64_t by_us)
{
    job *j = c->last ? c->last->next : head;
    for (; j && j->send_at_us <= by_us; j = j->next) {
        c->last = j;
        c->count++;
    }
    return j;
}

/* What the tenant owes at now (a departure counts a slot come
 * SL_SEND_EARLY_US early), and when the next slot comes: no walk of the
 * queue per departure. */
static sl_pace_due count_due(tenant *t, int64_t now)
{
    job *next = cursor_advance(&t->due, t->head, now + SL_SEND_EARLY_US);
    cursor_advance(&t->stale, t->head, now - t->pace_rules.fleet_fresh_us);
    return (sl_pace_due){.now_us = now,
                         .count = t->due.count,
                         .stale = t->stale.count < t->due.count ? t->stale.count : t->due.count,
                         .next_us = next ? next->send_at_us - SL_SEND_EARLY_US : INT64_MAX,
                         .oldest_us = t->head ? t->head->send_at_us : 0,
                         .backlog = now < t->backlog_until_us};
}

static bool head_may_leave(const tenant *t, sl_pace_due due)
{
    return sl_departure_allowed(t->head->send_at_us, &t->pace, &t->pace_rules, due);
}

static int64_t head_departure(const tenant *t, sl_pace_due due)
{
    return sl_departure_at(t->head->send_at_us, &t->pace, &t->pace_rules, due);
}

/* Counts the head job's departure at due.now_us in its lateness and its
 * pace. */
static void note_departure(tenant *t, const job *j, sl_pace_due due)
{
    sl_histogram_observe(&metrics(t)->lateness, &sl_lateness_bounds, due.now_us - j->send_at_us);
    sl_pace_note(&t->pace, &t->pace_rules, j->slot_us, due);
}

/* One line per departure: tenant, claim id, slot and departure on Redis's
 * clock (as best this host knows it), and the departure on this host's. */
static void trace_departure(const tenant *t, const job *j, int64_t now)
{
    int64_t offset = t->env->clock.offset_us;
    fprintf(t->env->trace, "%s\t%s\t%" PRId64 "\t%" PRId64 "\t%" PRId64 "\n", t->name, j->id,
            j->send_at_us + offset, now + offset, now);
}

/* Sends every waiting job whose time has come, within concurrency; arms
 * the timer for the next one (no sooner than a wake-up is worth). */
static void release_due(tenant *t)
{
    if (t->slots_asked)
        return; /* the reply releases them */
    size_t concurrency = t->concurrency;
    int64_t now = sl_realtime_us();
    sl_pace_due due = count_due(t, now);
    while (t->head && t->in_flight < concurrency) {
        /* asked before each: a departure that kept its level can leave the
         * next owed with no slot of its own to come */
        if (ask_for_slots(t, due))
            return;
        if (!head_may_leave(t, due))
            break;
        note_departure(t, t->head, due);
        if (t->env->trace)
            trace_departure(t, t->head, now);
        send_job(t, pop_waiting(t));
        now = sl_realtime_us();
        due = count_due(t, now);
    }
    if (t->head && t->in_flight < concurrency)
        arm(t->release_timer, sl_departure_wait_us(head_departure(t, due), now,
                                                   sl_claim_interval_us(t->rate_milli)));
    /* Waiting jobs are in slot order: the tail's is the latest slot claimed. */
    int64_t latest_slot = t->tail ? t->tail->send_at_us : 0;
    if (sl_claim_running_low(t->waiting, latest_slot, now) && !evtimer_pending(t->claim_timer, NULL))
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

/* Gives the pace the log of rules, if it has one yet (ready_for_jobs
 * makes it); false if out of memory, the pace unchanged. */
static bool reset_pace(tenant *t, const sl_pace_rules *rules)
{
    return !t->pace.marks || sl_pace_reset(&t->pace, rules);
}

/* Makes what a tenant needs once it holds jobs (their timers, the pace's
 * log, the metrics), the first time; false if out of memory (what was made is kept). */
static bool ready_for_jobs(tenant *t)
{
    struct event_base *base = t->env->base;
    if (!t->release_timer)
        t->release_timer = evtimer_new(base, on_release_timer, t);
    if (!t->ack_timer)
        t->ack_timer = evtimer_new(base, on_ack_timer, t);
    if (!t->resend_timer)
        t->resend_timer = evtimer_new(base, on_resend_timer, t);
    return t->release_timer && t->ack_timer && t->resend_timer &&
           (t->pace.marks || sl_pace_reset(&t->pace, &t->pace_rules)) && metrics_made(t);
}

static void accept_job(tenant *t, const sl_claimed_job *c, int64_t claim_now_us)
{
    sl_histogram_observe(&metrics(t)->shaping_delay, &sl_shaping_delay_bounds,
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
    j->send_at_us = c->slot_us - t->env->clock.offset_us;
    j->rate_milli = t->rate_milli;
    j->slot_us = c->slot_us;
    j->element_len = c->job_len;
    /* the slots between this tenant's are the fleet's others' (pacing.h) */
    sl_pace_claimed(&t->pace, &t->pace_rules, t->tail ? t->tail->slot_us : INT64_MIN, claim_now_us,
                    c->slot_us, j->send_at_us);
    push_waiting(t, j);
}

/* Counts a claim's reply in the metrics; those of an idle tenant (no job
 * claimed or dead-lettered yet) are not made for it. */
static void count_claim(tenant *t, const sl_claim_result *result)
{
    bool shows = result->job_count > 0 || result->dead_lettered > 0;
    sl_tenant_metrics *m = shows ? metrics_made(t) : metrics(t);
    if (!m)
        return;
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
    if (shows)
        atomic_store_explicit(&m->active, true, memory_order_relaxed);
}

/* While paused the script answers next_us = the pause's end: claim again
 * sooner, so that a resume shows within this long. */
#define PAUSED_POLL_US 100000

/* Applies the effective rate and concurrency a claim reply carries (the
 * fleet's settings over the file's): later departures are paced at it and
 * the next claims look ahead by it. */
static void apply_settings(tenant *t, const sl_claim_result *r)
{
    /* a paused tenant shows its rate and pause, even idle (metrics.c) */
    sl_tenant_metrics *m = r->paused_until_ms > 0 ? metrics_made(t) : metrics(t);
    if (m)
        sl_gauge_set(&m->paused, r->paused_until_ms > 0 ? 1 : 0);
    if (r->concurrency > 0)
        t->concurrency = (size_t)r->concurrency;
    if (r->rate_milli <= 0)
        return;
    t->rate_adaptive = r->rate_source == SL_RATE_ADAPTIVE;
    t->heard_rate_milli = r->rate_milli;
    if (m)
        sl_gauge_set(&m->rate_milli, r->rate_milli);
    if (r->rate_milli == t->rate_milli)
        return;
    sl_pace_rules pace_rules = sl_pace_rules_for(r->rate_milli);
    if (!reset_pace(t, &pace_rules))
        return; /* out of memory: the old pace holds; the next reply tries again */
    t->pace_rules = pace_rules;
    t->rate_milli = r->rate_milli;
    t->claim.lookahead_us = sl_claim_lookahead_us(r->rate_milli);
    t->acks.delay_us = sl_ack_delay_us(r->rate_milli);
}

static void on_claim_reply(redisReply *reply, void *arg)
{
    tenant *t = arg;
    sl_tenant_env *env = t->env;
    t->claim_outstanding = false;
    if (!reply) {
        /* Lost, or (Cluster) a redirect chain past its deadline: the claim
         * may have run, its lease covers it. One Redis gets sl_tenant_resume
         * when it is back; a Cluster stays ready while one shard fails
         * over, so the claim must be tried again here too (a tenant with
         * nothing waiting would otherwise never claim again). */
        schedule_claim(t, SL_CLAIM_RETRY_AFTER_ERROR_US);
        return;
    }
    if (sl_redis_is_noscript(reply)) {
        sl_redis_client_reload_scripts(env->redis, t->keys.queue);
        return;
    }
    if (reply->type == REDIS_REPLY_ERROR && sl_redis_error_transient(reply->str)) {
        /* Redis is loading, busy, out of memory...: not a fault; claim
         * again after a backoff. */
        int64_t delay = sl_redis_transient_backoff_us(++t->claim_failures);
        SL_LOG(SL_LOG_DEBUG, "msg=\"claim refused for now\" tenant=%s after_ms=%" PRId64 " error=\"%s\"",
               t->name, delay / 1000, reply->str);
        schedule_claim(t, delay);
        return;
    }
    t->claim_failures = 0;
    int64_t received = sl_realtime_us();
    sl_claimed_job jobs[SL_CLAIM_BATCH];
    sl_claim_result result;
    char err[256];
    if (!sl_claim_parse(reply, t->claim_id_prefix, t->claim_lease_us, &result, jobs, SL_CLAIM_BATCH,
                        err, sizeof err)) {
        SL_LOG(SL_LOG_ERROR, "msg=\"claim failed\" tenant=%s error=\"%s\"", t->name, err);
        schedule_claim(t, SL_CLAIM_RETRY_AFTER_ERROR_US);
        return;
    }
    sl_redis_clock_observe(&env->clock, result.now_us, t->claim_sent_us, received);
    if (result.job_count > 0 && !ready_for_jobs(t)) {
        SL_LOG(SL_LOG_ERROR, "msg=\"out of memory taking claimed jobs; their leases will return them\" tenant=%s jobs=%zu",
               t->name, result.job_count);
        schedule_claim(t, SL_CLAIM_RETRY_AFTER_ERROR_US);
        return;
    }
    count_claim(t, &result);
    apply_settings(t, &result);
    if (result.job_count > 0 || result.dead_lettered > 0 || result.queue_len > 0 || result.next_us != 0)
        t->busy_us = received;
    t->backlog_until_us = sl_claim_backlog_until(result.queue_len > 0 || result.next_us != 0,
                                                 t->backlog_until_us, received, t->rate_milli);
    if (result.job_count > 0)
        t->slots_refused = false; /* a new backlog: its end may ask again */
    for (size_t i = 0; i < result.job_count; i++)
        accept_job(t, &jobs[i], result.now_us);
    if (result.reaped)
        SL_LOG(SL_LOG_INFO, "msg=\"expired leases returned\" tenant=%s jobs=%" PRId64, t->name,
               result.reaped);

    if (env->draining) {
        sl_tenant_drain(t);
        return;
    }
    sl_claim_next next = sl_claim_after_reply(t->idle_ms, t->wake_pending, result.job_count,
                                              result.next_us, result.now_us, env->notified);
    t->wake_pending = false;
    t->idle_ms = next.idle_ms;
    if (result.paused_until_ms > 0 && next.delay_us > PAUSED_POLL_US)
        next.delay_us = PAUSED_POLL_US;
    schedule_claim(t, next.delay_us);
    release_due(t);
}

/* ---- new slots for jobs owed late (job/pacing.h, lua/reslot.lua) ---- */

/* The jobs it owes, every one waiting (none has a slot to come), take the
 * reply's slots in order: the queue stays in slot order, and the debt
 * they stood for is the schedule's now. */
static void take_new_slots(tenant *t, const redisReply *reply, int64_t now_us, size_t count)
{
    int64_t offset = t->env->clock.offset_us, previous = INT64_MIN;
    job *j = t->head;
    for (size_t i = 0; i < count && j; i++, j = j->next) {
        j->slot_us = sl_reslot_slot(reply, i);
        j->send_at_us = j->slot_us - offset;
        sl_pace_claimed(&t->pace, &t->pace_rules, previous, now_us, j->slot_us, j->send_at_us);
        previous = j->slot_us;
    }
    sl_pace_slots_renewed(&t->pace);
    t->due = t->stale = (due_cursor){0};
}

static void on_reslot_reply(redisReply *reply, void *arg)
{
    tenant *t = arg;
    t->slots_asked = false;
    int64_t now_us;
    size_t count;
    char err[256];
    bool parsed = sl_reslot_parse(reply, &now_us, &count, err, sizeof err);
    if (parsed && t->head && count != t->waiting) { /* asked for every one waiting */
        snprintf(err, sizeof err, "reslot: %zu slots for %zu jobs", count, t->waiting);
        parsed = false;
    }
    if (!parsed) {
        if (reply && sl_redis_is_noscript(reply))
            sl_redis_client_reload_scripts(t->env->redis, t->keys.queue);
        SL_LOG(SL_LOG_WARNING, "msg=\"no new slots for jobs owed late; they catch up alone\" tenant=%s error=\"%s\"",
               t->name, err);
        t->slots_refused = true;
    } else {
        SL_LOG(SL_LOG_DEBUG, "msg=\"jobs owed late took new slots\" tenant=%s jobs=%zu", t->name, count);
        take_new_slots(t, reply, now_us, count);
    }
    /* Not from here: a closing client calls back with NULL, and nothing
     * may be sent then. The timer runs on the loop, if it runs again. */
    arm(t->release_timer, 0);
}

/* How often a tenant that wants new slots looks again while a claim is
 * out: the claim's reply usually comes sooner, and may bring slots. */
#define CLAIM_REPLY_POLL_US 1000

/* Asks new slots for the jobs it owes when its pace wants them
 * (sl_pace_wants_slots); true while they wait for them: asked, or a claim
 * is out whose reply may give it slots to come. */
static bool ask_for_slots(tenant *t, sl_pace_due due)
{
    sl_tenant_env *env = t->env;
    if (t->slots_refused || env->draining || !sl_pace_wants_slots(&t->pace, &t->pace_rules, due))
        return false;
    if (t->claim_outstanding) {
        arm(t->release_timer, CLAIM_REPLY_POLL_US);
        return true;
    }
    const char *sha = sl_redis_client_sha(env->redis, "reslot");
    if (!sha)
        return false;
    sl_reslot_build(&env->claim_argv, sha, &t->keys, t->rate_milli, t->waiting, 0);
    const char **argv = sl_argv_finish(&env->claim_argv);
    t->slots_asked = argv && sl_redis_client_send(env->redis, t->keys.queue, (int)env->claim_argv.count,
                                                  argv, env->claim_argv.lengths, on_reslot_reply, t);
    if (t->slots_asked)
        evtimer_del(t->release_timer);
    return t->slots_asked;
}

/* sl_claim_saturated, reading the clock only when it can matter: with all
 * of concurrency busy. */
static bool saturated(const tenant *t)
{
    size_t concurrency = t->concurrency;
    return t->head && t->in_flight >= concurrency &&
           sl_claim_saturated(t->in_flight, concurrency, t->head->send_at_us, sl_realtime_us());
}

void sl_tenant_claim(tenant *t)
{
    sl_tenant_env *env = t->env;
    const char *sha = sl_redis_client_sha(env->redis, "claim");
    if (t->claim_outstanding || t->slots_asked || env->draining || t->retired || !sha ||
        !sl_claim_has_room(t->waiting) || !sl_redis_clock_ready(&env->clock) || saturated(t))
        return;
    evtimer_del(t->claim_timer);
    sl_claim_id_prefix(sl_random_u64(&env->rng), t->claim_id_prefix);
    strcat(t->claim_id_prefix, ".");
    t->claim_lease_us = t->claim.lease_us;
    sl_claim_build(&env->claim_argv, sha, &t->keys, &t->claim, t->claim_id_prefix);
    const char **argv = sl_argv_finish(&env->claim_argv);
    t->claim_sent_us = sl_realtime_us();
    if (argv && sl_redis_client_send(env->redis, t->keys.queue, (int)env->claim_argv.count, argv,
                                     env->claim_argv.lengths, on_claim_reply, t))
        t->claim_outstanding = true;
}

void sl_tenant_wake(tenant *t)
{
    t->idle_ms = SL_IDLE_MIN_MS;
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

/* Makes config the tenant's rules for its next claims and departures;
 * false (nothing changed) if out of memory. */
static bool apply_rules(tenant *t, const sl_tenant_config *config)
{
    const sl_config *process = t->env->config;
    /* none for a tenant without limits, as most are */
    sl_claim_limit *limits =
        config->limit_count ? calloc(config->limit_count, sizeof *limits) : NULL;
    sl_pace_rules pace_rules = sl_pace_rules_for(config->rate_milli);
    if ((config->limit_count && !limits) || !reset_pace(t, &pace_rules)) {
        free(limits);
        return false;
    }
    for (size_t i = 0; i < config->limit_count; i++) {
        const sl_limit_config *l = &config->limits[i];
        limits[i] = (sl_claim_limit){l->name, sl_limit_type_name(l->type), l->first, l->second,
                                     l->on_deny == SL_ON_DENY_DEAD_LETTER};
    }
    free(t->limits);
    t->limits = limits;
    t->config = config;
    t->generation = t->env->config_generation;
    t->claim = (sl_claim_params){
        .prefix = process->prefix,
        .tenant = t->name,
        .capacity = config->capacity,
        .rate_milli = config->rate_milli,
        .overflow_dead_letter = config->overflow == SL_OVERFLOW_DEAD_LETTER,
        .raw = config->format == SL_FORMAT_RAW,
        .max_wait_us = config->max_wait_ms * 1000,
        .lookahead_us = sl_claim_lookahead_us(config->rate_milli),
        .refill_us = SL_CLAIM_REFILL_US,
        .lease_us = sl_claim_lease_us(config->timeout_ms),
        .batch = SL_CLAIM_BATCH,
        .max_job_bytes = config->max_job_bytes,
        .limits = t->limits,
        .limit_count = config->limit_count,
        .concurrency = config->concurrency,
        /* the claim applies settings' adaptive_rate only within these */
        .adaptive_min_milli = config->adaptive.enabled ? config->adaptive.min_milli : 0,
        .adaptive_max_milli = config->adaptive.enabled ? config->adaptive.max_milli : 0,
    };
    /* The file's values until a claim reply says what the settings make
     * of them (apply_settings). */
    t->concurrency = (size_t)config->concurrency;
    t->rate_milli = config->rate_milli;
    t->rules = (sl_job_rules){
        .raw = config->format == SL_FORMAT_RAW,
        .max_bytes = (size_t)config->max_job_bytes,
        .endpoint = config->endpoint,
        .allow_urls = (const char *const *)config->allow_urls,
        .allow_url_count = config->allow_url_count,
        .idempotency_header = config->idempotency_header,
    };
    t->acks.delay_us = sl_ack_delay_us(config->rate_milli);
    t->pace_rules = pace_rules;
    return true;
}

tenant *sl_tenant_new(sl_tenant_env *env, const char *name, const sl_tenant_config *config)
{
    size_t name_size = strlen(name) + 1;
    tenant *t = calloc(1, sizeof *t + name_size);
    if (!t)
        return NULL;
    t->env = env;
    memcpy(t->name, name, name_size);
    t->idle_ms = SL_IDLE_MIN_MS;
    t->busy_us = sl_realtime_us();
    sl_ack_batch_init(&t->acks);
    t->claim_timer = evtimer_new(env->base, on_claim_timer, t);
    if (!sl_tenant_keys_init(&t->keys, env->config->prefix, t->name) || !apply_rules(t, config) ||
        !t->claim_timer) {
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
    if (t->resend_timer)
        event_free(t->resend_timer);
    sl_ack_batch_free(&t->acks);
    free(t->limits);
    sl_pace_free(&t->pace);
    sl_tenant_keys_free(&t->keys);
    sl_tenant_metrics *m = metrics(t);
    if (m)
        sl_tenant_metrics_clear(m);
    free(m);
    free(t);
}

void sl_tenant_resume(tenant *t)
{
    ack_flush(t);
    if (t->env->draining)
        return;
    sl_tenant_claim(t);
    release_due(t);
}

void sl_tenant_drain(tenant *t)
{
    evtimer_del(t->claim_timer);
    disarm(t->release_timer);
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
    return !t->head && t->in_flight == 0 && !t->claim_outstanding && !t->slots_asked &&
           sl_ack_batch_idle(&t->acks);
}

const char *sl_tenant_name(const tenant *t)
{
    return t->name;
}

const sl_tenant_metrics *sl_tenant_metrics_of(const tenant *t)
{
    /* acquire: pairs with metrics_made's release */
    return atomic_load_explicit(&t->metrics, memory_order_acquire);
}

int64_t sl_tenant_busy_at(const tenant *t)
{
    return t->busy_us;
}

const sl_tenant_keys *sl_tenant_keys_of(const tenant *t)
{
    return &t->keys;
}

unsigned sl_tenant_generation(const tenant *t)
{
    return t->generation;
}
