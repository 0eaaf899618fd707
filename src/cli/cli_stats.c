/* cli_stats.c - `sluice stats`: per tenant, what waits where in Redis. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "cli/cli.h"
#include "cli/cli_redis.h"
#include "redis/keys.h"
#include "admission/settings.h"
#include "admission/stats_split.h"

static const char stats_help[] =
    "Usage: sluice stats (-c FILE | --redis URL) [--prefix P] [TENANT] [--json]\n"
    "\n"
    "Prints per tenant: queued (jobs in the queue), scheduled (claimed by a\n"
    "worker, their departure slot still ahead), in flight (claimed, slot\n"
    "passed: being delivered), retrying, dead-lettered, the effective rate\n"
    "(jobs/s; '-' if unknown), the current shaping delay in ms (how far the\n"
    "tenant's next free slot lies in the future) and where the rate comes from:\n"
    "file, override or adaptive (see sluice tenant), or 'paused'. Without\n"
    "TENANT: every tenant of the config, of <prefix>:tenants and with a queue\n"
    "key in Redis.\n"
    "\n"
    "Scheduled and in flight are an estimate: Redis leases each claimed job\n"
    "but does not keep its slot. A tenant's slots are spaced exactly 1/rate\n"
    "apart up to its next free slot, so of the claimed jobs, as many as there\n"
    "are slots between now and that next free slot count as scheduled, the\n"
    "rest as in flight. A 429 or 503 pause moves the next free slot to the end\n"
    "of the pause: during a pause, claimed jobs show as scheduled. The split\n"
    "needs the rate: without -c, both show '-' while the next free slot lies\n"
    "ahead (--json's \"claimed\", their sum, is always exact).\n"
    "\n" SL_CLI_COMMON_HELP
    "      --json          print {\"tenants\": [...]} instead of a table\n";

typedef struct tenant_stats {
    char name[SL_TENANT_NAME_MAX + 1];
    long long queued, claimed, retrying, dead;
    bool split_known;
    sl_stats_split split; /* of claimed, if split_known */
    int64_t rate_milli; /* the effective rate; -1: unknown */
    sl_rate_source rate_source;
    bool paused;
    int64_t delay_ms;
} tenant_stats;

typedef struct stats_list {
    tenant_stats *items;
    size_t count, cap;
} stats_list;

/* Adds name unless present; false only when out of memory. */
static bool add_tenant(stats_list *list, const char *name)
{
    for (size_t i = 0; i < list->count; i++)
        if (strcmp(list->items[i].name, name) == 0)
            return true;
    if (list->count == list->cap) {
        size_t cap = list->cap ? list->cap * 2 : 16;
        tenant_stats *items = realloc(list->items, cap * sizeof *items);
        if (!items)
            return false;
        list->items = items;
        list->cap = cap;
    }
    tenant_stats *t = &list->items[list->count++];
    memset(t, 0, sizeof *t);
    snprintf(t->name, sizeof t->name, "%s", name);
    return true;
}

static int by_name(const void *a, const void *b)
{
    return strcmp(((const tenant_stats *)a)->name, ((const tenant_stats *)b)->name);
}

static int out_of_memory(void)
{
    fputs("sluice stats: out of memory\n", stderr);
    return SL_CLI_RUNTIME;
}

/* Collects the tenants of queue keys on primary `primary` into list. */
static int scan_queues(sl_cli *cli, size_t primary, stats_list *list)
{
    redisReply *reply;
    char cursor[32] = "0", pattern[SL_KEY_MAX];
    snprintf(pattern, sizeof pattern, "%s:{*}:queue", cli->prefix);
    do {
        reply = sl_cli_command_to(cli, primary, "SCAN %s MATCH %s COUNT 1000", cursor, pattern);
        if (!reply) {
            fprintf(stderr, "sluice stats: redis %s: %s\n", cli->address, sl_cli_error(cli));
            return SL_CLI_RUNTIME;
        }
        if (reply->type != REDIS_REPLY_ARRAY || reply->elements != 2 ||
            reply->element[0]->type != REDIS_REPLY_STRING ||
            reply->element[1]->type != REDIS_REPLY_ARRAY) {
            freeReplyObject(reply);
            return sl_cli_unexpected(cli, "SCAN");
        }
        snprintf(cursor, sizeof cursor, "%s", reply->element[0]->str);
        redisReply *keys = reply->element[1];
        for (size_t i = 0; i < keys->elements; i++) {
            char name[SL_TENANT_NAME_MAX + 1];
            if (keys->element[i]->str &&
                sl_tenant_from_queue_key(keys->element[i]->str, keys->element[i]->len,
                                         cli->prefix, name, sizeof name) &&
                !add_tenant(list, name)) {
                freeReplyObject(reply);
                return out_of_memory();
            }
        }
        freeReplyObject(reply);
    } while (strcmp(cursor, "0") != 0);
    return SL_CLI_OK;
}

