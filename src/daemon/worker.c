/* worker.c - one worker thread: its event loop, its Redis connection, its
 * HTTP client, and the tenants it serves (see tenant.c for one tenant's
 * pipeline). The main thread talks to it only through `command` and the
 * `wakeup` event (libevent is set up for threads by daemon.c). */
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>

#include <event2/event.h>

#include "base/log.h"
#include "base/monotonic.h"
#include "base/realtime.h"
#include "daemon/redis_clock.h"
#include "daemon/tenant.h"
#include "daemon/worker.h"
#include "daemon/worker_policy.h"
#include "redis/keys.h"
#include "redis/notify.h"
#include "redis/redis_errors.h"

#define DISCOVER_EVERY_MS 1000 /* SL_DISCOVER_NOTIFIED_EVERY_TICKS: 30 s with notifications */
#define DRAIN_CHECK_MS 10
#define CLOCK_PROBE_EVERY_MS 5000
#define HEARTBEAT_MS 100

enum worker_command { WORKER_RUN = 0, WORKER_DRAIN = SL_WORKER_DRAIN, WORKER_STOP = SL_WORKER_STOP };

struct worker {
    int index;
    int count;               /* workers in the process */
    pthread_t thread;
    sl_tenant_env env;       /* the loop, Redis, HTTP, clock... lent to the tenants */
    sl_notify *notify;       /* keyspace notifications, when the server has them */
    struct event *wakeup;    /* the main thread activates it after setting command */
    struct event *reload;    /* ... and this one after setting pending_config */
    _Atomic(const sl_config_version *) pending_config;
    atomic_uint oldest_generation; /* sl_worker_oldest_generation */
    sl_discovery_shared *shared;  /* the process's count of discovered tenants */
    size_t discovered;       /* tenants of this worker served through "*" */
    sl_counter discover_refused; /* ... refused by max_discovered_tenants */
    int64_t cap_logged_us;   /* the cap's last log line */
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
    int64_t drain_deadline_us;
    sl_argv scan_argv;
    struct event *clock_timer;
    /* Discovery scans every primary in turn, each from cursor 0 to 0: a
     * round. The primaries changing (on_redis_nodes) starts a new one. */
    bool scanning;
    bool scan_stale;         /* the primaries changed while a page was out */
    size_t scan_node;        /* the primary being scanned */
    char scan_cursor[32];    /* its cursor */
    int exit_code;
};

static uint32_t name_hash(const char *name)
{
    uint32_t h = 2166136261u; /* FNV-1a */
    for (const unsigned char *p = (const unsigned char *)name; *p; p++)
        h = (h ^ *p) * 16777619u;
    return h;
}

int sl_worker_for_tenant(const char *name, int worker_count)
{
    return (int)(name_hash(name) % (uint32_t)worker_count);
}

static tenant *find_tenant(const worker *w, const char *name)
{
    for (size_t i = 0; i < w->tenant_count; i++)
        if (strcmp(sl_tenant_name(w->tenants[i]), name) == 0)
            return w->tenants[i];
    return NULL;
}

static tenant *add_tenant(worker *w, const char *name, const sl_tenant_config *config)
{
    if (w->tenant_count == w->tenant_capacity) {
        size_t n = w->tenant_capacity ? w->tenant_capacity * 2 : 16;
        pthread_mutex_lock(&w->tenants_lock);
        tenant **bigger = realloc(w->tenants, n * sizeof *bigger);
        if (bigger) {
            w->tenants = bigger;
            w->tenant_capacity = n;
        }
        pthread_mutex_unlock(&w->tenants_lock);
        if (!bigger)
            return NULL;
    }
    tenant *t = sl_tenant_new(&w->env, name, config);
    if (!t) {
        SL_LOG(SL_LOG_ERROR, "msg=\"out of memory adding a tenant\" tenant=%s", name);
        return NULL;
    }
    pthread_mutex_lock(&w->tenants_lock);
    w->tenants[w->tenant_count++] = t;
    pthread_mutex_unlock(&w->tenants_lock);
    return t;
}

/* Frees the tenant at index i (idle: nothing of it is pending). */
static void remove_tenant(worker *w, size_t i)
{
    tenant *t = w->tenants[i];
    pthread_mutex_lock(&w->tenants_lock);
    w->tenants[i] = w->tenants[--w->tenant_count];
    pthread_mutex_unlock(&w->tenants_lock);
    sl_tenant_free(t);
}

