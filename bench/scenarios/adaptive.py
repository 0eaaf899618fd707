"""adaptive - the adaptive rate against an endpoint whose hidden limit moves
(issue 16 item 6): sluice-sink's token bucket (/_mode/limit/R) allows
100/s, then 40/s, then 80/s; one tenant with "adaptive": {"min": 5,
"max": 200} (file rate 50) drains a backlog through it. The 429 fraction,
the time the delivered rate takes to come within 10% of each hidden limit
and stay there, and the effective rate (the settings hash's adaptive_rate,
which every claim applies, sampled every 100 ms) beside the delivered
rate, plotted. Then the same with the endpoint's X-RateLimit-* headers on."""

import time
import urllib.request

from .. import procs as P
from .. import stats as S
from ..context import log
from ..workload import job

NAME = "adaptive"
LIMITS = (100, 40, 80)  # jobs/s: the hidden limit of each phase (issue 16 item 5)
ADAPTIVE = {"min": 5, "max": 200}
FILE_RATE = 50  # jobs/s: where the tenant starts, below the first limit
TOLERANCE = 0.1  # within 10% of the hidden limit
WINDOW_US = 2000000  # the delivered rate is judged over sliding 2 s windows ...
STEP_US = 500000  # ... every 0.5 s (the plot's bins too)
SAMPLE_S = 0.1  # how often the effective rate is read from Redis


# ---- pure helpers -----------------------------------------------------------

def phase_bounds(start_us, phase_us, count):
    """(start, end) of each of count phases of phase_us from start_us."""
    return [(start_us + k * phase_us, start_us + (k + 1) * phase_us) for k in range(count)]


def convergence_us(times, start_us, end_us, limit, tolerance=TOLERANCE, window_us=WINDOW_US,
                   step_us=STEP_US):
    """How long after start_us the rate of `times` (arrivals, us) came
    within tolerance of limit and stayed there until end_us: the end of
    the first window [s, s + window_us), s on a step_us grid from start_us,
    after which every window up to end_us is within. None when the last
    window is not (it never settled)."""
    lo, hi = limit * (1 - tolerance), limit * (1 + tolerance)
    starts = list(range(start_us, end_us - window_us + 1, step_us))
    ts = sorted(times)
    settled = None
    for s in starts:
        n = sum(1 for t in ts if s <= t < s + window_us)
        rate = n * 1e6 / window_us
        if lo <= rate <= hi:
            if settled is None:
                settled = s + window_us - start_us
        else:
            settled = None
    return settled


def refused_fraction(statuses):
    """The share of requests answered 429 (None when there were none)."""
    return sum(1 for s in statuses if s == 429) / len(statuses) if statuses else None


def rate_series(arrivals, samples, start_us, end_us, limits_at, bin_us=STEP_US):
    """The plot's rows, one per bin from start_us: (seconds since start,
    delivered/s in the bin, the effective rate last sampled in it (None
    before the first sample), the hidden limit at the bin's start).
    samples: (time_us, rate/s); limits_at(t_us): the hidden limit then."""
    count = int((end_us - start_us) // bin_us)
    delivered = S.bins(arrivals, start_us, bin_us, count)
    per_s = 1e6 / bin_us
    ordered = sorted(samples)
    rows, k, last = [], 0, None
    for i in range(count):
        b0 = start_us + i * bin_us
        while k < len(ordered) and ordered[k][0] < b0 + bin_us:
            last = ordered[k][1]
            k += 1
        rows.append(((b0 - start_us) / 1e6, delivered[i] * per_s, last, limits_at(b0)))
    return rows


# ---- the run ----------------------------------------------------------------

def set_limit(url, limit, headers):
    """Sets the sink's behaviour for every request to a token bucket of limit/s."""
    path = "/_mode/limit/%d%s" % (limit, "?headers=1" if headers else "")
    with urllib.request.urlopen(url + path, timeout=5) as r:
        if r.status != 200:
            raise RuntimeError("sluice-sink %s: HTTP %d" % (path, r.status))


def adaptive_run(ctx, redis_port, headers, phase_s):
    """One tenant through the three hidden limits, phase_s each."""
    label = "adaptive-headers" if headers else "adaptive"
    r = P.Redis(redis_port)
    r.call("FLUSHALL")
    sink_p, url, sink_log = ctx.sink("sink-" + label)
    tenant = {"endpoint": url + "/hook", "rate": FILE_RATE, "concurrency": 32,
              "adaptive": ADAPTIVE,
              "retry": {"max_attempts": 100, "base_ms": 50, "max_ms": 1000}}
    cfg = ctx.config(ctx.path(ctx.name(label) + ".json"), redis_port, {"ad": tenant}, workers=1)
    jobs = int(sum(LIMITS) * phase_s * 1.3)  # never runs dry
    ctx.push(cfg, "ad", [job(i) for i in range(jobs)])
    set_limit(url, LIMITS[0], headers)
    d = ctx.start_sluice(ctx.name("sluice-" + label), cfg)
    phase_us = int(phase_s * 1e6)
    start = P.now_us()
    samples = []
    for k in range(len(LIMITS)):
        if k:
            set_limit(url, LIMITS[k], headers)
        end = start + (k + 1) * phase_us
        while P.now_us() < end and d.poll() is None:
            v = r.call("HGET", "sluice:{ad}:settings", "adaptive_rate")
            if isinstance(v, bytes):
                samples.append((P.now_us(), int(v) / 1000.0))
            time.sleep(SAMPLE_S)
    ctx.stop_sluice(d)
    ctx.procs.stop(sink_p)
    r.close()
    phases = phase_bounds(start, phase_us, len(LIMITS))
    recs = [x for x in P.sink_records(sink_log) if start <= x[0] < phases[-1][1]]
    ok = [a for a, _, _, st in recs if st == 200]
    out = {"headers": headers, "phase_s": phase_s, "requests": len(recs), "delivered": len(ok),
           "refused": sum(1 for x in recs if x[3] == 429),
           "refused_fraction": refused_fraction([x[3] for x in recs]), "phases": []}
    for (p0, p1), limit in zip(phases, LIMITS):
        sent = [x for x in recs if p0 <= x[0] < p1]
        conv = convergence_us(ok, p0, p1, limit)
        tail = [a for a in ok if p1 - WINDOW_US <= a < p1]
        out["phases"].append({
            "limit": limit, "requests": len(sent),
            "refused_fraction": refused_fraction([x[3] for x in sent]),
            "converge_s": None if conv is None else conv / 1e6,
            "last_2s_rate": len(tail) * 1e6 / WINDOW_US,
        })

    def limit_at(t):
        return LIMITS[min(len(LIMITS) - 1, max(0, (t - start) // phase_us))]
    out["series"] = rate_series(ok, samples, start, phases[-1][1], limit_at)
    return out


def run(ctx):
    log("[adaptive] private redis-server (keyspace notifications off)")
    _, port = P.start_redis(ctx.procs, ctx.name("redis-adaptive"))
    phase_s = ctx.scale(15, 8)
    runs = []
    for headers in (False, True):
        res = adaptive_run(ctx, port, headers, phase_s)
        log("[adaptive]%s hidden limit %s/s, %d s each: 429s %d of %d requests (%.2f%%); "
            "within 10%% after %s s" % (
                " with X-RateLimit headers," if headers else "",
                "/".join(str(x) for x in LIMITS), phase_s, res["refused"], res["requests"],
                100 * (res["refused_fraction"] or 0),
                ", ".join("-" if p["converge_s"] is None else "%.1f" % p["converge_s"]
                          for p in res["phases"])))
        runs.append(res)
    ctx.results[NAME] = {"runs": runs}
