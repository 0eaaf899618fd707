/* cli_dlq.c - `sluice dlq list|replay|purge`: the dead-letter queue of a
 * tenant, seen and handled by an operator. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cjson/cJSON.h>

#include "cli/cli.h"
#include "cli/cli_redis.h"
#include "redis/keys.h"
#include "redis/lua_scripts.h"

#define LIST_DEFAULT 20
#define LIST_MAX 1000000
#define JOB_SHOWN 60
#define REPLAY_STEP 1000 /* records per script call: each blocks Redis briefly */

static const char dlq_help[] =
    "Usage: sluice dlq list   (-c FILE | --redis URL) TENANT [--limit N] [--json]\n"
    "       sluice dlq replay (-c FILE | --redis URL) TENANT [--count N]\n"
    "       sluice dlq purge  (-c FILE | --redis URL) TENANT\n"
    "\n"
    "The dead-letter queue of TENANT (<prefix>:{TENANT}:dlq):\n"
    "  list    the newest N records (default 20), newest first: dead_at (UTC),\n"
    "          reason, attempts, HTTP status, id and the job (first 60 bytes);\n"
    "          --json prints the records as a JSON array\n"
    "  replay  moves up to N jobs (default all) back to the queue, oldest first,\n"
    "          in atomic steps of 1000 records, behind the jobs already queued;\n"
    "          their attempts count afresh; records that cannot be decoded stay,\n"
    "          and so do records dead-lettered while it runs\n"
    "  purge   deletes every record and prints how many there were\n"
    "\n" SL_CLI_COMMON_HELP
    "      --limit N       (list) how many records\n"
    "      --json          (list) JSON output\n"
    "      --count N       (replay) at most N jobs\n";

/* A record's field as text for the table ("-" if absent or null). */
static void field_text(const cJSON *record, const char *name, char *out, size_t size)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(record, name);
    if (cJSON_IsString(v))
        snprintf(out, size, "%s", v->valuestring);
    else if (cJSON_IsNumber(v))
        snprintf(out, size, "%.0f", v->valuedouble);
    else
        snprintf(out, size, "-");
}

/* dead_at_ms as "2026-11-22T18:29:10.123Z", or "-". */
static void iso_time(const cJSON *record, char *out, size_t size)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(record, "dead_at_ms");
    struct tm tm;
    if (!cJSON_IsNumber(v) || v->valuedouble < 0 || v->valuedouble > 253402300799999.0) {
        snprintf(out, size, "-");
        return;
    }
    int64_t ms = (int64_t)v->valuedouble;
    time_t secs = (time_t)(ms / 1000);
    if (!gmtime_r(&secs, &tm)) {
        snprintf(out, size, "-");
        return;
    }
    char date[32];
    strftime(date, sizeof date, "%Y-%m-%dT%H:%M:%S", &tm);
    snprintf(out, size, "%s.%03dZ", date, (int)(ms % 1000));
}

/* The first JOB_SHOWN bytes of job on one line: control bytes become '.',
 * a cut never splits a UTF-8 character, "..." marks it. */
static void job_excerpt(const char *job, size_t len, char *out, size_t size)
{
    size_t n = len;
    bool cut = len > JOB_SHOWN;
    if (cut) {
        n = JOB_SHOWN - 3;
        while (n > 0 && ((unsigned char)job[n] & 0xC0) == 0x80)
            n--;
    }
    if (n + 4 > size)
        n = size - 4;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)job[i];
        out[i] = c < 0x20 || c == 0x7F ? '.' : (char)c;
    }
    strcpy(out + n, cut ? "..." : "");
}

