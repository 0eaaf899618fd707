/* cli_stats.c - `sluice stats`: per tenant, what waits where in Redis. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "cli.h"
#include "cli_redis.h"
#include "keys.h"

static const char stats_help[] =
    "Usage: sluice stats (-c FILE | --redis URL) [--prefix P] [TENANT] [--json]\n"
    "\n"
    "Prints per tenant: queued (jobs in the queue), scheduled (claimed jobs\n"
    "leased to a worker, waiting for their slot or being delivered), retrying,\n"
    "dead-lettered, the configured rate (jobs/s; '-' if unknown) and the\n"
    "current shaping delay in ms (how far the tenant's next free slot lies in\n"
    "the future). Without TENANT: every tenant of the config, of\n"
    "<prefix>:tenants and with a queue key in Redis.\n"
    "\n" SL_CLI_COMMON_HELP
    "      --json          print {\"tenants\": [...]} instead of a table\n";

typedef struct tenant_stats {
    char name[SL_TENANT_NAME_MAX + 1];
    long long queued, scheduled, retrying, dead;
    int64_t rate_milli; /* -1: unknown */
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

/* Collects tenant names from the config, <prefix>:tenants and queue keys. */
static int discover(sl_cli *cli, stats_list *list)
{
    if (cli->config)
        for (size_t i = 0; i < cli->config->tenant_count; i++)
            if (!add_tenant(list, cli->config->tenants[i].name))
                return out_of_memory();
    redisReply *reply = redisCommand(cli->conn, "SMEMBERS %s:tenants", cli->prefix);
    if (!reply) {
        fprintf(stderr, "sluice stats: redis %s: %s\n", cli->address, cli->conn->errstr);
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
    char cursor[32] = "0", pattern[SL_KEY_MAX];
    snprintf(pattern, sizeof pattern, "%s:{*}:queue", cli->prefix);
    do {
        reply = redisCommand(cli->conn, "SCAN %s MATCH %s COUNT 1000", cursor, pattern);
        if (!reply) {
            fprintf(stderr, "sluice stats: redis %s: %s\n", cli->address, cli->conn->errstr);
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

static bool integer_of(const redisReply *r, long long *out)
{
    if (r->type == REDIS_REPLY_INTEGER) {
        *out = r->integer;
        return true;
    }
    return false;
}

/* TIME, then LLEN, ZCARD, ZCARD, LLEN, HGET per tenant, in one pipeline. */
static int measure(sl_cli *cli, stats_list *list)
{
    redisAppendCommand(cli->conn, "TIME");
    for (size_t i = 0; i < list->count; i++) {
        sl_tenant_keys keys;
        sl_tenant_keys_init(&keys, cli->prefix, list->items[i].name);
        redisAppendCommand(cli->conn, "LLEN %s", keys.queue);
        redisAppendCommand(cli->conn, "ZCARD %s", keys.inflight);
        redisAppendCommand(cli->conn, "ZCARD %s", keys.retry);
        redisAppendCommand(cli->conn, "LLEN %s", keys.dlq);
        redisAppendCommand(cli->conn, "HGET %s next_free", keys.shape);
    }
    redisReply *reply = sl_cli_reply(cli);
    if (!reply)
        return SL_CLI_RUNTIME;
    if (reply->type != REDIS_REPLY_ARRAY || reply->elements != 2) {
        freeReplyObject(reply);
        return sl_cli_unexpected(cli, "TIME");
    }
    int64_t now_us = strtoll(reply->element[0]->str, NULL, 10) * 1000000 +
                     strtoll(reply->element[1]->str, NULL, 10);
    freeReplyObject(reply);
    for (size_t i = 0; i < list->count; i++) {
        tenant_stats *t = &list->items[i];
        long long *counts[] = {&t->queued, &t->scheduled, &t->retrying, &t->dead};
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
        t->delay_ms = 0;
        if (reply->type == REDIS_REPLY_STRING) {
            int64_t next_free = strtoll(reply->str, NULL, 10);
            if (next_free > now_us)
                t->delay_ms = (next_free - now_us + 999) / 1000;
        }
        freeReplyObject(reply);
        const sl_tenant_config *cfg = cli->config ? sl_config_tenant_for(cli->config, t->name)
                                                  : NULL;
        t->rate_milli = cfg ? cfg->rate_milli : -1;
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

static int print_table(const stats_list *list)
{
    int width = 6;
    for (size_t i = 0; i < list->count; i++) {
        int len = (int)strlen(list->items[i].name);
        if (len > width)
            width = len;
    }
    printf("%-*s %10s %10s %10s %10s %10s %10s\n", width, "TENANT", "QUEUED", "SCHEDULED",
           "RETRYING", "DEAD", "RATE/S", "DELAY_MS");
    for (size_t i = 0; i < list->count; i++) {
        const tenant_stats *t = &list->items[i];
        char rate[32];
        format_rate(rate, sizeof rate, t->rate_milli);
        printf("%-*s %10lld %10lld %10lld %10lld %10s %10" PRId64 "\n", width, t->name, t->queued,
               t->scheduled, t->retrying, t->dead, rate, t->delay_ms);
    }
    return SL_CLI_OK;
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
             cJSON_AddNumberToObject(o, "scheduled", (double)t->scheduled) &&
             cJSON_AddNumberToObject(o, "retrying", (double)t->retrying) &&
             cJSON_AddNumberToObject(o, "dead_lettered", (double)t->dead) &&
             (t->rate_milli < 0
                  ? cJSON_AddNullToObject(o, "rate") != NULL
                  : cJSON_AddNumberToObject(o, "rate", (double)t->rate_milli / 1000) != NULL) &&
             cJSON_AddNumberToObject(o, "delay_ms", (double)t->delay_ms);
    }
    if (!ok) {
        cJSON_Delete(root);
        root = NULL;
    }
    return sl_cli_print_json("stats", root);
}

int sl_cli_stats(int argc, char **argv)
{
    static const struct option options[] = {
        SL_CLI_COMMON_OPTIONS, {"json", no_argument, NULL, SL_CLI_OPT_JSON}, {NULL, 0, NULL, 0}};
    sl_cli_opts opts = {0};
    bool json = false;
    int opt;
    optind = 0; /* 0, not 1: glibc then forgets main's "+" (stop at the first operand) */
    while ((opt = getopt_long(argc, argv, "c:h", options, NULL)) != -1) {
        if (opt == 'h') {
            fputs(stats_help, stdout);
            return SL_CLI_OK;
        }
        if (opt == SL_CLI_OPT_JSON)
            json = true;
        else if (!sl_cli_common_option(&opts, opt, optarg)) {
            fputs(stats_help, stderr);
            return SL_CLI_USAGE;
        }
    }
    if (argc - optind > 1) {
        fprintf(stderr, "sluice stats: unexpected argument '%s' (see --help)\n", argv[optind + 1]);
        return SL_CLI_USAGE;
    }
    const char *tenant = optind < argc ? argv[optind] : NULL;
    if (tenant && !sl_cli_tenant_ok("stats", tenant))
        return SL_CLI_USAGE;
    sl_cli cli;
    stats_list list = {0};
    int code = sl_cli_open(&cli, "stats", &opts);
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
        code = json ? print_json(&list) : print_table(&list);
    free(list.items);
    sl_cli_close(&cli);
    return code;
}