/* ---- discovery of tenants through the "*" template ---- */

/* A tenant not listed in the configuration: served through "*", or
 * (rules NULL) left over from a configuration that listed it. */
static bool listed(const worker *w, const char *name)
{
    const sl_tenant_config *rules = sl_config_tenant_for(w->env.config, name);
    return rules && rules != w->env.config->template_tenant;
}

/* Serves name through the template, if the cap allows; claims at once. */
static void discover(worker *w, const char *name, const sl_tenant_config *config)
{
    /* Counted before the check, undone if refused: two workers checking
     * one count at once could both pass the cap. */
    long long before = atomic_fetch_add(&w->shared->discovered, 1);
    if (!sl_discover_allowed(before, w->env.config->max_discovered_tenants)) {
        atomic_fetch_sub(&w->shared->discovered, 1);
        sl_counter_add(&w->discover_refused, 1);
        if (sl_discover_cap_log_due(&w->cap_logged_us, sl_realtime_us()))
            SL_LOG(SL_LOG_WARNING, "msg=\"max_discovered_tenants reached: not serving a new tenant until one is forgotten\" tenant=%s max=%" PRId64,
                   name, w->env.config->max_discovered_tenants);
        return;
    }
    tenant *t = add_tenant(w, name, config);
    if (!t) {
        atomic_fetch_sub(&w->shared->discovered, 1);
        return;
    }
    w->discovered++;
    SL_LOG(SL_LOG_INFO, "msg=\"tenant discovered\" tenant=%s worker=%d", name, w->index);
    sl_tenant_claim(t);
}

/* The reply to EXISTS on a quiet tenant's queue, retry and inflight keys:
 * none left, and still quiet, it is forgotten (found again by discovery
 * or a push once it has work). */
typedef struct forget_check {
    worker *w;
    char name[SL_TENANT_NAME_MAX + 1];
} forget_check;

static void on_forget_reply(redisReply *reply, void *arg)
{
    forget_check *check = arg;
    worker *w = check->w;
    if (reply && reply->type == REDIS_REPLY_INTEGER && reply->integer == 0 && !listed(w, check->name)) {
        for (size_t i = 0; i < w->tenant_count; i++) {
            tenant *t = w->tenants[i];
            if (strcmp(sl_tenant_name(t), check->name) != 0)
                continue;
            if (sl_forget_due(sl_tenant_idle(t), sl_tenant_busy_at(t),
                              w->env.config->forget_idle_ms * 1000, sl_realtime_us())) {
                SL_LOG(SL_LOG_INFO, "msg=\"idle tenant forgotten\" tenant=%s worker=%d", check->name,
                       w->index);
                remove_tenant(w, i);
                w->discovered--;
                atomic_fetch_sub(&w->shared->discovered, 1);
            }
            break;
        }
    }
    free(check);
}

/* Each discovery tick: quiet discovered tenants get their keys checked
 * (on_forget_reply), and tenants the configuration no longer lists nor
 * the template serves are freed once idle. */
static void forget_quiet_tenants(worker *w)
{
    int64_t now = sl_realtime_us();
    int64_t after_us = w->env.config->forget_idle_ms * 1000;
    for (size_t i = w->tenant_count; i-- > 0;) {
        tenant *t = w->tenants[i];
        const char *name = sl_tenant_name(t);
        const sl_tenant_config *rules = sl_config_tenant_for(w->env.config, name);
        if (!rules) {
            if (sl_tenant_idle(t))
                remove_tenant(w, i); /* retired: its jobs are all acked */
            continue;
        }
        if (rules != w->env.config->template_tenant || !sl_redis_client_ready(w->env.redis) ||
            !sl_forget_due(sl_tenant_idle(t), sl_tenant_busy_at(t), after_us, now))
            continue;
        forget_check *check = malloc(sizeof *check);
        if (!check)
            return;
        check->w = w;
        snprintf(check->name, sizeof check->name, "%s", name);
        const sl_tenant_keys *keys = sl_tenant_keys_of(t);
        const char *argv[] = {"EXISTS", keys->queue, keys->retry, keys->inflight};
        if (!sl_redis_client_send(w->env.redis, keys->queue, 4, argv, NULL, on_forget_reply, check))
            free(check);
    }
}

