/* cli_tenant.c - `sluice tenant show|set|unset|pause|resume TENANT`: the
 * fleet's live settings of a tenant (SPEC section 9), in the hash
 * <prefix>:{T}:settings that every claim reads (lua/claim.lua), each
 * change recorded in <prefix>:{T}:events. What the values mean and how
 * they are read is in tenant_change.h (pure) and admission/settings.h
 * (the claim's decision); this file does the I/O. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "admission/settings.h"
#include "cli/cli.h"
#include "cli/cli_redis.h"
#include "cli/tenant_change.h"
#include "redis/keys.h"

#define EVENTS_KEPT 100  /* the events list is trimmed to this many */
#define EVENTS_SHOWN 10  /* `show` prints the newest this many */
#define CHANGE_TRIES 20  /* a change retried when another one raced it */
#define BY_MAX 128

static const char tenant_help[] =
    "Usage: sluice tenant show   (-c FILE | --redis URL) TENANT [--json]\n"
    "       sluice tenant set    (-c FILE | --redis URL) TENANT FIELD=VALUE... [--by WHO]\n"
    "       sluice tenant unset  (-c FILE | --redis URL) TENANT FIELD... [--by WHO]\n"
    "       sluice tenant pause  (-c FILE | --redis URL) TENANT [--for DURATION] [--by WHO]\n"
    "       sluice tenant resume (-c FILE | --redis URL) TENANT [--by WHO]\n"
    "\n"
    "The live settings of TENANT for the whole fleet (<prefix>:{TENANT}:settings).\n"
    "Every daemon's claim reads them, so a change holds fleet-wide from each\n"
    "daemon's next claim; they beat the config file's values, and a reload\n"
    "never erases them.\n"
    "  show    the effective rate, capacity and concurrency, where each comes\n"
    "          from (file: needs -c FILE; override; adaptive), the pause, and the\n"
    "          last 10 changes\n"
    "  set     overrides FIELD (rate in jobs/s, capacity, concurrency), checked\n"
    "          as the config file checks the key of the same name:\n"
    "          set acme rate=20 concurrency=8 capacity=1000\n"
    "  unset   removes overrides: the file's value holds again (unset acme rate)\n"
    "  pause   claims nothing for TENANT until DURATION passed (--for 90s, 10m,\n"
    "          2h), or until resumed; jobs already claimed still leave\n"
    "  resume  ends a pause\n"
    "Each change is added to <prefix>:{TENANT}:events (the newest 100 kept).\n"
    "\n" SL_CLI_COMMON_HELP
    "      --json          (show) print one JSON object\n"
    "      --by WHO        who made the change (default: user@host)\n"
    "      --for DURATION  (pause) how long: a number and s, m or h\n";

static const char *const settings_fields[] = {"rate", "capacity", "concurrency", "paused_until",
                                              "adaptive_rate"};
#define SETTINGS_FIELDS 5

/* ---- reading ---- */

/* Redis's clock in unix ms: pauses and events go by the fleet's clock. */
static int redis_now_ms(sl_cli *cli, int64_t *out)
{
    redisReply *r = sl_cli_command(cli, NULL, "TIME");
    if (!r) {
        fprintf(stderr, "sluice %s: redis %s: %s\n", cli->command, cli->address, sl_cli_error(cli));
        return SL_CLI_RUNTIME;
    }
    bool ok = r->type == REDIS_REPLY_ARRAY && r->elements == 2 &&
              r->element[0]->type == REDIS_REPLY_STRING && r->element[1]->type == REDIS_REPLY_STRING;
    if (ok)
        *out = strtoll(r->element[0]->str, NULL, 10) * 1000 +
               strtoll(r->element[1]->str, NULL, 10) / 1000;
    freeReplyObject(r);
    return ok ? SL_CLI_OK : sl_cli_unexpected(cli, "TIME");
}

