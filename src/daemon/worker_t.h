/* worker_t.h - the types shared by worker.c (the thread and its loop) and
 * tenant.c (one tenant's claim, release, delivery and ack pipeline). */
#ifndef SLUICE_WORKER_T_H
#define SLUICE_WORKER_T_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include <event2/event.h>

#include "redis/claim.h"
#include "config/config.h"
#include "job/envelope.h"
#include "http/http_client.h"
#include "base/metrics.h"
#include "redis/notify.h"
#include "job/pacing.h"
#include "redis/redis_argv.h"
#include "redis/redis_conn.h"
#include "job/request.h"
#include "daemon/worker.h"

struct worker;

/* Clock samples kept: the one with the shortest round trip is trusted. */
#define SL_CLOCK_SAMPLES 16

/* A claimed job, from its claim until its outcome is acked. */
typedef struct job {
    struct job *next; /* in the tenant's FIFO while waiting for its slot */
    struct job *prev_flying, *next_flying; /* in the tenant's list while sent */
    struct tenant *tenant;
    char *id;         /* the claim id (key of the jobs hash), in text */
    int64_t lease;
    int64_t attempts; /* made before this one */
    int64_t send_at_us; /* the slot on this machine's CLOCK_REALTIME */
    char *element;      /* the job as pushed, in text, parsed only when it is
                           sent so that a claimed batch never stalls the loop */
    size_t element_len;
    sl_job_request request; /* parsed at send time */
    sl_request_headers headers;
    char text[];        /* id, NUL, element, NUL: one allocation per job */
} job;

/* One tenant served by this worker thread. */
typedef struct tenant {
    struct worker *worker;
    char name[SL_TENANT_NAME_MAX + 1];
    const sl_tenant_config *config; /* the worker's config owns it */
    sl_claim_params claim;
    sl_claim_limit *limits;         /* owned, claim.limits points here */
    sl_tenant_keys keys;
    char **allow_urls;              /* borrowed from config */
    sl_job_rules rules;

    job *head, *tail;  /* claimed, waiting for their slot (slot order) */
    size_t waiting;
    sl_pace pace;         /* how fast late jobs may catch up (pacing.h) */
    int64_t interval_us;  /* 1/rate, rounded down */
    job *flying;       /* HTTP requests under way */
    size_t in_flight;
    bool claim_outstanding;
    bool retired;         /* left the configuration: no more claims */
    bool wake_pending;    /* a push was notified while a claim was out */
    int64_t claim_sent_us; /* local time the claim left: the reply's round trip */
    int64_t idle_ms;   /* polling backoff while the queue is empty */
    struct event *claim_timer;
    struct event *release_timer;

    sl_argv ack_filling; /* ops gathered since the last flush */
    sl_argv ack_sending; /* the batch on the wire (or to resend) */
    int64_t ack_first_us; /* when ack_filling got its first outcome (monotonic; 0: empty) */
    bool ack_outstanding;
    bool ack_due;        /* a flush came while an ack was outstanding: its reply flushes */
    bool ack_resend;     /* ack_sending failed: send it again when ready */
    int64_t ack_delay_us; /* outcomes gather this long before an ack */
    struct event *ack_timer;

    sl_tenant_metrics metrics; /* read by the admin thread's scrapes */
} tenant;

enum worker_command { WORKER_RUN = 0, WORKER_DRAIN = SL_WORKER_DRAIN, WORKER_STOP = SL_WORKER_STOP };

typedef struct worker {
    int index;
    int count;               /* workers in the process */
    pthread_t thread;
    struct event_base *base;
    const sl_config *config;
    sl_redis_conn *redis;
    sl_notify *notify;       /* keyspace notifications, when the server has them */
    bool notified;           /* they are on: idle tenants need not be polled often */
    sl_http_client *http;
    struct event *wakeup;    /* the main thread activates it after setting command */
    struct event *reload;    /* ... and this one after setting pending_config */
    _Atomic(const sl_config *) pending_config;
    atomic_int command;
    atomic_uint heartbeat;   /* bumped by the loop: the watchdog sees it alive */
    struct event *heartbeat_timer;
    /* Held while tenants is changed here and while a scrape reads it. */
    pthread_mutex_t tenants_lock;
    tenant **tenants;
    size_t tenant_count, tenant_capacity;
    atomic_bool redis_ready; /* connected, scripts loaded: for /readyz */
    sl_redis_metrics redis_metrics;
    struct event *discover_timer;
    unsigned discover_ticks; /* discovery timer ticks, to scan less often when notified */
    struct event *drain_timer;
    bool draining;
    int64_t drain_deadline_us;
    uint64_t rng;
    sl_argv claim_argv;      /* reused by every claim */
    sl_argv scan_argv;
    int64_t clock_offset_us; /* Redis TIME minus local time, best estimate */
    int64_t sample_offset[SL_CLOCK_SAMPLES]; /* the last samples, a ring */
    int64_t sample_rtt[SL_CLOCK_SAMPLES];
    int samples, sample_next;
    int clock_probes;        /* TIME probes answered since the last connect */
    struct event *clock_timer;
    bool scanning;
    char scan_cursor[32];
    int exit_code;
    FILE *trace;             /* departure trace or NULL; shared, stdio locks it */
} worker;

/* tenant.c */
tenant *sl_tenant_new(worker *w, const char *name, const sl_tenant_config *config);
void sl_tenant_free(tenant *t);
/* Claims now if nothing stops it (one claim at a time, Redis ready, not draining). */
void sl_tenant_claim(tenant *t);
/* A job was pushed (keyspace notification): claim now, or right after the
 * claim under way, whose reply may predate the push. */
void sl_tenant_wake(tenant *t);
/* Redis became ready again: resend what failed, claim. */
void sl_tenant_resume(tenant *t);
/* Shutdown: hand back waiting jobs, stop claiming. */
void sl_tenant_drain(tenant *t);
/* The HTTP client was freed with these requests (grace ran out): hand
 * their jobs back. */
void sl_tenant_release_in_flight(tenant *t);
/* Takes rules (from a reloaded configuration) for the next claims; false
 * (the old rules kept) if out of memory. */
bool sl_tenant_reconfigure(tenant *t, const sl_tenant_config *rules);
/* The tenant left the configuration: no more claims; jobs already claimed
 * are still delivered. Undone by sl_tenant_reconfigure. */
void sl_tenant_retire(tenant *t);
/* Nothing under way: no job held, no ack pending. */
bool sl_tenant_idle(const tenant *t);

/* worker.c */
/* The local CLOCK_REALTIME in us. */
int64_t sl_worker_now_us(void);
/* Learns the offset between Redis TIME and the local clock from a reply
 * that carried Redis's now, for a request sent at local sent_us and
 * answered at local received_us. */
void sl_worker_observe_clock(worker *w, int64_t redis_now_us, int64_t sent_us,
                             int64_t received_us);
/* True once the clock offset is known well enough to schedule departures. */
bool sl_worker_clock_ready(const worker *w);

#endif
