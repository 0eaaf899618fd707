/* daemon_process.c - see daemon_process.h. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "daemon_process.h"
#include "process.h"

bool daemon_start(daemon_process *d, const char *config_path, const char *log_path,
                  const char *trace_path, char *err, size_t err_size)
{
    const char *binary = getenv("SLUICE_BIN");
    if (!binary) {
        snprintf(err, err_size, "SLUICE_BIN is not set (run the tests with meson test)");
        return false;
    }
    pid_t parent = getpid();
    d->pid = fork();
    if (d->pid < 0) {
        snprintf(err, err_size, "fork: %s", strerror(errno));
        d->pid = 0;
        return false;
    }
    if (d->pid == 0) {
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        if (getppid() != parent)
            _exit(127);
        int fd = open(log_path, O_WRONLY | O_CREAT | O_APPEND, 0600);
        if (fd >= 0) {
            dup2(fd, 2);
            close(fd);
        }
        if (trace_path)
            execl(binary, "sluice", "run", "-c", config_path, "--trace-departures", trace_path,
                  (char *)NULL);
        else
            execl(binary, "sluice", "run", "-c", config_path, (char *)NULL);
        _exit(127);
    }
    return true;
}

int daemon_stop(daemon_process *d, int sig, int timeout_ms)
{
    if (d->pid <= 0)
        return -1;
    int code = process_stop(d->pid, sig, timeout_ms);
    d->pid = 0;
    return code;
}
