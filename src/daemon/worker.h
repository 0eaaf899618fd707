/* worker.h - a worker thread's interface for the main thread (daemon.c). */
#ifndef SLUICE_WORKER_H
#define SLUICE_WORKER_H

#include <stdint.h>
#include <stdio.h>

#include "config/config.h"
#include "base/metrics.h"

typedef struct worker worker;

enum { SL_WORKER_DRAIN = 1, SL_WORKER_STOP = 2 };

/* A worker (not yet running) for the tenants that hash to index among
 * count workers; config (and trace, the departure trace or NULL) must
 * outlive it. NULL if out of memory. */
worker *sl_worker_new(const sl_config *config, int index, int count, uint64_t seed, FILE *trace);
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
/* From any thread: apply config (valid, and kept alive by the caller
 * until the worker is freed) for the next claims. */
void sl_worker_reload(worker *w, const sl_config *config);
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
/* Which worker serves a tenant (a hash of its name). */
int sl_worker_for_tenant(const char *name, int worker_count);

#endif