static void scan_page(worker *w);
static void publish_oldest_generation(worker *w);

/* Starts the round over, at the first primary. */
static void scan_restart(worker *w)
{
    w->scan_stale = false;
    w->scan_node = 0;
    snprintf(w->scan_cursor, sizeof w->scan_cursor, "0");
}

/* The scan of the current primary is over (done, or failed): the next
 * page is the next primary's first, or the round is over. */
static void scan_next_node(worker *w)
{
    snprintf(w->scan_cursor, sizeof w->scan_cursor, "0");
    if (++w->scan_node >= sl_redis_client_primary_count(w->env.redis))
        w->scan_node = 0;
}

static void on_scan_reply(redisReply *reply, void *arg)
{
    worker *w = arg;
    w->scanning = false;
    if (w->scan_stale) {
        /* The page came from the primaries as they were: start over at the
         * next tick (a tenant it names is found then again). */
        scan_restart(w);
        return;
    }
    if (!reply || reply->type != REDIS_REPLY_ARRAY || reply->elements != 2 ||
        reply->element[1]->type != REDIS_REPLY_ARRAY) {
        if (reply && reply->type == REDIS_REPLY_ERROR)
            SL_LOG(sl_redis_error_transient(reply->str) ? SL_LOG_DEBUG : SL_LOG_ERROR,
                   "msg=\"SCAN failed; the next tick scans again\" error=\"%s\" primary=%zu",
                   reply->str, w->scan_node);
        /* One primary failing does not keep the others unscanned. */
        scan_next_node(w);
        return;
    }
    snprintf(w->scan_cursor, sizeof w->scan_cursor, "%s", reply->element[0]->str);
    const redisReply *keys = reply->element[1];
    for (size_t i = 0; i < keys->elements; i++) {
        char name[SL_TENANT_NAME_MAX + 1];
        if (!sl_tenant_from_work_key(keys->element[i]->str, keys->element[i]->len,
                                     w->env.config->prefix, name, sizeof name))
            continue;
        if (sl_worker_for_tenant(name, w->count) != w->index || find_tenant(w, name))
            continue;
        const sl_tenant_config *config = sl_config_tenant_for(w->env.config, name);
        if (config)
            discover(w, name, config);
    }
    if (strcmp(w->scan_cursor, "0") == 0) {
        scan_next_node(w);
        if (w->scan_node == 0)
            return; /* the round is over; the next tick starts another */
    }
    if (!w->env.draining)
        scan_page(w);
}

static void scan_page(worker *w)
{
    char pattern[SL_KEY_MAX];
    sl_work_key_pattern(pattern, w->env.config->prefix);
    sl_argv_reset(&w->scan_argv);
    sl_argv_add_str(&w->scan_argv, "SCAN");
    sl_argv_add_str(&w->scan_argv, w->scan_cursor);
    sl_argv_add_str(&w->scan_argv, "MATCH");
    sl_argv_add_str(&w->scan_argv, pattern);
    sl_argv_add_str(&w->scan_argv, "COUNT");
    sl_argv_add_str(&w->scan_argv, "1000");
    const char **argv = sl_argv_finish(&w->scan_argv);
    if (argv && sl_redis_client_send_to(w->env.redis, w->scan_node, (int)w->scan_argv.count, argv,
                                        w->scan_argv.lengths, on_scan_reply, w))
        w->scanning = true;
}

static void on_discover_timer(evutil_socket_t fd, short kind, void *arg)
{
    (void)fd;
    (void)kind;
    worker *w = arg;
    if (!w->env.draining)
        forget_quiet_tenants(w); /* the key checks need Redis, retired tenants do not */
    publish_oldest_generation(w);
    if (!w->env.config->template_tenant || !sl_discover_on_tick(&w->discover_ticks, w->env.notified))
        return;
    if (!w->scanning && !w->env.draining && sl_redis_client_ready(w->env.redis))
        scan_page(w);
}

/* ---- keyspace notifications ---- */