/* Collects tenant names from the config, <prefix>:tenants and the queue
 * keys on every primary. */
static int discover(sl_cli *cli, stats_list *list)
{
    if (cli->config)
        for (size_t i = 0; i < cli->config->tenant_count; i++)
            if (!add_tenant(list, cli->config->tenants[i].name))
                return out_of_memory();
    char tenants_key[SL_KEY_MAX];
    snprintf(tenants_key, sizeof tenants_key, "%s:tenants", cli->prefix);
    redisReply *reply = sl_cli_command(cli, tenants_key, "SMEMBERS %s", tenants_key);
    if (!reply) {
        fprintf(stderr, "sluice stats: redis %s: %s\n", cli->address, sl_cli_error(cli));
        return SL_CLI_RUNTIME;
    }
    if (reply->type == REDIS_REPLY_ARRAY) {
        for (size_t i = 0; i < reply->elements; i++) {
            const char *name = reply->element[i]->str;
            if (name && sl_tenant_name_valid(name) && !add_tenant(list, name)) {
                freeReplyObject(reply);
                return out_of_memory();
            }
        }
    }
    freeReplyObject(reply);
    int code = SL_CLI_OK;
    for (size_t i = 0; code == SL_CLI_OK && i < sl_cli_primary_count(cli); i++)
        code = scan_queues(cli, i, list);
    return code;
}

static bool integer_of(const redisReply *r, long long *out)
{
    if (r->type == REDIS_REPLY_INTEGER) {
        *out = r->integer;
        return true;
    }
    return false;
}

/* An integer field of an HMGET reply, 0 if absent. */
static int64_t hash_field(const redisReply *r)
{
    return r->type == REDIS_REPLY_STRING ? strtoll(r->str, NULL, 10) : 0;
}

/* The settings hash's fields, in the order settings_of reads them. */
#define SETTINGS_HMGET "HMGET %s rate capacity concurrency paused_until adaptive_rate"

/* The effective rate of t, as its next claim will decide it (the file's
 * adaptive bounds are not read: an adaptive rate in Redis counts, as
 * tenant show counts it). */
static void settings_of(tenant_stats *t, const redisReply *r, const sl_tenant_config *cfg,
                        int64_t now_us)
{
    int64_t v[5] = {0};
    for (size_t i = 0; i < 5 && i < r->elements; i++)
        if (r->element[i]->type == REDIS_REPLY_STRING)
            v[i] = sl_settings_field(r->element[i]->str);
    sl_settings s = {.rate_milli = v[0], .capacity = v[1], .concurrency = v[2],
                     .paused_until_ms = v[3], .adaptive_rate_milli = v[4]};
    sl_settings_file file = {.rate_milli = cfg ? cfg->rate_milli : 0,
                             .adaptive_max_milli = s.adaptive_rate_milli > 0 ? INT64_MAX : 0};
    sl_settings_effective e = sl_settings_apply(&s, &file, now_us / 1000);
    t->rate_source = e.rate_source;
    t->paused = e.paused;
    t->rate_milli = e.rate_source == SL_RATE_FILE && !cfg ? -1 : e.rate_milli;
}

/* TIME, then LLEN, ZCARD, ZCARD, LLEN, HMGET, HMGET per tenant, in one
 * pipeline. */
