/* sentinel_client.c - see sentinel_client.h. What the replies say is
 * sentinel.c's; this file holds the links: one per sentinel asked, one at
 * a time, and the watch's subscription. */
#include "redis/sentinel_client.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/log.h"
#include "base/monotonic.h"
#include "job/backoff.h"
#include "redis/redis_link.h"

/* A lost watch comes back after a jittered backoff whose cap doubles
 * from MIN to MAX (sl_backoff_ms): soon after a sentinel restarts, and no
 * hot loop while none is up. A subscription counts as a success, and the
 * cap starts over, only once it lasted STABLE_MS: a sentinel that accepts
 * then drops is not retried every MIN_MS. */
#define WATCH_RETRY_MIN_MS 500
#define WATCH_RETRY_MAX_MS 10000
#define WATCH_STABLE_MS 1000

struct sl_sentinels {
    struct event_base *base;
    const sl_redis_target *target;
    sl_redis_link_timeouts timeouts;
    size_t count;
    sl_redis_target *nodes; /* each sentinel: its address, no AUTH, db 0 */
    size_t *order;          /* the order they are asked in */
    size_t named;           /* the sentinel (index in nodes) that named the
                               last primary; count: none */

    /* the resolution under way */
    bool resolving;
    sl_sentinels_resolved_fn fn;
    void *fn_arg;
    size_t position;      /* in order: the sentinel being asked */
    sl_redis_link *link;  /* to it; NULL between sentinels */
    bool answered;        /* it answered (then answer, addr, answer_err) */
    sl_sentinel_answer answer;
    sl_sentinel_addr addr;
    char answer_err[160];
    bool any_answered;    /* some sentinel answered, without an address */
    char reasons[1024];   /* why each sentinel asked so far gave none */
    struct event *start_ev;

    /* the watch */
    sl_sentinels_switch_fn on_switch;
    void *switch_arg;
    sl_redis_link *watch_link;
    size_t watch_position; /* in order */
    int watch_failures;    /* for the backoff: sl_backoff_failures */
    int64_t watch_up_us;   /* when the subscription was confirmed; 0: not */
    uint64_t rng;          /* the backoff's jitter */
    long watch_backoff_ms; /* the delay of the retry scheduled last */
    struct event *watch_timer;
};

/* The sentinel at position i of the order, for messages. */
static void sentinel_name(const sl_sentinels *s, size_t i, char *out, size_t out_size)
{
    const sl_redis_target *node = &s->nodes[s->order[i % s->count]];
    sl_sentinel_addr_format(node->host, node->port, out, out_size);
}

/* Appends "; reason" (or the first reason) to s->reasons, cut short if
 * the list is long: the first sentinels' reasons matter most. */
static void add_reason(sl_sentinels *s, const char *reason)
{
    size_t used = strlen(s->reasons);
    snprintf(s->reasons + used, sizeof s->reasons - used, "%s%s", used ? "; " : "", reason);
}

/* The resolution is over: s may be freed by fn, so nothing follows. */
static void finish(sl_sentinels *s, const sl_sentinel_addr *primary)
{
    s->resolving = false;
    char why[sizeof s->reasons + 64];
    if (primary) {
        if (s->reasons[0])
            snprintf(why, sizeof why, "skipped: %s", s->reasons);
        s->fn(s->fn_arg, primary, s->reasons[0] ? why : NULL);
        return;
    }
    snprintf(why, sizeof why, "%s: %s",
             s->any_answered ? "no sentinel named the primary" : "no sentinel answered",
             s->reasons);
    s->fn(s->fn_arg, NULL, why);
}

static void on_answer(redisReply *reply, void *arg)
{
    sl_sentinels *s = arg;
    if (!reply)
        return; /* the link failed: on_link_event says why */
    s->answered = true;
    s->answer = sl_sentinel_parse_master_addr(reply, &s->addr, s->answer_err, sizeof s->answer_err);
    sl_redis_link_close(s->link, "answered");
}

static void ask_current(sl_sentinels *s);

/* Up: ask. Gone: the answer is in, or this sentinel failed and the next
 * is asked. */
