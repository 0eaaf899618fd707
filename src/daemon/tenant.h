/* tenant.h - one tenant's pipeline on its worker thread (tenant.c): claim,
 * wait for the slot, deliver, ack. And sl_tenant_env: all that a tenant
 * needs of the worker that serves it, so that the worker's own state stays
 * private to worker.c and the dependency runs one way (worker -> tenant).
 * Everything here runs on the worker's thread. */
#ifndef SLUICE_TENANT_H
#define SLUICE_TENANT_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "base/metrics.h"
#include "config/config.h"
#include "daemon/redis_clock.h"
#include "http/http_client.h"
#include "redis/keys.h"
#include "redis/redis_argv.h"
#include "redis/redis_client.h"

struct event_base;

/* What the worker lends its tenants. The worker owns it and everything it
 * points to, keeps it current (a reload replaces config, a drain sets
 * draining, the grace period's end frees http) and frees its tenants
 * before it. Tenants read it, and use rng, claim_argv and clock as the
 * worker's thread-local scratch. */
typedef struct sl_tenant_env {
    struct event_base *base;   /* the worker's loop: the tenants' timers */
    const sl_config *config;   /* the configuration in force (its prefix) */
    unsigned config_generation; /* config's generation (0: the one read at
                                   start; each reload one more) */
    sl_redis_client *redis;    /* claims and acks, each about its tenant's keys */
    sl_http_client *http;      /* deliveries; NULL once the grace period ran out */
    sl_redis_clock clock;      /* Redis's clock as this host knows it */
    uint64_t rng;              /* claim ids, retry jitter */
    sl_argv claim_argv;        /* reused by every claim (and reslot) of every tenant */
    FILE *trace;               /* the departure trace, or NULL; stdio locks it */
    bool draining;             /* shutting down: claim nothing, ack at once */
    bool notified;             /* keyspace notifications are on: idle queues
                                  need not be polled often */
} sl_tenant_env;

typedef struct tenant tenant;

/* A tenant named name, served with env (which must outlive it) under
 * config (owned by env's configuration). NULL if out of memory. */
tenant *sl_tenant_new(sl_tenant_env *env, const char *name, const sl_tenant_config *config);
/* Frees t and the jobs it holds (their leases expire); NULL is a no-op. */
void sl_tenant_free(tenant *t);
/* The tenant's name (owned by t). */
const char *sl_tenant_name(const tenant *t);
/* The tenant's metrics (owned by t; written on the worker's thread only),
 * from any thread; NULL until a claim first took or dead-lettered a job or
 * found the tenant paused (an idle tenant has none to show). */
const sl_tenant_metrics *sl_tenant_metrics_of(const tenant *t);
/* Claims now if nothing stops it (one claim at a time, Redis ready, not draining). */
void sl_tenant_claim(tenant *t);
/* A job was pushed (keyspace notification): claim now, or right after the
 * claim under way, whose reply may predate the push. */
void sl_tenant_wake(tenant *t);
/* Redis became ready again (and its clock known): resend what failed, claim. */
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
/* When (this host's CLOCK_REALTIME, us) a claim last found work for t
 * (jobs claimed or dead-lettered, a queue not empty, a retry coming), or
 * when t was made: a tenant quiet for long may be forgotten. */
int64_t sl_tenant_busy_at(const tenant *t);
/* The tenant's key names (owned by t). */
const sl_tenant_keys *sl_tenant_keys_of(const tenant *t);
/* The generation (sl_tenant_env.config_generation) of the configuration
 * t's rules point into: it must stay alive while t lives with them. */
unsigned sl_tenant_generation(const tenant *t);

#endif
