#!/usr/bin/env python3
"""timer_twin.py OUT PERIOD_US [MAX_S] - the floor for gap jitter.

Keeps a schedule of its own, one wake-up every PERIOD_US on absolute
deadlines (timer slack 1 us, as sluice's workers use), and does nothing
else: the gaps between its wake-ups show how steady any timer can be on
this machine at that moment. Run beside a shaping run with the daemon's
wake-up rate, its gap jitter is the least that run could show. Writes the
wake-up times (wall clock, microseconds), one per line, to OUT on SIGTERM
or after MAX_S seconds (default 120), whichever comes first.

read() is the other side: the wake-up times in OUT."""

import ctypes
import signal
import sys
import time


def main():
    out_path, period_us = sys.argv[1], int(sys.argv[2])
    max_s = float(sys.argv[3]) if len(sys.argv) > 3 else 120.0
    ctypes.CDLL(None).prctl(29, 1000, 0, 0, 0)  # PR_SET_TIMERSLACK: 1 us
    running = [True]
    signal.signal(signal.SIGTERM, lambda s, f: running.__setitem__(0, False))
    wakeups = []
    start = time.time_ns() // 1000
    deadline = start
    while running[0] and deadline - start < max_s * 1e6:
        deadline += period_us
        wait_us = deadline - time.time_ns() // 1000
        if wait_us > 0:
            time.sleep(wait_us / 1e6)
        wakeups.append(time.time_ns() // 1000)
    with open(out_path, "w") as out:
        out.write("".join("%d\n" % t for t in wakeups))


def read(lines):
    """The wake-up times (us) of a twin's OUT lines."""
    return [int(line) for line in lines if line.strip()]


if __name__ == "__main__":
    main()
