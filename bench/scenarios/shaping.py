"""shaping - how exactly a tenant's rate is kept, 1/s to 20,000/s: what
SPEC §4 calls steady, measured.

Each rate from a backlog: the most departures in any window W = max(10
intervals, 100 ms) beside its bound floor(1.02 x rate x W) + 1, rate
error, gap jitter, lateness against the slot (p50, p99), from the daemon's
--trace-departures and at the endpoint; beside each run, a stall probe
and (up to 1,000/s) a bare timer say what the machine gave any timer.
Then three tenants on one worker (50/s, 500/s, 5,000/s, 4 s of backlog
each), three longer runs (60 s at 100/s, 1,000/s and 10,000/s: lateness
in the first and the last 10 s), and a bursty input into a 100/s tenant,
plotted. shaped_backlog is also the fleet's shaped half."""

import os
import sys
import time

from .. import procs as P
from .. import stall_probe
from .. import stats as S
from .. import timer_twin
from ..context import log
from ..workload import SHAPED_CONCURRENCY, job

NAME = "shaping"
HERE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # bench/
TWIN_MAX_RATE = 1000  # jobs/s: the jitter target's range, and as often as a Python timer keeps up
BURST_BIN_US = 100000  # the bursty plot's bins: 100 ms
MIX_RATES = (50, 500, 5000)  # jobs/s: three tenants of one worker (issue 15)
MIX_SECONDS = 4  # of backlog each
LONG_RATES = (100, 1000, 10000)  # jobs/s: the longer runs
ENDS_US = 10000000  # a longer run's lateness: its first and last 10 s


# ---- pure helpers -----------------------------------------------------------

