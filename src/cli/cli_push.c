/* cli_push.c - `sluice push`: the producer helper. Every job of one
 * invocation is validated by the tenant's rules before any is pushed, so
 * a bad job never leaves half a batch behind. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/cli_redis.h"
#include "job/envelope.h"
#include "redis/keys.h"

#define PUSH_BATCH 1000

static const char push_help[] =
    "Usage: sluice push (-c FILE | --redis URL) [--prefix P] TENANT JOB...\n"
    "       sluice push (-c FILE | --redis URL) [--prefix P] TENANT -\n"
    "\n"
    "Validates every JOB and then LPUSHes them, in order, onto TENANT's queue\n"
    "and adds TENANT to <prefix>:tenants. With '-', reads one job per line from\n"
    "stdin. With -c the tenant's rules apply (format, max_job_bytes, endpoint,\n"
    "allow_urls, idempotency_header); with --redis, envelope jobs of at most\n"
    "1 MiB that name no full url. If any job is invalid, each bad one is\n"
    "reported with its position and reason and nothing is pushed (exit 2).\n"
    "Put '--' before jobs that begin with '-'.\n"
    "\n" SL_CLI_COMMON_HELP;

/* The jobs of one invocation: borrowed from argv or owned (stdin). */
typedef struct job_list {
    char **items;
    size_t *lens;
    size_t count, cap;
    bool owned;
} job_list;

static void job_list_clear(job_list *jobs)
{
    if (jobs->owned)
        for (size_t i = 0; i < jobs->count; i++)
            free(jobs->items[i]);
    free(jobs->items);
    free(jobs->lens);
    memset(jobs, 0, sizeof *jobs);
}

static bool job_list_add(job_list *jobs, char *item, size_t len)
{
    if (jobs->count == jobs->cap) {
        size_t cap = jobs->cap ? jobs->cap * 2 : 64;
        char **items = realloc(jobs->items, cap * sizeof *items);
        if (!items)
            return false;
        jobs->items = items;
        size_t *lens = realloc(jobs->lens, cap * sizeof *lens);
        if (!lens)
            return false;
        jobs->lens = lens;
        jobs->cap = cap;
    }
    jobs->items[jobs->count] = item;
    jobs->lens[jobs->count++] = len;
    return true;
}

/* One job per line; the line's "\n" (and a "\r" before it) is not part of
 * the job. */
static int read_stdin_jobs(job_list *jobs)
{
    jobs->owned = true;
    char *line = NULL;
    size_t size = 0;
    ssize_t n;
    while ((n = getline(&line, &size, stdin)) >= 0) {
        size_t len = (size_t)n;
        if (len > 0 && line[len - 1] == '\n')
            len--;
        if (len > 0 && line[len - 1] == '\r')
            len--;
        char *copy = malloc(len + 1);
        if (!copy || (memcpy(copy, line, len), copy[len] = '\0', !job_list_add(jobs, copy, len))) {
            free(copy);
            free(line);
            fputs("sluice push: out of memory\n", stderr);
            return SL_CLI_RUNTIME;
        }
    }
    bool failed = ferror(stdin);
    free(line);
    if (failed) {
        perror("sluice push: stdin");
        return SL_CLI_RUNTIME;
    }
    return SL_CLI_OK;
}

/* The rules jobs of `tenant` are held to; SL_CLI_USAGE if the config does
 * not govern that tenant. */
static int job_rules(const sl_cli *cli, const char *tenant, sl_job_rules *rules)
{
    memset(rules, 0, sizeof *rules);
    if (!cli->config) {
        rules->endpoint = "http://localhost/"; /* a job's path is checked against something */
        rules->idempotency_header = "Idempotency-Key";
        return SL_CLI_OK;
    }
    const sl_tenant_config *t = sl_config_tenant_for(cli->config, tenant);
    if (!t) {
        fprintf(stderr, "sluice push: tenant '%s' is not in the config and it has no \"*\" "
                        "template\n", tenant);
        return SL_CLI_USAGE;
    }
    rules->raw = t->format == SL_FORMAT_RAW;
    rules->max_bytes = (size_t)t->max_job_bytes;
    rules->endpoint = t->endpoint;
    rules->allow_urls = (const char *const *)t->allow_urls;
    rules->allow_url_count = t->allow_url_count;
    rules->idempotency_header = t->idempotency_header;
    return SL_CLI_OK;
}

/* Checks every job, reporting each bad one. */
static int validate(const job_list *jobs, const sl_job_rules *rules)
{
    int code = SL_CLI_OK;
    for (size_t i = 0; i < jobs->count; i++) {
        sl_job_request req;
        char err[256] = "";
        sl_job_status status = sl_job_parse(jobs->items[i], jobs->lens[i], rules, &req, err,
                                            sizeof err);
        if (status == SL_JOB_OK) {
            sl_job_request_clear(&req);
        } else if (status == SL_JOB_NO_MEMORY) {
            fputs("sluice push: out of memory\n", stderr);
            return SL_CLI_RUNTIME;
        } else {
            fprintf(stderr, "sluice push: job %zu: %s: %s\n", i + 1, sl_job_status_reason(status),
                    err);
            code = SL_CLI_USAGE;
        }
    }
    return code;
}

/* The SADD to <prefix>:tenants, then LPUSH in batches of PUSH_BATCH in
 * one MULTI/EXEC, all in one pipeline: either every job is queued or none
 * is, so a failed push can be repeated without duplicating part of it.
 * The SADD (a discovery aid) stays out of the transaction: in a Redis
 * Cluster the two keys live in different slots, and a tenant listed
 * whose push then failed is harmless. */
