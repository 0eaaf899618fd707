/* cli_redis.h - what the Redis subcommands share: the -c/--redis/--prefix
 * options, loading the config, one blocking connection with a 5 s timeout
 * (the daemon's redis_link, TCP, unix socket or TLS, run on a private
 * event loop until each reply is in), and error messages that name the
 * address but never the password. */
#ifndef SLUICE_CLI_REDIS_H
#define SLUICE_CLI_REDIS_H

#include <stdbool.h>
#include <stddef.h>

#include <cjson/cJSON.h>
#include <event2/event.h>
#include <hiredis/hiredis.h>

#include "config/config.h"
#include "config/redis_url.h"
#include "redis/cluster_slots.h"
#include "redis/redis_link.h"

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
    "                      or a cluster's redis-cluster://h:p,h:p);\n"           \
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
    sl_redis_link *link;  /* NULL until connected, and once lost */
    sl_cluster_map *map;  /* Redis Cluster: the slot map read at connect; else NULL */
    sl_redis_target node; /* Redis Cluster: the node the link is on */
    int node_index;       /* its index among map's primaries; -1 none */
    redisReply **replies; /* come, not yet taken; NULL = lost before it came */
    size_t replies_head, replies_count, replies_cap;
    size_t awaited;       /* commands sent whose reply has not come */
    char error[256];      /* why the connection went, "" while it lasts */
} sl_cli;

/* Loads the config or parses the URL (exactly one of them must be given)
 * and settles the prefix; prints what is wrong to stderr. Returns
 * SL_CLI_OK or SL_CLI_USAGE; *cli is always safe to sl_cli_close. */
int sl_cli_open(sl_cli *cli, const char *command, const sl_cli_opts *opts);

/* Connects (5 s timeout for connect and every reply), authenticates and
 * selects the database; with a Redis Cluster, reads the slot map from
 * the first seed that answers and connects to a primary (sl_cli_route
 * moves it). SL_CLI_OK, or SL_CLI_RUNTIME after a message
 * naming the redacted address. */
int sl_cli_connect(sl_cli *cli);

/* Redis Cluster (nothing otherwise): moves the connection to the primary
 * that owns key's slot, once the replies due on the current one have
 * come (sl_cli_reply still returns them in order). Every command after
 * it must be about keys of that slot, or keyless. SL_CLI_OK, or
 * SL_CLI_RUNTIME after a message. */
int sl_cli_route(sl_cli *cli, const char *key);
/* How many primaries hold keys (1 for one server), and moving the
 * connection to primary i (as sl_cli_route): what every primary must
 * answer (SCAN). */
size_t sl_cli_primary_count(const sl_cli *cli);
int sl_cli_route_primary(sl_cli *cli, size_t i);

/* Disconnects and frees; safe on a zeroed or failed sl_cli. */
void sl_cli_close(sl_cli *cli);

/* Queues a command (printf-like, as hiredis's redisCommand) or one given
 * as argv/lens; its reply is read with sl_cli_reply, in order. False
 * after printing why (out of memory, connection lost). */
bool sl_cli_append(sl_cli *cli, const char *format, ...);
bool sl_cli_append_argv(sl_cli *cli, int argc, const char **argv, const size_t *lens);

/* Sends a command and waits for its reply, which is returned as it came
 * (an error reply too; caller frees). NULL if the connection failed:
 * sl_cli_error says why, nothing is printed. */
redisReply *sl_cli_command(sl_cli *cli, const char *format, ...);

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

/* Prints root as one line of JSON and deletes it (root NULL: out of
 * memory). Returns SL_CLI_OK or SL_CLI_RUNTIME. */
int sl_cli_print_json(const char *command, cJSON *root);

/* Parses a decimal count in 1..max; false on anything else. */
bool sl_cli_parse_count(const char *text, long long max, long long *out);

#endif