def stagger_starts(start_us, rate, count):
    """The first slot (next_free) of each of count tenants at rate: spread
    evenly over one interval from start_us."""
    return [start_us + k * int(1e6 / rate) // count for k in range(count)]


def burst_series(pushes, burst, departures, arrivals, t0):
    """The bursty run in 100 ms bins, from half a second before the first
    burst (at t0) to a second past the last event: one row per bin of
    (seconds since t0, input/s, departures/s, arrivals/s, then the three
    running totals). pushes: when each burst of `burst` jobs went in."""
    start = t0 - 500000
    last = max(departures + arrivals + pushes)
    nbins = int((last - start) // BURST_BIN_US) + 11  # a second past the last departure
    inp = [0] * nbins
    for at in pushes:
        i = (at - start) // BURST_BIN_US
        if 0 <= i < nbins:
            inp[i] += burst
    out_d = S.bins(departures, start, BURST_BIN_US, nbins)
    out_e = S.bins(arrivals, start, BURST_BIN_US, nbins)
    per_s = 1000000 // BURST_BIN_US
    rows = []
    ci = cd = ce = 0
    for i in range(nbins):
        ci, cd, ce = ci + inp[i], cd + out_d[i], ce + out_e[i]
        rows.append(((i * BURST_BIN_US + start - t0) / 1e6, inp[i] * per_s, out_d[i] * per_s,
                     out_e[i] * per_s, ci, cd, ce))
    return rows


def first_after(pushes, times):
    """For each push, how long until the first of times at or after it
    (0 when there is none)."""
    return [min((d for d in times if d >= at), default=at) - at for at in pushes]


# ---- the witnesses: a stall probe and a bare timer --------------------------

def start_probe(ctx, base):
    name = ctx.name(base)
    path = ctx.path(name + ".tsv")
    p = ctx.procs.start(name, [sys.executable, os.path.join(HERE, "stall_probe.py"), path])
    return p, path


def stop_probe(ctx, probe):
    p, path = probe
    ctx.procs.stop(p)
    with open(path) as f:
        return stall_probe.read(f)


def start_twin(ctx, base, wakeups_per_s, max_s):
    """A bare timer with the daemon's wake-up rate (bench/timer_twin.py)."""
    name = ctx.name(base)
    path = ctx.path(name + ".txt")
    argv = [sys.executable, os.path.join(HERE, "timer_twin.py"), path,
            str(int(1e6 / wakeups_per_s)), str(max_s)]
    return ctx.procs.start(name, argv), path, wakeups_per_s


def stop_twin(ctx, twin):
    """The twin's gap jitter: (p50, p99, max) us."""
    p, path, wakeups_per_s = twin
    ctx.procs.stop(p)
    with open(path) as f:
        times = timer_twin.read(f)
    return S.gap_jitter(times, wakeups_per_s)


# ---- the runs ---------------------------------------------------------------

def rate_of(rate, tenant):
    """rate: one rate for every tenant, or a dict of each tenant's."""
    return rate[tenant] if isinstance(rate, dict) else rate


def shaped_backlog(ctx, redis_port, label, tenants, rate, seconds, workers=2):
    """A fresh Redis holding seconds * rate + 1 jobs for each of tenants,
    all shaped to rate (or each to its own: a dict), and a sink of their
    own: (sink process, sink log, config, jobs per tenant, or a dict of
    them when the rates differ)."""
    P.redis_view(redis_port).flushall()
    sink_p, url, sink_log = ctx.sink("sink-" + label)
    cfg = ctx.config(ctx.path(ctx.name(label) + ".json"), redis_port,
                     {t: {"endpoint": url + "/hook/" + t, "rate": rate_of(rate, t),
                          "concurrency": SHAPED_CONCURRENCY} for t in tenants},
                     workers=workers)
    n = {t: int(rate_of(rate, t) * seconds) + 1 for t in tenants}
    for t in tenants:
        ctx.push(cfg, t, [job(i) for i in range(n[t])])
    return sink_p, sink_log, cfg, n if isinstance(rate, dict) else n[tenants[0]]


def stagger(redis_port, tenants, rate):
    """Spreads the tenants' schedules over one interval, starting in 1 s
    (each tenant's next_free, as a pause sets it): tenants started
    together would share every slot, and one stall of the machine would
    then spoil a gap of each, a single event counted once per tenant."""
    r = P.Redis(redis_port)
    sec, usec = r.call("TIME")
    start = int(sec) * 1000000 + int(usec) + 1000000
    for t, next_free in zip(tenants, stagger_starts(start, rate, len(tenants))):
        r.call("HSET", "sluice:{%s}:shape" % t, "next_free", str(next_free), "frac", "0")
    r.close()


def shaping_run(ctx, redis_port, rate, seconds, tenant_count):
    """tenant_count tenants at rate, each its own schedule: a low rate
    gives few gaps in a run, and a p99 needs more than 100 of them."""
    tenants = ["s%d" % rate] if tenant_count == 1 else \
        ["s%d-%d" % (rate, k) for k in range(tenant_count)]
    sink_p, sink_log, cfg, per_tenant = shaped_backlog(
        ctx, redis_port, "shaping-%d" % rate, tenants, rate, seconds)
    n = per_tenant * tenant_count
    if tenant_count > 1:
        stagger(redis_port, tenants, rate)
    trace = ctx.path(ctx.name("trace-%d" % rate) + ".tsv")
    tail = P.LogTail(sink_log)
    r = P.Redis(redis_port)
    cmd0 = r.commandstats()
    # Where the jitter target applies, a bare timer keeping the daemon's
    # wake-up rate runs beside it: the floor this machine gives that run.
    twin = start_twin(ctx, "timer-twin-%d" % rate, rate * tenant_count, seconds * 1.5 + 20) \
        if rate <= TWIN_MAX_RATE else None
    p = ctx.start_sluice(ctx.name("sluice-shaping-%d" % rate), cfg, trace)
    cpu0, threads0 = P.proc_cpu_s(p.pid), P.thread_sched(p.pid)
    t0 = time.monotonic()
    window = [P.now_us()]
    ok = ctx.wait_count(tail, n, seconds * 1.5 + 15, alive=[p], poll_s=0.05)
    cpu = P.proc_cpu_s(p.pid) - cpu0 if p.poll() is None else None
    threads1 = P.thread_sched(p.pid) if p.poll() is None else None
    thread = P.busiest_thread_s(threads0, threads1) if threads1 else None
    runq = P.busiest_thread_wait(threads0, threads1) if threads1 else None
    wall = time.monotonic() - t0
    window.append(P.now_us())
    cmd1 = r.commandstats()
    r.close()
    ctx.stop_sluice(p)
    ctx.procs.stop(sink_p)
    twin_jitter = stop_twin(ctx, twin) if twin else (None, None, None)
    client, everything = S.sluice_commands(S.command_counts(cmd0, cmd1))
    tr = P.trace_records(trace)
    daemon = [[d_local for (t, _, _, _, d_local) in tr if t == tenant] for tenant in tenants]
    late = S.lateness(tr)
    first_p99, last_p99 = S.lateness_ends(tr, ENDS_US)
    # (when it should have left, when it left) on this host's clock
    late_windows = [(d_local - (d_redis - slot), d_local)
                    for (_, _, slot, d_redis, d_local) in tr if d_redis - slot > 500]
    arrivals = P.sink_records(sink_log)
    endpoint = [[a for a, _, uri, st in arrivals if st == 200 and uri == "/hook/" + tenant]
                for tenant in tenants]
    return {
        "rate": rate,
        "seconds": seconds,
        "jobs": n,
        "tenants": tenant_count,
        "complete": ok and sum(len(e) for e in endpoint) >= n,
        "daemon": S.tenants_summary(daemon, rate),
        "endpoint": S.tenants_summary(endpoint, rate),
        "twin_jitter_p99_us": twin_jitter[1],
        "twin_jitter_max_us": twin_jitter[2],
        "late_p50_us": S.percentile(late, 50),
        "late_p99_us": S.percentile(late, 99),
        "late_max_us": max(late) if late else None,
        "late_first_p99_us": first_p99,
        "late_last_p99_us": last_p99,
        "sluice_cpu_pct": 100.0 * cpu / wall if cpu is not None and wall > 0 else None,
        "thread_cpu_pct": 100.0 * thread / wall if thread is not None and wall > 0 else None,
        # the busiest thread, runnable but waiting for a CPU: per wake-up, share of the run
        "runq_wait_us": 1e6 * runq[0] / runq[1] if runq and runq[1] else None,
        "runq_wait_pct": 100.0 * runq[0] / wall if runq and wall > 0 else None,
        "round_trips_per_job": client / max(1, len(tr)),
        "commands_per_job": everything / max(1, len(tr)),
        "late_windows": late_windows,
        "window_us": window,
    }


def mix_run(ctx, redis_port, seconds):
    """Three tenants on one worker, each its own rate and backlog: each
    one's figures, as a run of its own would show them. A tenant's pacing
    must not depend on its neighbours'."""
    rates = {"m%d" % r: r for r in MIX_RATES}
    tenants = sorted(rates, key=rates.get)
    sink_p, sink_log, cfg, n = shaped_backlog(ctx, redis_port, "shaping-mix", tenants, rates,
                                              seconds, workers=1)
    trace = ctx.path(ctx.name("trace-mix") + ".tsv")
    tail = P.LogTail(sink_log)
    # the bare timer wakes as often as the tenants it is judged beside (up to 1,000/s)
    slow = sum(r for r in MIX_RATES if r <= TWIN_MAX_RATE)
    twin = start_twin(ctx, "timer-twin-mix", slow, seconds * 1.5 + 20)
    p = ctx.start_sluice(ctx.name("sluice-shaping-mix"), cfg, trace)
    ok = ctx.wait_count(tail, sum(n.values()), seconds * 1.5 + 15, alive=[p], poll_s=0.05)
    ctx.stop_sluice(p)
    ctx.procs.stop(sink_p)
    twin_jitter = stop_twin(ctx, twin)
    tr = P.trace_records(trace)
    arrivals = P.sink_records(sink_log)
    out = []
    for t in tenants:
        mine = [x for x in tr if x[0] == t]
        late = S.lateness(mine)
        endpoint = [a for a, _, uri, st in arrivals if st == 200 and uri == "/hook/" + t]
        out.append({
            "tenant": t, "rate": rates[t], "jobs": n[t],
            "complete": len(endpoint) >= n[t],
            "daemon": S.shaping_summary([x[4] for x in mine], rates[t]),
            "endpoint": S.shaping_summary(endpoint, rates[t]),
            "late_p50_us": S.percentile(late, 50),
            "late_p99_us": S.percentile(late, 99),
            "late_max_us": max(late) if late else None,
        })
    return {"seconds": seconds, "tenants": out, "complete": ok and all(x["complete"] for x in out),
            "twin_rate": slow, "twin_jitter_p99_us": twin_jitter[1],
            "twin_jitter_max_us": twin_jitter[2]}


def log_run(label, d, res):
    """One line per run, per tenant: the window bound, the rate error,
    jitter beside the bare timer's, lateness."""
    log("[shaping] %s: most in %.0f ms %d (bound %d), error %s, p99 jitter %s us (bare timer %s"
        " us), late p50 %s us p99 %s us"
        % (label, d["window_us"] / 1000, d["max_in_window"], d["bound"],
           "%+.3f%%" % (100 * d["error"]) if d["error"] is not None else "-",
           d["jitter_p99_us"], res.get("twin_jitter_p99_us"), res.get("late_p50_us"),
           res.get("late_p99_us")))


def bursty_run(ctx):
    """Bursts into a 100/s tenant; input and output per 100 ms bin."""
    _, port = P.start_redis(ctx.procs, ctx.name("redis-bursty"), notify=True)
    sink_p, url, sink_log = ctx.sink("sink-bursty")
    rate, burst, every_s, bursts = 100, 150, 2.0, ctx.scale(6, 3)
    tenant = "bursty"
    cfg = ctx.config(ctx.path("bursty.json"), port,
                     {tenant: {"endpoint": url + "/hook/" + tenant, "rate": rate,
                               "concurrency": 16}})
    trace = ctx.path("trace-bursty.tsv")
    p = ctx.start_sluice(ctx.name("sluice-bursty"), cfg, trace)
    time.sleep(1.5)  # ready, the tenant idle and notified
    r = P.Redis(port)
    key = "sluice:{%s}:queue" % tenant
    pushes = []
    t0 = P.now_us()
    for b in range(bursts):
        target = t0 + int(b * every_s * 1e6)
        while P.now_us() < target:
            time.sleep(min(0.01, max(0.0, (target - P.now_us()) / 1e6)))
        jobs = [job(b * burst + i) for i in range(burst)]
        at = P.now_us()
        r.call("LPUSH", key, *jobs)
        pushes.append(at)
    r.close()
    total = burst * bursts
    tail = P.LogTail(sink_log)
    ok = ctx.wait_count(tail, total, total / rate + 15, alive=[p], poll_s=0.05)
    time.sleep(0.2)
    ctx.stop_sluice(p)
    ctx.procs.stop(sink_p)
    daemon = [d for (_, _, _, _, d) in P.trace_records(trace)]
    endpoint = [a for a, _, _, st in P.sink_records(sink_log) if st == 200]
    rows = burst_series(pushes, burst, daemon, endpoint, t0)
    data = ctx.path("bursty.dat")
    with open(data, "w") as f:
        f.write("# t_s input_per_s daemon_per_s endpoint_per_s"
                " input_total daemon_total endpoint_total\n")
        for row in rows:
            f.write("%.2f %d %d %d %d %d %d\n" % row)
    return {
        "rate": rate, "burst": burst, "every_s": every_s, "bursts": bursts,
        "complete": ok and len(endpoint) >= total,
        "data": data,
        "daemon": S.shaping_summary(daemon, rate),
        "endpoint": S.shaping_summary(endpoint, rate),
        "peak_bin_daemon_per_s": max(row[2] for row in rows),
        "peak_bin_endpoint_per_s": max(row[3] for row in rows),
        "first_departure_ms": [x / 1000 for x in first_after(pushes, daemon)],
    }


def plan(quick, rates=""):
    """(rate, seconds, tenants) of each run: at 1/s and 10/s, 20 and 5
    tenants give 600 and 1,000 gaps, as 100/s gives with one. rates: the
    --rates flag, only those rates (comma-separated) when not empty."""
    runs = [(1, 5, 20), (10, 3, 5), (100, 3, 1), (1000, 3, 1), (10000, 3, 1), (20000, 3, 1)] \
        if quick else [(1, 30, 20), (10, 20, 5), (100, 10, 1), (1000, 10, 1), (10000, 10, 1),
                       (20000, 10, 1)]
    if rates:
        wanted = [int(r) for r in rates.split(",") if r.isdigit()]
        runs = [p for p in runs if p[0] in wanted]
    return runs


def plan_more(quick, rates=""):
    """(whether the three-tenant mix runs, (rate, seconds) of each longer
    run): both, or with --rates only those it names ("mix", "long")."""
    words = set(rates.split(",")) if rates else {"mix", "long"}
    long_s = 21 if quick else 60  # two ends of 10 s, and some time between
    return "mix" in words, [(r, long_s) for r in LONG_RATES] if "long" in words else []


def run(ctx):
    log("[shaping] private redis-server (keyspace notifications off)")
    _, port = P.start_redis(ctx.procs, ctx.name("redis-shaping"))
    runs = []
    probe = start_probe(ctx, "stall-probe-shaping")
    for rate, seconds, tenant_count in plan(ctx.quick, ctx.args.rates):
        res = shaping_run(ctx, port, rate, seconds, tenant_count)
        log_run("%d/s for %d s" % (rate, seconds), res["daemon"], res)
        runs.append(res)
    mix, longer = plan_more(ctx.quick, ctx.args.rates)
    mixed = None
    if mix:
        log("[shaping] %s on one worker, %d s of backlog each"
            % (", ".join("%d/s" % r for r in MIX_RATES), MIX_SECONDS))
        mixed = mix_run(ctx, port, MIX_SECONDS)
        for t in mixed["tenants"]:
            log_run("mix, %d/s" % t["rate"], t["daemon"], dict(t, **{
                "twin_jitter_p99_us": mixed["twin_jitter_p99_us"]
                if t["rate"] <= TWIN_MAX_RATE else None}))
    long_runs = []
    for rate, seconds in longer:
        res = shaping_run(ctx, port, rate, seconds, 1)
        log_run("%d/s for %d s" % (rate, seconds), res["daemon"], res)
        log("[shaping] %d/s for %d s: p99 lateness %s us in the first 10 s, %s us in the last"
            % (rate, seconds, res["late_first_p99_us"], res["late_last_p99_us"]))
        long_runs.append(res)
    log("[shaping] bursty input into a 100/s tenant (keyspace notifications on)")
    bursty = bursty_run(ctx)
    stalls = stop_probe(ctx, probe)
    for res in runs + long_runs:
        res["late_over_500us"] = len(res["late_windows"])
        res["late_in_stall"] = S.overlapping(res.pop("late_windows"), stalls["stalls"])
        a, z = res.pop("window_us")
        res["probe_wakeups"], res["probe_p99_us"], res["probe_p999_us"] = \
            S.probe_window(stalls["stalls"], stalls["marks"], a, z)
    stalls["stalls"] = len(stalls["stalls"])
    del stalls["marks"]
    ctx.results[NAME] = {"runs": runs, "mix": mixed, "long": long_runs, "bursty": bursty,
                         "probe": stalls}
