"""stats.py - the number crunching of the benchmarks, as pure functions of
their inputs (times in integer microseconds). Python standard library only."""

import bisect


def percentile(values, p):
    """The p-th percentile (0..100) by the nearest-rank method; None if empty."""
    if not values:
        return None
    s = sorted(values)
    k = max(0, min(len(s) - 1, -(-len(s) * p // 100) - 1))
    return s[int(k)]


def gaps(times):
    s = sorted(times)
    return [b - a for a, b in zip(s, s[1:])]


def rate_per_s(times):
    """Departures per second between the first and the last: (n-1)/span."""
    if len(times) < 2:
        return None
    span = max(times) - min(times)
    return (len(times) - 1) * 1e6 / span if span > 0 else None


def rate_error(times, rate):
    """Signed relative error of the measured rate against `rate`."""
    r = rate_per_s(times)
    return None if r is None else r / rate - 1.0


def gap_jitter(times, rate):
    """|gap - 1/rate| of consecutive departures, in us: (p50, p99, max)."""
    return pooled_gap_jitter([times], rate)


def pooled_gap_jitter(series, rate):
    """gap_jitter over the gaps of several series, each series' own gaps."""
    interval = 1e6 / rate
    j = [abs(g - interval) for times in series for g in gaps(times)]
    if not j:
        return (None, None, None)
    return (percentile(j, 50), percentile(j, 99), max(j))


def min_gap_ratio(times, rate):
    """The shortest gap as a fraction of the interval 1/rate."""
    g = gaps(times)
    return min(g) * rate / 1e6 if g else None


def most_in_window(times, window_us):
    """The most departures in any half-open window [t, t + window_us)."""
    s = sorted(times)
    best, lo = 0, 0
    for hi, t in enumerate(s):
        while s[lo] <= t - window_us:
            lo += 1
        best = max(best, hi - lo + 1)
    return best


def worst_window(records_by_process, window_us):
    """Where the merged departures crowd most: the start of the first
    window [t, t + window_us) holding the most of them, and per process
    (records as procs.trace_records gives them, times from their last
    field) how many it sent there and how late the latest of them left
    after its slot (Redis's clock). None without departures."""
    merged = sorted((r[4], k) for k, recs in enumerate(records_by_process) for r in recs)
    if not merged:
        return None
    best, best_lo, lo = 0, 0, 0
    for hi, (t, _) in enumerate(merged):
        while merged[lo][0] <= t - window_us:
            lo += 1
        if hi - lo + 1 > best:
            best, best_lo = hi - lo + 1, lo
    start = merged[best_lo][0]
    sent, late = [], []
    for recs in records_by_process:
        inside = [r for r in recs if start <= r[4] < start + window_us]
        sent.append(len(inside))
        late.append(max((r[3] - r[2] for r in inside), default=None))
    return {"start_us": start, "most": best, "sent": sent, "late_us": late}


def window_us(rate):
    """SPEC §4's window W = max(10 intervals, 100 ms), in us."""
    return max(10e6 / rate, 100000.0)


def window_bound(rate):
    """SPEC §4's bound: at most floor(1.02 x rate x W) + 1 departures in any
    window W (11 in any 10 intervals up to 100/s). The product is rounded
    to 9 digits first: 1.02 x 1,000/s x 0.1 s is 102, not 101.99999..."""
    return int(round(1.02 * rate * window_us(rate) / 1e6, 9)) + 1


def lateness(records):
    """Each departure's lateness against its slot, both on Redis's clock
    (us), from trace_records (tenant, id, slot, departure, local departure)."""
    return [d - slot for (_, _, slot, d, _) in records]


def lateness_ends(records, span_us):
    """Whether lateness grows over a run: (p99 of the departures in the
    first span_us, p99 of those in the last span_us), by local departure
    time; (None, None) when the run is shorter than two spans."""
    if not records:
        return None, None
    t = [x[4] for x in records]
    a, z = min(t), max(t)
    if z - a < 2 * span_us:
        return None, None
    first = [d - slot for (_, _, slot, d, local) in records if local < a + span_us]
    last = [d - slot for (_, _, slot, d, local) in records if local > z - span_us]
    return percentile(first, 99), percentile(last, 99)


def bins(times, start_us, bin_us, count):
    """How many of `times` fall in each of `count` bins from start_us."""
    out = [0] * count
    for t in times:
        i = (t - start_us) // bin_us
        if 0 <= i < count:
            out[int(i)] += 1
    return out


def shaping_summary(times, rate):
    """Everything the shaping table shows for one series of departures."""
    return tenants_summary([times], rate)


def tenants_summary(series, rate):
    """The same for several tenants shaped to the same rate, one series of
    departures each: the jitter pools every tenant's own gaps; the rate,
    its error, the most in 10 intervals, the most in the window W of SPEC
    §4 (beside its bound) and the least gap are the worst tenant's. The jitter leaves out each series' first gap: the first
    departure's slot is the moment it was claimed, so it leaves a claim
    round trip late, which is pickup latency (measured on its own), not
    shaping."""
    p50, p99, mx = pooled_gap_jitter([sorted(t)[1:] for t in series], rate)
    errors = [e for e in (rate_error(t, rate) for t in series) if e is not None]
    worst = max(errors, key=abs) if errors else None
    least = [g for g in (min_gap_ratio(t, rate) for t in series) if g is not None]
    w = window_us(rate)
    return {
        "n": sum(len(t) for t in series),
        "tenants": len(series),
        "rate": None if worst is None else rate * (1 + worst),
        "error": worst,
        "jitter_p50_us": p50,
        "jitter_p99_us": p99,
        "jitter_max_us": mx,
        "max_in_10": max((most_in_window(t, 10 * 1e6 / rate) for t in series), default=0),
        "window_us": w,
        "bound": window_bound(rate),
        "max_in_window": max((most_in_window(t, w) for t in series), default=0),
        "min_gap": min(least) if least else None,
    }


def command_counts(before, after):
    """Calls per command between two INFO commandstats snapshots."""
    return {k: after.get(k, 0) - before.get(k, 0)
            for k in set(before) | set(after) if after.get(k, 0) != before.get(k, 0)}


def summed_counts(deltas):
    """Several nodes' command counts (command_counts) added up."""
    out = {}
    for d in deltas:
        for k, v in d.items():
            out[k] = out.get(k, 0) + v
    return out


# Commands only a client sends (a script cannot call them). sluice's own
# round trips are these; the bench's INFO/CONFIG and a producer's LPUSH or
# MULTI/EXEC are not counted as sluice's.
CLIENT_ONLY = {"evalsha", "eval", "evalsha_ro", "eval_ro", "fcall", "fcall_ro", "scan",
               "ping", "auth", "select", "hello", "subscribe", "psubscribe", "unsubscribe",
               "punsubscribe", "ssubscribe", "config|get", "client|setname", "client|id",
               "client|info", "script|load", "script|exists"}
BENCH = {"info"}  # the bench's own snapshots; it sends nothing else in a window


def sluice_commands(delta):
    """(round trips sluice sent, every command Redis ran for it, scripts'
    inner calls included) from a commandstats delta of a window in which
    only sluice (and the bench's INFO) talked to Redis. Every sluice script
    calls TIME once, so TIME beyond the script calls was sent by a client
    (sluice's clock probes)."""
    scripts = sum(delta.get(k, 0) for k in ("evalsha", "eval", "evalsha_ro", "eval_ro"))
    client = sum(v for k, v in delta.items() if k in CLIENT_ONLY)
    client += max(0, delta.get("time", 0) - scripts)
    everything = sum(v for k, v in delta.items() if k not in BENCH)
    return client, everything


def overlapping(windows, stalls):
    """How many of the (start, end) windows overlap at least one of the
    (start, end) stalls."""
    stalls = sorted(stalls)
    ends = []  # the latest stall end up to each stall start, for bisect
    latest = None
    for a, b in stalls:
        latest = b if latest is None else max(latest, b)
        ends.append(latest)
    starts = [a for a, _ in stalls]
    n = 0
    for a, b in windows:
        i = bisect.bisect_right(starts, b) - 1  # the last stall starting by b
        if i >= 0 and ends[i] >= a:
            n += 1
    return n


def probe_window(stalls, marks, start_us, end_us):
    """The stall probe's wake-ups within [start_us, end_us]: (wake-ups,
    p99 and p99.9 lateness in us, or None when below the probe's 300 us
    threshold). stalls: (expected, actual) of late wake-ups; marks: (time,
    wake-ups so far) checkpoints."""
    before = [n for t, n in marks if t <= start_us]
    after = [n for t, n in marks if t >= end_us]
    inside = [n for t, n in marks if start_us <= t <= end_us]
    n0 = max(before) if before else (min(inside) if inside else 0)
    n1 = min(after) if after else (max(inside) if inside else n0)
    wakeups = max(0, n1 - n0)
    late = sorted((b - a for a, b in stalls if start_us <= a <= end_us), reverse=True)

    def top(p):
        k = -(-wakeups * (100 - p) // 100)  # rank from the top, rounded up
        k = max(1, int(k))
        return late[k - 1] if wakeups and k <= len(late) else None
    return wakeups, top(99), top(99.9)


def noise_shares(wall_s, ncpu, busy_jiffies, steal_jiffies, total_jiffies, ours_s, clk_tck):
    """The machine's CPU during a scenario, as % of all its CPUs: what the
    bench's own processes used (ours_s seconds), what other processes used
    (the machine's busy time beyond ours: foreign) and what the hypervisor
    stole (of all jiffies /proc/stat counted)."""
    foreign = max(0.0, busy_jiffies / clk_tck - ours_s)
    return {
        "wall_s": wall_s,
        "foreign_pct": 100.0 * foreign / (wall_s * ncpu) if wall_s > 0 else 0.0,
        "steal_pct": 100.0 * steal_jiffies / max(1, total_jiffies),
        "ours_pct": 100.0 * ours_s / (wall_s * ncpu) if wall_s > 0 else 0.0,
    }
