/* main.c - the sluice command line: picks a subcommand and runs it.
 *
 * Exit codes: 0 ok, 1 runtime failure, 2 usage or configuration error.
 */
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/cli.h"
#include "config/config.h"
#include "daemon/daemon.h"
#include "redis/redis_tls.h"
#include "base/log.h"
#include "redis/lua_scripts.h"
#include "version.h"

enum { EXIT_OK = 0, EXIT_RUNTIME = 1, EXIT_USAGE = 2 };

static const char usage_text[] =
    "Usage: sluice COMMAND [OPTIONS]\n"
    "\n"
    "Shapes traffic from Redis job queues to HTTP endpoints.\n"
    "\n"
    "Commands:\n"
    "  run -c FILE          run the daemon with the configuration FILE\n"
    "  check-config FILE    validate FILE, report every mistake, exit 2 if any\n"
    "  push TENANT JOB...   validate jobs, then LPUSH them onto TENANT's queue\n"
    "  stats [TENANT]       queued, scheduled, in flight, retrying, dead, rate, delay\n"
    "  dlq list|replay|purge TENANT\n"
    "                       show, requeue or delete dead-lettered jobs\n"
    "  tenant show|set|unset|pause|resume TENANT\n"
    "                       the fleet's live settings of TENANT (rate, pause, ...)\n"
    "  script [NAME]        print the embedded Lua script NAME (no NAME: list them)\n"
    "  version              print the version\n"
    "  help                 print this help\n"
    "\n"
    "Run 'sluice COMMAND --help' for a command's options.\n";

static int print_usage(FILE *to, int code)
{
    fputs(usage_text, to);
    return code;
}

/* True if argv (after the command) asks for help; false if it is empty.
 * Anything else is a usage error reported by the caller. */
static int wants_help(int argc, char **argv)
{
    return argc > 1 && (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0);
}

static int cmd_version(int argc, char **argv)
{
    if (wants_help(argc, argv)) {
        puts("Usage: sluice version\n\nPrints the version of sluice.");
        return EXIT_OK;
    }
    if (argc > 1) {
        fprintf(stderr, "sluice version: unexpected argument '%s'\n", argv[1]);
        return EXIT_USAGE;
    }
    printf("sluice %s\n", SLUICE_VERSION);
    return EXIT_OK;
}

static int cmd_script(int argc, char **argv)
{
    if (wants_help(argc, argv)) {
        puts("Usage: sluice script [NAME]\n\n"
             "Prints the embedded Lua script NAME, ready for SCRIPT LOAD or EVAL from\n"
             "any language. Without NAME, lists the scripts. Each script begins with a\n"
             "comment stating its contract.");
        return EXIT_OK;
    }
    if (argc > 2) {
        fprintf(stderr, "sluice script: expects at most one NAME, got %d arguments\n", argc - 1);
        return EXIT_USAGE;
    }
    if (argc == 1) {
        for (size_t i = 0; i < sl_lua_script_count; i++)
            puts(sl_lua_scripts[i].name);
        return EXIT_OK;
    }
    const sl_lua_script *script = sl_lua_script_find(argv[1]);
    if (!script) {
        fprintf(stderr, "sluice script: no script named '%s' (see 'sluice script')\n", argv[1]);
        return EXIT_USAGE;
    }
    if (fwrite(script->source, 1, script->length, stdout) != script->length) {
        perror("sluice script: write");
        return EXIT_RUNTIME;
    }
    return EXIT_OK;
}

/* Loads and validates a config file, printing every error to stderr. */
static sl_config *load_config(const char *command, const char *path)
{
    sl_config_env env = sl_config_env_system();
    sl_errors errors;
    sl_errors_init(&errors);
    sl_config *config = sl_config_load(path, &env, &errors);
    size_t path_len = strlen(path);
    for (size_t i = 0; i < errors.count; i++) {
        /* read failures already start with the path; field errors do not */
        bool named = strncmp(errors.items[i], path, path_len) == 0;
        fprintf(stderr, "sluice %s: %s%s%s\n", command, named ? "" : path, named ? "" : ": ",
                errors.items[i]);
    }
    sl_errors_clear(&errors);
    return config;
}

