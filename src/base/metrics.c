/* metrics.c - see metrics.h. */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <event2/buffer.h>

#include "base/metrics.h"

const sl_histogram_bounds sl_latency_bounds = {
    {500, 1000, 2500, 5000, 10000, 25000, 50000, 100000, 250000, 500000, 1000000, 5000000}};
const sl_histogram_bounds sl_shaping_delay_bounds = {
    {100, 500, 1000, 5000, 10000, 25000, 50000, 100000, 250000, 500000, 1000000, 0}};
const sl_histogram_bounds sl_lateness_bounds = {
    {10, 50, 100, 250, 500, 1000, 2500, 5000, 10000, 50000, 100000, 1000000}};

void sl_histogram_observe(sl_histogram *h, const sl_histogram_bounds *bounds, int64_t value_us)
{
    if (value_us < 0)
        value_us = 0;
    int i = 0;
    while (i < SL_HISTOGRAM_BOUNDS && bounds->le_us[i] != 0 && value_us > bounds->le_us[i])
        i++;
    if (i < SL_HISTOGRAM_BOUNDS && bounds->le_us[i] == 0)
        i = SL_HISTOGRAM_BOUNDS; /* past the last bound: +Inf */
    sl_counter_add(&h->bucket[i], 1);
    sl_counter_add(&h->sum_us, (uint64_t)value_us);
}

void sl_label_add(sl_label_counters *s, const char *label, size_t len, uint64_t by)
{
    if (len > SL_LABEL_MAX)
        len = SL_LABEL_MAX;
    for (int i = 0; i < SL_LABEL_SLOTS; i++) {
        char *have = atomic_load_explicit(&s->label[i], memory_order_relaxed);
        if (!have) {
            char *copy = strndup(label, len);
            if (!copy)
                break;
            /* Published before its count moves: a reader that sees the
             * count (acquire on the label) sees the whole string. */
            atomic_store_explicit(&s->label[i], copy, memory_order_release);
            sl_counter_add(&s->count[i], by);
            return;
        }
        if (strncmp(have, label, len) == 0 && have[len] == '\0') {
            sl_counter_add(&s->count[i], by);
            return;
        }
    }
    sl_counter_add(&s->other, by);
}

void sl_label_counters_clear(sl_label_counters *s)
{
    for (int i = 0; i < SL_LABEL_SLOTS; i++) {
        free(atomic_load(&s->label[i]));
        atomic_store(&s->label[i], NULL);
    }
}

void sl_status_counters_init(sl_status_counters *s)
{
    for (int i = 0; i < SL_LABEL_SLOTS; i++)
        atomic_init(&s->status[i], -1);
}

void sl_status_add(sl_status_counters *s, int status)
{
    for (int i = 0; i < SL_LABEL_SLOTS; i++) {
        int have = atomic_load_explicit(&s->status[i], memory_order_relaxed);
        if (have == -1)
            atomic_store_explicit(&s->status[i], status, memory_order_release);
        if (have == -1 || have == status) {
            sl_counter_add(&s->count[i], 1);
            return;
        }
    }
    sl_counter_add(&s->other, 1);
}

void sl_tenant_metrics_init(sl_tenant_metrics *m)
{
    memset(m, 0, sizeof *m);
    sl_status_counters_init(&m->responses);
}

void sl_tenant_metrics_clear(sl_tenant_metrics *m)
{
    sl_label_counters_clear(&m->dead_reasons);
}

/* ---- rendering ---- */

typedef struct render {
    struct evbuffer *out;
    bool ok;
} render;

static void emit(render *r, const char *format, ...) __attribute__((format(printf, 2, 3)));

static void emit(render *r, const char *format, ...)
{
    va_list ap;
    va_start(ap, format);
    if (r->ok && evbuffer_add_vprintf(r->out, format, ap) < 0)
        r->ok = false;
    va_end(ap);
}

