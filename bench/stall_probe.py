#!/usr/bin/env python3
"""stall_probe.py OUT - an independent witness of machine-wide stalls.

Sleeps 1 ms at a time (timer slack 1 us, as sluice's workers use) and
writes to OUT one line "expected_us actual_us" (wall clock, microseconds)
for every wake-up more than 300 us late, until SIGTERM. A departure of
sluice that is late while this process is late too was delayed by the
machine (the hypervisor, other processes), not by sluice. Every 1,000
wake-ups, and on exit, it writes "# at T wakeups N" (N wake-ups made by
time T), so that the share of late wake-ups in any time window is known.
Its own CPU cost is a few percent of one core.

read() is the other side: what the bench makes of OUT."""

import ctypes
import signal
import sys
import time

THRESHOLD_US = 300


def main():
    ctypes.CDLL(None).prctl(29, 1000, 0, 0, 0)  # PR_SET_TIMERSLACK: 1 us
    running = [True]
    signal.signal(signal.SIGTERM, lambda s, f: running.__setitem__(0, False))
    wakeups = 0
    with open(sys.argv[1], "w", buffering=1) as out:
        while running[0]:
            before = time.time_ns() // 1000
            time.sleep(0.001)
            after = time.time_ns() // 1000
            wakeups += 1
            if after - before - 1000 > THRESHOLD_US:
                out.write("%d %d\n" % (before + 1000, after))
            if wakeups % 1000 == 0:
                out.write("# at %d wakeups %d\n" % (after, wakeups))
        out.write("# at %d wakeups %d\n" % (time.time_ns() // 1000, wakeups))


def read(lines):
    """The figures of a probe's OUT lines: (expected, actual) of each late
    wake-up (stalls), (time, wake-ups so far) checkpoints (marks), the
    wake-ups made, and how many were late by more than 0.5 and 2 ms, and
    the worst lateness (us)."""
    stalls, marks = [], []
    for line in lines:
        if line.startswith("# at "):
            parts = line.split()
            marks.append((int(parts[2]), int(parts[4])))
        elif line.strip():
            a, b = line.split()
            stalls.append((int(a), int(b)))
    late = [b - a for a, b in stalls]
    return {"stalls": stalls, "marks": marks,
            "wakeups": max((n for _, n in marks), default=0),
            "over_500us": sum(1 for x in late if x > 500),
            "over_2ms": sum(1 for x in late if x > 2000),
            "max_us": max(late, default=0)}


if __name__ == "__main__":
    main()
