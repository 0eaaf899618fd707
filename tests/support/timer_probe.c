/* timer_probe.c - see timer_probe.h. */
#include <errno.h>
#include <stdlib.h>
#include <time.h>

#include "timer_probe.h"

static int64_t now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

static void *probe(void *arg)
{
    timer_probe *p = arg;
    int64_t next = now_us() + p->interval_us;
    while (!atomic_load(&p->stop)) {
        struct timespec at = {.tv_sec = next / 1000000, .tv_nsec = (next % 1000000) * 1000};
        while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &at, NULL) == EINTR)
            ;
        if (p->n == p->cap) {
            size_t cap = p->cap ? 2 * p->cap : 4096;
            int64_t *more = realloc(p->woke, cap * sizeof *more);
            if (!more)
                break;
            p->woke = more;
            p->cap = cap;
        }
        p->woke[p->n++] = now_us();
        next += p->interval_us;
    }
    return NULL;
}

bool timer_probe_start(timer_probe *p, int64_t interval_us)
{
    *p = (timer_probe){.interval_us = interval_us};
    return pthread_create(&p->thread, NULL, probe, p) == 0;
}

static int compare_int64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

timer_probe_result timer_probe_stop(timer_probe *p)
{
    atomic_store(&p->stop, true);
    pthread_join(p->thread, NULL);
    timer_probe_result r = {0};
    if (p->n >= 2) {
        size_t gaps = p->n - 1;
        for (size_t i = 0; i < gaps; i++)
            p->woke[i] = llabs(p->woke[i + 1] - p->woke[i] - p->interval_us);
        qsort(p->woke, gaps, sizeof *p->woke, compare_int64);
        r.p95 = p->woke[(gaps - 1) * 95 / 100];
        r.max = p->woke[gaps - 1];
    }
    free(p->woke);
    *p = (timer_probe){0};
    return r;
}
