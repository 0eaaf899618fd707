"""tenants - 10,000 idle tenants: the daemon's CPU and Redis round trips
while nothing happens, and pickup latency (a job LPUSHed to an idle tenant
until it reaches the endpoint), with keyspace notifications on and off."""

import random
import time

from .. import procs as P
from .. import stats as S
from ..context import log

NAME = "tenants"


def pickup_ms(records, pushed):
    """The pickup latency (ms) of each pushed job the sink saw: records are
    sink_records, pushed maps a job's key to when it was pushed (us)."""
    return [(a - pushed[k]) / 1000 for a, k, _, st in records if k in pushed]


def idle_run(ctx, notify, tenants, warm_s, window_s, pickups, spacing_s):
    label = "notify" if notify else "polling"
    _, port = P.start_redis(ctx.procs, ctx.name("redis-tenants-" + label), notify=notify)
    sink_p, url, sink_log = ctx.sink("sink-tenants-" + label)
    names = ["m%05d" % i for i in range(tenants)]
    cfg = ctx.config(ctx.path("tenants-%s.json" % label), port,
                     {t: {"endpoint": url + "/hook", "rate": 10, "concurrency": 4}
                      for t in names})
    p = ctx.start_sluice(ctx.name("sluice-tenants-" + label), cfg)
    r = P.Redis(port)
    time.sleep(warm_s)
    if p.poll() is not None:
        raise RuntimeError("sluice exited during the warm-up (see %s)" % ctx.workdir)
    cmd0, rcpu0, cpu0, t0 = r.commandstats(), r.cpu_s(), P.proc_cpu_s(p.pid), time.monotonic()
    time.sleep(window_s)
    cmd1, rcpu1, cpu1, t1 = r.commandstats(), r.cpu_s(), P.proc_cpu_s(p.pid), time.monotonic()
    rss = P.proc_status_kib(p.pid, "VmRSS")
    hwm = P.proc_status_kib(p.pid, "VmHWM")
    wall = t1 - t0
    client, everything = S.sluice_commands(S.command_counts(cmd0, cmd1))
    # Pickup: one job to an idle tenant at a time, each tenant once.
    rng = random.Random(5)
    chosen = rng.sample(names, pickups)
    pushed = {}
    for i, t in enumerate(chosen):
        key = "pick-%d" % i
        body = b'{"id":"%s","body":{"n":%d}}' % (key.encode(), i)
        at = P.now_us()
        r.call("LPUSH", "sluice:{%s}:queue" % t, body)
        pushed[key] = at
        time.sleep(spacing_s)
    tail = P.LogTail(sink_log)
    ok = ctx.wait_count(tail, pickups, 5.0, alive=[p], poll_s=0.05)
    r.close()
    ctx.stop_sluice(p)
    ctx.procs.stop(sink_p)
    lat = pickup_ms(P.sink_records(sink_log), pushed)
    return {
        "notify": notify, "tenants": tenants, "warm_s": warm_s, "window_s": wall,
        "sluice_cpu_pct": 100.0 * (cpu1 - cpu0) / wall,
        "redis_cpu_pct": 100.0 * (rcpu1 - rcpu0) / wall,
        "round_trips_per_s": client / wall,
        "commands_per_s": everything / wall,
        "rss_kib": rss, "hwm_kib": hwm,
        "pickups": pickups, "picked": len(lat), "complete": ok,
        "pickup_p50_ms": S.percentile(lat, 50), "pickup_p99_ms": S.percentile(lat, 99),
        "pickup_max_ms": max(lat) if lat else None,
    }


def run(ctx):
    tenants = ctx.scale(10000, 2000)
    log("[tenants] %d idle tenants, keyspace notifications on (idle polls back off to 30 s)"
        % tenants)
    notified = idle_run(ctx, True, tenants, ctx.scale(45, 8), ctx.scale(30, 5),
                        ctx.scale(200, 30), 0.05)
    log("[tenants] notifications on: sluice %.2f%% CPU, %.0f round trips/s, pickup p50 %.2f ms p99 %.2f ms"
        % (notified["sluice_cpu_pct"], notified["round_trips_per_s"],
           notified["pickup_p50_ms"] or -1, notified["pickup_p99_ms"] or -1))
    log("[tenants] %d idle tenants, keyspace notifications off (polling, at most 1 s)" % tenants)
    polled = idle_run(ctx, False, tenants, ctx.scale(5, 3), ctx.scale(10, 3),
                      ctx.scale(50, 10), 0.1)
    log("[tenants] notifications off: sluice %.2f%% CPU, %.0f round trips/s, pickup p50 %.0f ms"
        % (polled["sluice_cpu_pct"], polled["round_trips_per_s"], polled["pickup_p50_ms"] or -1))
    ctx.results[NAME] = {"notify": notified, "polling": polled}