static void on_push(void *arg, const char *name)
{
    worker *w = arg;
    if (w->env.draining || sl_worker_for_tenant(name, w->count) != w->index)
        return;
    tenant *t = find_tenant(w, name);
    if (t) {
        sl_tenant_wake(t);
        return;
    }
    const sl_tenant_config *config = sl_config_tenant_for(w->env.config, name);
    if (config)
        discover(w, name, config);
}

static void on_notify_state(void *arg, bool active)
{
    worker *w = arg;
    w->env.notified = active;
    /* Unsubscribed: pushes may go unseen, so poll every tenant again soon.
     * Subscribed (again): pushes made just before it went unseen, so look
     * once more at every tenant, and scan at the next tick. */
    for (size_t i = 0; i < w->tenant_count; i++)
        sl_tenant_wake(w->tenants[i]);
    if (active)
        w->discover_ticks = sl_discover_next_tick();
}

/* ---- readiness, drain, stop ---- */

typedef struct clock_probe {
    worker *w;
    int64_t sent_us;
} clock_probe;

static void send_clock_probe(worker *w);

static void on_time_reply(redisReply *reply, void *arg)
{
    clock_probe *probe = arg;
    worker *w = probe->w;
    int64_t received = sl_realtime_us();
    if (reply && reply->type == REDIS_REPLY_ARRAY && reply->elements == 2) {
        int64_t redis_now = strtoll(reply->element[0]->str, NULL, 10) * 1000000 +
                            strtoll(reply->element[1]->str, NULL, 10);
        switch (sl_redis_clock_probe_answered(&w->env.clock, redis_now, probe->sent_us, received)) {
        case SL_CLOCK_BECAME_READY:
            for (size_t i = 0; i < w->tenant_count; i++)
                sl_tenant_resume(w->tenants[i]);
            break;
        case SL_CLOCK_PROBE_AGAIN:
            send_clock_probe(w);
            break;
        case SL_CLOCK_STEADY:
            break;
        }
    }
    free(probe);
}

static void send_clock_probe(worker *w)
{
    clock_probe *probe = malloc(sizeof *probe);
    if (!probe)
        return;
    probe->w = w;
    probe->sent_us = sl_realtime_us();
    const char *argv[] = {"TIME"};
    if (!sl_redis_client_send(w->env.redis, NULL, 1, argv, NULL, on_time_reply, probe))
        free(probe);
}

/* Every few seconds: one more sample, whatever the traffic. */
static void on_clock_timer(evutil_socket_t fd, short kind, void *arg)
{
    (void)fd;
    (void)kind;
    worker *w = arg;
    /* Also while the clock is not known yet: a probe answered with an
     * error (Redis busy or loading) is not sent again by its reply. */
    if (sl_redis_client_ready(w->env.redis))
        send_clock_probe(w);
}

static void on_redis_ready(void *arg, bool ready)
{
    worker *w = arg;
    atomic_store(&w->redis_ready, ready);
    if (!ready)
        return; /* replies come back NULL; work resumes when ready again */
    /* Measure the clock before anything departs; tenants resume after. */
    sl_redis_clock_restart(&w->env.clock);
    send_clock_probe(w);
}

/* The primaries changed (the first connect, a reconnect, a failover, a
 * new shard): the subscriptions follow them, and the scan round starts
 * over on the new set, now or when the page out comes back. */
static void on_redis_nodes(void *arg)
{
    worker *w = arg;
    if (w->notify) /* NULL once draining */
        sl_notify_nodes_changed(w->notify);
    if (w->scanning)
        w->scan_stale = true;
    else
        scan_restart(w);
}

static bool all_idle(const worker *w)
{
    for (size_t i = 0; i < w->tenant_count; i++)
        if (!sl_tenant_idle(w->tenants[i]))
            return false;
    return true;
}

static void on_drain_timer(evutil_socket_t fd, short kind, void *arg)
{
    (void)fd;
    (void)kind;
    worker *w = arg;
    sl_drain_verdict v = sl_drain_check(all_idle(w) && !w->scanning, w->env.http != NULL,
                                        w->drain_deadline_us, sl_monotonic_us());
    if (v.done) {
        event_base_loopbreak(w->env.base);
        return;
    }
    if (v.hand_back) {
        SL_LOG(SL_LOG_WARNING, "msg=\"grace period over: handing back deliveries in flight\" worker=%d",
               w->index);
        sl_http_client_free(w->env.http); /* cancels the transfers */
        w->env.http = NULL;
        for (size_t i = 0; i < w->tenant_count; i++)
            sl_tenant_release_in_flight(w->tenants[i]);
    }
    if (v.give_up) {
        SL_LOG(SL_LOG_WARNING, "msg=\"acks not confirmed at exit; their leases will expire\" worker=%d",
               w->index);
        w->exit_code = 1;
        event_base_loopbreak(w->env.base);
    }
}

