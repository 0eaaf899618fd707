/* daemon.c - see daemon.h. Signals are handled inside the main thread's
 * event loop; workers are told through sl_worker_command. */
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <inttypes.h>
#include <time.h>
#include <unistd.h>

#include <curl/curl.h>
#include <event2/event.h>
#include <event2/thread.h>

#include "daemon/admin.h"
#include "daemon/config_retire.h"
#include "config/config_reload.h"
#include "daemon/daemon.h"
#include "base/log.h"
#include "base/monotonic.h"
#include "daemon/sd_notify.h"
#include "version.h"
#include "daemon/worker.h"
#include "daemon/worker_policy.h"

typedef struct daemon_state {
    const sl_config *config; /* the running one */
    const char *config_path; /* re-read on SIGHUP */
    sl_config_version **reloaded; /* configurations loaded by SIGHUP, oldest
                                first, each freed once no worker uses it
                                (config_retire.h); the last is the running one */
    size_t reload_count;
    unsigned generation;     /* the running configuration's */
    unsigned *in_use;        /* per worker: its oldest generation (scratch) */
    struct event *retire_timer;
    sl_discovery_shared discovery;
    sl_admin *admin;
    sl_admin_source admin_source;
    struct event_base *base;
    worker **workers;
    int worker_count;        /* workers asked for: a reload cannot change it */
    pthread_t *threads;
    int *exit_codes;
    int started;
    atomic_int finished;
    struct event *worker_done;
    int signals_seen;
    bool worker_failed; /* one worker ended unasked: the others were told to drain */
    unsigned *last_heartbeat; /* per worker, at the previous watchdog tick */
    unsigned *heartbeat;      /* per worker, at this tick (scratch) */
    bool *ended;              /* per worker, at this tick (scratch) */
    atomic_bool *loop_ended;  /* per worker: its sl_worker_run returned */
    bool check_heartbeats;    /* ticks are far enough apart for heartbeats to move */
} daemon_state;

/* systemd's watchdog (WatchdogSec=): petted at half its interval, and only
 * while every worker's loop that still runs is seen moving, so a stuck
 * worker gets the service restarted (one that drained and ended is not
 * stuck). */
static void on_watchdog(evutil_socket_t fd, short kind, void *arg)
{
    (void)fd;
    (void)kind;
    daemon_state *d = arg;
    bool all_alive = true;
    if (d->check_heartbeats) {
        for (int i = 0; i < d->started; i++) {
            d->heartbeat[i] = sl_worker_heartbeat(d->workers[i]);
            d->ended[i] = atomic_load(&d->loop_ended[i]);
        }
        all_alive = sl_workers_alive(d->heartbeat, d->last_heartbeat, d->ended, (size_t)d->started);
    }
    if (all_alive)
        sl_sd_notify("WATCHDOG=1");
    else
        SL_LOG(SL_LOG_ERROR, "msg=\"a worker's loop is stuck: not petting the watchdog\"");
}

typedef struct worker_start {
    daemon_state *daemon;
    int index;
} worker_start;

static void *worker_thread(void *arg)
{
    worker_start *start = arg;
    daemon_state *d = start->daemon;
    d->exit_codes[start->index] = sl_worker_run(d->workers[start->index]);
    atomic_store(&d->loop_ended[start->index], true);
    atomic_fetch_add(&d->finished, 1);
    event_active(d->worker_done, EV_READ, 0);
    return NULL;
}

static void on_worker_done(evutil_socket_t fd, short kind, void *arg)
{
    (void)fd;
    (void)kind;
    daemon_state *d = arg;
    if (atomic_load(&d->finished) == d->started) {
        event_base_loopbreak(d->base);
    } else if (d->signals_seen == 0 && !d->worker_failed) {
        /* A worker ended unasked (its setup failed): a daemon that serves
         * only some of its tenants would hide that. Stop, cleanly, exit 1. */
        d->worker_failed = true;
        SL_LOG(SL_LOG_ERROR, "msg=\"a worker stopped unexpectedly: stopping the others\"");
        sl_sd_notify("STOPPING=1\nSTATUS=a worker stopped unexpectedly: draining the others");
        for (int i = 0; i < d->started; i++)
            sl_worker_command(d->workers[i], SL_WORKER_DRAIN);
    }
}

