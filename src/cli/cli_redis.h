/* cli_redis.h - what the Redis subcommands share: the -c/--redis/--prefix
 * options, loading the config, blocking commands with a 5 s timeout (the
 * daemon's redis_client, whatever the shape of the Redis, run on a
 * private event loop until each reply is in), and error messages that
 * name the address but never the password. Each command names the key it
 * is about, so that it goes where that key lives; the commands of one
 * MULTI name the same key. */
#ifndef SLUICE_CLI_REDIS_H
#define SLUICE_CLI_REDIS_H

#include <stdbool.h>
#include <stddef.h>

#include <cjson/cJSON.h>
#include <event2/event.h>
#include <hiredis/hiredis.h>

#include "config/config.h"
#include "config/redis_url.h"
#include "redis/keys.h"
#include "redis/redis_client.h"

enum { SL_CLI_OK = 0, SL_CLI_RUNTIME = 1, SL_CLI_USAGE = 2 };

/* The options some subcommands take besides the shared ones. */
enum {
    SL_CLI_TAKES_JSON = 1,
    SL_CLI_TAKES_LIMIT = 2,
    SL_CLI_TAKES_COUNT = 4,
    SL_CLI_TAKES_BY = 8,
    SL_CLI_TAKES_FOR = 16
};

/* Help text lines describing the shared options. */
#define SL_CLI_COMMON_HELP                                                         \
    "  -c, --config FILE   take Redis, prefix and tenant rules from FILE\n"        \
    "      --redis URL     or connect to URL (redis://, rediss://, unix://,\n"     \
    "                      redis-sentinel:// or redis-cluster://);\n"            \
    "                      the prefix is then \"sluice\"\n"                        \
    "      --prefix P      use key prefix P instead\n"                             \
    "  -h, --help          print this help\n"

/* The options as given; the strings are borrowed from argv. */
typedef struct sl_cli_opts {
    const char *config_path;
    const char *redis_url;
    const char *prefix;
    bool json;         /* --json */
    const char *limit; /* --limit's argument, NULL if absent */
    const char *count; /* --count's argument, NULL if absent */
    const char *by;    /* --by's argument, NULL if absent */
    const char *for_;  /* --for's argument, NULL if absent */
} sl_cli_opts;

/* Parses the options of `command` (argv[0] is its name; options may come
 * after operands): -c/--config, --redis, --prefix, -h/--help, and those
 * of `takes` (SL_CLI_TAKES_*). True: go on with *opts filled and the
 * operands at argv[*operand..argc). False: stop and return *exit_code,
 * SL_CLI_OK after printing `help` to stdout (-h), SL_CLI_USAGE after
 * printing what is wrong to stderr. */
bool sl_cli_parse_options(int argc, char **argv, const char *command, unsigned takes,
                          const char *help, sl_cli_opts *opts, int *operand, int *exit_code);

/* A subcommand's view of Redis. Owns everything it points to; release
 * with sl_cli_close. */
typedef struct sl_cli {
    const char *command;  /* "push", "dlq list", ...: the prefix of messages */
    sl_config *config;    /* with -c; NULL with --redis */
    sl_redis_target own_target; /* the parsed --redis URL */
    const sl_redis_target *target; /* config's or own_target */
    char *address;        /* the URL with the password replaced by "***" */
    char prefix[72];
    struct event_base *base; /* NULL until sl_cli_connect */
    sl_redis_client *redis;  /* NULL until sl_cli_connect */
    /* The commands sent, oldest first, each with its reply once it came
     * (replies from several nodes come in any order; they are read in the
     * order the commands went). */
    struct sl_cli_pending **pending;
    size_t pending_head, pending_count, pending_cap;
    char error[256];      /* why the last command failed, "" before */
} sl_cli;

/* Loads the config or parses the URL (exactly one of them must be given)
 * and settles the prefix; prints what is wrong to stderr. Returns
 * SL_CLI_OK or SL_CLI_USAGE; *cli is always safe to sl_cli_close. */
int sl_cli_open(sl_cli *cli, const char *command, const sl_cli_opts *opts);

/* Connects (5 s timeout for connect and every reply), authenticates and
 * selects the database; one attempt. SL_CLI_OK, or SL_CLI_RUNTIME after a
 * message naming the redacted address. */
int sl_cli_connect(sl_cli *cli);

/* Disconnects and frees; safe on a zeroed or failed sl_cli. */
void sl_cli_close(sl_cli *cli);

/* Queues a command about key (NULL: about none, e.g. TIME), printf-like
 * as hiredis's redisCommand, or given as argv/lens; its reply is read
 * with sl_cli_reply, in order. False after printing why (out of memory,
 * connection lost). */
bool sl_cli_append(sl_cli *cli, const char *key, const char *format, ...);
bool sl_cli_append_argv(sl_cli *cli, const char *key, int argc, const char **argv,
                        const size_t *lens);

/* Sends a command about key (NULL: none) and waits for its reply, which
 * is returned as it came (an error reply too; caller frees). NULL if the
 * connection failed: sl_cli_error says why, nothing is printed. */
redisReply *sl_cli_command(sl_cli *cli, const char *key, const char *format, ...);

/* How many primaries the Redis has (1 but for a Cluster): what each must
 * answer (SCAN) goes to each with sl_cli_command_to. */
size_t sl_cli_primary_count(const sl_cli *cli);
/* sl_cli_command sent to primary i (< sl_cli_primary_count). */
redisReply *sl_cli_command_to(sl_cli *cli, size_t primary, const char *format, ...);

/* Why the last command got no reply ("no reply within 5000 ms", ...). */
const char *sl_cli_error(const sl_cli *cli);

/* Reads the next pipelined reply. Returns it (caller frees with
 * freeReplyObject), or NULL after printing why: connection lost or timed
 * out, or an error reply (which is freed). */
redisReply *sl_cli_reply(sl_cli *cli);

/* Prints "sluice COMMAND: redis ADDRESS: what" for a reply of an
 * unexpected type. Always returns SL_CLI_RUNTIME. */
int sl_cli_unexpected(const sl_cli *cli, const char *what);

/* True if tenant is a valid name; else prints why for command. */
bool sl_cli_tenant_ok(const char *command, const char *tenant);

/* Fills keys with tenant's keys under cli's prefix (free them with
 * sl_tenant_keys_free); false after printing why (out of memory). */
bool sl_cli_tenant_keys(const sl_cli *cli, const char *tenant, sl_tenant_keys *keys);

/* Prints root as one line of JSON and deletes it (root NULL: out of
 * memory). Returns SL_CLI_OK or SL_CLI_RUNTIME. */
int sl_cli_print_json(const char *command, cJSON *root);

/* Parses a decimal count in 1..max; false on anything else. */
bool sl_cli_parse_count(const char *text, long long max, long long *out);

#endif
