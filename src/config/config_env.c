/* config_env.c - the real environment of config parsing (config_env.h). */
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "config/config_env.h"

#define READ_FILE_MAX (64 * 1024 * 1024)

static const char *system_getenv(void *ctx, const char *name)
{
    (void)ctx;
    return getenv(name);
}

static char *system_read_file(void *ctx, const char *path, char *err, size_t err_size)
{
    (void)ctx;
    char ebuf[128];
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        snprintf(err, err_size, "%s", strerror_r(errno, ebuf, sizeof ebuf));
        return NULL;
    }
    const char *why = NULL;
    size_t len = 0, cap = 4096;
    char *buf = malloc(cap);
    if (!buf)
        why = "out of memory";
    while (!why) {
        if (len + 1 == cap) {
            char *bigger = cap > READ_FILE_MAX ? NULL : realloc(buf, cap * 2);
            if (!bigger) {
                why = cap > READ_FILE_MAX ? "larger than 64 MiB" : "out of memory";
                break;
            }
            buf = bigger;
            cap *= 2;
        }
        ssize_t got = read(fd, buf + len, cap - len - 1);
        if (got < 0 && errno == EINTR)
            continue;
        if (got < 0)
            why = strerror_r(errno, ebuf, sizeof ebuf);
        else if (got == 0)
            break;
        else
            len += (size_t)got;
    }
    close(fd);
    if (!why && memchr(buf, '\0', len))
        why = "contains a NUL byte";
    if (why) {
        snprintf(err, err_size, "%s", why);
        if (buf) {
            /* It may have been a secret. */
            explicit_bzero(buf, len);
            free(buf);
        }
        return NULL;
    }
    buf[len] = '\0';
    return buf;
}

sl_config_env sl_config_env_system(void)
{
    int cpus = 0;
    cpu_set_t set;
    /* The CPUs this process may run on (cpusets, systemd CPUAffinity=),
     * not merely those online. */
    if (sched_getaffinity(0, sizeof set, &set) == 0)
        cpus = CPU_COUNT(&set);
    if (cpus < 1)
        cpus = (int)sysconf(_SC_NPROCESSORS_ONLN);
    return (sl_config_env){
        .getenv_fn = system_getenv,
        .read_file_fn = system_read_file,
        .ctx = NULL,
        .cpu_count = cpus < 1 ? 1 : cpus,
    };
}