static void on_stop_signal(evutil_socket_t sig, short kind, void *arg)
{
    (void)kind;
    daemon_state *d = arg;
    if (++d->signals_seen == 1) {
        SL_LOG(SL_LOG_INFO, "msg=\"draining\" signal=%d grace_ms=%lld", (int)sig,
               (long long)d->config->grace_ms);
        sl_sd_notify("STOPPING=1\nSTATUS=draining: finishing deliveries, handing back the rest");
        for (int i = 0; i < d->started; i++)
            sl_worker_command(d->workers[i], SL_WORKER_DRAIN);
    } else {
        SL_LOG(SL_LOG_WARNING, "msg=\"second signal: exiting now; leased jobs return when their leases expire\"");
        for (int i = 0; i < d->started; i++)
            sl_worker_command(d->workers[i], SL_WORKER_STOP);
        /* Now, not once the workers have stopped: a stuck worker is what a
         * second signal is for. */
        event_base_loopbreak(d->base);
    }
}

/* The running configuration becomes next, or stays as it was. */
static void reload(daemon_state *d)
{
    sl_config_env env = sl_config_env_system();
    sl_errors errors;
    sl_errors_init(&errors);
    sl_config *next = sl_config_load(d->config_path, &env, &errors);
    if (!next) {
        SL_LOG(SL_LOG_ERROR, "msg=\"reload failed: keeping the running configuration\" file=%s errors=%zu",
               d->config_path, errors.count + errors.dropped);
        for (size_t i = 0; i < errors.count; i++)
            SL_LOG(SL_LOG_ERROR, "msg=\"config error\" error=\"%s\"", errors.items[i]);
        sl_errors_clear(&errors);
        return;
    }
    char blockers[128];
    if (sl_config_reload_blockers(d->config, next, blockers, sizeof blockers) > 0) {
        SL_LOG(SL_LOG_ERROR, "msg=\"reload refused: these settings change only on restart; keeping the running configuration\" changed=\"%s\"",
               blockers);
        sl_config_free(next);
        return;
    }
    sl_config_version **more = realloc(d->reloaded, (d->reload_count + 1) * sizeof *more);
    sl_config_version *version = more ? malloc(sizeof *version) : NULL;
    if (more)
        d->reloaded = more;
    if (!version) {
        SL_LOG(SL_LOG_ERROR, "msg=\"reload failed: out of memory\"");
        sl_config_free(next);
        return;
    }
    *version = (sl_config_version){next, ++d->generation};
    d->reloaded[d->reload_count++] = version;
    d->config = next;
    for (int i = 0; i < d->started; i++)
        sl_worker_reload(d->workers[i], version);
    SL_LOG(SL_LOG_INFO, "msg=\"configuration reloaded\" file=%s tenants=%zu template=%s",
           d->config_path, next->tenant_count, next->template_tenant ? "yes" : "no");
}

/* Frees the configurations no worker uses any more (config_retire.h). */
static void retire_configs(daemon_state *d)
{
    if (d->started < d->worker_count || !d->in_use)
        return; /* some worker never ran: keep everything */
    for (int i = 0; i < d->started; i++)
        d->in_use[i] = sl_worker_oldest_generation(d->workers[i]);
    unsigned kept[64];
    size_t n = d->reload_count < 64 ? d->reload_count : 64;
    for (size_t i = 0; i < n; i++)
        kept[i] = d->reloaded[i]->generation;
    size_t done = sl_configs_retirable(kept, n, d->in_use, (size_t)d->started);
    if (done == 0)
        return;
    for (size_t i = 0; i < done; i++) {
        sl_config_free(d->reloaded[i]->config);
        free(d->reloaded[i]);
    }
    memmove(d->reloaded, d->reloaded + done, (d->reload_count - done) * sizeof *d->reloaded);
    d->reload_count -= done;
    SL_LOG(SL_LOG_DEBUG, "msg=\"old configurations freed\" count=%zu kept=%zu", done, d->reload_count);
}

static void on_retire_timer(evutil_socket_t fd, short kind, void *arg)
{
    (void)fd;
    (void)kind;
    retire_configs(arg);
}

static void on_hup(evutil_socket_t sig, short kind, void *arg)
{
    (void)sig;
    (void)kind;
    daemon_state *d = arg;
    if (d->signals_seen > 0)
        return; /* stopping: nothing to reload for */
    char reloading[96];
    snprintf(reloading, sizeof reloading, "RELOADING=1\nMONOTONIC_USEC=%" PRId64,
             sl_monotonic_us());
    sl_sd_notify(reloading);
    reload(d);
    retire_configs(d);
    sl_sd_notify("READY=1");
}

/* ---- what the admin endpoint shows ---- */

