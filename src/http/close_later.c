/* close_later.c - deferred socket closes. See close_later.h. */
#include <stdlib.h>
#include <unistd.h>

#include "http/close_later.h"

static void close_all(sl_close_later *c)
{
    for (size_t i = 0; i < c->count; i++)
        close(c->fds[i]);
    c->count = 0;
}

static void on_timer(evutil_socket_t fd, short kind, void *arg)
{
    (void)fd;
    (void)kind;
    close_all(arg);
}

bool sl_close_later_init(sl_close_later *c, struct event_base *base)
{
    c->fds = NULL;
    c->count = c->cap = 0;
    c->timer = evtimer_new(base, on_timer, c);
    return c->timer != NULL;
}

void sl_close_later_add(sl_close_later *c, int fd)
{
    if (c->count == c->cap) {
        size_t n = c->cap ? 2 * c->cap : 16;
        int *bigger = realloc(c->fds, n * sizeof *bigger);
        if (!bigger) {
            close(fd);
            return;
        }
        c->fds = bigger;
        c->cap = n;
    }
    c->fds[c->count++] = fd;
    /* Added again even when pending: a timer already due in this turn
     * would close fd before the next wait; re-adding it puts it after. */
    struct timeval next_turn = {0, 0};
    evtimer_add(c->timer, &next_turn);
}

void sl_close_later_free(sl_close_later *c)
{
    close_all(c);
    free(c->fds);
    c->fds = NULL;
    c->cap = 0;
    if (c->timer)
        event_free(c->timer);
    c->timer = NULL;
}
