/* worker.h - a worker thread's interface for the main thread (daemon.c). */
#ifndef SLUICE_WORKER_H
#define SLUICE_WORKER_H

#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>

#include "config/config.h"
#include "base/metrics.h"

typedef struct worker worker;

/* A configuration and its generation: 0 for the one read at start, one
 * more for each reload. Owned by the main thread (daemon.c). */
typedef struct sl_config_version {
    sl_config *config; /* owned by daemon.c; workers only read it */
    unsigned generation;
} sl_config_version;

/* What the workers of one process share (owned by daemon.c). */
typedef struct sl_discovery_shared {
    atomic_llong discovered; /* tenants served through "*", all workers */
} sl_discovery_shared;

enum { SL_WORKER_DRAIN = 1, SL_WORKER_STOP = 2 };

/* A worker (not yet running) for the tenants that hash to index among
 * count workers; config (generation 0), shared and trace (the departure
 * trace or NULL) must outlive it. NULL if out of memory. */
worker *sl_worker_new(const sl_config *config, int index, int count, uint64_t seed, FILE *trace,
                      sl_discovery_shared *shared);
/* Runs the worker's loop until it drains or is stopped; returns its exit
 * code (0: drained cleanly). Call on the worker's own thread. */
int sl_worker_run(worker *w);
/* Frees a worker whose run has returned (or never started). */
void sl_worker_free(worker *w);
/* From any thread: SL_WORKER_DRAIN (finish, hand back, stop) or
 * SL_WORKER_STOP (stop now). */
void sl_worker_command(worker *w, int command);
/* A counter the worker's loop bumps every 100 ms, read from any thread:
 * if it stops moving, the loop is stuck. */
unsigned sl_worker_heartbeat(worker *w);
/* From any thread: apply version (valid, newer than any before; it and
 * its config kept alive by the caller until sl_worker_oldest_generation
 * is past its generation, or the worker is freed) for the next claims. */
void sl_worker_reload(worker *w, const sl_config_version *version);
/* From any thread: the oldest configuration generation the worker may
 * still use (its own, its tenants'); an older one may be freed. */
unsigned sl_worker_oldest_generation(worker *w);
/* From any thread: connected to Redis with the scripts loaded, and not
 * stopping. */
bool sl_worker_ready(worker *w);
/* From any thread: hold w's tenants in place (none added or freed) while
 * reading them with sl_worker_tenant_views; then unlock. */
void sl_worker_lock_tenants(worker *w);
void sl_worker_unlock_tenants(worker *w);
/* With the lock held: writes views of up to max tenants to out; returns
 * how many tenants there are. */
size_t sl_worker_tenant_views(worker *w, sl_tenant_view *out, size_t max);
/* From any thread: adds w's Redis error and reconnect counts. */
void sl_worker_redis_counts(worker *w, uint64_t *errors, uint64_t *reconnects);
/* From any thread: adds how many tenants the cap max_discovered_tenants
 * kept w from discovering. */
void sl_worker_discovery_refused(worker *w, uint64_t *refused);
/* Which worker serves a tenant (a hash of its name). */
int sl_worker_for_tenant(const char *name, int worker_count);

#endif