static void start_drain(worker *w)
{
    if (w->env.draining)
        return;
    w->env.draining = true;
    /* On the monotonic clock: a step of the wall clock (NTP) must neither
     * cut the grace period short nor stretch it past systemd's patience. */
    w->drain_deadline_us = sl_monotonic_us() + w->env.config->grace_ms * 1000;
    sl_notify_free(w->notify); /* no more wake-ups: nothing new is claimed */
    w->notify = NULL;
    evtimer_del(w->discover_timer);
    for (size_t i = 0; i < w->tenant_count; i++)
        sl_tenant_drain(w->tenants[i]);
    struct timeval every = {0, DRAIN_CHECK_MS * 1000};
    event_add(w->drain_timer, &every);
}

static void on_wakeup(evutil_socket_t fd, short kind, void *arg)
{
    (void)fd;
    (void)kind;
    worker *w = arg;
    int command = atomic_load(&w->command);
    if (command == WORKER_DRAIN)
        start_drain(w);
    else if (command == WORKER_STOP)
        event_base_loopbreak(w->env.base);
}

/* ---- reload ---- */

/* Adds the tenants listed in the config that this worker serves and does
 * not have yet (claiming at once if claim); false if one could not be
 * added (out of memory, logged). */
static bool add_listed_tenants(worker *w, bool claim)
{
    bool all = true;
    for (size_t i = 0; i < w->env.config->tenant_count; i++) {
        const sl_tenant_config *config = &w->env.config->tenants[i];
        if (sl_worker_for_tenant(config->name, w->count) != w->index || find_tenant(w, config->name))
            continue;
        tenant *t = add_tenant(w, config->name, config);
        all &= t != NULL;
        if (t && claim)
            sl_tenant_claim(t);
    }
    return all;
}

/* The oldest generation anything of w still points into, published for
 * the main thread, which frees older configurations. */
static void publish_oldest_generation(worker *w)
{
    unsigned oldest = w->env.config_generation;
    for (size_t i = 0; i < w->tenant_count; i++) {
        unsigned g = sl_tenant_generation(w->tenants[i]);
        oldest = sl_oldest_generation(oldest, &g, 1);
    }
    atomic_store(&w->oldest_generation, oldest);
}

/* Recounts the tenants served through "*" (a reload may list one, or
 * stop listing it). */
static void recount_discovered(worker *w)
{
    size_t n = 0;
    const sl_tenant_config *template_rules = w->env.config->template_tenant;
    for (size_t i = 0; template_rules && i < w->tenant_count; i++)
        n += sl_config_tenant_for(w->env.config, sl_tenant_name(w->tenants[i])) == template_rules;
    atomic_fetch_add(&w->shared->discovered, (long long)n - (long long)w->discovered);
    w->discovered = n;
}

/* A new configuration, validated by the main thread, which frees an old
 * one only once every worker's oldest generation is past it: tenants take
 * their new rules for their next claims (jobs already given a slot keep
 * it; requests in flight own copies of all they send); a tenant no longer
 * configured keeps its old rules until it is idle, and is then freed. */
static void on_reload(evutil_socket_t fd, short kind, void *arg)
{
    (void)fd;
    (void)kind;
    worker *w = arg;
    const sl_config_version *version = atomic_exchange(&w->pending_config, NULL);
    if (!version)
        return;
    const sl_config *config = version->config;
    w->env.config = config;
    w->env.config_generation = version->generation;
    for (size_t i = w->tenant_count; i-- > 0;) {
        tenant *t = w->tenants[i];
        const sl_tenant_config *rules = sl_config_tenant_for(config, sl_tenant_name(t));
        if (!rules) {
            SL_LOG(SL_LOG_WARNING, "msg=\"tenant no longer configured: not claiming its jobs, which stay queued\" tenant=%s",
                   sl_tenant_name(t));
            sl_tenant_retire(t);
            if (sl_tenant_idle(t))
                remove_tenant(w, i);
        } else if (!sl_tenant_reconfigure(t, rules)) {
            SL_LOG(SL_LOG_ERROR, "msg=\"out of memory applying the new configuration; the tenant keeps its old rules\" tenant=%s",
                   sl_tenant_name(t));
        }
    }
    (void)add_listed_tenants(w, !w->env.draining);
    recount_discovered(w);
    publish_oldest_generation(w);
}

