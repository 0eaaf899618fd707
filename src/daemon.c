/* daemon.c - see daemon.h. Signals are handled inside the main thread's
 * event loop; workers are told through sl_worker_command. */
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include <curl/curl.h>
#include <event2/event.h>
#include <event2/thread.h>

#include "daemon.h"
#include "log.h"
#include "sd_notify.h"
#include "worker.h"

typedef struct daemon_state {
    const sl_config *config;
    struct event_base *base;
    worker **workers;
    pthread_t *threads;
    int *exit_codes;
    int started;
    atomic_int finished;
    struct event *worker_done;
    int signals_seen;
    bool worker_failed; /* one worker ended unasked: the others were told to drain */
    unsigned *last_heartbeat; /* per worker, at the previous watchdog tick */
    bool check_heartbeats;    /* ticks are far enough apart for heartbeats to move */
} daemon_state;

/* systemd's watchdog (WatchdogSec=): petted at half its interval, and only
 * while every worker's loop is seen moving, so a stuck worker gets the
 * service restarted. */
static void on_watchdog(evutil_socket_t fd, short kind, void *arg)
{
    (void)fd;
    (void)kind;
    daemon_state *d = arg;
    bool all_alive = true;
    for (int i = 0; d->check_heartbeats && i < d->started; i++) {
        unsigned beat = sl_worker_heartbeat(d->workers[i]);
        all_alive &= beat != d->last_heartbeat[i];
        d->last_heartbeat[i] = beat;
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
    }
}

static void on_hup(evutil_socket_t sig, short kind, void *arg)
{
    (void)sig;
    (void)kind;
    (void)arg;
    SL_LOG(SL_LOG_WARNING, "msg=\"SIGHUP: configuration reload is not supported yet; restart to apply changes\"");
}

static uint64_t random_seed(void)
{
    uint64_t seed = 0;
    if (getrandom(&seed, sizeof seed, 0) != sizeof seed)
        seed = (uint64_t)time(NULL) ^ (uint64_t)getpid();
    return seed;
}

int sl_daemon_run(const sl_config *config, FILE *trace)
{
    if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK || evthread_use_pthreads() != 0) {
        SL_LOG(SL_LOG_ERROR, "msg=\"cannot initialise libcurl or libevent threads\"");
        return 1;
    }
    signal(SIGPIPE, SIG_IGN);
    daemon_state d = {.config = config};
    atomic_init(&d.finished, 0);
    int n = config->workers;
    d.base = event_base_new();
    d.workers = calloc((size_t)n, sizeof *d.workers);
    d.threads = calloc((size_t)n, sizeof *d.threads);
    d.exit_codes = calloc((size_t)n, sizeof *d.exit_codes);
    worker_start *starts = calloc((size_t)n, sizeof *starts);
    struct event *term = d.base ? evsignal_new(d.base, SIGTERM, on_stop_signal, &d) : NULL;
    struct event *interrupt = d.base ? evsignal_new(d.base, SIGINT, on_stop_signal, &d) : NULL;
    struct event *hup = d.base ? evsignal_new(d.base, SIGHUP, on_hup, &d) : NULL;
    d.worker_done = d.base ? event_new(d.base, -1, 0, on_worker_done, &d) : NULL;
    int code = 1;
    if (!d.base || !d.workers || !d.threads || !d.exit_codes || !starts || !term || !interrupt ||
        !hup || !d.worker_done) {
        SL_LOG(SL_LOG_ERROR, "msg=\"out of memory starting the daemon\"");
        goto done;
    }
    event_add(term, NULL);
    event_add(interrupt, NULL);
    event_add(hup, NULL);
    SL_LOG(SL_LOG_INFO, "msg=\"starting\" workers=%d tenants=%zu template=%s redis=%s", n,
           config->tenant_count, config->template_tenant ? "yes" : "no",
           config->redis_url_redacted);
    for (int i = 0; i < n; i++) {
        d.workers[i] = sl_worker_new(config, i, n, random_seed(), trace);
        starts[i] = (worker_start){&d, i};
        if (!d.workers[i] || pthread_create(&d.threads[i], NULL, worker_thread, &starts[i]) != 0) {
            SL_LOG(SL_LOG_ERROR, "msg=\"cannot start worker\" worker=%d", i);
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
    if (d.started == n && watchdog_usec > 0 && d.last_heartbeat) {
        watchdog = event_new(d.base, -1, EV_PERSIST, on_watchdog, &d);
        d.check_heartbeats = watchdog_usec / 2 >= 500000; /* workers beat every 100 ms */
        struct timeval half = {(time_t)(watchdog_usec / 2 / 1000000),
                               (suseconds_t)(watchdog_usec / 2 % 1000000)};
        if (watchdog)
            event_add(watchdog, &half);
    }
    if (d.started == n) {
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
    if (d.base)
        event_base_free(d.base);
    free(starts);
    free(d.last_heartbeat);
    free(d.exit_codes);
    free(d.threads);
    free(d.workers);
    curl_global_cleanup();
    return code;
}