static bool admin_metrics(void *ctx, struct evbuffer *out)
{
    daemon_state *d = ctx;
    sl_process_view view = {.version = SLUICE_VERSION, .ready = true};
    for (int i = 0; i < d->started; i++) {
        sl_worker_lock_tenants(d->workers[i]);
        view.tenant_count += sl_worker_tenant_views(d->workers[i], NULL, 0);
        view.ready &= sl_worker_ready(d->workers[i]);
        sl_worker_redis_counts(d->workers[i], &view.redis_errors, &view.redis_reconnects);
        sl_worker_discovery_refused(d->workers[i], &view.discovery_refused);
    }
    long long discovered = atomic_load(&d->discovery.discovered);
    view.discovered_tenants = discovered > 0 ? (uint64_t)discovered : 0;
    sl_tenant_view *tenants = calloc(view.tenant_count + 1, sizeof *tenants);
    size_t filled = 0;
    for (int i = 0; tenants && i < d->started; i++)
        filled += sl_worker_tenant_views(d->workers[i], tenants + filled, view.tenant_count - filled);
    view.tenants = tenants;
    bool ok = tenants && sl_metrics_render(out, &view);
    for (int i = 0; i < d->started; i++)
        sl_worker_unlock_tenants(d->workers[i]);
    free(tenants);
    return ok;
}

static bool admin_ready(void *ctx, char *reason, size_t reason_size)
{
    daemon_state *d = ctx;
    if (atomic_load(&d->finished) > 0 || d->started < d->worker_count) {
        snprintf(reason, reason_size, "not running: workers stopped or not started");
        return false;
    }
    for (int i = 0; i < d->started; i++)
        if (!sl_worker_ready(d->workers[i])) {
            snprintf(reason, reason_size,
                     "worker %d: not connected to Redis with its scripts loaded, or stopping", i);
            return false;
        }
    return true;
}

static uint64_t random_seed(void)
{
    uint64_t seed = 0;
    if (getrandom(&seed, sizeof seed, 0) != sizeof seed)
        seed = (uint64_t)time(NULL) ^ (uint64_t)getpid();
    return seed;
}

