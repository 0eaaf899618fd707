"""fleet - 1, 2 and 4 daemons on one tenant: the global rate error of a
shaped tenant and SPEC §4's window bound on the merged departures (their
traces merged), and the throughput of a backlog."""

from .. import procs as P
from .. import stats as S
from ..context import log
from ..workload import fast_tenant
from .shaping import shaped_backlog
from .throughput import drain_run

NAME = "fleet"


def fleet_run(ctx, redis_port, k, rate, seconds):
    """k daemons of one worker each shaping one tenant to rate, each with a
    trace of its own: the merged departures' figures and each one's share."""
    tenant = "f%d" % k
    sink_p, sink_log, cfg, n = shaped_backlog(ctx, redis_port, "fleet-%d" % k, [tenant], rate,
                                              seconds, workers=1)
    tail = P.LogTail(sink_log)
    traces = [ctx.path(ctx.name("trace-fleet-%d" % k) + ".tsv") for _ in range(k)]
    daemons = [ctx.start_sluice(ctx.name("sluice-fleet-%d" % k), cfg, t) for t in traces]
    ok = ctx.wait_count(tail, n, seconds * 1.5 + 15, alive=daemons, poll_s=0.05)
    for p in daemons:
        ctx.stop_sluice(p)
    ctx.procs.stop(sink_p)
    records = [P.trace_records(t) for t in traces]
    merged = [r[4] for recs in records for r in recs]
    shares = [len(recs) for recs in records]
    endpoint = [a for a, _, _, st in P.sink_records(sink_log) if st == 200]
    return {"processes": k, "rate": rate, "jobs": n, "complete": ok and len(endpoint) >= n,
            "daemon": S.shaping_summary(merged, rate),
            "endpoint": S.shaping_summary(endpoint, rate), "shares": shares,
            "worst_window": S.worst_window(records, S.window_us(rate))}


def run(ctx):
    log("[fleet] private redis-server (keyspace notifications off)")
    _, port = P.start_redis(ctx.procs, ctx.name("redis-fleet"))
    shaped, fast = [], []
    conc = ctx.results.get("concurrency", 64)  # the throughput sweep's best, if it ran
    for k in (1, 2, 4):
        res = fleet_run(ctx, port, k, 1000, ctx.scale(10, 3))
        d = res["daemon"]
        log("[fleet] %d x sluice at 1,000/s: merged, most in %.0f ms %d (bound %d), error %.3f%%,"
            " shares %s" % (k, d["window_us"] / 1000, d["max_in_window"], d["bound"],
                            100 * (d["error"] or 0), res["shares"]))
        ww = res["worst_window"]
        if ww and d["max_in_window"] > d["bound"]:
            # which members crowded it, and how late each was: the
            # evidence for src/job/pacing.h's fleet rule
            log("[fleet]   over the bound in the window from %d us: sent %s, latest lateness "
                "us %s" % (ww["start_us"], ww["sent"], ww["late_us"]))
        shaped.append(res)
        t = drain_run(ctx, "fleet-fast-%d" % k, port, {"ft": ctx.scale(50000, 10000)},
                      fast_tenant(conc), workers=1, processes=k)
        log("[fleet] %d x sluice, rate far above: %.0f jobs/s" % (k, t["rate_steady"] or 0))
        fast.append(t)
    ctx.results[NAME] = {"shaped": shaped, "fast": fast}
