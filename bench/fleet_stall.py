"""fleet_stall - SPEC §4's window bound on a fleet's merged departures
when members stall: K daemons (one worker each) shape one tenant's
backlog of 8 s at 1,000/s; at 3 s and at 5 s one of them (or, with --all,
every one) is stopped with SIGSTOP for --stall-ms, then continued. Prints
the most merged departures in any window W beside the bound, and the
worst window's makeup (how many each daemon sent there, how late each
was: stats.worst_window).

    python3 -m bench.fleet_stall --build build-release [--processes 4]
        [--stall-ms 60] [--all] [--keep]

Everything it starts (redis-server, sluice-sink, the daemons) is its own,
on loopback, and stopped by PID when it ends."""

import argparse
import os
import shutil
import signal
import sys
import threading
import time

from . import procs as P
from . import stats as S
from .__main__ import parse_args as bench_args
from .context import Context
from .scenarios.shaping import shaped_backlog

RATE = 1000
SECONDS = 8
STALLS_AT_S = (3.0, 5.0)


def stall_daemons(daemons, who_all, stall_ms, t0):
    """SIGSTOP, then SIGCONT after stall_ms, at each of STALLS_AT_S."""
    for at in STALLS_AT_S:
        time.sleep(max(0.0, at - (time.monotonic() - t0)))
        victims = [d for d in (daemons if who_all else daemons[1:2]) if d.poll() is None]
        for d in victims:
            os.kill(d.pid, signal.SIGSTOP)
        time.sleep(stall_ms / 1000.0)
        for d in victims:
            os.kill(d.pid, signal.SIGCONT)


def run(ctx, k, stall_ms, who_all):
    _, port = P.start_redis(ctx.procs, ctx.name("redis-stall"))
    _, sink_log, cfg, n = shaped_backlog(ctx, port, "stall", ["st"], RATE, SECONDS, workers=1)
    tail = P.LogTail(sink_log)
    traces = [ctx.path(ctx.name("trace-stall") + ".tsv") for _ in range(k)]
    daemons = [ctx.start_sluice(ctx.name("sluice-stall"), cfg, t) for t in traces]
    t0 = time.monotonic()
    stopper = threading.Thread(target=stall_daemons, args=(daemons, who_all, stall_ms, t0))
    stopper.start()
    ok = ctx.wait_count(tail, n, SECONDS * 3 + 15, alive=daemons, poll_s=0.05)
    stopper.join()
    for d in daemons:
        ctx.stop_sluice(d)
    records = [P.trace_records(t) for t in traces]
    merged = [r[4] for recs in records for r in recs]
    w = S.window_us(RATE)
    return {"complete": ok, "most": S.most_in_window(merged, w), "bound": S.window_bound(RATE),
            "shares": [len(r) for r in records], "worst": S.worst_window(records, w)}


def main():
    ap = argparse.ArgumentParser(prog="python3 -m bench.fleet_stall")
    ap.add_argument("--build", required=True)
    ap.add_argument("--processes", type=int, default=4)
    ap.add_argument("--stall-ms", type=int, default=60)
    ap.add_argument("--all", action="store_true", help="stop every daemon, not one")
    ap.add_argument("--keep", action="store_true", help="keep the work dir (traces, logs)")
    a = ap.parse_args()
    ctx = Context(bench_args(["--build", a.build] + (["--keep"] if a.keep else [])))
    try:
        res = run(ctx, a.processes, a.stall_ms, a.all)
    finally:
        ctx.procs.stop_all()
        if not a.keep:
            shutil.rmtree(ctx.workdir, ignore_errors=True)
    print("%d daemons at %d/s, %s stopped %d ms at %s s: most merged in 100 ms %d (bound %d), "
          "shares %s, all delivered: %s" % (a.processes, RATE, "all" if a.all else "one",
                                            a.stall_ms, " and ".join("%g" % s for s in STALLS_AT_S),
                                            res["most"], res["bound"], res["shares"],
                                            "yes" if res["complete"] else "NO"))
    print("worst window: %s" % res["worst"])
    if a.keep:
        print("work dir: %s" % ctx.workdir)
    return 0 if res["complete"] else 1


if __name__ == "__main__":
    sys.exit(main())
