"""throughput - a backlog drained as fast as the box allows.

100,000 queued jobs, 1 tenant (its concurrency the best of a sweep) and
100 tenants: delivered jobs/s, CPU per 1,000 jobs, Redis round trips and
commands per job. drain_run is also the fleet's throughput half."""

import time

from .. import procs as P
from .. import stats as S
from ..context import log
from ..workload import fast_tenant, job

NAME = "throughput"


def drain_run(ctx, label, redis_port, tenants_jobs, tenant_cfg, workers=2, processes=1):
    """Pushes jobs for each tenant, starts `processes` daemons, waits until
    the sink saw every job; returns the figures. tenants_jobs: {name: n};
    redis_port: a port or a Cluster (procs.redis_view)."""
    r = P.redis_view(redis_port)
    r.flushall()
    sink_p, url, sink_log = ctx.sink("sink-" + label)
    tenants = {}
    for t in tenants_jobs:
        c = dict(tenant_cfg)
        c["endpoint"] = url + "/hook/" + t
        tenants[t] = c
    cfg = ctx.config(ctx.path(ctx.name(label) + ".json"), redis_port, tenants, workers=workers)
    total = 0
    for t, n in tenants_jobs.items():
        ctx.push(cfg, t, [job(i) for i in range(n)])
        total += n
    cmd0, rcpu0 = r.commandstats(), r.cpu_s()
    sink_cpu0 = P.proc_cpu_s(sink_p.pid)
    tail = P.LogTail(sink_log)
    t_start = P.now_us()
    daemons = [ctx.start_sluice(ctx.name("sluice-" + label), cfg) for _ in range(processes)]
    threads0 = [P.thread_sched(p.pid) for p in daemons]
    ok = ctx.wait_count(tail, total, ctx.scale(180, 60), alive=daemons)
    time.sleep(0.05)  # the last acks
    sluice_cpu = sum(P.proc_cpu_s(p.pid) for p in daemons if p.poll() is None)
    thread_s = max((P.busiest_thread_s(t0, P.thread_sched(p.pid))
                    for p, t0 in zip(daemons, threads0) if p.poll() is None), default=0.0)
    rss = max((P.proc_status_kib(p.pid, "VmHWM") for p in daemons if p.poll() is None),
              default=0)
    cmd1, rcpu1 = r.commandstats(), r.cpu_s()
    sink_cpu = P.proc_cpu_s(sink_p.pid) - sink_cpu0
    for p in daemons:
        ctx.stop_sluice(p)
    ctx.procs.stop(sink_p)
    recs = P.sink_records(sink_log)
    arrivals = [a for a, _, _, st in recs if st == 200]
    deltas = [S.command_counts(a, b) for a, b in zip(cmd0, cmd1)]
    delta = S.summed_counts(deltas)
    client, everything = S.sluice_commands(delta)
    n = len(arrivals)
    return {
        "label": label,
        "complete": ok and n >= total,
        "jobs": total,
        "delivered": n,
        "non_200": len(recs) - n,
        "rate_steady": S.rate_per_s(arrivals),
        "rate_e2e": n * 1e6 / (max(arrivals) - t_start) if arrivals else None,
        "wall_s": (max(arrivals) - t_start) / 1e6 if arrivals else None,
        "sluice_cpu_per_1k": sluice_cpu / max(1, n) * 1000,
        "thread_cpu_pct": 100.0 * thread_s * 1e6 / (max(arrivals) - t_start) if arrivals else None,
        "redis_cpu_per_1k": (sum(rcpu1) - sum(rcpu0)) / max(1, n) * 1000,
        "redis_cpu_s_per_node": [b - a for a, b in zip(rcpu0, rcpu1)],
        "commands_per_node": [sum(d.values()) for d in deltas],
        "sink_cpu_per_1k": sink_cpu / max(1, n) * 1000,
        "round_trips_per_job": client / max(1, n),
        "commands_per_job": everything / max(1, n),
        "sluice_rss_kib": rss,
        "config": tenant_cfg,
        "processes": processes,
        "workers": workers,
        "commandstats": delta,
    }


def best_concurrency(sweep):
    """The concurrency of the sweep's fastest run (the first of equals)."""
    return max(sweep, key=lambda x: x["rate_steady"] or 0)["config"]["concurrency"]


def run(ctx):
    log("[throughput] private redis-server (keyspace notifications off)")
    _, port = P.start_redis(ctx.procs, ctx.name("redis-throughput"))
    n = ctx.scale(100000, 20000)
    sweep = []
    for conc in ctx.scale((16, 64, 256), (64,)):
        res = drain_run(ctx, "sweep-c%d" % conc, port, {"t0": ctx.scale(30000, 10000)},
                        fast_tenant(conc))
        log("[throughput] concurrency %d: %.0f jobs/s" % (conc, res["rate_steady"] or 0))
        sweep.append(res)
    conc = best_concurrency(sweep)
    # the fleet and memory scenarios drain at this concurrency too
    ctx.results["concurrency"] = conc
    one = drain_run(ctx, "one-tenant", port, {"t0": n}, fast_tenant(conc))
    log("[throughput] 1 tenant, %d jobs, concurrency %d: %.0f jobs/s" % (n, conc, one["rate_steady"] or 0))
    per = n // 100
    many_conc = 4
    many = drain_run(ctx, "hundred-tenants", port, {"b%03d" % i: per for i in range(100)},
                     fast_tenant(many_conc))
    log("[throughput] 100 tenants x %d jobs, concurrency %d each: %.0f jobs/s"
        % (per, many_conc, many["rate_steady"] or 0))
    ctx.results[NAME] = {"sweep": sweep, "one": one, "many": many}
