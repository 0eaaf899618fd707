/* cli_run.c - see cli_run.h. */
#include "cli_run.h"

#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

int cli_run(char *out, size_t out_size, const char *in, const char *const *args)
{
    const char *bin = getenv("SLUICE_BIN");
    cr_assert_not_null(bin, "SLUICE_BIN is not set");
    char *argv[64];
    size_t argc = 0;
    argv[argc++] = strdup(bin);
    for (; args[argc - 1] && argc < 63; argc++)
        argv[argc] = strdup(args[argc - 1]);
    argv[argc] = NULL;
    int to_child[2], from_child[2];
    cr_assert(pipe(to_child) == 0 && pipe(from_child) == 0);
    pid_t pid = fork();
    cr_assert(pid >= 0);
    if (pid == 0) {
        dup2(to_child[0], 0);
        dup2(from_child[1], 1);
        dup2(from_child[1], 2);
        close(to_child[0]);
        close(to_child[1]);
        close(from_child[0]);
        close(from_child[1]);
        execv(argv[0], argv);
        _exit(127);
    }
    for (size_t i = 0; i < argc; i++)
        free(argv[i]);
    close(to_child[0]);
    close(from_child[1]);
    /* stdin first: what tests send fits in the pipe's buffer */
    if (in && write(to_child[1], in, strlen(in)) < 0)
        cr_log_warn("stdin: short write");
    close(to_child[1]);
    size_t used = 0;
    ssize_t n;
    char scratch[4096];
    while ((n = read(from_child[0], used < out_size - 1 ? out + used : scratch,
                     used < out_size - 1 ? out_size - 1 - used : sizeof scratch)) > 0)
        if (used < out_size - 1)
            used += (size_t)n;
    out[used] = '\0';
    close(from_child[0]);
    int status;
    cr_assert(waitpid(pid, &status, 0) == pid);
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}