/* The settings hash as the claim script reads it. */
static int read_settings(sl_cli *cli, const sl_tenant_keys *keys, sl_settings *s)
{
    redisReply *r = sl_cli_command(cli, keys->settings, "HMGET %s %s %s %s %s %s", keys->settings,
                                    settings_fields[0], settings_fields[1], settings_fields[2],
                                    settings_fields[3], settings_fields[4]);
    if (!r) {
        fprintf(stderr, "sluice %s: redis %s: %s\n", cli->command, cli->address, sl_cli_error(cli));
        return SL_CLI_RUNTIME;
    }
    if (r->type != REDIS_REPLY_ARRAY || r->elements != SETTINGS_FIELDS) {
        freeReplyObject(r);
        return sl_cli_unexpected(cli, "HMGET");
    }
    int64_t v[SETTINGS_FIELDS];
    for (size_t i = 0; i < SETTINGS_FIELDS; i++)
        v[i] = r->element[i]->type == REDIS_REPLY_STRING ? sl_settings_field(r->element[i]->str)
                                                         : 0;
    freeReplyObject(r);
    *s = (sl_settings){.rate_milli = v[0], .capacity = v[1], .concurrency = v[2],
                       .paused_until_ms = v[3], .adaptive_rate_milli = v[4]};
    return SL_CLI_OK;
}

/* The file's values of tenant (all 0 without -c or when the file does not
 * serve it). The file's adaptive bounds are not read yet: a tenant with an
 * adaptive rate in Redis is taken as adaptive, unclamped (ack.lua writes
 * one only for adaptive tenants). */
static sl_settings_file file_of(const sl_cli *cli, const char *tenant, const sl_settings *s,
                                bool *known)
{
    const sl_tenant_config *cfg = cli->config ? sl_config_tenant_for(cli->config, tenant) : NULL;
    *known = cfg != NULL;
    sl_settings_file f = {0};
    if (cfg) {
        f.rate_milli = cfg->rate_milli;
        f.capacity = cfg->capacity;
        f.concurrency = cfg->concurrency;
    }
    if (s->adaptive_rate_milli > 0)
        f.adaptive_max_milli = INT64_MAX;
    return f;
}

/* ---- writing: one change at a time, atomically ---- */

/* One change of the settings hash. */
typedef struct change {
    const char *what;  /* "set", "unset", "pause", "resume" */
    const char *field; /* the hash's field */
    bool has_new;      /* false: the field is removed */
    int64_t value;     /* the new value (pause: its length in ms; 0: until resumed) */
} change;

/* user@host, for --by's default. */
static void default_by(char *out, size_t size)
{
    const char *user = getenv("USER");
    if (!user || !*user)
        user = getenv("LOGNAME");
    char host[256] = "";
    if (gethostname(host, sizeof host) != 0)
        snprintf(host, sizeof host, "unknown");
    host[sizeof host - 1] = '\0';
    snprintf(out, size, "%s@%s", user && *user ? user : "unknown", host);
}

/* The field's value in the hash before the change: *has false if none. */
static bool old_value(const redisReply *r, bool *has, int64_t *value)
{
    *has = r->type == REDIS_REPLY_STRING;
    *value = *has ? strtoll(r->str, NULL, 10) : 0;
    return r->type == REDIS_REPLY_STRING || r->type == REDIS_REPLY_NIL;
}

/* One WATCH ... EXEC round of the changes: false in *raced when another
 * client changed the settings in between (nothing was written). */
