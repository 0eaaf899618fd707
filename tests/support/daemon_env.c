/* daemon_env.c - see daemon_env.h. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon_env.h"

void daemon_env_start(sink_process *sink, char *dir, size_t dir_size, const char *name)
{
    const char *bin = getenv("SLUICE_SINK");
    cr_assert_not_null(bin, "SLUICE_SINK is not set");
    char err[256];
    cr_assert(sink_start(sink, bin, err, sizeof err), "sink: %s", err);
    snprintf(dir, dir_size, "/tmp/sluice-test-%s-XXXXXX", name);
    cr_assert_not_null(mkdtemp(dir), "mkdtemp %s", dir);
}

void daemon_env_stop(sink_process *sink, const char *dir)
{
    sink_stop(sink);
    char command[128];
    snprintf(command, sizeof command, "rm -rf %s", dir);
    if (dir[0] && system(command) != 0)
        cr_log_warn("could not remove %s", dir);
}

daemon_process daemon_env_run(const char *dir, const char *config, const char *trace)
{
    daemon_process d = {0};
    char log[128], err[256];
    snprintf(log, sizeof log, "%s/sluice.log", dir);
    cr_assert(daemon_start(&d, config, log, trace, err, sizeof err), "%s", err);
    return d;
}

bool timing_counts(void)
{
    const char *sanitized = getenv("SLUICE_SANITIZED");
    return !sanitized || strcmp(sanitized, "1") != 0;
}

/* Whether the file at path contains needle (the whole file read). */
static bool file_contains(const char *path, const char *needle)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return false;
    char *text = NULL;
    size_t size = 0;
    bool found = getdelim(&text, &size, '\0', f) > 0 && strstr(text, needle) != NULL;
    free(text);
    fclose(f);
    return found;
}

bool daemon_env_wait_log(const char *dir, const char *needle, int timeout_ms)
{
    char path[128];
    snprintf(path, sizeof path, "%s/sluice.log", dir);
    for (int waited = 0; waited <= timeout_ms; waited += 20) {
        if (file_contains(path, needle))
            return true;
        sleep_ms(20);
    }
    return false;
}