static void family(render *r, const char *name, const char *type, const char *help)
{
    emit(r, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

/* A label value with \, " and newline escaped, as the format asks. */
static void emit_label_value(render *r, const char *value)
{
    char escaped[2 * SL_LABEL_MAX + 2 * 130];
    size_t n = 0;
    for (const char *p = value; *p && n + 2 < sizeof escaped; p++) {
        if (*p == '\\' || *p == '"' || *p == '\n')
            escaped[n++] = '\\';
        escaped[n++] = *p == '\n' ? 'n' : *p;
    }
    escaped[n] = '\0';
    emit(r, "\"%s\"", escaped);
}

static void emit_tenant(render *r, const char *metric, const char *tenant)
{
    emit(r, "%s{tenant=", metric);
    emit_label_value(r, tenant);
}

/* metric{tenant="T",label="value"} count */
static void emit_labelled(render *r, const char *metric, const char *tenant, const char *label,
                          const char *value, uint64_t count)
{
    emit_tenant(r, metric, tenant);
    emit(r, ",%s=", label);
    emit_label_value(r, value);
    emit(r, "} %" PRIu64 "\n", count);
}

static bool shown(const sl_tenant_view *t)
{
    return t->metrics && atomic_load_explicit(&t->metrics->active, memory_order_relaxed);
}

typedef uint64_t (*counter_of)(const sl_tenant_metrics *m);
typedef int64_t (*gauge_of)(const sl_tenant_metrics *m);

static void tenant_counters(render *r, const sl_process_view *v, const char *name,
                            const char *help, counter_of value)
{
    family(r, name, "counter", help);
    for (size_t i = 0; i < v->tenant_count; i++)
        if (shown(&v->tenants[i])) {
            emit_tenant(r, name, v->tenants[i].name);
            emit(r, "} %" PRIu64 "\n", value(v->tenants[i].metrics));
        }
}

static void tenant_gauges(render *r, const sl_process_view *v, const char *name, const char *help,
                          gauge_of value)
{
    family(r, name, "gauge", help);
    for (size_t i = 0; i < v->tenant_count; i++)
        if (shown(&v->tenants[i])) {
            emit_tenant(r, name, v->tenants[i].name);
            emit(r, "} %" PRId64 "\n", value(v->tenants[i].metrics));
        }
}

static uint64_t claimed_of(const sl_tenant_metrics *m) { return sl_counter_read(&m->claimed); }
static int64_t queue_depth_of(const sl_tenant_metrics *m) { return sl_gauge_read(&m->queue_depth); }
static int64_t waiting_of(const sl_tenant_metrics *m) { return sl_gauge_read(&m->waiting); }
static int64_t in_flight_of(const sl_tenant_metrics *m) { return sl_gauge_read(&m->in_flight); }

/* Whether the rate and pause of t show: once a claim replied, for a
 * tenant that has claimed a job or is paused (an idle tenant costs no
 * series, a paused one should be seen). */
static bool settings_shown(const sl_tenant_view *t)
{
    return t->metrics && sl_gauge_read(&t->metrics->rate_milli) > 0 &&
           (shown(t) || sl_gauge_read(&t->metrics->paused) != 0);
}

/* The effective rate and pause of each tenant's last claim. */
static void tenant_settings(render *r, const sl_process_view *v)
{
    family(r, "sluice_tenant_rate", "gauge",
           "The tenant's effective rate at its last claim (jobs/s): file, override or adaptive.");
    for (size_t i = 0; i < v->tenant_count; i++) {
        if (!settings_shown(&v->tenants[i]))
            continue;
        int64_t milli = sl_gauge_read(&v->tenants[i].metrics->rate_milli);
        emit_tenant(r, "sluice_tenant_rate", v->tenants[i].name);
        emit(r, "} %" PRId64 ".%03" PRId64 "\n", milli / 1000, milli % 1000);
    }
    family(r, "sluice_tenant_paused", "gauge",
           "1 while the tenant is paused fleet-wide (sluice tenant pause), else 0.");
    for (size_t i = 0; i < v->tenant_count; i++) {
        const sl_tenant_metrics *m = v->tenants[i].metrics;
        if (!settings_shown(&v->tenants[i]))
            continue;
        emit_tenant(r, "sluice_tenant_paused", v->tenants[i].name);
        emit(r, "} %" PRId64 "\n", sl_gauge_read(&m->paused));
    }
}

static void jobs_by_outcome(render *r, const sl_process_view *v)
{
    const char *name = "sluice_jobs_total";
    family(r, name, "counter",
           "Jobs by the outcome of their delivery attempt (released: handed back unsent).");
    for (size_t i = 0; i < v->tenant_count; i++) {
        const sl_tenant_view *t = &v->tenants[i];
        if (!shown(t))
            continue;
        const sl_tenant_metrics *m = t->metrics;
        emit_labelled(r, name, t->name, "outcome", "delivered", sl_counter_read(&m->delivered));
        emit_labelled(r, name, t->name, "outcome", "retried", sl_counter_read(&m->retried));
        emit_labelled(r, name, t->name, "outcome", "dead_lettered",
                      sl_counter_read(&m->dead_lettered));
        emit_labelled(r, name, t->name, "outcome", "released", sl_counter_read(&m->released));
    }
}

static void dead_letters_by_reason(render *r, const sl_process_view *v)
{
    const char *name = "sluice_dead_letters_total";
    family(r, name, "counter", "Jobs dead-lettered by this process, by reason.");
    for (size_t i = 0; i < v->tenant_count; i++) {
        const sl_tenant_view *t = &v->tenants[i];
        if (!shown(t))
            continue;
        const sl_label_counters *s = &t->metrics->dead_reasons;
        for (int k = 0; k < SL_LABEL_SLOTS; k++) {
            const char *label = atomic_load_explicit(&s->label[k], memory_order_acquire);
            if (label)
                emit_labelled(r, name, t->name, "reason", label, sl_counter_read(&s->count[k]));
        }
        if (sl_counter_read(&s->other))
            emit_labelled(r, name, t->name, "reason", "other", sl_counter_read(&s->other));
    }
}

static void responses_by_code(render *r, const sl_process_view *v)
{
    const char *name = "sluice_http_responses_total";
    family(r, name, "counter", "HTTP responses by status code (error: no response).");
    for (size_t i = 0; i < v->tenant_count; i++) {
        const sl_tenant_view *t = &v->tenants[i];
        if (!shown(t))
            continue;
        const sl_status_counters *s = &t->metrics->responses;
        for (int k = 0; k < SL_LABEL_SLOTS; k++) {
            int status = atomic_load_explicit(&s->status[k], memory_order_acquire);
            char code[16];
            snprintf(code, sizeof code, "%d", status);
            if (status >= 0)
                emit_labelled(r, name, t->name, "code", status == 0 ? "error" : code,
                              sl_counter_read(&s->count[k]));
        }
        if (sl_counter_read(&s->other))
            emit_labelled(r, name, t->name, "code", "other", sl_counter_read(&s->other));
    }
}

typedef const sl_histogram *(*histogram_of)(const sl_tenant_metrics *m);

static const sl_histogram *latency_of(const sl_tenant_metrics *m) { return &m->latency; }
static const sl_histogram *shaping_delay_of(const sl_tenant_metrics *m) { return &m->shaping_delay; }
static const sl_histogram *lateness_of(const sl_tenant_metrics *m) { return &m->lateness; }

static void histograms(render *r, const sl_process_view *v, const char *name, const char *help,
                       const sl_histogram_bounds *bounds, histogram_of histogram)
{
    family(r, name, "histogram", help);
    for (size_t i = 0; i < v->tenant_count; i++) {
        const sl_tenant_view *t = &v->tenants[i];
        if (!shown(t))
            continue;
        const sl_histogram *h = histogram(t->metrics);
        char bucket[96];
        snprintf(bucket, sizeof bucket, "%s_bucket", name);
        uint64_t cumulative = 0;
        for (int b = 0; b < SL_HISTOGRAM_BOUNDS && bounds->le_us[b] != 0; b++) {
            cumulative += sl_counter_read(&h->bucket[b]);
            emit_tenant(r, bucket, t->name);
            emit(r, ",le=\"%g\"} %" PRIu64 "\n", (double)bounds->le_us[b] / 1e6, cumulative);
        }
        cumulative += sl_counter_read(&h->bucket[SL_HISTOGRAM_BOUNDS]);
        emit_tenant(r, bucket, t->name);
        emit(r, ",le=\"+Inf\"} %" PRIu64 "\n", cumulative);
        uint64_t sum_us = sl_counter_read(&h->sum_us);
        char sum[96], count[96];
        snprintf(sum, sizeof sum, "%s_sum", name);
        snprintf(count, sizeof count, "%s_count", name);
        emit_tenant(r, sum, t->name);
        emit(r, "} %" PRIu64 ".%06" PRIu64 "\n", sum_us / 1000000, sum_us % 1000000);
        emit_tenant(r, count, t->name);
        emit(r, "} %" PRIu64 "\n", cumulative);
    }
}

bool sl_metrics_render(struct evbuffer *out, const sl_process_view *v)
{
    render r = {out, true};
    family(&r, "sluice_build_info", "gauge", "The running version; always 1.");
    emit(&r, "sluice_build_info{version=");
    emit_label_value(&r, v->version);
    emit(&r, "} 1\n");
    family(&r, "sluice_ready", "gauge",
           "1 when every worker is connected to Redis with its scripts loaded.");
    emit(&r, "sluice_ready %d\n", v->ready ? 1 : 0);
    family(&r, "sluice_tenants", "gauge", "Tenants served by this process.");
    emit(&r, "sluice_tenants %zu\n", v->tenant_count);
    family(&r, "sluice_discovered_tenants", "gauge",
           "Of sluice_tenants, those served through the \"*\" template.");
    emit(&r, "sluice_discovered_tenants %" PRIu64 "\n", v->discovered_tenants);
    family(&r, "sluice_discovery_refused_total", "counter",
           "Tenants with work not served because max_discovered_tenants was reached.");
    emit(&r, "sluice_discovery_refused_total %" PRIu64 "\n", v->discovery_refused);
    family(&r, "sluice_redis_errors_total", "counter",
           "Redis error replies, failed connects and lost connections.");
    emit(&r, "sluice_redis_errors_total %" PRIu64 "\n", v->redis_errors);
    family(&r, "sluice_redis_reconnects_total", "counter", "Redis connections lost and remade.");
    emit(&r, "sluice_redis_reconnects_total %" PRIu64 "\n", v->redis_reconnects);

    tenant_counters(&r, v, "sluice_jobs_claimed_total", "Jobs claimed from Redis.", claimed_of);
    jobs_by_outcome(&r, v);
    dead_letters_by_reason(&r, v);
    responses_by_code(&r, v);
    tenant_gauges(&r, v, "sluice_queue_depth",
                  "Jobs in the tenant's Redis list at its last claim.", queue_depth_of);
    tenant_gauges(&r, v, "sluice_waiting", "Claimed jobs waiting for their slot.", waiting_of);
    tenant_gauges(&r, v, "sluice_in_flight", "HTTP requests under way.", in_flight_of);
    tenant_settings(&r, v);
    histograms(&r, v, "sluice_delivery_latency_seconds", "HTTP request start to response.",
               &sl_latency_bounds, latency_of);
    histograms(&r, v, "sluice_shaping_delay_seconds",
               "A job's slot minus its claim time: the wait the shaping schedule gave it.",
               &sl_shaping_delay_bounds, shaping_delay_of);
    histograms(&r, v, "sluice_departure_lateness_seconds",
               "A job's actual departure minus its slot.", &sl_lateness_bounds, lateness_of);
    return r.ok;
}