static int push_all_to(sl_cli *cli, const char *tenant, const sl_tenant_keys *keys,
                       const job_list *jobs)
{
    const char **argv = malloc((PUSH_BATCH + 2) * sizeof *argv);
    size_t *lens = malloc((PUSH_BATCH + 2) * sizeof *lens);
    if (!argv || !lens) {
        free(argv);
        free(lens);
        fputs("sluice push: out of memory\n", stderr);
        return SL_CLI_RUNTIME;
    }
    char tenants_key[SL_KEY_MAX];
    snprintf(tenants_key, sizeof tenants_key, "%s:tenants", cli->prefix);
    /* Appending fails only when out of memory; what was queued is never
     * sent without its EXEC, so nothing is pushed. */
    bool queued = sl_cli_append(cli, tenants_key, "SADD %s %s", tenants_key, tenant) &&
                  sl_cli_append(cli, keys->queue, "MULTI");
    size_t commands = 0;
    for (size_t at = 0; queued && at < jobs->count; at += PUSH_BATCH) {
        size_t n = jobs->count - at < PUSH_BATCH ? jobs->count - at : PUSH_BATCH;
        argv[0] = "LPUSH";
        lens[0] = 5;
        argv[1] = keys->queue;
        lens[1] = strlen(keys->queue);
        for (size_t i = 0; i < n; i++) {
            argv[2 + i] = jobs->items[at + i];
            lens[2 + i] = jobs->lens[at + i];
        }
        queued = sl_cli_append_argv(cli, keys->queue, (int)(n + 2), argv, lens);
        commands++;
    }
    free(argv);
    free(lens);
    if (!queued || !sl_cli_append(cli, keys->queue, "EXEC"))
        return SL_CLI_RUNTIME;
    /* SADD's count, MULTI's +OK and one +QUEUED per LPUSH; an error there
     * aborts EXEC. */
    for (size_t i = 0; i < commands + 2; i++) {
        redisReply *reply = sl_cli_reply(cli);
        if (!reply)
            return SL_CLI_RUNTIME;
        freeReplyObject(reply);
    }
    redisReply *exec = sl_cli_reply(cli);
    if (!exec)
        return SL_CLI_RUNTIME;
    int code = SL_CLI_OK;
    if (exec->type != REDIS_REPLY_ARRAY || exec->elements != commands) {
        code = sl_cli_unexpected(cli, "EXEC");
    } else {
        for (size_t i = 0; i < commands; i++) {
            const redisReply *r = exec->element[i];
            if (r->type == REDIS_REPLY_ERROR) {
                fprintf(stderr, "sluice push: redis %s: %s\n", cli->address, r->str);
                code = SL_CLI_RUNTIME;
            } else if (r->type != REDIS_REPLY_INTEGER) {
                code = sl_cli_unexpected(cli, "LPUSH");
            }
        }
    }
    freeReplyObject(exec);
    return code;
}

/* push_all_to the tenant's keys. */
static int push_all(sl_cli *cli, const char *tenant, const job_list *jobs)
{
    sl_tenant_keys keys;
    if (!sl_cli_tenant_keys(cli, tenant, &keys))
        return SL_CLI_RUNTIME;
    int code = push_all_to(cli, tenant, &keys, jobs);
    sl_tenant_keys_free(&keys);
    return code;
}

int sl_cli_push(int argc, char **argv)
{
    sl_cli_opts opts;
    int operand, code;
    if (!sl_cli_parse_options(argc, argv, "push", 0, push_help, &opts, &operand, &code))
        return code;
    if (argc - operand < 2) {
        fputs("sluice push: expects TENANT and at least one JOB (or '-')\n\n", stderr);
        fputs(push_help, stderr);
        return SL_CLI_USAGE;
    }
    const char *tenant = argv[operand];
    if (!sl_cli_tenant_ok("push", tenant))
        return SL_CLI_USAGE;
    sl_cli cli;
    code = sl_cli_open(&cli, "push", &opts);
    sl_job_rules rules;
    if (code == SL_CLI_OK)
        code = job_rules(&cli, tenant, &rules);
    job_list jobs = {0};
    if (code == SL_CLI_OK) {
        if (argc - operand == 2 && strcmp(argv[operand + 1], "-") == 0) {
            code = read_stdin_jobs(&jobs);
        } else {
            for (int i = operand + 1; i < argc && code == SL_CLI_OK; i++) {
                if (!job_list_add(&jobs, argv[i], strlen(argv[i]))) {
                    fputs("sluice push: out of memory\n", stderr);
                    code = SL_CLI_RUNTIME;
                }
            }
        }
    }
    if (code == SL_CLI_OK && jobs.count == 0) {
        fputs("sluice push: no jobs on stdin\n", stderr);
        code = SL_CLI_USAGE;
    }
    if (code == SL_CLI_OK)
        code = validate(&jobs, &rules);
    if (code == SL_CLI_OK)
        code = sl_cli_connect(&cli);
    if (code == SL_CLI_OK)
        code = push_all(&cli, tenant, &jobs);
    if (code == SL_CLI_OK)
        printf("pushed %zu job%s to %s\n", jobs.count, jobs.count == 1 ? "" : "s", tenant);
    job_list_clear(&jobs);
    sl_cli_close(&cli);
    return code;
}