static int try_changes(sl_cli *cli, const sl_tenant_keys *keys, change *changes, size_t n,
                       const char *by, bool *raced, int64_t *old, bool *had)
{
    *raced = false;
    redisReply *r = sl_cli_command(cli, keys->settings, "WATCH %s", keys->settings);
    if (!r) {
        fprintf(stderr, "sluice %s: redis %s: %s\n", cli->command, cli->address, sl_cli_error(cli));
        return SL_CLI_RUNTIME;
    }
    freeReplyObject(r);
    int64_t now_ms;
    int code = redis_now_ms(cli, &now_ms);
    for (size_t i = 0; code == SL_CLI_OK && i < n; i++) {
        if (!(r = sl_cli_command(cli, keys->settings, "HGET %s %s", keys->settings,
                                  changes[i].field))) {
            fprintf(stderr, "sluice %s: redis %s: %s\n", cli->command, cli->address,
                    sl_cli_error(cli));
            return SL_CLI_RUNTIME;
        }
        if (!old_value(r, &had[i], &old[i]))
            code = sl_cli_unexpected(cli, "HGET");
        freeReplyObject(r);
    }
    if (code != SL_CLI_OK) {
        freeReplyObject(sl_cli_command(cli, keys->settings, "UNWATCH"));
        return code;
    }
    /* MULTI ... EXEC pipelined: the replies are QUEUED and then EXEC's. */
    size_t sent = 0;
    bool ok = sl_cli_append(cli, keys->settings, "MULTI");
    sent += ok;
    for (size_t i = 0; ok && i < n; i++) {
        change *c = &changes[i];
        int64_t value = c->value;
        if (strcmp(c->what, "pause") == 0)
            value = c->value > 0 ? now_ms + c->value : SL_PAUSED_FOREVER_MS;
        char *event = sl_tenant_event_json(now_ms, c->what, c->field, had[i], old[i], c->has_new,
                                           value, by);
        if (!event) {
            fprintf(stderr, "sluice %s: out of memory\n", cli->command);
            ok = false;
            break;
        }
        ok = c->has_new ? sl_cli_append(cli, keys->settings, "HSET %s %s %lld", keys->settings,
                                        c->field, (long long)value)
                        : sl_cli_append(cli, keys->settings, "HDEL %s %s", keys->settings,
                                        c->field);
        ok = ok && sl_cli_append(cli, keys->settings, "LPUSH %s %s", keys->events, event);
        free(event);
        sent += ok ? 2 : 0;
        c->value = value;
    }
    ok = ok && sl_cli_append(cli, keys->settings, "LTRIM %s 0 %d", keys->events, EVENTS_KEPT - 1);
    sent += ok;
    ok = ok && sl_cli_append(cli, keys->settings, "EXEC");
    if (!ok)
        return SL_CLI_RUNTIME;
    for (size_t i = 0; i < sent; i++) {
        if (!(r = sl_cli_reply(cli)))
            return SL_CLI_RUNTIME;
        freeReplyObject(r);
    }
    if (!(r = sl_cli_reply(cli)))
        return SL_CLI_RUNTIME;
    *raced = r->type == REDIS_REPLY_NIL;
    code = r->type == REDIS_REPLY_ARRAY || *raced ? SL_CLI_OK : sl_cli_unexpected(cli, "EXEC");
    freeReplyObject(r);
    return code;
}

/* A value for people: rates in jobs/s, pauses as UTC times. */
static void format_value(char *out, size_t size, const char *field, bool has, int64_t value)
{
    if (!has) {
        snprintf(out, size, "-");
    } else if (strcmp(field, "rate") == 0 || strcmp(field, "adaptive_rate") == 0) {
        sl_tenant_format_rate(out, size, value);
    } else if (strcmp(field, "paused_until") == 0) {
        if (value >= SL_PAUSED_FOREVER_MS) {
            snprintf(out, size, "until resumed");
            return;
        }
        time_t secs = (time_t)(value / 1000);
        struct tm tm;
        char day[32] = "?";
        if (gmtime_r(&secs, &tm))
            strftime(day, sizeof day, "%Y-%m-%dT%H:%M:%S", &tm);
        snprintf(out, size, "%s.%03dZ", day, (int)(value % 1000));
    } else {
        snprintf(out, size, "%" PRId64, value);
    }
}

/* Applies the changes atomically (retried while other changes race) and
 * prints each as "TENANT FIELD: OLD -> NEW". */
static int apply_changes_to(sl_cli *cli, const char *tenant, const sl_tenant_keys *keys,
                            change *changes, size_t n, const char *by_opt)
{
    char by[BY_MAX];
    if (by_opt)
        snprintf(by, sizeof by, "%s", by_opt);
    else
        default_by(by, sizeof by);
    int64_t old[SL_TENANT_FIELD_COUNT + 1];
    bool had[SL_TENANT_FIELD_COUNT + 1];
    int64_t asked[SL_TENANT_FIELD_COUNT + 1];
    for (size_t i = 0; i < n; i++)
        asked[i] = changes[i].value;
    for (int attempt = 0; attempt < CHANGE_TRIES; attempt++) {
        bool raced;
        for (size_t i = 0; i < n; i++)
            changes[i].value = asked[i];
        int code = try_changes(cli, keys, changes, n, by, &raced, old, had);
        if (code != SL_CLI_OK)
            return code;
        if (raced)
            continue;
        for (size_t i = 0; i < n; i++) {
            char before[48], after[48];
            format_value(before, sizeof before, changes[i].field, had[i], old[i]);
            format_value(after, sizeof after, changes[i].field, changes[i].has_new,
                         changes[i].value);
            printf("%s %s: %s -> %s\n", tenant, changes[i].field, before, after);
        }
        return SL_CLI_OK;
    }
    fprintf(stderr, "sluice %s: the settings of %s kept changing under this change; try again\n",
            cli->command, tenant);
    return SL_CLI_RUNTIME;
}