void sl_worker_reload(worker *w, const sl_config_version *version)
{
    atomic_store(&w->pending_config, version);
    event_active(w->reload, EV_READ, 0);
}

unsigned sl_worker_oldest_generation(worker *w)
{
    return atomic_load(&w->oldest_generation);
}

/* ---- what the admin endpoint reads ---- */

bool sl_worker_ready(worker *w)
{
    return atomic_load(&w->redis_ready) && atomic_load(&w->command) == WORKER_RUN;
}

void sl_worker_lock_tenants(worker *w)
{
    pthread_mutex_lock(&w->tenants_lock);
}

void sl_worker_unlock_tenants(worker *w)
{
    pthread_mutex_unlock(&w->tenants_lock);
}

size_t sl_worker_tenant_views(worker *w, sl_tenant_view *out, size_t max)
{
    for (size_t i = 0; i < w->tenant_count && i < max; i++)
        out[i] = (sl_tenant_view){sl_tenant_name(w->tenants[i]), sl_tenant_metrics_of(w->tenants[i])};
    return w->tenant_count;
}

void sl_worker_redis_counts(worker *w, uint64_t *errors, uint64_t *reconnects)
{
    *errors += sl_counter_read(&w->redis_metrics.errors);
    *reconnects += sl_counter_read(&w->redis_metrics.reconnects);
}

void sl_worker_discovery_refused(worker *w, uint64_t *refused)
{
    *refused += sl_counter_read(&w->discover_refused);
}

/* ---- the thread ---- */

static void on_heartbeat(evutil_socket_t fd, short kind, void *arg)
{
    (void)fd;
    (void)kind;
    worker *w = arg;
    atomic_fetch_add(&w->heartbeat, 1);
}

unsigned sl_worker_heartbeat(worker *w)
{
    return atomic_load(&w->heartbeat);
}

static void worker_cleanup(worker *w)
{
    sl_notify_free(w->notify);
    w->notify = NULL;
    sl_redis_client_free(w->env.redis); /* pending callbacks see NULL replies */
    w->env.redis = NULL;
    atomic_store(&w->redis_ready, false);
    atomic_fetch_sub(&w->shared->discovered, (long long)w->discovered);
    w->discovered = 0;
    pthread_mutex_lock(&w->tenants_lock);
    for (size_t i = 0; i < w->tenant_count; i++)
        sl_tenant_free(w->tenants[i]);
    free(w->tenants);
    w->tenants = NULL;
    w->tenant_count = 0;
    pthread_mutex_unlock(&w->tenants_lock);
    sl_http_client_free(w->env.http);
    w->env.http = NULL;
    if (w->discover_timer)
        event_free(w->discover_timer);
    if (w->drain_timer)
        event_free(w->drain_timer);
    if (w->clock_timer)
        event_free(w->clock_timer);
    if (w->heartbeat_timer)
        event_free(w->heartbeat_timer);
    sl_argv_free(&w->env.claim_argv);
    sl_argv_free(&w->scan_argv);
}

