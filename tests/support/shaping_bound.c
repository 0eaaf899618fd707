/* shaping_bound.c - see shaping_bound.h. */
#include "shaping_bound.h"

int64_t spec_window_us(double rate)
{
    double ten_intervals = 10 * 1e6 / rate;
    int64_t whole = (int64_t)ten_intervals; /* rounded up below: a window holds all of them */
    if ((double)whole < ten_intervals)
        whole++;
    return whole > 100000 ? whole : 100000;
}

size_t spec_most_in_window(double rate)
{
    /* 1.02 x rate x W is often a whole number (500/s, 100 ms: 51): a hair
     * of tolerance keeps the float product from landing just under it. */
    double allowed = 1.02 * rate * (double)spec_window_us(rate) / 1e6;
    return (size_t)(allowed + 1e-9) + 1; /* positive: the cast is the floor */
}

size_t most_in_window(const int64_t *t, size_t n, int64_t window_us)
{
    /* a busiest window can always start at a departure */
    size_t most = 0;
    for (size_t i = 0, j = 0; i < n; i++) {
        if (j < i)
            j = i;
        while (j < n && t[j] - t[i] < window_us)
            j++;
        if (j - i > most)
            most = j - i;
    }
    return most;
}
