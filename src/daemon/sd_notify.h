/* sd_notify.h - the systemd notification protocol (sd_notify(3)), without
 * libsystemd: one datagram to the socket named by $NOTIFY_SOCKET. Outside
 * systemd (no $NOTIFY_SOCKET) every call does nothing. */
#ifndef SLUICE_SD_NOTIFY_H
#define SLUICE_SD_NOTIFY_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/socket.h>
#include <sys/un.h>

/* Fills addr from a $NOTIFY_SOCKET value: a path, or "@name" for the
 * abstract namespace. False if it is empty or too long. */
bool sl_sd_notify_address(const char *socket_name, struct sockaddr_un *addr, socklen_t *len);

/* The watchdog interval systemd asks for, from $WATCHDOG_USEC (for this
 * process: $WATCHDOG_PID, when set, must be `pid`); 0 when there is none. */
int64_t sl_sd_watchdog_usec(const char *watchdog_usec, const char *watchdog_pid, long pid);

/* Sends `state` ("READY=1", "STOPPING=1", "WATCHDOG=1", with "\nSTATUS=..."
 * lines) to $NOTIFY_SOCKET. False if there is no manager or it failed. */
bool sl_sd_notify(const char *state);

#endif