/* apply_changes_to the tenant's keys. */
static int apply_changes(sl_cli *cli, const char *tenant, change *changes, size_t n,
                         const char *by_opt)
{
    sl_tenant_keys keys;
    if (!sl_cli_tenant_keys(cli, tenant, &keys))
        return SL_CLI_RUNTIME;
    int code = apply_changes_to(cli, tenant, &keys, changes, n, by_opt);
    sl_tenant_keys_free(&keys);
    return code;
}

/* ---- show ---- */

typedef struct shown {
    sl_settings s;
    sl_settings_file file;
    bool file_known;
    sl_settings_effective e;
    int64_t now_ms;
    redisReply *events; /* LRANGE's array, owned */
} shown;

static int read_shown(sl_cli *cli, const char *tenant, shown *out)
{
    sl_tenant_keys keys;
    if (!sl_cli_tenant_keys(cli, tenant, &keys))
        return SL_CLI_RUNTIME;
    int code = read_settings(cli, &keys, &out->s);
    if (code == SL_CLI_OK)
        code = redis_now_ms(cli, &out->now_ms);
    if (code == SL_CLI_OK)
        out->events = sl_cli_command(cli, keys.events, "LRANGE %s 0 %d", keys.events,
                                     EVENTS_SHOWN - 1);
    sl_tenant_keys_free(&keys);
    if (code != SL_CLI_OK)
        return code;
    if (!out->events) {
        fprintf(stderr, "sluice %s: redis %s: %s\n", cli->command, cli->address, sl_cli_error(cli));
        return SL_CLI_RUNTIME;
    }
    if (out->events->type != REDIS_REPLY_ARRAY)
        return sl_cli_unexpected(cli, "LRANGE");
    out->file = file_of(cli, tenant, &out->s, &out->file_known);
    out->e = sl_settings_apply(&out->s, &out->file, out->now_ms);
    return SL_CLI_OK;
}

/* One row of the table: effective value (unknown when it is the file's
 * and the file is not known), source, file's value, override. */
static void print_row(const shown *v, const char *field, int64_t effective, const char *source,
                      bool from_file, int64_t file_value, int64_t override)
{
    char e[48], f[48], o[48];
    format_value(e, sizeof e, field, !from_file || v->file_known, effective);
    format_value(f, sizeof f, field, v->file_known, file_value);
    format_value(o, sizeof o, field, override > 0, override);
    printf("%-13s %-14s %-9s %-14s %s\n", field, e, source, f, o);
}

/* An event's member as text ("-" when absent or null). */
static void event_value(char *out, size_t size, const cJSON *event, const char *name,
                        const char *field)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(event, name);
    if (cJSON_IsNumber(v))
        format_value(out, size, field, true, (int64_t)v->valuedouble);
    else if (cJSON_IsString(v))
        snprintf(out, size, "%s", v->valuestring);
    else
        snprintf(out, size, "-");
}

static void print_event(const redisReply *r)
{
    cJSON *event = r->type == REDIS_REPLY_STRING ? cJSON_ParseWithLength(r->str, r->len) : NULL;
    const cJSON *field_item = cJSON_GetObjectItemCaseSensitive(event, "field");
    const char *field = cJSON_IsString(field_item) ? field_item->valuestring : "";
    char at[48], what[24], by[BY_MAX], before[48], after[48];
    event_value(at, sizeof at, event, "at_ms", "paused_until");
    event_value(what, sizeof what, event, "what", "");
    event_value(by, sizeof by, event, "by", "");
    event_value(before, sizeof before, event, "old", field);
    event_value(after, sizeof after, event, "new", field);
    if (event)
        printf("%s  %-8s %-13s %s -> %s  by %s\n", at, what, field, before, after, by);
    else
        printf("(unreadable) %.*s\n", r->type == REDIS_REPLY_STRING ? (int)r->len : 0,
               r->type == REDIS_REPLY_STRING ? r->str : "");
    cJSON_Delete(event);
}

