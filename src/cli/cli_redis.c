/* cli_redis.c - see cli_redis.h. */
#include "cli/cli_redis.h"

#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

/* ---- the connection: a redis_client on a private loop ----------------- */

/* One command sent, and its reply once it came (NULL: lost). */
typedef struct sl_cli_pending {
    bool came;
    redisReply *reply;
} cli_pending;

static void on_ready(void *arg, bool ready)
{
    (void)arg; /* sl_cli_connect and next_reply look at the client itself */
    (void)ready;
}

/* A reply, owned (keep_replies), kept until next_reply takes it. */
static void on_reply(redisReply *reply, void *arg)
{
    cli_pending *p = arg;
    p->came = true;
    p->reply = reply;
}

/* Keeps p as the newest command; false if out of memory. */
static bool pending_push(sl_cli *cli, cli_pending *p)
{
    if (cli->pending_count == cli->pending_cap) {
        size_t cap = cli->pending_cap ? cli->pending_cap * 2 : 16;
        cli_pending **grown = malloc(cap * sizeof *grown);
        if (!grown)
            return false;
        for (size_t i = 0; i < cli->pending_count; i++)
            grown[i] = cli->pending[(cli->pending_head + i) % cli->pending_cap];
        free(cli->pending);
        cli->pending = grown;
        cli->pending_cap = cap;
        cli->pending_head = 0;
    }
    cli->pending[(cli->pending_head + cli->pending_count) % cli->pending_cap] = p;
    cli->pending_count++;
    return true;
}

/* The arguments of a command hiredis formatted ("*N\r\n" then N times
 * "$LEN\r\n" LEN bytes "\r\n"), pointing into cmd: the client takes
 * argv, and the formatter keeps %b binary-safe. argv and lens are
 * malloc'd (caller frees); -1 if out of memory or not that shape. */
static int split_command(const char *cmd, size_t len, const char ***argv, size_t **lens)
{
    const char *p = cmd, *end = cmd + len;
    char *after;
    if (len < 4 || *p != '*')
        return -1;
    long n = strtol(p + 1, &after, 10);
    if (n < 1 || n > INT32_MAX || after + 2 > end || after[0] != '\r')
        return -1;
    p = after + 2;
    *argv = malloc((size_t)n * sizeof **argv);
    *lens = malloc((size_t)n * sizeof **lens);
    for (long i = 0; *argv && *lens && i < n; i++) {
        long long arg_len = p < end && *p == '$' ? strtoll(p + 1, &after, 10) : -1;
        if (arg_len < 0 || after + 2 > end || end - (after + 2) < arg_len + 2)
            break;
        (*argv)[i] = after + 2;
        (*lens)[i] = (size_t)arg_len;
        p = after + 2 + arg_len + 2;
        if (i + 1 == n)
            return (int)n;
    }
    free(*argv);
    free(*lens);
    return -1;
}

/* Sends argv about key, or (to_primary) to primary `primary`, its reply
 * kept in order for next_reply. False with cli->error set. */
static bool send_argv(sl_cli *cli, const char *key, bool to_primary, size_t primary, int argc,
                      const char **argv, const size_t *lens)
{
    cli_pending *p = calloc(1, sizeof *p);
    if (!p || !pending_push(cli, p)) {
        free(p);
        snprintf(cli->error, sizeof cli->error, "out of memory");
        return false;
    }
    bool sent = cli->redis &&
                (to_primary ? sl_redis_client_send_to(cli->redis, primary, argc, argv, lens,
                                                      on_reply, p)
                            : sl_redis_client_send(cli->redis, key, argc, argv, lens, on_reply, p));
    if (!sent) {
        cli->pending_count--; /* never sent: no callback will come */
        free(p);
        const char *why = cli->redis ? sl_redis_client_error(cli->redis) : "";
        snprintf(cli->error, sizeof cli->error, "%s", why[0] ? why : "connection lost");
    }
    return sent;
}

/* The same for a command hiredis formatted. */
static bool send_formatted(sl_cli *cli, const char *key, bool to_primary, size_t primary,
                           const char *cmd, int len)
{
    const char **argv = NULL;
    size_t *lens = NULL;
    int argc = len < 0 ? -1 : split_command(cmd, (size_t)len, &argv, &lens);
    if (argc < 0) {
        snprintf(cli->error, sizeof cli->error, "out of memory");
        return false;
    }
    bool sent = send_argv(cli, key, to_primary, primary, argc, argv, lens);
    free(argv);
    free(lens);
    return sent;
}

/* Formats a printf-like command (hiredis's syntax) and sends it as
 * send_formatted does. */
static bool send_vformat(sl_cli *cli, const char *key, bool to_primary, size_t primary,
                         const char *format, va_list ap)
{
    char *cmd = NULL;
    int len = redisvFormatCommand(&cmd, format, ap);
    bool sent = send_formatted(cli, key, to_primary, primary, cmd, len);
    if (len >= 0)
        redisFreeCommand(cmd);
    return sent;
}

