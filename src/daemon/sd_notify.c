/* sd_notify.c - see sd_notify.h. */
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "daemon/sd_notify.h"

bool sl_sd_notify_address(const char *socket_name, struct sockaddr_un *addr, socklen_t *len)
{
    size_t n = socket_name ? strlen(socket_name) : 0;
    if (n == 0 || n >= sizeof addr->sun_path)
        return false;
    memset(addr, 0, sizeof *addr);
    addr->sun_family = AF_UNIX;
    memcpy(addr->sun_path, socket_name, n);
    if (addr->sun_path[0] == '@')
        addr->sun_path[0] = '\0'; /* abstract: the length, not a NUL, ends it */
    *len = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + n);
    return true;
}

int64_t sl_sd_watchdog_usec(const char *watchdog_usec, const char *watchdog_pid, long pid)
{
    if (!watchdog_usec || !*watchdog_usec)
        return 0;
    if (watchdog_pid && *watchdog_pid && strtol(watchdog_pid, NULL, 10) != pid)
        return 0; /* meant for another process */
    char *end;
    long long usec = strtoll(watchdog_usec, &end, 10);
    return *end == '\0' && usec > 0 ? (int64_t)usec : 0;
}

bool sl_sd_notify(const char *state)
{
    struct sockaddr_un addr;
    socklen_t len;
    if (!sl_sd_notify_address(getenv("NOTIFY_SOCKET"), &addr, &len))
        return false;
    int fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return false;
    bool sent = sendto(fd, state, strlen(state), MSG_NOSIGNAL, (struct sockaddr *)&addr, len) ==
                (ssize_t)strlen(state);
    close(fd);
    return sent;
}