static void print_shown(const char *tenant, const shown *v)
{
    const sl_settings_effective *e = &v->e;
    printf("TENANT %s\n", tenant);
    printf("%-13s %-14s %-9s %-14s %s\n", "FIELD", "EFFECTIVE", "SOURCE", "FILE", "OVERRIDE");
    print_row(v, "rate", e->rate_milli, sl_rate_source_name(e->rate_source),
              e->rate_source == SL_RATE_FILE, v->file.rate_milli, v->s.rate_milli);
    print_row(v, "capacity", e->capacity, e->capacity_overridden ? "override" : "file",
              !e->capacity_overridden, v->file.capacity, v->s.capacity);
    print_row(v, "concurrency", e->concurrency, e->concurrency_overridden ? "override" : "file",
              !e->concurrency_overridden, v->file.concurrency, v->s.concurrency);
    char until[48], adaptive[48];
    format_value(until, sizeof until, "paused_until", true, v->s.paused_until_ms);
    printf("%-13s %-14s %-9s\n", "paused", e->paused ? "yes" : "no", e->paused ? "pause" : "-");
    if (e->paused)
        printf("%-13s %s\n", "paused_until", until);
    format_value(adaptive, sizeof adaptive, "adaptive_rate", v->s.adaptive_rate_milli > 0,
                 v->s.adaptive_rate_milli);
    printf("%-13s %s\n", "adaptive_rate", adaptive);
    printf("\nEVENTS (newest first)\n");
    for (size_t i = 0; i < v->events->elements; i++)
        print_event(v->events->element[i]);
}

/* Adds name: jobs/s or integer, or null when !known. */
static bool add_number(cJSON *o, const char *name, bool known, int64_t value, bool rate)
{
    if (!known)
        return cJSON_AddNullToObject(o, name) != NULL;
    return cJSON_AddNumberToObject(o, name, rate ? (double)value / 1000 : (double)value) != NULL;
}

static cJSON *json_row(cJSON *root, const char *name, const shown *v, int64_t effective,
                       const char *source, bool from_file, int64_t file_value, int64_t override,
                       bool rate)
{
    cJSON *o = cJSON_AddObjectToObject(root, name);
    if (!o || !add_number(o, "effective", !from_file || v->file_known, effective, rate) ||
        !cJSON_AddStringToObject(o, "source", source) ||
        !add_number(o, "file", v->file_known, file_value, rate) ||
        !add_number(o, "override", override > 0, override, rate))
        return NULL;
    return o;
}

static int print_shown_json(const char *tenant, const shown *v)
{
    const sl_settings_effective *e = &v->e;
    cJSON *root = cJSON_CreateObject();
    cJSON *rate = root ? json_row(root, "rate", v, e->rate_milli,
                                  sl_rate_source_name(e->rate_source),
                                  e->rate_source == SL_RATE_FILE, v->file.rate_milli,
                                  v->s.rate_milli, true)
                       : NULL;
    bool ok = rate && cJSON_AddStringToObject(root, "tenant", tenant) &&
              add_number(rate, "adaptive", v->s.adaptive_rate_milli > 0,
                         v->s.adaptive_rate_milli, true) &&
              json_row(root, "capacity", v, e->capacity,
                       e->capacity_overridden ? "override" : "file", !e->capacity_overridden,
                       v->file.capacity, v->s.capacity, false) &&
              json_row(root, "concurrency", v, e->concurrency,
                       e->concurrency_overridden ? "override" : "file",
                       !e->concurrency_overridden, v->file.concurrency, v->s.concurrency, false) &&
              cJSON_AddBoolToObject(root, "paused", e->paused) &&
              add_number(root, "paused_until_ms", e->paused, v->s.paused_until_ms, false);
    cJSON *events = ok ? cJSON_AddArrayToObject(root, "events") : NULL;
    ok = ok && events;
    for (size_t i = 0; ok && i < v->events->elements; i++) {
        const redisReply *r = v->events->element[i];
        cJSON *event = r->type == REDIS_REPLY_STRING ? cJSON_ParseWithLength(r->str, r->len)
                                                     : NULL;
        if (!event)
            event = cJSON_CreateString(r->type == REDIS_REPLY_STRING ? r->str : "");
        ok = event && cJSON_AddItemToArray(events, event);
    }
    if (!ok) {
        cJSON_Delete(root);
        root = NULL;
    }
    return sl_cli_print_json("tenant show", root);
}

static int show(sl_cli *cli, const char *tenant, bool json)
{
    shown v = {0};
    int code = read_shown(cli, tenant, &v);
    if (code == SL_CLI_OK) {
        if (json)
            code = print_shown_json(tenant, &v);
        else
            print_shown(tenant, &v);
    }
    if (v.events)
        freeReplyObject(v.events);
    return code;
}

/* ---- the command ---- */

