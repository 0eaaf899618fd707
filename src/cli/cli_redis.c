/* cli_redis.c - see cli_redis.h. */
#include "cli/cli_redis.h"

#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>

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

/* Sends one setup command and checks for an error reply; the message
 * names the command only (its arguments may be secret). */
static int setup_command(sl_cli *cli, const char *what, int argc, const char **argv)
{
    redisReply *reply = redisCommandArgv(cli->conn, argc, argv, NULL);
    if (!reply) {
        fprintf(stderr, "sluice %s: redis %s: %s failed: %s\n", cli->command, cli->address, what,
                cli->conn->errstr);
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

int sl_cli_connect(sl_cli *cli)
{
    const sl_redis_target *t = cli->target;
    struct timeval timeout = {CLI_TIMEOUT_S, 0};
    cli->conn = t->unix_path ? redisConnectUnixWithTimeout(t->unix_path, timeout)
                             : redisConnectWithTimeout(t->host, t->port, timeout);
    if (!cli->conn || cli->conn->err) {
        fprintf(stderr, "sluice %s: cannot connect to Redis at %s: %s\n", cli->command,
                cli->address, cli->conn ? cli->conn->errstr : "out of memory");
        return SL_CLI_RUNTIME;
    }
    if (redisSetTimeout(cli->conn, timeout) != REDIS_OK) {
        fprintf(stderr, "sluice %s: redis %s: cannot set the timeout: %s\n", cli->command,
                cli->address, strerror(errno));
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

void sl_cli_close(sl_cli *cli)
{
    if (cli->conn)
        redisFree(cli->conn);
    free(cli->address);
    sl_config_free(cli->config);
    sl_redis_target_clear(&cli->own_target);
    memset(cli, 0, sizeof *cli);
}

bool sl_cli_appended(const sl_cli *cli, int status)
{
    if (status == REDIS_OK)
        return true;
    fprintf(stderr, "sluice %s: redis %s: cannot queue a command: %s\n", cli->command,
            cli->address, cli->conn->errstr[0] ? cli->conn->errstr : "out of memory");
    return false;
}

redisReply *sl_cli_reply(sl_cli *cli)
{
    void *out = NULL;
    if (redisGetReply(cli->conn, &out) != REDIS_OK || !out) {
        fprintf(stderr, "sluice %s: redis %s: %s\n", cli->command, cli->address,
                cli->conn->errstr[0] ? cli->conn->errstr : "connection lost");
        return NULL;
    }
    redisReply *reply = out;
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
