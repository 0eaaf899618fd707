/* process.c - see process.h. */
#include <errno.h>
#include <signal.h>
#include <sys/wait.h>
#include <time.h>

#include "process.h"

int process_stop(pid_t pid, int sig, int timeout_ms)
{
    kill(pid, sig);
    int status = 0;
    for (int waited = 0; waited <= timeout_ms; waited += 10) {
        if (waitpid(pid, &status, WNOHANG) == pid)
            return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
        sleep_ms(10);
    }
    kill(pid, SIGKILL);
    waitpid(pid, &status, 0);
    return -1;
}

void sleep_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) == -1 && errno == EINTR) {
    }
}