static int dlq_list(sl_cli *cli, const sl_tenant_keys *keys, long long limit, bool json)
{
    redisReply *reply = sl_cli_command(cli, keys->dlq, "LRANGE %s 0 %lld", keys->dlq, limit - 1);
    if (!reply) {
        fprintf(stderr, "sluice dlq list: redis %s: %s\n", cli->address, sl_cli_error(cli));
        return SL_CLI_RUNTIME;
    }
    if (reply->type != REDIS_REPLY_ARRAY) {
        if (reply->type == REDIS_REPLY_ERROR)
            fprintf(stderr, "sluice dlq list: redis %s: %s\n", cli->address, reply->str);
        freeReplyObject(reply);
        return SL_CLI_RUNTIME;
    }
    cJSON *array = json ? cJSON_CreateArray() : NULL;
    bool ok = !json || array;
    if (!json)
        printf("%-24s %-16s %8s %4s %-24s %s\n", "DEAD_AT", "REASON", "ATTEMPTS", "HTTP", "ID",
               "JOB");
    for (size_t i = 0; ok && i < reply->elements; i++) {
        const redisReply *e = reply->element[i];
        if (e->type != REDIS_REPLY_STRING)
            continue;
        cJSON *record = cJSON_ParseWithLength(e->str, e->len);
        if (json) {
            /* A record that is not JSON is shown as the string it is. */
            cJSON *item = record ? record : cJSON_CreateString(e->str);
            ok = item && cJSON_AddItemToArray(array, item);
            if (!ok)
                cJSON_Delete(item);
            continue;
        }
        char dead_at[40], reason[64], attempts[24], status[24], id[64], job[JOB_SHOWN + 8];
        if (!cJSON_IsObject(record)) {
            job_excerpt(e->str, e->len, job, sizeof job);
            printf("%-24s %-16s %8s %4s %-24s %s\n", "-", "(not a record)", "-", "-", "-", job);
            cJSON_Delete(record);
            continue;
        }
        iso_time(record, dead_at, sizeof dead_at);
        field_text(record, "reason", reason, sizeof reason);
        field_text(record, "attempts", attempts, sizeof attempts);
        field_text(record, "http_status", status, sizeof status);
        field_text(record, "id", id, sizeof id);
        const cJSON *j = cJSON_GetObjectItemCaseSensitive(record, "job");
        if (cJSON_IsString(j))
            job_excerpt(j->valuestring, strlen(j->valuestring), job, sizeof job);
        else
            snprintf(job, sizeof job, "-");
        printf("%-24s %-16s %8s %4s %-24s %s\n", dead_at, reason, attempts, status, id, job);
        cJSON_Delete(record);
    }
    freeReplyObject(reply);
    if (!json)
        return SL_CLI_OK;
    if (!ok) {
        cJSON_Delete(array);
        array = NULL;
    }
    return sl_cli_print_json("dlq list", array);
}

/* One step of a replay: the script on at most `take` records, passing
 * over the `skip` undecodable ones earlier steps left at the right end.
 * Fills *replayed and *skipped (the undecodable records now there). */
static int replay_step(sl_cli *cli, const sl_tenant_keys *keys, const sl_lua_script *script,
                       long long take, long long skip, long long *replayed, long long *skipped)
{
    char take_text[24], skip_text[24];
    snprintf(take_text, sizeof take_text, "%lld", take);
    snprintf(skip_text, sizeof skip_text, "%lld", skip);
    const char *argv[] = {"EVAL", script->source, "2", keys->dlq, keys->queue, take_text,
                          skip_text};
    size_t lens[] = {4, script->length, 1, strlen(keys->dlq), strlen(keys->queue),
                     strlen(take_text), strlen(skip_text)};
    if (!sl_cli_append_argv(cli, keys->dlq, 7, argv, lens))
        return SL_CLI_RUNTIME;
    redisReply *reply = sl_cli_reply(cli);
    if (!reply)
        return SL_CLI_RUNTIME;
    bool ok = reply->type == REDIS_REPLY_ARRAY && reply->elements == 2 &&
              reply->element[0]->type == REDIS_REPLY_INTEGER &&
              reply->element[1]->type == REDIS_REPLY_INTEGER;
    if (ok) {
        *replayed = reply->element[0]->integer;
        *skipped = reply->element[1]->integer;
    }
    freeReplyObject(reply);
    return ok ? SL_CLI_OK : sl_cli_unexpected(cli, "dlq_replay");
}

/* Replays in steps of REPLAY_STEP records, each atomic, so that a long
 * dlq never blocks Redis in one script. It goes no further than the
 * records there when it starts: jobs dead-lettered again meanwhile (by a
 * daemon while the cause persists) wait for the next replay instead of
 * going round for ever. count 0: every job. */
static int dlq_replay(sl_cli *cli, const sl_tenant_keys *keys, const char *tenant, long long count)
{
    const sl_lua_script *script = sl_lua_script_find("dlq_replay");
    if (!script) {
        fputs("sluice dlq replay: the dlq_replay script is not built in\n", stderr);
        return SL_CLI_RUNTIME;
    }
    if (!sl_cli_append(cli, keys->dlq, "LLEN %s", keys->dlq))
        return SL_CLI_RUNTIME;
    redisReply *reply = sl_cli_reply(cli);
    if (!reply)
        return SL_CLI_RUNTIME;
    if (reply->type != REDIS_REPLY_INTEGER) {
        freeReplyObject(reply);
        return sl_cli_unexpected(cli, "LLEN");
    }
    long long left = reply->integer; /* records still to take */
    freeReplyObject(reply);
    long long replayed = 0, skipped = 0;
    int code = SL_CLI_OK;
    while (left > 0 && (count == 0 || replayed < count)) {
        long long take = left < REPLAY_STEP ? left : REPLAY_STEP;
        if (count > 0 && count - replayed < take)
            take = count - replayed;
        long long step_replayed = 0, now_skipped = 0;
        code = replay_step(cli, keys, script, take, skipped, &step_replayed, &now_skipped);
        if (code != SL_CLI_OK)
            break;
        long long taken = step_replayed + (now_skipped - skipped);
        replayed += step_replayed;
        skipped = now_skipped;
        left -= taken;
        if (taken < take)
            break; /* the dlq ran short: something else took records */
    }
    if (code != SL_CLI_OK) {
        if (replayed > 0)
            fprintf(stderr, "sluice dlq replay: stopped after replaying %lld job%s to %s\n",
                    replayed, replayed == 1 ? "" : "s", tenant);
        return code;
    }
    printf("replayed %lld job%s to %s\n", replayed, replayed == 1 ? "" : "s", tenant);
    if (skipped > 0)
        fprintf(stderr, "sluice dlq replay: %lld record%s could not be decoded and stay in %s\n",
                skipped, skipped == 1 ? "" : "s", keys->dlq);
    return SL_CLI_OK;
}

