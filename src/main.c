/* main.c - the sluice command line: picks a subcommand and runs it.
 *
 * Exit codes: 0 ok, 1 runtime failure, 2 usage or configuration error.
 */
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "lua_scripts.h"
#include "version.h"

enum { EXIT_OK = 0, EXIT_RUNTIME = 1, EXIT_USAGE = 2 };

static const char usage_text[] =
    "Usage: sluice COMMAND [OPTIONS]\n"
    "\n"
    "Shapes traffic from Redis job queues to HTTP endpoints.\n"
    "\n"
    "Commands:\n"
    "  script [NAME]   print the embedded Lua script NAME (no NAME: list them)\n"
    "  version         print the version\n"
    "  help            print this help\n"
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
    if (strcmp(command, "version") == 0)
        return cmd_version(sub_argc, sub_argv);
    if (strcmp(command, "script") == 0)
        return cmd_script(sub_argc, sub_argv);
    if (strcmp(command, "help") == 0)
        return print_usage(stdout, EXIT_OK);
    fprintf(stderr, "sluice: unknown command '%s'\n\n", command);
    return print_usage(stderr, EXIT_USAGE);
}
