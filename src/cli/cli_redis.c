/* cli_redis.c - see cli_redis.h. */
#include "cli/cli_redis.h"

#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CLI_TIMEOUT_S 5
#define PREFIX_MAX 64

enum { OPT_REDIS = 0x100, OPT_PREFIX, OPT_JSON, OPT_LIMIT, OPT_COUNT, OPT_BY, OPT_FOR };

bool sl_cli_parse_options(int argc, char **argv, const char *command, unsigned takes,
                          const char *help, sl_cli_opts *opts, int *operand, int *exit_code)
{
    static const struct option options[] = {
        {"config", required_argument, NULL, 'c'},
        {"redis", required_argument, NULL, OPT_REDIS},
        {"prefix", required_argument, NULL, OPT_PREFIX},
        {"help", no_argument, NULL, 'h'},
        {"json", no_argument, NULL, OPT_JSON},
        {"limit", required_argument, NULL, OPT_LIMIT},
        {"count", required_argument, NULL, OPT_COUNT},
        {"by", required_argument, NULL, OPT_BY},
        {"for", required_argument, NULL, OPT_FOR},
        {NULL, 0, NULL, 0},
    };
    memset(opts, 0, sizeof *opts);
    int opt;
    optind = 0; /* 0, not 1: glibc then forgets main's "+" (stop at the first operand) */
    while ((opt = getopt_long(argc, argv, "c:h", options, NULL)) != -1) {
        switch (opt) {
        case 'h':
            fputs(help, stdout);
            *exit_code = SL_CLI_OK;
            return false;
        case 'c':
            opts->config_path = optarg;
            break;
        case OPT_REDIS:
            opts->redis_url = optarg;
            break;
        case OPT_PREFIX:
            opts->prefix = optarg;
            break;
        case OPT_JSON:
            opts->json = true;
            break;
        case OPT_LIMIT:
            opts->limit = optarg;
            break;
        case OPT_COUNT:
            opts->count = optarg;
            break;
        case OPT_BY:
            opts->by = optarg;
            break;
        case OPT_FOR:
            opts->for_ = optarg;
            break;
        default: /* getopt_long has said what is wrong */
            fputs(help, stderr);
            *exit_code = SL_CLI_USAGE;
            return false;
        }
    }
    /* an option this command does not take */
    const char *misplaced = opts->json && !(takes & SL_CLI_TAKES_JSON)     ? "--json"
                            : opts->limit && !(takes & SL_CLI_TAKES_LIMIT) ? "--limit"
                            : opts->count && !(takes & SL_CLI_TAKES_COUNT) ? "--count"
                            : opts->by && !(takes & SL_CLI_TAKES_BY)       ? "--by"
                            : opts->for_ && !(takes & SL_CLI_TAKES_FOR)    ? "--for"
                                                                           : NULL;
    if (misplaced) {
        fprintf(stderr, "sluice %s: %s does not apply here (see --help)\n", command, misplaced);
        *exit_code = SL_CLI_USAGE;
        return false;
    }
    *operand = optind;
    return true;
}