int sl_daemon_run(const sl_config *config, const char *config_path, FILE *trace)
{
    if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK || evthread_use_pthreads() != 0) {
        SL_LOG(SL_LOG_ERROR, "msg=\"cannot initialise libcurl or libevent threads\"");
        return 1;
    }
    signal(SIGPIPE, SIG_IGN);
    daemon_state d = {.config = config, .config_path = config_path};
    atomic_init(&d.finished, 0);
    atomic_init(&d.discovery.discovered, 0);
    int n = config->workers;
    d.worker_count = n;
    d.base = event_base_new();
    d.workers = calloc((size_t)n, sizeof *d.workers);
    d.threads = calloc((size_t)n, sizeof *d.threads);
    d.exit_codes = calloc((size_t)n, sizeof *d.exit_codes);
    d.in_use = calloc((size_t)n, sizeof *d.in_use);
    d.loop_ended = calloc((size_t)n, sizeof *d.loop_ended);
    for (int i = 0; d.loop_ended && i < n; i++)
        atomic_init(&d.loop_ended[i], false);
    worker_start *starts = calloc((size_t)n, sizeof *starts);
    struct event *term = d.base ? evsignal_new(d.base, SIGTERM, on_stop_signal, &d) : NULL;
    struct event *interrupt = d.base ? evsignal_new(d.base, SIGINT, on_stop_signal, &d) : NULL;
    struct event *hup = d.base ? evsignal_new(d.base, SIGHUP, on_hup, &d) : NULL;
    d.worker_done = d.base ? event_new(d.base, -1, 0, on_worker_done, &d) : NULL;
    d.retire_timer = d.base ? event_new(d.base, -1, EV_PERSIST, on_retire_timer, &d) : NULL;
    int code = 1;
    if (!d.base || !d.workers || !d.threads || !d.exit_codes || !d.in_use || !d.loop_ended ||
        !starts || !term ||
        !interrupt || !hup || !d.worker_done || !d.retire_timer) {
        SL_LOG(SL_LOG_ERROR, "msg=\"out of memory starting the daemon\"");
        goto done;
    }
    event_add(term, NULL);
    event_add(interrupt, NULL);
    event_add(hup, NULL);
    struct timeval retire_every = {1, 0};
    event_add(d.retire_timer, &retire_every);
    SL_LOG(SL_LOG_INFO, "msg=\"starting\" workers=%d tenants=%zu template=%s redis=%s", n,
           config->tenant_count, config->template_tenant ? "yes" : "no",
           config->redis_url_redacted);
    for (int i = 0; i < n; i++) {
        d.workers[i] = sl_worker_new(config, i, n, random_seed(), trace, &d.discovery);
        starts[i] = (worker_start){&d, i};
        if (!d.workers[i] || pthread_create(&d.threads[i], NULL, worker_thread, &starts[i]) != 0) {
            SL_LOG(SL_LOG_ERROR, "msg=\"cannot start worker\" worker=%d", i);
            d.worker_failed = true; /* so a worker's end does not turn this STOP into a DRAIN */
            for (int j = 0; j < d.started; j++)
                sl_worker_command(d.workers[j], SL_WORKER_STOP);
            break;
        }
        d.started++;
    }
    struct event *watchdog = NULL;
    int64_t watchdog_usec = sl_sd_watchdog_usec(getenv("WATCHDOG_USEC"), getenv("WATCHDOG_PID"),
                                                (long)getpid());
    d.last_heartbeat = calloc((size_t)n, sizeof *d.last_heartbeat);
    d.heartbeat = calloc((size_t)n, sizeof *d.heartbeat);
    d.ended = calloc((size_t)n, sizeof *d.ended);
    if (d.started == n && watchdog_usec > 0 && d.last_heartbeat && d.heartbeat && d.ended) {
        watchdog = event_new(d.base, -1, EV_PERSIST, on_watchdog, &d);
        d.check_heartbeats = watchdog_usec / 2 >= 500000; /* workers beat every 100 ms */
        struct timeval half = {(time_t)(watchdog_usec / 2 / 1000000),
                               (suseconds_t)(watchdog_usec / 2 % 1000000)};
        if (watchdog)
            event_add(watchdog, &half);
    }
    if (d.started == n && config->admin_host) {
        char err[256];
        d.admin_source = (sl_admin_source){admin_metrics, admin_ready, &d};
        d.admin = sl_admin_start(config->admin_host, config->admin_port, &d.admin_source, err,
                                 sizeof err);
        if (d.admin) {
            SL_LOG(SL_LOG_INFO, "msg=\"admin endpoint listening\" address=%s port=%d",
                   config->admin_host, sl_admin_port(d.admin));
        } else {
            /* Asked for and not there: fail loudly rather than run unwatched. */
            SL_LOG(SL_LOG_ERROR, "msg=\"%s\"", err);
            d.worker_failed = true;
            for (int i = 0; i < d.started; i++)
                sl_worker_command(d.workers[i], SL_WORKER_DRAIN);
        }
    }
    if (d.started == n && !d.worker_failed) {
        char status[128];
        snprintf(status, sizeof status, "READY=1\nSTATUS=running %d workers, %zu tenants%s", n,
                 config->tenant_count, config->template_tenant ? " and the \"*\" template" : "");
        sl_sd_notify(status);
    }
    if (d.started > 0)
        event_base_dispatch(d.base);
    if (watchdog)
        event_free(watchdog);
    if (d.signals_seen >= 2)
        return SL_DAEMON_EXIT_NOW; /* workers may still run: nothing is freed */
    sl_admin_stop(d.admin); /* before the workers free what it reads */
    code = d.started == n && !d.worker_failed ? 0 : 1;
    for (int i = 0; i < d.started; i++) {
        pthread_join(d.threads[i], NULL);
        if (d.exit_codes[i] != 0)
            code = 1;
    }
    SL_LOG(SL_LOG_INFO, "msg=\"stopped\" exit_code=%d", code);
done:
    for (int i = 0; d.workers && i < n; i++)
        sl_worker_free(d.workers[i]);
    if (term)
        event_free(term);
    if (interrupt)
        event_free(interrupt);
    if (hup)
        event_free(hup);
    if (d.worker_done)
        event_free(d.worker_done);
    if (d.retire_timer)
        event_free(d.retire_timer);
    if (d.base)
        event_base_free(d.base);
    free(starts);
    for (size_t i = 0; i < d.reload_count; i++) {
        sl_config_free(d.reloaded[i]->config);
        free(d.reloaded[i]);
    }
    free(d.reloaded);
    free(d.in_use);
    free(d.last_heartbeat);
    free(d.heartbeat);
    free(d.ended);
    free(d.loop_ended);
    free(d.exit_codes);
    free(d.threads);
    free(d.workers);
    curl_global_cleanup();
    return code;
}
