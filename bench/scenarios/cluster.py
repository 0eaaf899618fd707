"""cluster - sluice on a Redis Cluster of 3 primaries and 3 replicas, beside
one redis-server in the same run (issue 14): a backlog spread over tenants
on every shard, drained as fast as the box allows, with Redis CPU per
1,000 jobs on each shard; a fleet of 2 daemons shaping one tenant on the
cluster (its rate error, the window bound on the merged departures); and
one shaped tenant whose slot moves to another shard mid-run (claims meet
ASK, then MOVED): its rate error over the run and
the window bound through the move.

The slot stays in migration 50 ms, about what `redis-cli --cluster
reshard` takes for a tenant's handful of keys. While a slot migrates,
Redis answers a script whose keys are partly absent with TRYAGAIN on both
nodes, and a claim names keys that are often empty (retry, dlq,
settings): a tenant waits out the whole migration, and a longer one costs
its rate that time (0.5 s cost -9.8% of a 6 s run here)."""

import threading

import time

from .. import redis_cluster as RC
from .. import procs as P
from ..context import log
from ..workload import fast_tenant
from .. import stats as S
from .fleet import fleet_run
from .shaping import shaped_backlog
from .throughput import drain_run

NAME = "cluster"
TENANTS_PER_SHARD = 2


def per_shard(res, tenants, per_tenant, ranges):
    """Each shard's jobs and Redis CPU s per 1,000 of them, from a drain
    run on the cluster: [{"shard", "jobs", "cpu_per_1k", "commands_per_job"}]."""
    out = []
    for shard, cpu in enumerate(res["redis_cpu_s_per_node"]):
        jobs = per_tenant * sum(1 for t in tenants
                                if RC.shard_of(RC.tenant_slot(t), ranges) == shard)
        out.append({"shard": shard, "jobs": jobs,
                    "cpu_per_1k": cpu / max(1, jobs) * 1000,
                    "commands_per_job": res["commands_per_node"][shard] / max(1, jobs)})
    return out


RESHARD_RATE = 200


def reshard_run(ctx, cluster, seconds):
    """One tenant shaped to RESHARD_RATE by one daemon while its slot moves
    to another shard a third of the way in: the departures' figures."""
    tenant = RC.tenants_per_shard(cluster.ranges, len(cluster.primaries), 1, prefix="r")[0][0]
    sink_p, sink_log, cfg, n = shaped_backlog(ctx, cluster, "cluster-reshard", [tenant],
                                              RESHARD_RATE, seconds, workers=1)
    tail = P.LogTail(sink_log)
    trace = ctx.path(ctx.name("trace-cluster-reshard") + ".tsv")
    daemon = ctx.start_sluice(ctx.name("sluice-cluster-reshard"), cfg, trace)
    moved = {}

    def mover():
        time.sleep(seconds / 3.0)
        moved["keys"] = cluster.move_slot(RC.tenant_slot(tenant), 1, log=log)

    t = threading.Thread(target=mover, daemon=True)
    t.start()
    ok = ctx.wait_count(tail, n, seconds * 1.5 + 15, alive=[daemon], poll_s=0.05)
    t.join(timeout=30)
    ctx.stop_sluice(daemon)
    ctx.procs.stop(sink_p)
    departures = [x for (_, _, _, _, x) in P.trace_records(trace)]
    return {"rate": RESHARD_RATE, "jobs": n, "complete": ok, "keys_moved": moved.get("keys"),
            "daemon": S.shaping_summary(departures, RESHARD_RATE)}


def run(ctx):
    log("[cluster] private redis-server, and a cluster of 3 primaries + 3 replicas")
    _, port = P.start_redis(ctx.procs, ctx.name("redis-cluster-single"))
    cluster = RC.start_cluster(ctx.procs, ctx.name("cluster-node"))
    shards = RC.tenants_per_shard(cluster.ranges, len(cluster.primaries), TENANTS_PER_SHARD)
    tenants = sorted(t for names in shards.values() for t in names)
    per = ctx.scale(20000, 4000)
    conc = ctx.results.get("concurrency", 64)  # the throughput sweep's best, if it ran
    jobs = {t: per for t in tenants}
    single = drain_run(ctx, "cluster-single", port, jobs, fast_tenant(conc))
    log("[cluster] one redis-server, %d tenants: %.0f jobs/s, Redis %.4f CPU s/1k"
        % (len(tenants), single["rate_steady"] or 0, single["redis_cpu_per_1k"]))
    clustered = drain_run(ctx, "cluster-3", cluster, jobs, fast_tenant(conc))
    shard_rows = per_shard(clustered, tenants, per, cluster.ranges)
    log("[cluster] 3 primaries, %d tenants: %.0f jobs/s, Redis CPU s/1k per shard %s"
        % (len(tenants), clustered["rate_steady"] or 0,
           ", ".join("%.4f" % s["cpu_per_1k"] for s in shard_rows)))
    fleet = fleet_run(ctx, cluster, 2, 1000, ctx.scale(10, 3))
    d = fleet["daemon"]
    log("[cluster] 2 x sluice at 1,000/s on the cluster: error %.3f%%, most in %.0f ms %d (bound %d)"
        % (100 * (d["error"] or 0), d["window_us"] / 1000, d["max_in_window"], d["bound"]))
    reshard = reshard_run(ctx, cluster, ctx.scale(20, 6))
    d = reshard["daemon"]
    log("[cluster] 1 tenant at %d/s, its slot moved mid-run: error %.3f%%, most in %.0f ms %d "
        "(bound %d)" % (RESHARD_RATE, 100 * (d["error"] or 0), d["window_us"] / 1000,
                        d["max_in_window"], d["bound"]))
    ctx.results[NAME] = {"single": single, "cluster": clustered, "shards": shard_rows,
                         "fleet": fleet, "reshard": reshard, "tenants": len(tenants),
                         "jobs_per_tenant": per}