static bool worker_setup(worker *w)
{
    char err[256];
    w->env.http = sl_http_client_new(w->env.base, err, sizeof err);
    if (!w->env.http) {
        SL_LOG(SL_LOG_ERROR, "msg=\"%s\" worker=%d", err, w->index);
        return false;
    }
    sl_argv_init(&w->env.claim_argv);
    sl_argv_init(&w->scan_argv);
    snprintf(w->scan_cursor, sizeof w->scan_cursor, "0");
    w->discover_timer = event_new(w->env.base, -1, EV_PERSIST, on_discover_timer, w);
    w->drain_timer = event_new(w->env.base, -1, EV_PERSIST, on_drain_timer, w);
    w->clock_timer = event_new(w->env.base, -1, EV_PERSIST, on_clock_timer, w);
    w->heartbeat_timer = event_new(w->env.base, -1, EV_PERSIST, on_heartbeat, w);
    if (!w->discover_timer || !w->drain_timer || !w->clock_timer || !w->heartbeat_timer)
        return false;
    struct timeval beat = {0, HEARTBEAT_MS * 1000};
    event_add(w->heartbeat_timer, &beat);
    struct timeval probe_every = {CLOCK_PROBE_EVERY_MS / 1000, 0};
    event_add(w->clock_timer, &probe_every);
    if (!add_listed_tenants(w, false))
        return false;
    /* Also without the template: it frees retired tenants once idle, and
     * publishes the oldest configuration in use. */
    struct timeval every = {DISCOVER_EVERY_MS / 1000, (DISCOVER_EVERY_MS % 1000) * 1000};
    event_add(w->discover_timer, &every);
    w->env.redis = sl_redis_client_new(w->env.base, &w->env.config->redis, &w->redis_metrics,
                                       on_redis_ready, on_redis_nodes, w);
    if (w->env.redis)
        w->notify = sl_notify_new(w->env.base, w->env.redis, w->env.config->prefix, on_push,
                                  on_notify_state, w);
    return w->env.redis && w->notify;
}

int sl_worker_run(worker *w)
{
    w->exit_code = 0;
    /* Linux lets a sleeping thread's timers fire up to 50 us late by
     * default, to save wake-ups; departures are this thread's whole job. */
    prctl(PR_SET_TIMERSLACK, 1UL, 0, 0, 0);
    if (!worker_setup(w)) {
        SL_LOG(SL_LOG_ERROR, "msg=\"worker setup failed\" worker=%d", w->index);
        worker_cleanup(w);
        return 1;
    }
    SL_LOG(SL_LOG_INFO, "msg=\"worker started\" worker=%d tenants=%zu", w->index, w->tenant_count);
    event_base_dispatch(w->env.base);
    worker_cleanup(w);
    return w->exit_code;
}

worker *sl_worker_new(const sl_config *config, int index, int count, uint64_t seed, FILE *trace,
                      sl_discovery_shared *shared)
{
    worker *w = calloc(1, sizeof *w);
    if (!w)
        return NULL;
    w->env.config = config;
    w->index = index;
    w->count = count;
    w->env.rng = seed | 1;
    w->env.trace = trace;
    atomic_init(&w->command, WORKER_RUN);
    atomic_init(&w->heartbeat, 0);
    atomic_init(&w->redis_ready, false);
    atomic_init(&w->pending_config, NULL);
    atomic_init(&w->oldest_generation, 0);
    w->shared = shared;
    pthread_mutex_init(&w->tenants_lock, NULL);
    struct event_config *ec = event_config_new();
    if (ec) {
        /* Shaping needs sub-millisecond timers. */
        event_config_set_flag(ec, EVENT_BASE_FLAG_PRECISE_TIMER);
        /* libcurl re-aims a connection's watch several times per request;
         * changes within one loop turn then cost one epoll_ctl, or none.
         * (Safe because both HTTP clients close sockets a turn late:
         * close_later.h.) */
        event_config_set_flag(ec, EVENT_BASE_FLAG_EPOLL_USE_CHANGELIST);
        w->env.base = event_base_new_with_config(ec);
        event_config_free(ec);
    }
    if (w->env.base) {
        w->wakeup = event_new(w->env.base, -1, 0, on_wakeup, w);
        w->reload = event_new(w->env.base, -1, 0, on_reload, w);
    }
    if (!w->env.base || !w->wakeup || !w->reload) {
        sl_worker_free(w);
        return NULL;
    }
    return w;
}

void sl_worker_free(worker *w)
{
    if (!w)
        return;
    if (w->wakeup)
        event_free(w->wakeup);
    if (w->reload)
        event_free(w->reload);
    if (w->env.base)
        event_base_free(w->env.base);
    pthread_mutex_destroy(&w->tenants_lock);
    free(w);
}

void sl_worker_command(worker *w, int command)
{
    atomic_store(&w->command, command);
    event_active(w->wakeup, EV_READ, 0);
}