static bool append_failed(const sl_cli *cli)
{
    fprintf(stderr, "sluice %s: redis %s: cannot queue a command: %s\n", cli->command,
            cli->address, sl_cli_error(cli));
    return false;
}

bool sl_cli_append(sl_cli *cli, const char *key, const char *format, ...)
{
    va_list ap;
    va_start(ap, format);
    bool sent = send_vformat(cli, key, false, 0, format, ap);
    va_end(ap);
    return sent || append_failed(cli);
}

bool sl_cli_append_argv(sl_cli *cli, const char *key, int argc, const char **argv,
                        const size_t *lens)
{
    size_t *measured = NULL;
    if (!lens) {
        measured = malloc((size_t)argc * sizeof *measured);
        if (!measured) {
            snprintf(cli->error, sizeof cli->error, "out of memory");
            return append_failed(cli);
        }
        for (int i = 0; i < argc; i++)
            measured[i] = strlen(argv[i]);
    }
    bool sent = send_argv(cli, key, false, 0, argc, argv, lens ? lens : measured);
    free(measured);
    return sent || append_failed(cli);
}

/* The next reply in order: runs the loop until it is in. NULL if the
 * connection went first (cli->error says why). */
static redisReply *next_reply(sl_cli *cli)
{
    if (cli->pending_count == 0) {
        snprintf(cli->error, sizeof cli->error, "no command sent");
        return NULL;
    }
    cli_pending *p = cli->pending[cli->pending_head];
    /* Bounded: a command sent gets its reply, or NULL when the link's
     * reply deadline closes it; 1 means the loop has nothing left. */
    while (!p->came && event_base_loop(cli->base, EVLOOP_ONCE) == 0)
        continue;
    if (!p->came) {
        snprintf(cli->error, sizeof cli->error, "connection lost");
        return NULL;
    }
    cli->pending_head = (cli->pending_head + 1) % cli->pending_cap;
    cli->pending_count--;
    redisReply *reply = p->reply;
    free(p);
    if (!reply) {
        const char *why = sl_redis_client_error(cli->redis);
        snprintf(cli->error, sizeof cli->error, "%s", why[0] ? why : "connection lost");
    }
    return reply;
}

redisReply *sl_cli_command(sl_cli *cli, const char *key, const char *format, ...)
{
    va_list ap;
    va_start(ap, format);
    bool sent = send_vformat(cli, key, false, 0, format, ap);
    va_end(ap);
    return sent ? next_reply(cli) : NULL;
}

size_t sl_cli_primary_count(const sl_cli *cli)
{
    return cli->redis ? sl_redis_client_primary_count(cli->redis) : 0;
}

redisReply *sl_cli_command_to(sl_cli *cli, size_t primary, const char *format, ...)
{
    va_list ap;
    va_start(ap, format);
    bool sent = send_vformat(cli, NULL, true, primary, format, ap);
    va_end(ap);
    return sent ? next_reply(cli) : NULL;
}

const char *sl_cli_error(const sl_cli *cli)
{
    return cli->error[0] ? cli->error : "connection lost";
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
    cli->redis = cli->base ? sl_redis_client_new(cli->base, t, NULL, on_ready, NULL, cli) : NULL;
    if (!cli->redis) {
        fprintf(stderr, "sluice %s: cannot connect to Redis at %s: out of memory\n",
                cli->command, cli->address);
        return SL_CLI_RUNTIME;
    }
    /* No scripts: the CLI sends its own (EVAL), and a user allowed only
     * LPUSH can push. */
    const sl_redis_conn_options options = {.no_scripts = true, .keep_replies = true};
    sl_redis_client_set_options(cli->redis, &options);
    /* One attempt, bounded by the connect, handshake and reply deadlines:
     * the first failure is the answer (the client would retry for ever). */
    const char *why = sl_redis_client_error(cli->redis);
    while (!sl_redis_client_ready(cli->redis) && !why[0] &&
           event_base_loop(cli->base, EVLOOP_ONCE) == 0)
        why = sl_redis_client_error(cli->redis);
    if (!sl_redis_client_ready(cli->redis)) {
        fprintf(stderr, "sluice %s: cannot connect to Redis at %s: %s\n", cli->command,
                cli->address, why[0] ? why : "connection lost");
        return SL_CLI_RUNTIME;
    }
    return SL_CLI_OK;
}

void sl_cli_close(sl_cli *cli)
{
    sl_redis_client_free(cli->redis); /* pending commands get their NULL reply */
    while (cli->pending_count > 0) {
        cli_pending *p = cli->pending[cli->pending_head];
        if (p->reply)
            freeReplyObject(p->reply);
        free(p);
        cli->pending_head = (cli->pending_head + 1) % cli->pending_cap;
        cli->pending_count--;
    }
    free(cli->pending);
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

bool sl_cli_tenant_keys(const sl_cli *cli, const char *tenant, sl_tenant_keys *keys)
{
    if (sl_tenant_keys_init(keys, cli->prefix, tenant))
        return true;
    fprintf(stderr, "sluice %s: out of memory naming the keys of %s\n", cli->command, tenant);
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