/* The changes operands ask for; false after saying what is wrong. */
static bool parse_changes(const char *command, bool set, char **operands, int count,
                          change *out, size_t *n)
{
    *n = 0;
    if (count == 0) {
        fprintf(stderr, "sluice %s: expects %s after TENANT (see --help)\n", command,
                set ? "FIELD=VALUE" : "FIELD");
        return false;
    }
    bool seen[SL_TENANT_FIELD_COUNT] = {false};
    for (int i = 0; i < count; i++) {
        sl_tenant_field field;
        int64_t value = 0;
        char msg[SL_TENANT_MSG_MAX];
        bool ok = set ? sl_tenant_assignment_parse(operands[i], &field, &value, msg)
                      : sl_tenant_field_parse(operands[i], &field);
        if (!ok && !set)
            snprintf(msg, sizeof msg, "unknown field '%.40s': expects rate, capacity or concurrency",
                     operands[i]);
        if (!ok) {
            fprintf(stderr, "sluice %s: %s\n", command, msg);
            return false;
        }
        if (seen[field]) {
            fprintf(stderr, "sluice %s: %s given twice\n", command, sl_tenant_field_name(field));
            return false;
        }
        seen[field] = true;
        out[(*n)++] = (change){set ? "set" : "unset", sl_tenant_field_name(field), set, value};
    }
    return true;
}

int sl_cli_tenant(int argc, char **argv)
{
    if (argc > 1 && (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0)) {
        fputs(tenant_help, stdout);
        return SL_CLI_OK;
    }
    if (argc < 2) {
        fputs("sluice tenant: expects show, set, unset, pause or resume (see --help)\n", stderr);
        return SL_CLI_USAGE;
    }
    static const char *const actions[] = {"show", "set", "unset", "pause", "resume"};
    static const char *const commands[] = {"tenant show", "tenant set", "tenant unset",
                                           "tenant pause", "tenant resume"};
    static const unsigned takes[] = {SL_CLI_TAKES_JSON, SL_CLI_TAKES_BY, SL_CLI_TAKES_BY,
                                     SL_CLI_TAKES_BY | SL_CLI_TAKES_FOR, SL_CLI_TAKES_BY};
    int action = -1;
    for (int i = 0; i < 5; i++)
        if (strcmp(argv[1], actions[i]) == 0)
            action = i;
    if (action < 0) {
        fprintf(stderr, "sluice tenant: unknown action '%s': expects show, set, unset, pause or "
                        "resume\n", argv[1]);
        return SL_CLI_USAGE;
    }
    const char *command = commands[action];
    sl_cli_opts opts;
    int operand, code;
    /* argv + 1: the action is the command name getopt skips. */
    if (!sl_cli_parse_options(argc - 1, argv + 1, command, takes[action], tenant_help, &opts,
                              &operand, &code))
        return code;
    char **operands = argv + 1 + operand;
    int count = argc - 1 - operand;
    if (count < 1) {
        fprintf(stderr, "sluice %s: expects TENANT (see --help)\n", command);
        return SL_CLI_USAGE;
    }
    const char *tenant = operands[0];
    if (!sl_cli_tenant_ok(command, tenant))
        return SL_CLI_USAGE;
    bool takes_fields = action == 1 || action == 2;
    if (!takes_fields && count > 1) {
        fprintf(stderr, "sluice %s: unexpected argument '%s' (see --help)\n", command, operands[1]);
        return SL_CLI_USAGE;
    }
    change changes[SL_TENANT_FIELD_COUNT];
    size_t n = 0;
    if (takes_fields && !parse_changes(command, action == 1, operands + 1, count - 1, changes, &n))
        return SL_CLI_USAGE;
    if (action == 3) {
        int64_t for_ms = 0;
        if (opts.for_ && !sl_tenant_duration_parse(opts.for_, &for_ms)) {
            fprintf(stderr, "sluice %s: --for: expects a number and s, m or h (90s, 10m, 2h; at "
                            "most 366 days), got '%s'\n", command, opts.for_);
            return SL_CLI_USAGE;
        }
        changes[n++] = (change){"pause", "paused_until", true, for_ms};
    } else if (action == 4) {
        changes[n++] = (change){"resume", "paused_until", false, 0};
    }
    if (opts.by && (!*opts.by || strlen(opts.by) >= BY_MAX)) {
        fprintf(stderr, "sluice %s: --by: expects 1..%d characters\n", command, BY_MAX - 1);
        return SL_CLI_USAGE;
    }
    sl_cli cli;
    code = sl_cli_open(&cli, command, &opts);
    if (code == SL_CLI_OK)
        code = sl_cli_connect(&cli);
    if (code == SL_CLI_OK)
        code = action == 0 ? show(&cli, tenant, opts.json)
                           : apply_changes(&cli, tenant, changes, n, opts.by);
    sl_cli_close(&cli);
    return code;
}