static int cmd_check_config(int argc, char **argv)
{
    if (wants_help(argc, argv)) {
        puts("Usage: sluice check-config FILE\n\n"
             "Validates the configuration FILE as `sluice run` would and reports every\n"
             "mistake with its field path. Exit code 0 if valid, 2 if not.");
        return EXIT_OK;
    }
    if (argc != 2) {
        fprintf(stderr, "sluice check-config: expects one FILE (see --help)\n");
        return EXIT_USAGE;
    }
    sl_config *config = load_config("check-config", argv[1]);
    if (!config)
        return EXIT_USAGE;
    if (config->redis.tls) {
        /* Build the TLS context the daemon will: a file that is not PEM,
         * or a key that does not match its certificate, shows here. */
        char err[512];
        SSL_CTX *ctx = sl_redis_tls_ctx_new(&config->redis.tls_options, err, sizeof err);
        if (!ctx) {
            fprintf(stderr, "sluice check-config: %s: redis_tls: %s\n", argv[1], err);
            sl_config_free(config);
            return EXIT_USAGE;
        }
        SSL_CTX_free(ctx);
        if (config->redis.tls_options.no_verify)
            fprintf(stderr, "sluice check-config: %s: warning: redis_tls.verify is false: the "
                            "Redis server's certificate will not be checked\n", argv[1]);
    }
    printf("%s: ok (%zu tenant%s%s, %d worker%s)\n", argv[1], config->tenant_count,
           config->tenant_count == 1 ? "" : "s", config->template_tenant ? " and a \"*\" template" : "",
           config->workers, config->workers == 1 ? "" : "s");
    sl_config_free(config);
    return EXIT_OK;
}

static const char run_help[] =
    "Usage: sluice run -c FILE [--log-level LEVEL]\n"
    "\n"
    "Runs the daemon: claims jobs from each tenant's Redis queue and delivers\n"
    "them to its endpoint at the tenant's rate. SIGTERM or SIGINT drains\n"
    "(finish deliveries within grace_ms, hand the rest back) and exits 0; a\n"
    "second one exits at once.\n"
    "\n"
    "  -c, --config FILE     the configuration (see check-config)\n"
    "      --log-level LEVEL error, warning, info (default) or debug\n"
    "      --log-format FORMAT\n"
    "                        text (default: level=info msg=... key=value) or json\n"
    "      --trace-departures FILE\n"
    "                        append one line per job as it leaves: tenant, claim\n"
    "                        id, slot and departure (us on Redis's clock), and the\n"
    "                        departure on this host's clock, tab-separated, to\n"
    "                        audit shaping accuracy; buffered, complete at exit\n";

static bool parse_log_level(const char *text, sl_log_level *out)
{
    static const char *const names[] = {"error", "warning", "info", "debug"};
    for (int i = 0; i < 4; i++) {
        if (strcmp(text, names[i]) == 0) {
            *out = (sl_log_level)i;
            return true;
        }
    }
    return false;
}