static void on_link_event(void *arg, bool up, const char *why)
{
    sl_sentinels *s = arg;
    if (up) {
        const char *argv[] = {"SENTINEL", "get-master-addr-by-name", s->target->master_name};
        if (!sl_redis_link_send_argv(s->link, 3, argv, NULL, on_answer, s, 0))
            sl_redis_link_close(s->link, "out of memory");
        return;
    }
    char name[SL_HOST_MAX + 16], reason[800];
    sentinel_name(s, s->position, name, sizeof name);
    if (s->answered && s->answer == SL_SENTINEL_FOUND) {
        sl_redis_link_free(s->link);
        s->link = NULL;
        s->named = s->order[s->position];
        sl_sentinel_promote(s->order, s->count, s->position);
        finish(s, &s->addr);
        return;
    }
    if (s->answered && s->answer == SL_SENTINEL_UNKNOWN)
        snprintf(reason, sizeof reason, "sentinel %s does not know primary '%s'", name,
                 s->target->master_name);
    else if (s->answered)
        snprintf(reason, sizeof reason, "sentinel %s: %s", name, s->answer_err);
    else
        snprintf(reason, sizeof reason, "%s: %s", name, why);
    s->any_answered = s->any_answered || s->answered;
    add_reason(s, reason); /* before the free: why is the link's */
    sl_redis_link_free(s->link);
    s->link = NULL;
    s->position++;
    ask_current(s);
}

/* Opens a link to the sentinel at s->position, or to the next that can
 * be opened; none left: the resolution fails. */
static void ask_current(sl_sentinels *s)
{
    for (; s->position < s->count; s->position++) {
        s->answered = false;
        char err[256];
        s->link = sl_redis_link_open(s->base, &s->nodes[s->order[s->position]], &s->timeouts,
                                     on_link_event, NULL, s, err, sizeof err);
        if (s->link)
            return;
        char name[SL_HOST_MAX + 16], reason[800];
        sentinel_name(s, s->position, name, sizeof name);
        snprintf(reason, sizeof reason, "%s: %s", name, err);
        add_reason(s, reason);
    }
    finish(s, NULL);
}

static void on_start(evutil_socket_t fd, short kind, void *arg)
{
    (void)fd;
    (void)kind;
    ask_current(arg);
}

bool sl_sentinels_resolve(sl_sentinels *s, sl_sentinels_resolved_fn fn, void *arg)
{
    if (s->resolving)
        return false;
    struct timeval now = {0, 0};
    if (evtimer_add(s->start_ev, &now) != 0)
        return false;
    s->resolving = true;
    s->fn = fn;
    s->fn_arg = arg;
    s->position = 0;
    s->any_answered = false;
    s->reasons[0] = '\0';
    return true;
}

void sl_sentinels_demote_named(sl_sentinels *s)
{
    for (size_t i = 0; i < s->count; i++) {
        if (s->order[i] != s->named)
            continue;
        char name[SL_HOST_MAX + 16];
        sentinel_name(s, i, name, sizeof name);
        SL_LOG(SL_LOG_WARNING, "msg=\"sentinel named a node that is not the primary; asking the "
                               "others first\" sentinel=%s", name);
        sl_sentinel_demote(s->order, s->count, i);
        break;
    }
    s->named = s->count;
}

/* ---- the watch ---------------------------------------------------------- */

/* The watch failed or was lost: the next attempt after the backoff
 * (s->watch_backoff_ms, for the log line that follows). */
static void watch_retry(sl_sentinels *s)
{
    int64_t up_ms = s->watch_up_us ? (sl_monotonic_us() - s->watch_up_us) / 1000 : -1;
    s->watch_up_us = 0;
    s->watch_failures = sl_backoff_failures(s->watch_failures, up_ms, WATCH_STABLE_MS);
    s->watch_backoff_ms = (long)sl_backoff_ms(s->watch_failures, WATCH_RETRY_MIN_MS,
                                              WATCH_RETRY_MAX_MS, sl_random_u64(&s->rng));
    struct timeval tv = {s->watch_backoff_ms / 1000, (s->watch_backoff_ms % 1000) * 1000};
    evtimer_add(s->watch_timer, &tv);
}

static void on_watch_message(redisReply *reply, void *arg)
{
    sl_sentinels *s = arg;
    if (!reply)
        return;
    if (reply->type == REDIS_REPLY_ERROR) {
        SL_LOG(SL_LOG_WARNING, "msg=\"sentinel refused SUBSCRIBE +switch-master\" error=\"%.100s\"",
               reply->str);
        sl_redis_link_close(s->watch_link, "SUBSCRIBE refused");
        return;
    }
    if (reply->type == REDIS_REPLY_ARRAY && reply->elements == 3 &&
        reply->element[0]->type == REDIS_REPLY_STRING &&
        strcmp(reply->element[0]->str, "subscribe") == 0) {
        s->watch_up_us = sl_monotonic_us();
        return;
    }
    sl_sentinel_addr to;
    char err[160];
    switch (sl_sentinel_parse_switch(reply, s->target->master_name, &to, err, sizeof err)) {
    case SL_SWITCH_OURS:
        s->on_switch(s->switch_arg, &to);
        break;
    case SL_SWITCH_BAD:
        SL_LOG(SL_LOG_WARNING, "msg=\"sentinel sent an unreadable +switch-master\" error=\"%s\"",
               err);
        break;
    case SL_SWITCH_OTHER:
        break;
    }
}