static int measure(sl_cli *cli, stats_list *list)
{
    if (!sl_cli_append(cli, NULL, "TIME"))
        return SL_CLI_RUNTIME;
    for (size_t i = 0; i < list->count; i++) {
        sl_tenant_keys keys;
        if (!sl_cli_tenant_keys(cli, list->items[i].name, &keys))
            return SL_CLI_RUNTIME;
        bool queued = sl_cli_append(cli, keys.queue, "LLEN %s", keys.queue) &&
                      sl_cli_append(cli, keys.inflight, "ZCARD %s", keys.inflight) &&
                      sl_cli_append(cli, keys.retry, "ZCARD %s", keys.retry) &&
                      sl_cli_append(cli, keys.dlq, "LLEN %s", keys.dlq) &&
                      sl_cli_append(cli, keys.shape, "HMGET %s next_free frac", keys.shape) &&
                      sl_cli_append(cli, keys.settings, SETTINGS_HMGET, keys.settings);
        sl_tenant_keys_free(&keys);
        if (!queued)
            return SL_CLI_RUNTIME;
    }
    redisReply *reply = sl_cli_reply(cli);
    if (!reply)
        return SL_CLI_RUNTIME;
    if (reply->type != REDIS_REPLY_ARRAY || reply->elements != 2 ||
        reply->element[0]->type != REDIS_REPLY_STRING ||
        reply->element[1]->type != REDIS_REPLY_STRING) {
        freeReplyObject(reply);
        return sl_cli_unexpected(cli, "TIME");
    }
    int64_t now_us = strtoll(reply->element[0]->str, NULL, 10) * 1000000 +
                     strtoll(reply->element[1]->str, NULL, 10);
    freeReplyObject(reply);
    for (size_t i = 0; i < list->count; i++) {
        tenant_stats *t = &list->items[i];
        long long *counts[] = {&t->queued, &t->claimed, &t->retrying, &t->dead};
        for (int k = 0; k < 4; k++) {
            if (!(reply = sl_cli_reply(cli)))
                return SL_CLI_RUNTIME;
            bool ok = integer_of(reply, counts[k]);
            freeReplyObject(reply);
            if (!ok)
                return sl_cli_unexpected(cli, k % 3 == 0 ? "LLEN" : "ZCARD");
        }
        if (!(reply = sl_cli_reply(cli)))
            return SL_CLI_RUNTIME;
        if (reply->type != REDIS_REPLY_ARRAY || reply->elements != 2) {
            freeReplyObject(reply);
            return sl_cli_unexpected(cli, "HMGET");
        }
        int64_t next_free = hash_field(reply->element[0]), frac = hash_field(reply->element[1]);
        freeReplyObject(reply);
        if (!(reply = sl_cli_reply(cli)))
            return SL_CLI_RUNTIME;
        if (reply->type != REDIS_REPLY_ARRAY) {
            freeReplyObject(reply);
            return sl_cli_unexpected(cli, "HMGET");
        }
        t->delay_ms = next_free > now_us ? (next_free - now_us + 999) / 1000 : 0;
        const sl_tenant_config *cfg = cli->config ? sl_config_tenant_for(cli->config, t->name)
                                                  : NULL;
        settings_of(t, reply, cfg, now_us);
        freeReplyObject(reply);
        t->split_known = sl_stats_split_claimed(t->claimed, next_free, frac, now_us,
                                                t->rate_milli, &t->split);
    }
    return SL_CLI_OK;
}

/* "10", "0.5", "2.125": milli-jobs/s as jobs/s without trailing zeros. */
static void format_rate(char *out, size_t size, int64_t rate_milli)
{
    if (rate_milli < 0) {
        snprintf(out, size, "-");
        return;
    }
    snprintf(out, size, "%" PRId64 ".%03" PRId64, rate_milli / 1000, rate_milli % 1000);
    char *end = out + strlen(out) - 1;
    while (*end == '0')
        *end-- = '\0';
    if (*end == '.')
        *end = '\0';
}

/* A count for the table, "-" if unknown. */
static void format_count(char *out, size_t size, bool known, int64_t n)
{
    if (known)
        snprintf(out, size, "%" PRId64, n);
    else
        snprintf(out, size, "-");
}