static int cmd_run(int argc, char **argv)
{
    static const struct option options[] = {
        {"config", required_argument, NULL, 'c'},
        {"log-level", required_argument, NULL, 'l'},
        {"trace-departures", required_argument, NULL, 't'},
        {"log-format", required_argument, NULL, 'f'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    const char *path = NULL, *trace_path = NULL;
    sl_log_level level = SL_LOG_INFO;
    bool json_logs = false;
    int opt;
    optind = 0; /* 0, not 1: glibc then forgets main's "+" (stop at the first non-option) */
    while ((opt = getopt_long(argc, argv, "c:h", options, NULL)) != -1) {
        switch (opt) {
        case 'c':
            path = optarg;
            break;
        case 'l':
            if (!parse_log_level(optarg, &level)) {
                fprintf(stderr, "sluice run: --log-level: unknown level '%s'\n", optarg);
                return EXIT_USAGE;
            }
            break;
        case 't':
            trace_path = optarg;
            break;
        case 'f':
            if (strcmp(optarg, "json") != 0 && strcmp(optarg, "text") != 0) {
                fprintf(stderr, "sluice run: --log-format: 'text' or 'json', not '%s'\n", optarg);
                return EXIT_USAGE;
            }
            json_logs = strcmp(optarg, "json") == 0;
            break;
        case 'h':
            fputs(run_help, stdout);
            return EXIT_OK;
        default:
            fputs(run_help, stderr);
            return EXIT_USAGE;
        }
    }
    if (!path || optind != argc) {
        fprintf(stderr, "sluice run: %s\n\n", path ? "unexpected argument" : "-c FILE is required");
        fputs(run_help, stderr);
        return EXIT_USAGE;
    }
    /* A SIGHUP before the daemon's handler is in (while the config loads)
     * would end the process: ignore it until then; the handler replaces this. */
    signal(SIGHUP, SIG_IGN);
    /* journald reads a "<N>" prefix as the line's level. */
    sl_log_setup(level, getenv("JOURNAL_STREAM") != NULL, json_logs);
    sl_config *config = load_config("run", path);
    if (!config)
        return EXIT_USAGE;
    FILE *trace = NULL;
    if (trace_path) {
        trace = fopen(trace_path, "a");
        if (!trace) {
            fprintf(stderr, "sluice run: --trace-departures %s: %s\n", trace_path, strerror(errno));
            sl_config_free(config);
            return EXIT_USAGE;
        }
        setvbuf(trace, NULL, _IOFBF, 1 << 20); /* no write per job */
    }
    int code = sl_daemon_run(config, path, trace);
    if (code == SL_DAEMON_EXIT_NOW) {
        if (trace)
            fflush(trace); /* the departures so far (stdio locks it against the workers) */
        _exit(EXIT_OK); /* worker threads may still be running */
    }
    if (trace && fclose(trace) != 0) {
        fprintf(stderr, "sluice run: --trace-departures %s: %s\n", trace_path, strerror(errno));
        code = EXIT_RUNTIME;
    }
    sl_config_free(config);
    return code;
}

int main(int argc, char **argv)
{
    static const struct option options[] = {
        {"help", no_argument, NULL, 'h'},
        {"version", no_argument, NULL, 'V'},
        {NULL, 0, NULL, 0},
    };
    /* '+': stop at the first non-option, which is the command. */
    int opt;
    while ((opt = getopt_long(argc, argv, "+hV", options, NULL)) != -1) {
        switch (opt) {
        case 'h':
            return print_usage(stdout, EXIT_OK);
        case 'V':
            printf("sluice %s\n", SLUICE_VERSION);
            return EXIT_OK;
        default:
            return print_usage(stderr, EXIT_USAGE);
        }
    }
    if (optind >= argc)
        return print_usage(stderr, EXIT_USAGE);

    const char *command = argv[optind];
    int sub_argc = argc - optind;
    char **sub_argv = argv + optind;
    if (strcmp(command, "run") == 0)
        return cmd_run(sub_argc, sub_argv);
    if (strcmp(command, "check-config") == 0)
        return cmd_check_config(sub_argc, sub_argv);
    if (strcmp(command, "push") == 0 || strcmp(command, "stats") == 0 ||
        strcmp(command, "dlq") == 0 || strcmp(command, "tenant") == 0)
        /* These say what failed in their own words (the Redis client's
         * error); its log lines, written for the daemon, would repeat it,
         * or speak of reconnecting where the command gives up. */
        sl_log_setup(SL_LOG_OFF, false, false);
    if (strcmp(command, "push") == 0)
        return sl_cli_push(sub_argc, sub_argv);
    if (strcmp(command, "stats") == 0)
        return sl_cli_stats(sub_argc, sub_argv);
    if (strcmp(command, "dlq") == 0)
        return sl_cli_dlq(sub_argc, sub_argv);
    if (strcmp(command, "tenant") == 0)
        return sl_cli_tenant(sub_argc, sub_argv);
    if (strcmp(command, "version") == 0)
        return cmd_version(sub_argc, sub_argv);
    if (strcmp(command, "script") == 0)
        return cmd_script(sub_argc, sub_argv);
    if (strcmp(command, "help") == 0)
        return print_usage(stdout, EXIT_OK);
    fprintf(stderr, "sluice: unknown command '%s'\n\n", command);
    return print_usage(stderr, EXIT_USAGE);
}