/* LLEN and DEL in one MULTI, so the count is what was deleted. */
static int dlq_purge(sl_cli *cli, const sl_tenant_keys *keys, const char *tenant)
{
    if (!sl_cli_append(cli, keys->dlq, "MULTI") ||
        !sl_cli_append(cli, keys->dlq, "LLEN %s", keys->dlq) ||
        !sl_cli_append(cli, keys->dlq, "DEL %s", keys->dlq) ||
        !sl_cli_append(cli, keys->dlq, "EXEC"))
        return SL_CLI_RUNTIME;
    redisReply *reply = NULL;
    for (int i = 0; i < 4; i++) {
        if (reply)
            freeReplyObject(reply);
        if (!(reply = sl_cli_reply(cli)))
            return SL_CLI_RUNTIME;
    }
    if (reply->type != REDIS_REPLY_ARRAY || reply->elements != 2 ||
        reply->element[0]->type != REDIS_REPLY_INTEGER) {
        freeReplyObject(reply);
        return sl_cli_unexpected(cli, "EXEC");
    }
    long long removed = reply->element[0]->integer;
    freeReplyObject(reply);
    printf("purged %lld record%s from %s\n", removed, removed == 1 ? "" : "s", tenant);
    return SL_CLI_OK;
}

int sl_cli_dlq(int argc, char **argv)
{
    if (argc > 1 && (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0)) {
        fputs(dlq_help, stdout);
        return SL_CLI_OK;
    }
    if (argc < 2) {
        fputs("sluice dlq: expects list, replay or purge (see --help)\n", stderr);
        return SL_CLI_USAGE;
    }
    const char *action = argv[1];
    const char *command = strcmp(action, "list") == 0     ? "dlq list"
                          : strcmp(action, "replay") == 0 ? "dlq replay"
                          : strcmp(action, "purge") == 0  ? "dlq purge"
                                                          : NULL;
    if (!command) {
        fprintf(stderr, "sluice dlq: unknown action '%s': expects list, replay or purge\n", action);
        return SL_CLI_USAGE;
    }
    bool is_list = strcmp(action, "list") == 0, is_replay = strcmp(action, "replay") == 0;
    unsigned takes = is_list ? SL_CLI_TAKES_JSON | SL_CLI_TAKES_LIMIT
                     : is_replay ? SL_CLI_TAKES_COUNT
                                 : 0;
    sl_cli_opts opts;
    int operand, code;
    /* argv + 1: the action is the command name getopt skips. */
    if (!sl_cli_parse_options(argc - 1, argv + 1, command, takes, dlq_help, &opts, &operand,
                              &code))
        return code;
    long long limit = LIST_DEFAULT, count = 0;
    if (opts.limit && !sl_cli_parse_count(opts.limit, LIST_MAX, &limit)) {
        fprintf(stderr, "sluice %s: --limit: expects 1..%d, got '%s'\n", command, LIST_MAX,
                opts.limit);
        return SL_CLI_USAGE;
    }
    if (opts.count && !sl_cli_parse_count(opts.count, INT64_C(1) << 53, &count)) {
        fprintf(stderr, "sluice %s: --count: expects a positive number, got '%s'\n", command,
                opts.count);
        return SL_CLI_USAGE;
    }
    if (argc - 1 - operand != 1) {
        fprintf(stderr, "sluice %s: expects one TENANT (see --help)\n", command);
        return SL_CLI_USAGE;
    }
    const char *tenant = argv[1 + operand];
    if (!sl_cli_tenant_ok(command, tenant))
        return SL_CLI_USAGE;
    sl_cli cli;
    code = sl_cli_open(&cli, command, &opts);
    if (code == SL_CLI_OK)
        code = sl_cli_connect(&cli);
    if (code == SL_CLI_OK) {
        sl_tenant_keys keys;
        if (!sl_cli_tenant_keys(&cli, tenant, &keys))
            code = SL_CLI_RUNTIME;
        else if (is_list)
            code = dlq_list(&cli, &keys, limit, opts.json);
        else if (is_replay)
            code = dlq_replay(&cli, &keys, tenant, count);
        else
            code = dlq_purge(&cli, &keys, tenant);
        sl_tenant_keys_free(&keys);
    }
    sl_cli_close(&cli);
    return code;
}
