/* metrics.h - counters, gauges and histograms written by one thread (a
 * worker, on its hot path) and read by another (the admin endpoint's
 * scrape), with neither a lock nor an allocation per update.
 *
 * Every value has exactly one writer, so an update is a relaxed load and
 * store of a 64-bit atomic (a plain mov on x86-64, no locked instruction);
 * a reader sees each value whole, perhaps a moment old. Label values
 * (dead-letter reasons, HTTP codes) take a slot the first time they are
 * seen and keep it: the slot's label is published before its count is.
 */
#ifndef SLUICE_METRICS_H
#define SLUICE_METRICS_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct sl_counter {
    _Atomic uint64_t value;
} sl_counter;

typedef struct sl_gauge {
    _Atomic int64_t value;
} sl_gauge;

/* Adds by to c; only c's one writer thread may call it. */
static inline void sl_counter_add(sl_counter *c, uint64_t by)
{
    uint64_t now = atomic_load_explicit(&c->value, memory_order_relaxed);
    atomic_store_explicit(&c->value, now + by, memory_order_relaxed);
}

/* c's value; from any thread. */
static inline uint64_t sl_counter_read(const sl_counter *c)
{
    return atomic_load_explicit(&c->value, memory_order_relaxed);
}

/* Sets g; only g's one writer thread may call it. */
static inline void sl_gauge_set(sl_gauge *g, int64_t value)
{
    atomic_store_explicit(&g->value, value, memory_order_relaxed);
}

/* g's value; from any thread. */
static inline int64_t sl_gauge_read(const sl_gauge *g)
{
    return atomic_load_explicit(&g->value, memory_order_relaxed);
}

/* ---- histograms (values in microseconds, shown in seconds) ---- */

#define SL_HISTOGRAM_BOUNDS 12

/* Upper bounds of a histogram's buckets, in us, increasing; fewer than
 * SL_HISTOGRAM_BOUNDS end with 0. The +Inf bucket is implied. */
typedef struct sl_histogram_bounds {
    int64_t le_us[SL_HISTOGRAM_BOUNDS];
} sl_histogram_bounds;

/* Request start to response. */
extern const sl_histogram_bounds sl_latency_bounds;
/* Slot minus claim time: at most the claim lookahead (1 s). */
extern const sl_histogram_bounds sl_shaping_delay_bounds;
/* Actual departure minus slot: timer and loop lateness. */
extern const sl_histogram_bounds sl_lateness_bounds;

typedef struct sl_histogram {
    sl_counter bucket[SL_HISTOGRAM_BOUNDS + 1]; /* non-cumulative; the last is +Inf */
    sl_counter sum_us;
} sl_histogram;

/* Counts value_us (negative counts as 0) in the first bucket whose bound
 * holds it; single writer. */
void sl_histogram_observe(sl_histogram *h, const sl_histogram_bounds *bounds, int64_t value_us);

/* ---- labelled counters ---- */

#define SL_LABEL_SLOTS 12
#define SL_LABEL_MAX 80

/* Counts by a string label (a dead-letter reason). Labels beyond
 * SL_LABEL_SLOTS distinct ones count under "other". */
typedef struct sl_label_counters {
    _Atomic(char *) label[SL_LABEL_SLOTS]; /* owned; NULL: slot free */
    sl_counter count[SL_LABEL_SLOTS];
    sl_counter other;
} sl_label_counters;

/* Adds by under label (len bytes, cut at SL_LABEL_MAX); single writer.
 * The first time a label is seen it is copied (the only allocation). */
void sl_label_add(sl_label_counters *s, const char *label, size_t len, uint64_t by);
/* Frees the copied labels; no reader may be reading. */
void sl_label_counters_clear(sl_label_counters *s);

/* Counts by HTTP status; status 0 means no response (shown as "error"). */
typedef struct sl_status_counters {
    _Atomic int status[SL_LABEL_SLOTS]; /* -1: slot free */
    sl_counter count[SL_LABEL_SLOTS];
    sl_counter other;
} sl_status_counters;

/* Marks every slot free; before any use. */
void sl_status_counters_init(sl_status_counters *s);
/* Adds one under status; single writer. */
void sl_status_add(sl_status_counters *s, int status);

/* ---- what sluice measures ---- */

/* One tenant in one process. Written by its worker thread only. */
typedef struct sl_tenant_metrics {
    atomic_bool active; /* has claimed a job: its series are shown */
    sl_counter claimed;
    sl_counter delivered, retried, dead_lettered, released;
    sl_label_counters dead_reasons;
    sl_status_counters responses;
    sl_gauge queue_depth; /* the Redis list's length at the last claim */
    sl_gauge waiting;     /* claimed, waiting for their slot */
    sl_gauge in_flight;
    sl_gauge rate_milli;  /* the effective rate of the last claim; 0: none yet */
    sl_gauge paused;      /* 1 while the last claim found the tenant paused */
    sl_histogram latency, shaping_delay, lateness;
} sl_tenant_metrics;

/* Readies m (status slots free). */
void sl_tenant_metrics_init(sl_tenant_metrics *m);
/* Frees what m owns. */
void sl_tenant_metrics_clear(sl_tenant_metrics *m);

/* One Redis connection's troubles. Written by its worker thread only. */
typedef struct sl_redis_metrics {
    sl_counter errors;     /* error replies, failed connects, lost connections */
    sl_counter reconnects; /* connections lost */
} sl_redis_metrics;

/* ---- the text a scrape returns ---- */

typedef struct sl_tenant_view {
    const char *name;
    const sl_tenant_metrics *metrics; /* NULL: none yet, nothing shown */
} sl_tenant_view;

typedef struct sl_process_view {
    const char *version;
    bool ready;
    uint64_t redis_errors, redis_reconnects; /* summed over workers */
    uint64_t discovered_tenants; /* of tenant_count, those served through "*" */
    uint64_t discovery_refused;  /* tenants max_discovered_tenants kept out */
    const sl_tenant_view *tenants;
    size_t tenant_count;
} sl_process_view;

struct evbuffer;

/* Appends the Prometheus text exposition (format 0.0.4) of view to out.
 * False if out of memory. */
bool sl_metrics_render(struct evbuffer *out, const sl_process_view *view);

#endif
