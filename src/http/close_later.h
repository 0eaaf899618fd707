/* close_later.h - closes sockets one loop turn late, for a base that
 * batches its epoll changes (EVENT_BASE_FLAG_EPOLL_USE_CHANGELIST).
 *
 * Why: such a base applies event changes at its next wait. Were a socket
 * closed now and a new one opened on the same number before that wait,
 * "remove, add" would fold into no change while the kernel had dropped
 * the closed socket, and the new one would never wake the loop. A timer
 * that fires only after the next wait closes them instead. */
#ifndef SLUICE_CLOSE_LATER_H
#define SLUICE_CLOSE_LATER_H

#include <stdbool.h>
#include <stddef.h>

#include <event2/event.h>

typedef struct sl_close_later {
    int *fds;
    size_t count, cap;
    struct event *timer;
} sl_close_later;

/* Ready on base; false if libevent cannot make its timer. */
bool sl_close_later_init(sl_close_later *c, struct event_base *base);
/* Closes fd after the base's next wait (at once if out of memory: the
 * rare risk beats a leak). The caller has deleted its events on fd. */
void sl_close_later_add(sl_close_later *c, int fd);
/* Closes what is still waiting and frees c's parts. */
void sl_close_later_free(sl_close_later *c);

#endif