static int print_table(const stats_list *list)
{
    int width = 6;
    for (size_t i = 0; i < list->count; i++) {
        int len = (int)strlen(list->items[i].name);
        if (len > width)
            width = len;
    }
    printf("%-*s %10s %10s %10s %10s %10s %10s %10s  %-8s\n", width, "TENANT", "QUEUED",
           "SCHEDULED", "IN_FLIGHT", "RETRYING", "DEAD", "RATE/S", "DELAY_MS", "SOURCE");
    for (size_t i = 0; i < list->count; i++) {
        const tenant_stats *t = &list->items[i];
        char rate[32], scheduled[24], in_flight[24];
        format_rate(rate, sizeof rate, t->rate_milli);
        format_count(scheduled, sizeof scheduled, t->split_known, t->split.scheduled);
        format_count(in_flight, sizeof in_flight, t->split_known, t->split.in_flight);
        printf("%-*s %10lld %10s %10s %10lld %10lld %10s %10" PRId64 "  %-8s\n", width, t->name,
               t->queued, scheduled, in_flight, t->retrying, t->dead, rate, t->delay_ms,
               t->paused ? "paused" : sl_rate_source_name(t->rate_source));
    }
    return SL_CLI_OK;
}

/* Adds name: n, or name: null if unknown. */
static bool add_count(cJSON *o, const char *name, bool known, int64_t n)
{
    return known ? cJSON_AddNumberToObject(o, name, (double)n) != NULL
                 : cJSON_AddNullToObject(o, name) != NULL;
}

static int print_json(const stats_list *list)
{
    cJSON *root = cJSON_CreateObject();
    cJSON *array = cJSON_AddArrayToObject(root, "tenants");
    bool ok = root && array;
    for (size_t i = 0; ok && i < list->count; i++) {
        const tenant_stats *t = &list->items[i];
        cJSON *o = cJSON_CreateObject();
        if (!o || !cJSON_AddItemToArray(array, o)) {
            cJSON_Delete(o);
            ok = false;
            break;
        }
        ok = cJSON_AddStringToObject(o, "tenant", t->name) &&
             cJSON_AddNumberToObject(o, "queued", (double)t->queued) &&
             cJSON_AddNumberToObject(o, "claimed", (double)t->claimed) &&
             add_count(o, "scheduled", t->split_known, t->split.scheduled) &&
             add_count(o, "in_flight", t->split_known, t->split.in_flight) &&
             cJSON_AddNumberToObject(o, "retrying", (double)t->retrying) &&
             cJSON_AddNumberToObject(o, "dead_lettered", (double)t->dead) &&
             (t->rate_milli < 0
                  ? cJSON_AddNullToObject(o, "rate") != NULL
                  : cJSON_AddNumberToObject(o, "rate", (double)t->rate_milli / 1000) != NULL) &&
             cJSON_AddNumberToObject(o, "delay_ms", (double)t->delay_ms) &&
             cJSON_AddStringToObject(o, "rate_source", sl_rate_source_name(t->rate_source)) &&
             cJSON_AddBoolToObject(o, "paused", t->paused);
    }
    if (!ok) {
        cJSON_Delete(root);
        root = NULL;
    }
    return sl_cli_print_json("stats", root);
}

int sl_cli_stats(int argc, char **argv)
{
    sl_cli_opts opts;
    int operand, code;
    if (!sl_cli_parse_options(argc, argv, "stats", SL_CLI_TAKES_JSON, stats_help, &opts, &operand,
                              &code))
        return code;
    if (argc - operand > 1) {
        fprintf(stderr, "sluice stats: unexpected argument '%s' (see --help)\n", argv[operand + 1]);
        return SL_CLI_USAGE;
    }
    const char *tenant = operand < argc ? argv[operand] : NULL;
    if (tenant && !sl_cli_tenant_ok("stats", tenant))
        return SL_CLI_USAGE;
    sl_cli cli;
    stats_list list = {0};
    code = sl_cli_open(&cli, "stats", &opts);
    if (code == SL_CLI_OK)
        code = sl_cli_connect(&cli);
    if (code == SL_CLI_OK) {
        if (tenant)
            code = add_tenant(&list, tenant) ? SL_CLI_OK : out_of_memory();
        else
            code = discover(&cli, &list);
    }
    if (code == SL_CLI_OK) {
        qsort(list.items, list.count, sizeof *list.items, by_name);
        code = measure(&cli, &list);
    }
    if (code == SL_CLI_OK)
        code = opts.json ? print_json(&list) : print_table(&list);
    free(list.items);
    sl_cli_close(&cli);
    return code;
}