static void on_watch_event(void *arg, bool up, const char *why)
{
    sl_sentinels *s = arg;
    if (up) {
        const char *argv[] = {"SUBSCRIBE", "+switch-master"};
        if (!sl_redis_link_send_argv(s->watch_link, 2, argv, NULL, on_watch_message, s,
                                     SL_LINK_SUBSCRIBE))
            sl_redis_link_close(s->watch_link, "out of memory");
        return;
    }
    char name[SL_HOST_MAX + 16];
    sentinel_name(s, s->watch_position, name, sizeof name);
    watch_retry(s);
    SL_LOG(SL_LOG_WARNING,
           "msg=\"sentinel watch lost; failovers are seen when the connection breaks\" "
           "sentinel=%s error=\"%s\" retry_ms=%ld",
           name, why, s->watch_backoff_ms);
    sl_redis_link_free(s->watch_link);
    s->watch_link = NULL;
    s->watch_position++; /* the next sentinel next time */
}

static void watch_connect(evutil_socket_t fd, short kind, void *arg)
{
    (void)fd;
    (void)kind;
    sl_sentinels *s = arg;
    char err[256];
    s->watch_link = sl_redis_link_open(s->base, &s->nodes[s->order[s->watch_position % s->count]],
                                       &s->timeouts, on_watch_event, NULL, s, err, sizeof err);
    if (!s->watch_link) {
        char name[SL_HOST_MAX + 16];
        sentinel_name(s, s->watch_position, name, sizeof name);
        watch_retry(s);
        SL_LOG(SL_LOG_WARNING, "msg=\"sentinel watch cannot connect\" sentinel=%s error=\"%s\" "
                               "retry_ms=%ld", name, err, s->watch_backoff_ms);
        s->watch_position++;
    }
}

void sl_sentinels_watch(sl_sentinels *s, sl_sentinels_switch_fn fn, void *arg)
{
    s->on_switch = fn;
    s->switch_arg = arg;
    s->watch_failures = 0;
    if (!s->watch_link) {
        struct timeval now = {0, 0};
        evtimer_add(s->watch_timer, &now);
    }
}

/* ---- life ---------------------------------------------------------------- */

sl_sentinels *sl_sentinels_new(struct event_base *base, const sl_redis_target *target,
                               int timeout_ms)
{
    sl_sentinels *s = calloc(1, sizeof *s);
    if (!s)
        return NULL;
    s->base = base;
    s->target = target;
    s->timeouts = (sl_redis_link_timeouts){timeout_ms, timeout_ms, timeout_ms};
    s->count = target->seed_count;
    s->named = s->count;
    s->rng = (uint64_t)sl_monotonic_us() ^ (uint64_t)(uintptr_t)s; /* jitter, not secrecy */
    s->nodes = calloc(s->count ? s->count : 1, sizeof *s->nodes);
    s->order = calloc(s->count ? s->count : 1, sizeof *s->order);
    s->start_ev = evtimer_new(base, on_start, s);
    s->watch_timer = evtimer_new(base, watch_connect, s);
    bool ok = s->nodes && s->order && s->start_ev && s->watch_timer;
    /* A sentinel is asked without AUTH, in its only db: the nodes are
     * made from a view of target without the data node's credentials, so
     * no copy of its password is made (nor left unzeroed in freed memory). */
    sl_redis_target anonymous = *target;
    anonymous.username = anonymous.password = NULL;
    anonymous.db = 0;
    for (size_t i = 0; ok && i < s->count; i++) {
        s->order[i] = i;
        ok = sl_redis_target_node(&anonymous, target->seeds[i].host, target->seeds[i].port,
                                  &s->nodes[i]);
    }
    if (!ok || s->count == 0) {
        sl_sentinels_free(s);
        return NULL;
    }
    return s;
}

void sl_sentinels_free(sl_sentinels *s)
{
    if (!s)
        return;
    sl_redis_link_free(s->link); /* on_answer gets NULL; the event is not called */
    sl_redis_link_free(s->watch_link);
    if (s->start_ev)
        event_free(s->start_ev);
    if (s->watch_timer)
        event_free(s->watch_timer);
    for (size_t i = 0; s->nodes && i < s->count; i++)
        sl_redis_target_clear(&s->nodes[i]);
    free(s->nodes);
    free(s->order);
    free(s);
}
