"""memory - sluice's RSS holding a backlog of 1,000,000 jobs with requests
held by a slow endpoint, and draining it; Redis bytes per queued and per
claimed job, and what a claimed job costs beyond its payload."""

import resource
import time

from .. import procs as P
from ..context import log
from ..workload import FAST_CAPACITY, FAST_RATE, job

NAME = "memory"


def held_requests(soft_nofile):
    """How many requests the slow endpoint holds: 1,000 when the soft limit
    of open files allows (one descriptor each, on both sides), else 400."""
    return 1000 if soft_nofile == resource.RLIM_INFINITY or soft_nofile >= 4096 else 400


def claimed_payload(records):
    """The mean payload of claimed job records: a record ends with the job
    as pushed, which starts at its '{'."""
    return sum(len(v) - v.index(b"{") for v in records) / max(1, len(records))


def run(ctx):
    log("[memory] private redis-server (keyspace notifications off)")
    _, port = P.start_redis(ctx.procs, ctx.name("redis-memory"))
    r = P.Redis(port)
    held = held_requests(resource.getrlimit(resource.RLIMIT_NOFILE)[0])
    n = ctx.scale(1000000, 100000)
    tenant = "mem"
    sink_p, url, sink_log = ctx.sink("sink-memory")
    slow = {tenant: {"endpoint": url + "/slow/30000/hook", "rate": FAST_RATE,
                     "capacity": FAST_CAPACITY, "concurrency": held, "timeout_ms": 60000}}
    cfg_slow = ctx.config(ctx.path("memory-slow.json"), port, slow, workers=1, grace_ms=200)
    # The delta also holds the list's key and the tenants set: nothing per job.
    # Payloads take 16 consecutive lengths, so that the allocator's size
    # classes (16 bytes apart) average out instead of favouring one length.
    used0 = r.used_memory()
    jobs = [job(i, i % 16) for i in range(n)]
    payload = sum(len(j) for j in jobs) / n
    ctx.push(cfg_slow, tenant, jobs)
    del jobs
    used1 = r.used_memory()
    qkey = "sluice:{%s}:queue" % tenant
    queued = r.call("LLEN", qkey)
    per_queued = (used1 - used0) / queued
    mu_queue = r.call("MEMORY", "USAGE", qkey, "SAMPLES", "0")
    log("[memory] %d queued: %.1f bytes each in Redis (payload %.1f)" % (queued, per_queued, payload))

    # Claimed: a slow endpoint holds `held` requests for 30 s; the daemon
    # claims up to its concurrency plus what waits for a slot, then stops.
    p = ctx.start_sluice(ctx.name("sluice-memory-slow"), cfg_slow)
    last, stable, deadline = -1, 0, time.monotonic() + 15
    while time.monotonic() < deadline and stable < 5:
        time.sleep(0.2)
        c = r.call("HLEN", "sluice:{%s}:jobs" % tenant)
        stable = stable + 1 if c == last and c > 0 else 0
        last = c
    rss_slow = P.proc_status_kib(p.pid, "VmRSS")
    claimed = r.call("HLEN", "sluice:{%s}:jobs" % tenant)
    inflight = r.call("ZCARD", "sluice:{%s}:inflight" % tenant)
    mu_jobs = r.call("MEMORY", "USAGE", "sluice:{%s}:jobs" % tenant, "SAMPLES", "0")
    mu_inflight = r.call("MEMORY", "USAGE", "sluice:{%s}:inflight" % tenant, "SAMPLES", "0")
    queued_now = r.call("LLEN", qkey)
    moved = queued - queued_now
    per_claimed_keys = (mu_jobs + mu_inflight) / max(1, claimed)
    # The claimed jobs are the oldest, not a sample of all: their own payload.
    claimed_bytes = claimed_payload(r.call("HVALS", "sluice:{%s}:jobs" % tenant))
    ctx.stop_sluice(p)
    ctx.procs.stop(sink_p)

    # Draining the backlog at full speed for a few seconds: RSS sampled.
    sink_p, url, sink_log = ctx.sink("sink-memory-fast")
    fast = {tenant: {"endpoint": url + "/hook", "rate": FAST_RATE, "capacity": FAST_CAPACITY,
                     "concurrency": ctx.results.get("concurrency", 64)}}
    cfg_fast = ctx.config(ctx.path("memory-fast.json"), port, fast)
    queued_before = r.call("LLEN", qkey)  # the held jobs were handed back
    p = ctx.start_sluice(ctx.name("sluice-memory-fast"), cfg_fast)
    rss_max, end = 0, time.monotonic() + ctx.scale(5, 2)
    while time.monotonic() < end and p.poll() is None:
        rss_max = max(rss_max, P.proc_status_kib(p.pid, "VmRSS"))
        time.sleep(0.1)
    hwm = P.proc_status_kib(p.pid, "VmHWM")
    queued_after = r.call("LLEN", qkey)
    ctx.stop_sluice(p)
    ctx.procs.stop(sink_p)
    r.close()
    ctx.results[NAME] = {
        "queued": queued, "payload": payload, "per_queued": per_queued,
        "queue_memory_usage": mu_queue,
        "claimed": claimed, "inflight": inflight, "per_claimed_keys": per_claimed_keys,
        "held": held, "moved": moved,
        "claimed_payload": claimed_bytes,
        "claimed_overhead": per_claimed_keys - claimed_bytes,
        "rss_slow_kib": rss_slow, "rss_drain_max_kib": rss_max, "hwm_drain_kib": hwm,
        "drained": queued_before - queued_after,
    }
    log("[memory] claimed: %.1f bytes each (payload %.1f); sluice RSS %d KiB holding, %d KiB draining"
        % (per_claimed_keys, claimed_bytes, rss_slow, rss_max))