/* The same rule as the config's "prefix": 1..64 of [A-Za-z0-9_.:-]. */
static bool prefix_valid(const char *p)
{
    size_t len = strlen(p);
    if (len == 0 || len > PREFIX_MAX)
        return false;
    return strspn(p, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.:-") == len;
}

int sl_cli_open(sl_cli *cli, const char *command, const sl_cli_opts *opts)
{
    memset(cli, 0, sizeof *cli);
    cli->command = command;
    if ((opts->config_path != NULL) == (opts->redis_url != NULL)) {
        fprintf(stderr, "sluice %s: give exactly one of -c FILE and --redis URL (see --help)\n",
                command);
        return SL_CLI_USAGE;
    }
    if (opts->prefix && !prefix_valid(opts->prefix)) {
        fprintf(stderr, "sluice %s: --prefix: must be 1..%d characters of [A-Za-z0-9_.:-]\n",
                command, PREFIX_MAX);
        return SL_CLI_USAGE;
    }
    const char *prefix = "sluice";
    if (opts->config_path) {
        sl_config_env env = sl_config_env_system();
        sl_errors errors;
        sl_errors_init(&errors);
        cli->config = sl_config_load(opts->config_path, &env, &errors);
        for (size_t i = 0; i < errors.count; i++)
            fprintf(stderr, "sluice %s: %s: %s\n", command, opts->config_path, errors.items[i]);
        sl_errors_clear(&errors);
        if (!cli->config)
            return SL_CLI_USAGE;
        cli->target = &cli->config->redis;
        prefix = cli->config->prefix;
    } else {
        char err[256];
        if (!sl_redis_target_parse(opts->redis_url, &cli->own_target, err, sizeof err)) {
            fprintf(stderr, "sluice %s: --redis: %s\n", command, err);
            return SL_CLI_USAGE;
        }
        cli->target = &cli->own_target;
    }
    if (cli->target->mode == SL_REDIS_SENTINEL) { /* until the CLI follows it */
        fprintf(stderr, "sluice %s: %s: Sentinel URLs are not available yet\n", command,
                opts->config_path ? opts->config_path : "--redis");
        return SL_CLI_USAGE;
    }
    if (opts->prefix)
        prefix = opts->prefix;
    snprintf(cli->prefix, sizeof cli->prefix, "%s", prefix);
    cli->address = sl_redis_target_redacted(cli->target);
    if (!cli->address) {
        fprintf(stderr, "sluice %s: out of memory\n", command);
        return SL_CLI_RUNTIME;
    }
    return SL_CLI_OK;
}

/* ---- the connection: a redis_link on a private loop ------------------- */

static const sl_redis_link_timeouts cli_timeouts = {
    .connect_ms = CLI_TIMEOUT_S * 1000,
    .handshake_ms = CLI_TIMEOUT_S * 1000,
    .reply_ms = CLI_TIMEOUT_S * 1000,
};

static void on_link_event(void *arg, bool up, const char *why)
{
    sl_cli *cli = arg;
    if (up)
        return;
    snprintf(cli->error, sizeof cli->error, "%s", why);
    sl_redis_link_free(cli->link); /* allowed here: the link is done */
    cli->link = NULL;
}

/* Every reply, kept in order until sl_cli_reply takes it. */
static void collect(redisReply *reply, void *arg)
{
    sl_cli *cli = arg;
    cli->awaited--;
    if (cli->replies_count == cli->replies_cap) {
        size_t cap = cli->replies_cap ? cli->replies_cap * 2 : 16;
        redisReply **grown = malloc(cap * sizeof *grown);
        if (!grown) {
            /* Lose this one; its reader then reports a lost reply. */
            freeReplyObject(reply);
            reply = NULL;
            snprintf(cli->error, sizeof cli->error, "out of memory");
            if (cli->replies_cap == 0)
                return;
        } else {
            for (size_t i = 0; i < cli->replies_count; i++)
                grown[i] = cli->replies[(cli->replies_head + i) % cli->replies_cap];
            free(cli->replies);
            cli->replies = grown;
            cli->replies_cap = cap;
            cli->replies_head = 0;
        }
    }
    if (cli->replies_count < cli->replies_cap) {
        cli->replies[(cli->replies_head + cli->replies_count) % cli->replies_cap] = reply;
        cli->replies_count++;
    }
}

/* Queues cmd[0..len), whose reply collect keeps. */
static bool send_formatted(sl_cli *cli, const char *cmd, size_t len)
{
    if (!cli->link ||
        !sl_redis_link_send_formatted(cli->link, cmd, len, collect, cli, SL_LINK_KEEP_REPLY)) {
        if (!cli->error[0])
            snprintf(cli->error, sizeof cli->error, "%s",
                     cli->link ? "out of memory" : "connection lost");
        return false;
    }
    cli->awaited++;
    return true;
}

static bool append_failed(const sl_cli *cli)
{
    fprintf(stderr, "sluice %s: redis %s: cannot queue a command: %s\n", cli->command,
            cli->address, sl_cli_error(cli));
    return false;
}

bool sl_cli_append(sl_cli *cli, const char *format, ...)
{
    char *cmd = NULL;
    va_list ap;
    va_start(ap, format);
    int len = redisvFormatCommand(&cmd, format, ap);
    va_end(ap);
    if (len < 0) {
        snprintf(cli->error, sizeof cli->error, "out of memory");
        return append_failed(cli);
    }
    bool sent = send_formatted(cli, cmd, (size_t)len);
    redisFreeCommand(cmd);
    return sent || append_failed(cli);
}

bool sl_cli_append_argv(sl_cli *cli, int argc, const char **argv, const size_t *lens)
{
    char *cmd = NULL;
    int len = redisFormatCommandArgv(&cmd, argc, argv, lens);
    if (len < 0) {
        snprintf(cli->error, sizeof cli->error, "out of memory");
        return append_failed(cli);
    }
    bool sent = send_formatted(cli, cmd, (size_t)len);
    redisFreeCommand(cmd);
    return sent || append_failed(cli);
}

/* The next reply in order: runs the loop until it is in. NULL if the
 * connection went first (cli->error says why). */
static redisReply *next_reply(sl_cli *cli)
{
    while (cli->replies_count == 0 && cli->awaited > 0 && cli->link)
        event_base_loop(cli->base, EVLOOP_ONCE);
    if (cli->replies_count == 0) {
        if (!cli->error[0])
            snprintf(cli->error, sizeof cli->error, "connection lost");
        return NULL;
    }
    redisReply *reply = cli->replies[cli->replies_head];
    cli->replies_head = (cli->replies_head + 1) % cli->replies_cap;
    cli->replies_count--;
    if (!reply && !cli->error[0])
        snprintf(cli->error, sizeof cli->error, "connection lost");
    return reply;
}

redisReply *sl_cli_command(sl_cli *cli, const char *format, ...)
{
    char *cmd = NULL;
    va_list ap;
    va_start(ap, format);
    int len = redisvFormatCommand(&cmd, format, ap);
    va_end(ap);
    if (len < 0) {
        snprintf(cli->error, sizeof cli->error, "out of memory");
        return NULL;
    }
    bool sent = send_formatted(cli, cmd, (size_t)len);
    redisFreeCommand(cmd);
    return sent ? next_reply(cli) : NULL;
}

const char *sl_cli_error(const sl_cli *cli)
{
    return cli->error[0] ? cli->error : "connection lost";
}

/* Sends one setup command and checks for an error reply; the message
 * names the command only (its arguments may be secret). */
static int setup_command(sl_cli *cli, const char *what, int argc, const char **argv)
{
    redisReply *reply = sl_cli_append_argv(cli, argc, argv, NULL) ? next_reply(cli) : NULL;
    if (!reply) {
        fprintf(stderr, "sluice %s: redis %s: %s failed: %s\n", cli->command, cli->address, what,
                sl_cli_error(cli));
        return SL_CLI_RUNTIME;
    }
    int code = SL_CLI_OK;
    if (reply->type == REDIS_REPLY_ERROR) {
        fprintf(stderr, "sluice %s: redis %s: %s failed: %s\n", cli->command, cli->address, what,
                reply->str);
        code = SL_CLI_RUNTIME;
    }
    freeReplyObject(reply);
    return code;
}

/* Connects the link to t (one server, or one node of a cluster),
 * authenticates and selects the database. */
static int connect_node(sl_cli *cli, const sl_redis_target *t)
{
    cli->error[0] = '\0';
    cli->link = sl_redis_link_open(cli->base, t, &cli_timeouts, on_link_event, NULL, cli,
                                   cli->error, sizeof cli->error);
    while (cli->link && !sl_redis_link_up(cli->link))
        event_base_loop(cli->base, EVLOOP_ONCE);
    if (!cli->link) {
        fprintf(stderr, "sluice %s: cannot connect to Redis at %s: %s\n", cli->command,
                cli->address, sl_cli_error(cli));
        return SL_CLI_RUNTIME;
    }
    if (t->password) {
        const char *argv[3] = {"AUTH", t->password, NULL};
        int argc = 2;
        if (t->username) {
            argv[1] = t->username;
            argv[2] = t->password;
            argc = 3;
        }
        int code = setup_command(cli, "AUTH", argc, argv);
        if (code != SL_CLI_OK)
            return code;
    }
    if (t->db != 0) {
        char db[16];
        snprintf(db, sizeof db, "%d", t->db);
        const char *argv[] = {"SELECT", db};
        int code = setup_command(cli, "SELECT", 2, argv);
        if (code != SL_CLI_OK)
            return code;
    }
    return SL_CLI_OK;
}

/* ---- Redis Cluster: the slot map, and the link moved to a key's owner - */

/* The slot map, from the first seed that gives one. */
static int read_map(sl_cli *cli)
{
    cli->map = malloc(sizeof *cli->map);
    if (!cli->map) {
        fprintf(stderr, "sluice %s: out of memory\n", cli->command);
        return SL_CLI_RUNTIME;
    }
    for (size_t i = 0; i < cli->target->seed_count; i++) {
        const sl_redis_seed *seed = &cli->target->seeds[i];
        sl_redis_target_clear(&cli->node);
        if (!sl_redis_target_node(cli->target, seed->host, seed->port, &cli->node)) {
            fprintf(stderr, "sluice %s: out of memory\n", cli->command);
            return SL_CLI_RUNTIME;
        }
        if (connect_node(cli, &cli->node) != SL_CLI_OK)
            continue; /* said why; the next seed may answer */
        redisReply *reply = sl_cli_command(cli, "CLUSTER SLOTS");
        char err[256];
        bool ok = sl_cluster_map_parse(reply, cli->node.host, cli->map, err, sizeof err);
        if (!ok)
            fprintf(stderr, "sluice %s: redis %s: %s\n", cli->command, cli->address,
                    reply ? err : sl_cli_error(cli));
        if (reply)
            freeReplyObject(reply);
        sl_redis_link_free(cli->link);
        cli->link = NULL;
        if (ok)
            return SL_CLI_OK;
    }
    free(cli->map);
    cli->map = NULL;
    fprintf(stderr, "sluice %s: redis %s: no seed gave the cluster's slot map\n", cli->command,
            cli->address);
    return SL_CLI_RUNTIME;
}

/* Moves the link to primary i of the map, once every reply due on the
 * link now has come (they stay in order for sl_cli_reply). */
static int move_to(sl_cli *cli, size_t i)
{
    if (cli->link && cli->node_index == (int)i)
        return SL_CLI_OK;
    while (cli->awaited > 0 && cli->link)
        event_base_loop(cli->base, EVLOOP_ONCE);
    sl_redis_link_free(cli->link);
    cli->link = NULL;
    sl_redis_target_clear(&cli->node);
    cli->node_index = -1;
    const sl_cluster_node *p = &cli->map->primaries[i];
    if (!sl_redis_target_node(cli->target, p->host, p->port, &cli->node)) {
        fprintf(stderr, "sluice %s: out of memory\n", cli->command);
        return SL_CLI_RUNTIME;
    }
    int code = connect_node(cli, &cli->node);
    if (code == SL_CLI_OK)
        cli->node_index = (int)i;
    return code;
}

int sl_cli_connect(sl_cli *cli)
{
    const sl_redis_target *t = cli->target;
    /* A server that closes while a command is written must not kill the
     * process before the message says so. */
    signal(SIGPIPE, SIG_IGN);
    if (t->tls && t->tls_options.no_verify)
        fprintf(stderr, "sluice %s: warning: redis_tls.verify is false: the server's "
                        "certificate is not checked\n", cli->command);
    cli->base = event_base_new();
    if (!cli->base) {
        fprintf(stderr, "sluice %s: cannot connect to Redis at %s: out of memory\n",
                cli->command, cli->address);
        return SL_CLI_RUNTIME;
    }
    cli->node_index = -1;
    if (t->mode != SL_REDIS_CLUSTER)
        return connect_node(cli, t);
    int code = read_map(cli);
    /* primary 0 until a command names its key: TIME goes anywhere */
    return code == SL_CLI_OK ? move_to(cli, 0) : code;
}

int sl_cli_route(sl_cli *cli, const char *key)
{
    if (!cli->map)
        return SL_CLI_OK;
    unsigned slot = sl_cluster_key_slot(key, strlen(key));
    uint16_t owner = cli->map->owner[slot];
    if (owner == SL_CLUSTER_NO_OWNER) {
        fprintf(stderr, "sluice %s: redis %s: no primary serves slot %u (of %s)\n", cli->command,
                cli->address, slot, key);
        return SL_CLI_RUNTIME;
    }
    return move_to(cli, owner);
}

size_t sl_cli_primary_count(const sl_cli *cli)
{
    return cli->map ? cli->map->primary_count : 1;
}

int sl_cli_route_primary(sl_cli *cli, size_t i)
{
    return cli->map ? move_to(cli, i) : SL_CLI_OK;
}

void sl_cli_close(sl_cli *cli)
{
    sl_redis_link_free(cli->link); /* pending replies are collected as NULL */
    while (cli->replies_count > 0) {
        redisReply *reply = cli->replies[cli->replies_head];
        if (reply)
            freeReplyObject(reply);
        cli->replies_head = (cli->replies_head + 1) % cli->replies_cap;
        cli->replies_count--;
    }
    free(cli->replies);
    if (cli->map)
        sl_cluster_map_clear(cli->map);
    free(cli->map);
    sl_redis_target_clear(&cli->node);
    if (cli->base)
        event_base_free(cli->base);
    free(cli->address);
    sl_config_free(cli->config);
    sl_redis_target_clear(&cli->own_target);
    memset(cli, 0, sizeof *cli);
}

redisReply *sl_cli_reply(sl_cli *cli)
{
    redisReply *reply = next_reply(cli);
    if (!reply) {
        fprintf(stderr, "sluice %s: redis %s: %s\n", cli->command, cli->address,
                sl_cli_error(cli));
        return NULL;
    }
    if (reply->type == REDIS_REPLY_ERROR) {
        fprintf(stderr, "sluice %s: redis %s: %s\n", cli->command, cli->address, reply->str);
        freeReplyObject(reply);
        return NULL;
    }
    return reply;
}

int sl_cli_unexpected(const sl_cli *cli, const char *what)
{
    fprintf(stderr, "sluice %s: redis %s: unexpected reply to %s\n", cli->command, cli->address,
            what);
    return SL_CLI_RUNTIME;
}

bool sl_cli_parse_count(const char *text, long long max, long long *out)
{
    if (!text || *text < '0' || *text > '9')
        return false;
    errno = 0;
    char *end = NULL;
    long long v = strtoll(text, &end, 10);
    if (errno != 0 || *end != '\0' || v < 1 || v > max)
        return false;
    *out = v;
    return true;
}

bool sl_cli_tenant_ok(const char *command, const char *tenant)
{
    if (sl_tenant_name_valid(tenant))
        return true;
    fprintf(stderr, "sluice %s: invalid tenant name '%s': must be 1..%d characters of "
                    "[A-Za-z0-9_.:-]\n", command, tenant, SL_TENANT_NAME_MAX);
    return false;
}

int sl_cli_print_json(const char *command, cJSON *root)
{
    char *text = root ? cJSON_PrintUnformatted(root) : NULL;
    cJSON_Delete(root);
    if (!text) {
        fprintf(stderr, "sluice %s: out of memory\n", command);
        return SL_CLI_RUNTIME;
    }
    puts(text);
    cJSON_free(text);
    return SL_CLI_OK;
}
