/* test_close_later.c - the late socket closes both HTTP clients share
 * (http/close_later.h): a socket is never closed in the loop turn it was
 * handed over in. */
#include <fcntl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <criterion/criterion.h>
#include <event2/event.h>

#include "http/close_later.h"

typedef struct handover {
    sl_close_later *closer;
    int fd;
} handover;

static void on_readable_hand_over(evutil_socket_t fd, short kind, void *arg)
{
    (void)fd;
    (void)kind;
    handover *h = arg;
    sl_close_later_add(h->closer, h->fd);
}

/* In the turn its timer fires, a socket handed over by an earlier callback
 * of that turn must still wait for the next wait (the point of it all). */
Test(close_later, a_socket_handed_over_in_the_turn_its_timer_fires_waits_for_the_next)
{
    struct event_base *b = event_base_new();
    cr_assert(b);
    sl_close_later closer;
    cr_assert(sl_close_later_init(&closer, b));
    int first = socket(AF_INET, SOCK_STREAM, 0), second = socket(AF_INET, SOCK_STREAM, 0);
    int wake[2];
    cr_assert(first >= 0 && second >= 0 && pipe(wake) == 0);
    sl_close_later_add(&closer, first); /* its timer is due in the next turn */
    handover h = {&closer, second};
    struct event *readable = event_new(b, wake[0], EV_READ, on_readable_hand_over, &h);
    event_add(readable, NULL);
    cr_assert_eq(write(wake[1], "x", 1), 1); /* that turn runs this callback before the timer */

    event_base_loop(b, EVLOOP_ONCE);
    cr_assert_neq(fcntl(second, F_GETFD), -1, "closed in the turn it was handed over");
    event_base_loop(b, EVLOOP_ONCE);
    cr_assert_eq(fcntl(first, F_GETFD), -1, "first still open");
    cr_assert_eq(fcntl(second, F_GETFD), -1, "second still open");

    event_free(readable);
    close(wake[0]);
    close(wake[1]);
    sl_close_later_free(&closer);
    event_base_free(b);
}
