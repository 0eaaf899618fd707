"""report.py - turns the benchmark results into the printed table,
RESULTS.md (with results.json beside it) and, through plots.py, the PNG
plots. Everything but write() is a pure function of the results."""

import json
import os

from .plots import plots

MIB = 1024.0


def f(x, fmt="%.0f", none="-"):
    """x by fmt; none when x is None (a figure a run did not get)."""
    return none if x is None else fmt % x


def pct(x, digits=3):
    """A signed ratio as a percentage: 0.0012 -> "+0.120%"."""
    return "-" if x is None else ("%+." + str(digits) + "f%%") % (100 * x)


def probe_us(v, wakeups):
    """A lateness of the stall probe: it records only those above 300 us."""
    if not wakeups:
        return "-"
    return "< 300" if v is None else "%.0f" % v


def table(header, rows):
    """A Markdown table."""
    out = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    out += ["| " + " | ".join(str(c) for c in r) + " |" for r in rows]
    return "\n".join(out)


def bound_label(d):
    """The most departures in any window W beside the bound: "103/103"."""
    return "%d/%d" % (d["max_in_window"], d["bound"])


def window_series(sh, fl):
    """(label, daemon summary) of every shaped series the window bound of
    SPEC §4 applies to: each rate, each tenant of the mix, each longer
    run, the bursty input; then the fleets' merged departures (2 and 4
    processes)."""
    single = [("%d/s" % r["rate"], r["daemon"]) for r in sh["runs"]]
    if sh.get("mix"):
        single += [("mix %d/s" % t["rate"], t["daemon"]) for t in sh["mix"]["tenants"]]
    single += [("%d/s for %d s" % (r["rate"], r["seconds"]), r["daemon"])
               for r in sh.get("long") or []]
    if sh.get("bursty"):
        single.append(("bursty", sh["bursty"]["daemon"]))
    fleet = [("fleet x%d" % r["processes"], r["daemon"])
             for r in (fl["shaped"] if fl else []) if r["processes"] > 1]
    return [s for s in single if "max_in_window" in s[1]], \
        [s for s in fleet if "max_in_window" in s[1]]


def over_bound(series):
    """The series furthest over (or closest to) its bound."""
    return max(series, key=lambda s: (s[1]["max_in_window"] - s[1]["bound"], s[1]["bound"]))


# Where a bare timer gets 0.5 ms of p99 jitter or better, sluice must too
# (issue 15's decision 1).
JITTER_FLOOR_US = 500


def jitter_pairs(sh):
    """(label, daemon p99 jitter, the bare timer's p99 beside it) up to
    1,000/s, where the jitter target applies."""
    out = [("%d/s" % r["rate"], r["daemon"]["jitter_p99_us"], r.get("twin_jitter_p99_us"))
           for r in sh["runs"] if r["rate"] <= 1000]
    mix = sh.get("mix")
    if mix:
        out += [("mix %d/s" % t["rate"], t["daemon"]["jitter_p99_us"], mix["twin_jitter_p99_us"])
                for t in mix["tenants"] if t["rate"] <= 1000]
    return [p for p in out if p[1] is not None and p[2] is not None]


def steady_targets(sh, fl):
    """SPEC §4's "steady", measured: the window bound (one process, the
    mix's tenants, the fleets), the rate error over 10 s and over 60 s,
    lateness that does not grow, jitter against a bare timer."""
    out = []
    runs = sh["runs"]
    if runs:
        worst = max(runs, key=lambda r: abs(r["daemon"]["error"] or 0))
        out.append(("shaping rate error < 0.5% over 10 s at 1/s..20,000/s (daemon trace)",
                    "worst %s at %d/s" % (pct(worst["daemon"]["error"]), worst["rate"]),
                    all(r["daemon"]["error"] is not None and abs(r["daemon"]["error"]) < 0.005
                        for r in runs)))
        worst_e = max(runs, key=lambda r: abs(r["endpoint"]["error"] or 0))
        out.append(("(same, measured at the endpoint)",
                    "worst %s at %d/s" % (pct(worst_e["endpoint"]["error"]), worst_e["rate"]),
                    all(r["endpoint"]["error"] is not None and abs(r["endpoint"]["error"]) < 0.005
                        for r in runs)))
    longer = sh.get("long") or []
    if longer:
        worst = max(longer, key=lambda r: abs(r["daemon"]["error"] or 0))
        out.append(("rate error < 0.1%% over %d s at %s (daemon trace)"
                    % (longer[0]["seconds"], ", ".join("%s/s" % format(r["rate"], ",")
                                                       for r in longer)),
                    "worst %s at %d/s" % (pct(worst["daemon"]["error"]), worst["rate"]),
                    all(r["daemon"]["error"] is not None and abs(r["daemon"]["error"]) < 0.001
                        for r in longer)))
        out.append(("lateness does not grow: p99 of the last 10 s <= the first 10 s' + 0.5 ms",
                    "; ".join("%d/s %s -> %s us" % (r["rate"], f(r["late_first_p99_us"]),
                                                    f(r["late_last_p99_us"])) for r in longer),
                    all(r["late_first_p99_us"] is not None and r["late_last_p99_us"] is not None
                        and r["late_last_p99_us"] <= r["late_first_p99_us"] + 500
                        for r in longer)))
    pairs = jitter_pairs(sh)
    if pairs:
        # Issue 15's decision: judged against the machine (the bare timer),
        # and where that gets 0.5 ms or better, 0.5 ms is the mark: a
        # daemon that sends over a network is not held to a timer that
        # does nothing else, only to the absolute target it replaced.
        def mark(p):
            return max(p[2], JITTER_FLOOR_US)
        w = max(pairs, key=lambda p: p[1] - mark(p))
        out.append(("p99 gap jitter <= a bare timer's p99 in the same run (0.5 ms where the "
                    "timer gets better), up to 1,000/s (daemon trace)",
                    "worst %s: %s us (bare timer %s us)" % (w[0], f(w[1]), f(w[2])),
                    all(p[1] <= mark(p) for p in pairs)))
    single, fleet = window_series(sh, fl)
    if single:
        w = over_bound(single)
        out.append(("in every window W = max(10 intervals, 100 ms) at most "
                    "floor(1.02 x rate x W) + 1 departures, per tenant (daemon trace)",
                    "closest %s (%s, most/bound)" % (bound_label(w[1]), w[0]),
                    all(d["max_in_window"] <= d["bound"] for _, d in single)))
    mix = sh.get("mix")
    if mix:
        out.append(("(same, three tenants on one worker: %s)"
                    % ", ".join("%d/s" % t["rate"] for t in mix["tenants"]),
                    ", ".join("%d/s %s" % (t["rate"], bound_label(t["daemon"]))
                              for t in mix["tenants"]),
                    all(t["daemon"]["max_in_window"] <= t["daemon"]["bound"]
                        for t in mix["tenants"])))
    if fleet:
        w = over_bound(fleet)
        out.append(("(same, the merged departures of 2 and 4 processes at %d/s)"
                    % fl["shaped"][0]["rate"],
                    ", ".join("%s %s" % (label, bound_label(d)) for label, d in fleet),
                    all(d["max_in_window"] <= d["bound"] for _, d in fleet)))
    return out


def targets(res):
    """(target, figure, met) for every target the issue names, of the
    scenarios that ran."""
    out = []
    tp = res.get("throughput")
    ceil = res.get("ceiling")
    if tp:
        one = tp["one"]
        out.append(("throughput >= 25,000 jobs/s end to end (1 tenant)",
                    "%s jobs/s" % f(one["rate_steady"]), (one["rate_steady"] or 0) >= 25000))
        many = tp["many"]
        out.append(("(same, 100 tenants)", "%s jobs/s" % f(many["rate_steady"]),
                    (many["rate_steady"] or 0) >= 25000))
        if ceil and ceil["rps"]:
            frac = (one["rate_steady"] or 0) / ceil["rps"]
            out.append((">= 0.6 of the wrk ceiling", "%.2f (%s / %s)" % (frac, f(one["rate_steady"]),
                                                                          f(ceil["rps"])), frac >= 0.6))
        out.append(("<= 0.2 Redis commands (round trips) per delivered job at backlog",
                    "%.4f round trips (%.2f commands with the scripts' inner calls)"
                    % (one["round_trips_per_job"], one["commands_per_job"]),
                    one["round_trips_per_job"] <= 0.2))
        out.append(("(same, 100 tenants)",
                    "%.4f round trips (%.2f commands)"
                    % (many["round_trips_per_job"], many["commands_per_job"]),
                    many["round_trips_per_job"] <= 0.2))
    sh = res.get("shaping")
    if sh:
        runs = sh["runs"]
        shaped = [x for x in runs if x["rate"] in (100, 1000)]
        if shaped:
            out.append(("(same, a backlog shaped to 100/s and 1,000/s)",
                        " and ".join("%.2f at %d/s" % (x["round_trips_per_job"], x["rate"])
                                     for x in shaped),
                        all(x["round_trips_per_job"] <= 0.2 for x in shaped)))
    fl = res.get("fleet")
    if sh or fl:
        out += steady_targets(sh or {"runs": []}, fl)
    if fl:
        four = [r for r in fl["shaped"] if r["processes"] == 4]
        if four:
            e = four[0]["daemon"]["error"]
            out.append(("fleet rate error < 1% with 4 processes", pct(e),
                        e is not None and abs(e) < 0.01))
    tn = res.get("tenants")
    if tn:
        n = tn["notify"]
        k = n["tenants"]
        out.append(("%d idle tenants: < 2%% CPU for sluice" % k, "%.2f%%" % n["sluice_cpu_pct"],
                    n["sluice_cpu_pct"] < 2))
        out.append(("%d idle tenants: < 500 Redis commands/s (round trips)" % k,
                    "%.0f/s (%.0f/s with the scripts' inner calls)"
                    % (n["round_trips_per_s"], n["commands_per_s"]), n["round_trips_per_s"] < 500))
        out.append(("pickup p50 < 5 ms", "%s ms" % f(n["pickup_p50_ms"], "%.2f"),
                    n["pickup_p50_ms"] is not None and n["pickup_p50_ms"] < 5))
        out.append(("pickup p99 < 50 ms", "%s ms" % f(n["pickup_p99_ms"], "%.2f"),
                    n["pickup_p99_ms"] is not None and n["pickup_p99_ms"] < 50))
        out.append(("sluice RSS < 64 MiB at %d tenants" % k, "%.1f MiB" % (n["rss_kib"] / MIB),
                    n["rss_kib"] < 64 * 1024))
    mem = res.get("memory")
    if mem:
        out.append(("claimed-job overhead in Redis < 200 bytes beyond the payload",
                    "%.0f bytes" % mem["claimed_overhead"], mem["claimed_overhead"] < 200))
    out += cluster_targets(res.get("cluster"))
    out += adaptive_targets(res.get("adaptive"))
    out += chaos_targets(res.get("chaos"))
    return out


def cluster_targets(cl):
    """(target, figure, met) of the cluster runs; [] when they did not run."""
    if not cl:
        return []
    c, e = cl["cluster"], cl["fleet"]["daemon"]["error"]
    return [("cluster of 3 primaries: every job delivered",
             "%d of %d" % (c["delivered"], c["jobs"]), c["complete"]),
            ("2 daemons on the cluster: one tenant's rate error < 1%", pct(e),
             e is not None and abs(e) < 0.01)] + reshard_targets(cl.get("reshard"))


def reshard_targets(rs):
    """(target, figure, met) of the run whose slot moved; [] without one."""
    if not rs:
        return []
    d = rs["daemon"]
    return [("a tenant's rate within 1% over a run with resharding", pct(d["error"]),
             d["error"] is not None and abs(d["error"]) < 0.01),
            ("no burst beyond SPEC §4's bound while its slot moves",
             "most %d in %.0f ms (bound %d)" % (d["max_in_window"], d["window_us"] / 1000,
                                               d["bound"]),
             d["max_in_window"] <= d["bound"])]


def cluster_section(cl):
    """The markdown of the cluster runs."""
    rows = []
    for label, r in (("one redis-server", cl["single"]), ("cluster, 3 primaries", cl["cluster"])):
        rows.append([label, f(r["rate_steady"]), f(r["sluice_cpu_per_1k"], "%.4f"),
                     f(r["redis_cpu_per_1k"], "%.4f"),
                     " / ".join("%.4f" % (x / max(1, r["delivered"]) * 1000)
                                for x in r["redis_cpu_s_per_node"]),
                     f(r["round_trips_per_job"], "%.4f"), f(r["commands_per_job"], "%.2f"),
                     "yes" if r["complete"] else "NO"])
    shards = table(["shard", "jobs", "Redis CPU s per 1,000 of its jobs", "commands per job"],
                   [[s["shard"], s["jobs"], "%.4f" % s["cpu_per_1k"], "%.2f" % s["commands_per_job"]]
                    for s in cl["shards"]])
    d = cl["fleet"]["daemon"]
    return ("## 8. Redis Cluster\n\n%d tenants, %d on each shard, %s jobs each, drained at "
            "the throughput sweep's concurrency by one daemon: on one redis-server, then on a "
            "cluster of 3 primaries and 3 replicas (`redis-cli --cluster create`), same run. "
            "Redis CPU is all primaries' together per 1,000 jobs, and each node's per 1,000 "
            "jobs of the run.\n\n" % (cl["tenants"], cl["tenants"] // max(1, len(cl["shards"])),
                                       format(cl["jobs_per_tenant"], ",")) +
            table(["Redis", "jobs/s", "sluice CPU s/1k", "Redis CPU s/1k", "per node",
                   "round trips/job", "commands/job", "all delivered"], rows) +
            "\n\nEach shard's CPU against its own tenants' jobs:\n\n" + shards +
            "\n\nA fleet of 2 daemons shaping one tenant to 1,000/s on the cluster: rate "
            "error %s, most in any %.0f ms %d (bound %d), departures per daemon %s."
            % (pct(d["error"]), d["window_us"] / 1000, d["max_in_window"], d["bound"],
               " + ".join(str(x) for x in cl["fleet"]["shares"])) + reshard_text(cl.get("reshard")))


def reshard_text(rs):
    """The sentence on the run whose slot moved; "" without one."""
    if not rs:
        return ""
    d = rs["daemon"]
    return ("\n\nOne tenant shaped to %d/s (%d jobs) by one daemon while its slot moves to "
            "another shard a third of the way in, as `redis-cli --cluster reshard` moves it "
            "(%s keys in one MIGRATE, the slot in migration for 50 ms, then MOVED): rate error %s, most in any %.0f ms %d (bound %d), "
            "gap jitter p99 %s us, all delivered: %s."
            % (rs["rate"], rs["jobs"], rs["keys_moved"], pct(d["error"]), d["window_us"] / 1000,
               d["max_in_window"], d["bound"], f(d["jitter_p99_us"]),
               "yes" if rs["complete"] else "NO"))


ADAPTIVE_REFUSED_MAX = 0.03  # issue 16 item 5: 429s under 3% of requests
ADAPTIVE_CONVERGE_S = 10  # ... the delivered rate within 10% within 10 s of each change
ADAPTIVE_HEADERS_REFUSED_MAX = 0.005  # "about zero" with the endpoint's headers


def adaptive_targets(ad):
    """(target, figure, met) of the adaptive scenario; [] when it did not run."""
    if not ad:
        return []
    out = []
    for r in ad["runs"]:
        frac = r["refused_fraction"] or 0
        if r["headers"]:
            out.append(("adaptive, with X-RateLimit headers: 429s about zero (< 0.5%)",
                        "%.2f%% (%d of %d)" % (100 * frac, r["refused"], r["requests"]),
                        frac < ADAPTIVE_HEADERS_REFUSED_MAX))
            continue
        out.append(("adaptive: 429s < 3% of requests (hidden limit 100, 40, 80/s)",
                    "%.2f%% (%d of %d)" % (100 * frac, r["refused"], r["requests"]),
                    frac < ADAPTIVE_REFUSED_MAX))
        changes = r["phases"][1:]  # the first phase starts; the others change
        out.append(("adaptive: delivered within 10% of the hidden limit <= 10 s after each change",
                    ", ".join("%d/s: %s" % (p["limit"], adaptive_converge_text(p))
                              for p in changes),
                    all(p["converge_s"] is not None and p["converge_s"] <= ADAPTIVE_CONVERGE_S
                        for p in changes)))
    return out


def adaptive_converge_text(p):
    """A phase's time to converge: "8.0 s", or "not within" (never settled)."""
    return "not within" if p["converge_s"] is None else "%.1f s" % p["converge_s"]


def adaptive_section(ad):
    """The adaptive scenario's section of RESULTS.md."""
    rows = []
    for r in ad["runs"]:
        for p in r["phases"]:
            rows.append(["with headers" if r["headers"] else "without", "%d/s" % p["limit"],
                         p["requests"], "%.2f%%" % (100 * (p["refused_fraction"] or 0)),
                         adaptive_converge_text(p), "%.1f/s" % p["last_2s_rate"]])
    phase_s = ad["runs"][0]["phase_s"]
    return ("## Adaptive rate against a moving hidden limit\n\nsluice-sink's token bucket "
            "(`/_mode/limit/R`, a burst of R/10) allows 100/s, then 40/s, then 80/s, %d s each; one "
            "daemon, one tenant with `\"adaptive\": {\"min\": 5, \"max\": 200}` (file rate 50/s, "
            "concurrency 32, the defaults: x0.85 down, +5/s up per 1 s window) drains a backlog "
            "through it, once without and once with the endpoint's `X-RateLimit-*` headers. "
            "*Within 10%% after*: from the change (the first phase: from the start) to the end of "
            "the first 2 s window (on a 0.5 s grid) from which every window to the phase's end "
            "delivered within 10%% of the limit. The effective rate is the settings hash's "
            "`adaptive_rate`, read every 100 ms. Plot: `adaptive.png`.\n\n" % phase_s
            + table(["endpoint headers", "hidden limit", "requests", "429s",
                     "within 10% after", "delivered, last 2 s"], rows)
            + "\n\nOverall: " + "; ".join(
                "%s: %d 429s of %d requests (%.2f%%)" % (
                    "with headers" if r["headers"] else "without", r["refused"], r["requests"],
                    100 * (r["refused_fraction"] or 0)) for r in ad["runs"]) + ".")


CHAOS_RSS_MIB = 64  # the bound of a daemon's RSS in the soak, as at 10,000 idle tenants


def chaos_targets(ch):
    """(target, figure, met) of the chaos soak; [] when it did not run."""
    if not ch:
        return []
    rss = max(ch["rss_max_kib"]) / MIB
    return [
        ("chaos: every job delivered or dead-lettered with its reason, none lost",
         "%d of %s lost (%d of listed tenants, %d of template ones)"
         % (ch["lost"], format(ch["pushed"], ","), ch["lost_listed"], ch["lost_templated"]),
         ch["lost"] == 0),
        ("chaos: no tenant left with work it does not move",
         "%d stuck (%d listed, %d template)" % (len(ch["stuck"]), ch["stuck_listed"],
                                                ch["stuck_templated"]),
         not ch["stuck"]),
        ("chaos: every duplicate carries its original's Idempotency-Key",
         "%d duplicates (of %d jobs), %d with another key; %d requests whose key is not "
         "their job's" % (ch["duplicates"], ch["duplicated_jobs"], ch["duplicates_other_key"],
                          ch["key_mismatch"]),
         ch["duplicates_other_key"] == 0 and ch["key_mismatch"] == 0),
        ("chaos: daemon RSS bounded (< %d MiB)" % CHAOS_RSS_MIB,
         "max %.1f MiB (%d samples)" % (rss, ch["rss_samples"]), rss < CHAOS_RSS_MIB),
    ]


def counts_text(d):
    """{name: n} as "name n, name n", the largest first; "none" if empty."""
    items = sorted(d.items(), key=lambda kv: (-kv[1], kv[0]))
    return ", ".join("%s %s" % (k, format(v, ",")) for k, v in items) or "none"


def chaos_section(ch):
    """The chaos soak's section of RESULTS.md."""
    p, st = ch["params"], ch["settings"]
    stuck = "; ".join("%s %s" % (n, "/".join(str(x) for x in c)) for n, c in ch["stuck"].items())
    moving = "; ".join("%s %s" % (n, "/".join(str(x) for x in c)) for n, c in ch["moving"].items())
    exits = ", ".join("%s in %.1f s" % (e["code"], e["s"]) for e in ch["final_exits"])
    crashes = ", ".join("daemon %d exited %s at %.0f s" % (e["daemon"], e["code"], e["t"])
                        for e in ch["unexpected_exits"]) or "none"
    logs = "; ".join("%s x %s \"%s\"" % (format(n, ","), lvl, msg)
                     for n, lvl, msg in ch["log_messages"]) or "none"
    rows = [
        ["seed", "%d (`bench/run --only chaos --seed %d` repeats the plan)" % (ch["seed"], ch["seed"])],
        ["tenants", "%d: %d in every config (rates 5 to 200/s), %d known only through the "
                    "\"*\" template (20/s); concurrency %d, timeout %s ms, retry %s"
         % (ch["tenants"], ch["listed"], ch["templated"], st["concurrency"],
            format(st["timeout_ms"], ","), json.dumps(st["retry"], sort_keys=True))],
        ["faults", "%.0f s: %d daemon SIGKILLs (each started again at once, every %.0f-%.0f s; "
                   "the last 2 together), %d Redis restarts (SHUTDOWN SAVE, same port and dir, "
                   "every %.0f-%.0f s; LOADING for %s s once), Redis busy %d times (a %.0f s "
                   "script), %d endpoint modes (%.0f-%.0f s each)"
         % (ch["chaos_s"], ch["kills"], p["kill_every"][0], p["kill_every"][1],
            ch["redis_restarts"], p["redis_every"][0], p["redis_every"][1],
            "/".join("%.1f" % x for x in ch["loading_s"]) or "-", ch.get("busy", 0),
            ch.get("busy_ms", 0) / 1000.0, ch["mode_changes"],
            p["mode_every"][0], p["mode_every"][1])],
        ["endpoint modes (share of the time)",
         ", ".join("%s %.0f%%" % (m, 100 * x) for m, x in
                   sorted(ch["mode_shares"].items(), key=lambda kv: -kv[1]))],
        ["drain", "%.0f s (at most %.0f; it ends when nothing is left, or nothing moved for %.0f s)"
         % (ch["drain_s"], p["drain_s"], p["stall_s"])],
        ["jobs pushed", "%s (up front and during the faults%s)"
         % (format(ch["pushed"], ","), ", %d with no answer to their push" % ch["ambiguous"]
            if ch["ambiguous"] else "")],
        ["delivered (a 2xx at the sink)", format(ch["delivered"], ",")],
        ["dead-lettered, by reason", "%s (%s)" % (format(ch["dead_lettered"], ","),
                                                  counts_text(ch["dead_by_reason"]))],
        ["delivered and also dead-lettered", format(ch["delivered_and_dead"], ",")],
        ["**lost** (neither)", "%s: %d of listed tenants, %d of template ones; where: %s"
         % (format(ch["lost"], ","), ch["lost_listed"], ch["lost_templated"],
            counts_text(ch["lost_where"]))],
        ["duplicates (2xx after a job's first)", "%s, of %s jobs; %d with another "
                                                 "Idempotency-Key than the first"
         % (format(ch["duplicates"], ","), format(ch["duplicated_jobs"], ","),
            ch["duplicates_other_key"])],
        ["duplicates, by why the first delivery was not acked",
         counts_text(ch.get("duplicate_causes", {}))],
        ["tenants left with work they do not move (queued/retrying/in flight)",
         "%d: %s" % (len(ch["stuck"]), stuck or "none")],
        ["tenants with work still moving at the end", "%d%s" % (len(ch["moving"]),
                                                               ": " + moving if moving else "")],
        ["requests at the sink, by answer", "%s (most attempts of one job: %d)"
         % (counts_text(ch["statuses"]), ch["max_attempts_seen"])],
        ["daemon RSS, max (KiB)", "%s (%d samples, every 0.5 s during the faults)"
         % (" / ".join(format(x, ",") for x in ch["rss_max_kib"]), ch["rss_samples"])],
        ["daemons exiting by themselves", crashes],
        ["SIGTERM at the end: exit codes", exits],
        ["daemon log: errors and warnings", logs],
    ]
    return ("## 7. Chaos soak\n\nIssue 13's soak. 2 daemons (`sluice run`, 2 workers each, "
            "each with its own config naming the same tenants and Redis) deliver to sluice-sink "
            "while faults follow a plan drawn from the seed: a daemon SIGKILLed and started "
            "again, Redis shut down with SAVE and started again on the same port and dir (once "
            "with a few thousand filler keys and Redis's `--key-load-delay 1000` test setting, so "
            "that it answers LOADING for seconds), and the endpoint's mode (sluice-sink "
            "`/_mode/...`) switched between 5xx, 429 with Retry-After, slow answers (1.5 s; 3 s, "
            "past the 2 s timeout, so delivered at the sink but failed for sluice), closed and "
            "reset connections, and health (`slow/100`: 200 after 100 ms, as a real endpoint "
            "takes its time, so that requests and acks are under way when a fault strikes; "
            "`ok`: at once); and Redis kept busy by a 3 s script (it answers BUSY meanwhile). Jobs "
            "are pushed with known ids, 40%% up front and most of the rest during the first 70%% "
            "of the faults. The last 10%% of the faults is an end game: the endpoint answers 503 "
            "while a last 3%% of each tenant's jobs is pushed (so that they wait in the retry "
            "sets), then both daemons are SIGKILLed at once and started again (so that neither "
            "remembers a tenant it found through its queue alone). Then the endpoint heals and "
            "the daemons drain. A job is *delivered* when the sink answered 2xx to a request carrying it, "
            "*dead-lettered* when `sluice:{T}:dlq` holds it, *lost* when neither; a lost job is "
            "looked for in Redis (queue, retry, in flight, the jobs hash) to say where it was "
            "left. Keys are counted every second during the drain; a tenant whose keys held work "
            "and did not change over the last %.0f s is *stuck*. Each daemon process sends "
            "`X-Test: d<slot>.<generation>` (a config of its own per start), so the sink's log "
            "says which process sent each request. A duplicate is put down to why its job's "
            "first 2xx was not acked: *timeout*, the endpoint then answered past the timeout "
            "(sluice saw a failure: by design); *sender SIGKILLed*, the process that sent it was "
            "SIGKILLed within the lease (timeout + 10 s) after it (at-least-once: by design); "
            "*ack lost, sender alive, Redis outage*, the sender lived on and Redis was down or "
            "loading within the lease after it (an ack that failed was not made good in time: "
            "issue 13 item 6); *ack lost, sender alive*, neither.\n\n"
            % p["stall_s"]
            + table(["what", "figure"], rows))


def sections(res, facts, command):
    md = []
    tp = res.get("throughput")
    if tp:
        rows = []
        for r in tp["sweep"] + [tp["one"], tp["many"]]:
            rows.append([r["label"], r["jobs"], r["config"]["concurrency"], f(r["rate_steady"]),
                         f(r["rate_e2e"]), f(r["sluice_cpu_per_1k"], "%.3f"),
                         f(r["thread_cpu_pct"], "%.0f%%"),
                         f(r["redis_cpu_per_1k"], "%.3f"), f(r["sink_cpu_per_1k"], "%.3f"),
                         f(r["round_trips_per_job"], "%.4f"), f(r["commands_per_job"], "%.2f"),
                         "%.1f" % (r["sluice_rss_kib"] / MIB),
                         "yes" if r["complete"] else "NO"])
        md.append("## 1. Throughput\n\nA backlog queued before the daemon starts; rate %s/s "
                  "(the config's maximum), capacity 9,000,000, 2 workers. *jobs/s* is measured at "
                  "the endpoint from the first to the last arrival; *incl. start* from the moment "
                  "`sluice run` is started. CPU is utime+stime (sluice, the sink: /proc; Redis: "
                  "INFO cpu). *Round trips* are the commands sluice sends (EVALSHA of claim and "
                  "ack, its TIME clock probes, ...); *commands* add what the scripts call inside "
                  "(Redis counts those in INFO commandstats too). *Busiest sluice thread*: the "
                  "CPU of its busiest thread as %% of one core over the run (one tenant is "
                  "served by one worker thread). The concurrency of the 1-tenant "
                  "run is the best of the sweep; the 100 tenants have concurrency 4 each "
                  "(400 connections in all).\n" % format(1000000, ","))
        md.append(table(["run", "jobs", "concurrency", "jobs/s", "jobs/s incl. start",
                         "sluice CPU s/1k", "busiest sluice thread", "Redis CPU s/1k",
                         "sink CPU s/1k", "round trips/job",
                         "commands/job", "sluice peak RSS MiB", "all delivered"], rows))
    c = res.get("ceiling")
    if c:
        one = tp["one"]["rate_steady"] if tp else None
        md.append("## 2. The ceiling: wrk against the same endpoint\n\n`%s` (POST of the same "
                  "body with an Idempotency-Key, keep-alive): **%s requests/s**; the sink spent "
                  "%s CPU s per 1,000 requests. wrk's own threads share the same 2 vCPUs, as "
                  "sluice and Redis do in the throughput runs. sluice (1 tenant) delivers %s of it."
                  % (c["command"], f(c["rps"]), f(c["sink_cpu_per_1k"], "%.3f"),
                     "%.2f" % (one / c["rps"]) if one and c["rps"] else "-"))
    sh = res.get("shaping")
    if sh:
        rows = []
        for r in sh["runs"]:
            d, e = r["daemon"], r["endpoint"]
            tenants = r.get("tenants", 1)
            rows.append(["%s/s" % format(r["rate"], ","),
                         "%d s" % r["seconds"] + (", %d tenants" % tenants if tenants > 1 else ""),
                         r["jobs"],
                         pct(d["error"]), pct(e["error"]),
                         "%s / %s / %s" % (f(d["jitter_p50_us"]), f(d["jitter_p99_us"]),
                                           f(d["jitter_max_us"])),
                         "%s / %s / %s" % (f(e["jitter_p50_us"]), f(e["jitter_p99_us"]),
                                           f(e["jitter_max_us"])),
                         "%d / %d (%d)" % (d["max_in_window"], e["max_in_window"], d["bound"]),
                         "%s / %s" % (f(d["min_gap"], "%.2f"), f(e["min_gap"], "%.2f")),
                         "%s / %s / %s" % (f(r.get("late_p50_us")), f(r["late_p99_us"]),
                                           f(r["late_max_us"])),
                         "%d (%d)" % (r.get("late_over_500us", 0), r.get("late_in_stall", 0)),
                         "%s / %s" % (probe_us(r.get("probe_p99_us"), r.get("probe_wakeups")),
                                      probe_us(r.get("probe_p999_us"), r.get("probe_wakeups"))),
                         "%s / %s" % (f(r.get("twin_jitter_p99_us")), f(r.get("twin_jitter_max_us"))),
                         f(r["round_trips_per_job"], "%.2f"),
                         "%s / %s" % (f(r["sluice_cpu_pct"], "%.0f%%"),
                                      f(r["thread_cpu_pct"], "%.0f%%")),
                         "%s / %s" % (f(r.get("runq_wait_us")), f(r.get("runq_wait_pct"), "%.0f%%")),
                         "yes" if r["complete"] else "NO"])
        md.append("## 3. Shaping accuracy\n\nOne tenant, its backlog queued before the daemon "
                  "starts, concurrency 256 (never the bound here), keyspace notifications off. "
                  "At 1/s and 10/s a run of one tenant has 30 and 200 gaps, too few for a p99 "
                  "(one late wake-up would decide it), so those runs shape 20 and 5 tenants at "
                  "that rate in the same daemon, each on its own schedule, the schedules spread "
                  "evenly over one interval (each tenant's `next_free` set before the start, as a "
                  "pause sets it; started together they would share every slot, and one stall "
                  "would spoil a gap of each): 600 and 1,000 gaps. "
                  "Jitter pools every tenant's own gaps; the rate error, the most in W "
                  "and the least gap are the worst tenant's. *Daemon* figures come from "
                  "`--trace-departures` (the departure time on this host's clock, column 5), "
                  "*endpoint* figures from the sink's arrival timestamps (same clock; they add "
                  "curl, the loopback and the sink's event loop). Rate error: (n-1)/(last-first) "
                  "against the rate. Jitter: |gap - 1/rate| between consecutive departures "
                  "(us, p50 / p99 / max), each tenant's first gap left out: the first "
                  "departure's slot is the moment of its claim, so it leaves one claim round "
                  "trip late, which is pickup latency (section 5), not shaping; *late* keeps it. "
                  "Most in W: the most departures in any half-open window W = max(10 "
                  "intervals, 100 ms), beside SPEC §4's bound floor(1.02 x rate x W) + 1 (11 in "
                  "any 10 intervals up to 100/s). Least gap: the shortest gap as a fraction of "
                  "1/rate. Late: departure minus slot, both on Redis's clock (us, p50 / p99 / "
                  "max). "
                  "CPU: % of one core, "
                  "from the daemon's start to the last arrival; a tenant is served by one "
                  "worker thread, so the busiest thread is the one that matters. *Machine stall*: "
                  "while the shaping runs, an independent process (bench/stall_probe.py) sleeps "
                  "1 ms at a time and records every wake-up more than 0.3 ms late; a late "
                  "departure whose lateness overlaps such a stall was held up by the machine "
                  "(hypervisor, other processes), not by sluice alone; the probe's own wake-up "
                  "lateness during each run (p99 / p99.9) is the floor this machine gives any "
                  "sleeping thread at that moment. A stall of one vCPU that the probe, "
                  "on the other, does not share is not counted, so the attribution is a lower "
                  "bound. *A bare timer*: up to 1,000/s, beside each run, a process "
                  "(bench/timer_twin.py) that only keeps a schedule of its own, waking as often "
                  "as the daemon must (rate times tenants), on absolute deadlines; its gap "
                  "jitter is what a timer with nothing else to do got from this machine during "
                  "that run. *Round trips/job*: the "
                  "commands sluice sent (claims, acks, clock probes) per departure. *Waiting "
                  "for a CPU*: how long the busiest sluice thread was runnable but not running "
                  "(the kernel's schedstat), per time it was scheduled and as a share of the "
                  "run: the lateness this machine adds to each wake-up, which no timer "
                  "removes.\n")
        md.append(table(["rate", "for", "jobs", "rate error (daemon)", "rate error (endpoint)",
                         "jitter us daemon p50/p99/max", "jitter us endpoint p50/p99/max",
                         "most in W daemon/endpoint (bound)", "least gap daemon/endpoint",
                         "late us p50/p99/max", "late > 0.5 ms (of which in a machine stall)",
                         "probe wake-up lateness us p99/p99.9",
                         "a bare timer's jitter us p99/max",
                         "round trips/job", "sluice CPU process / busiest thread",
                         "busiest thread waiting for a CPU us per wake-up / % of the run",
                         "all delivered"], rows))
        mix = sh.get("mix")
        if mix:
            md.append("### Three tenants on one worker\n\n%s, one worker, %d s of backlog each "
                      "queued before the daemon starts: a tenant's pacing must not depend on "
                      "its neighbours'. A bare timer beside the run wakes %d times a second "
                      "(the tenants up to 1,000/s): p99 jitter %s us, max %s us.\n"
                      % (", ".join("%s/s" % format(t["rate"], ",") for t in mix["tenants"]),
                         mix["seconds"], mix["twin_rate"], f(mix["twin_jitter_p99_us"]),
                         f(mix["twin_jitter_max_us"])))
            md.append(table(["tenant", "jobs", "most in W daemon/endpoint (bound)",
                             "rate error (daemon)", "rate error (endpoint)",
                             "jitter us daemon p50/p99/max", "late us p50/p99/max",
                             "all delivered"],
                            [["%s/s" % format(t["rate"], ","), t["jobs"],
                              "%d / %d (%d)" % (t["daemon"]["max_in_window"],
                                                t["endpoint"]["max_in_window"],
                                                t["daemon"]["bound"]),
                              pct(t["daemon"]["error"]), pct(t["endpoint"]["error"]),
                              "%s / %s / %s" % (f(t["daemon"]["jitter_p50_us"]),
                                                f(t["daemon"]["jitter_p99_us"]),
                                                f(t["daemon"]["jitter_max_us"])),
                              "%s / %s / %s" % (f(t["late_p50_us"]), f(t["late_p99_us"]),
                                                f(t["late_max_us"])),
                              "yes" if t["complete"] else "NO"] for t in mix["tenants"]]))
        longer = sh.get("long")
        if longer:
            md.append("### Longer runs\n\nOne tenant for %d s each, as above: does lateness "
                      "grow over a run? The p99 lateness of the departures in the first and "
                      "in the last 10 s (by departure time), and the rate error over the "
                      "whole run.\n" % longer[0]["seconds"])
            md.append(table(["rate", "jobs", "most in W daemon (bound)", "rate error (daemon)",
                             "rate error (endpoint)", "late us p50/p99/max",
                             "late p99 us first 10 s / last 10 s",
                             "late > 0.5 ms (of which in a machine stall)",
                             "probe wake-up lateness us p99/p99.9", "all delivered"],
                            [["%s/s" % format(r["rate"], ","), r["jobs"],
                              "%d (%d)" % (r["daemon"]["max_in_window"], r["daemon"]["bound"]),
                              pct(r["daemon"]["error"]), pct(r["endpoint"]["error"]),
                              "%s / %s / %s" % (f(r["late_p50_us"]), f(r["late_p99_us"]),
                                                f(r["late_max_us"])),
                              "%s / %s" % (f(r["late_first_p99_us"]), f(r["late_last_p99_us"])),
                              "%d (%d)" % (r.get("late_over_500us", 0), r.get("late_in_stall", 0)),
                              "%s / %s" % (probe_us(r.get("probe_p99_us"), r.get("probe_wakeups")),
                                           probe_us(r.get("probe_p999_us"),
                                                    r.get("probe_wakeups"))),
                              "yes" if r["complete"] else "NO"] for r in longer]))
        b = sh.get("bursty")
        if b:
            md.append("### Bursty input\n\n%d bursts of %d jobs, one every %g s (each one LPUSH, "
                      "so one instant), into a tenant shaped to %d/s, keyspace notifications **on**. "
                      "![bursty input](shaping-bursty.png)\n\nDeparture rate error %s (daemon), %s "
                      "(endpoint); jitter p50/p99/max %s / %s / %s us (daemon); most in W "
                      "(%g ms) %d (daemon) / %d (endpoint), bound %d; busiest 100 ms bin %d/s "
                      "(daemon), "
                      "%d/s (endpoint). First departure after each burst's LPUSH (ms): %s."
                      % (b["bursts"], b["burst"], b["every_s"], b["rate"], pct(b["daemon"]["error"]),
                         pct(b["endpoint"]["error"]), f(b["daemon"]["jitter_p50_us"]),
                         f(b["daemon"]["jitter_p99_us"]), f(b["daemon"]["jitter_max_us"]),
                         b["daemon"]["window_us"] / 1000, b["daemon"]["max_in_window"],
                         b["endpoint"]["max_in_window"], b["daemon"]["bound"],
                         b["peak_bin_daemon_per_s"], b["peak_bin_endpoint_per_s"],
                         ", ".join("%.1f" % x for x in b["first_departure_ms"])))
            md.append("Note: the rate error and jitter of the bursty run include the idle "
                      "gaps between bursts, so they are not shaping errors; the bursts and the "
                      "most-in-W figure are what this run is for.")
        md.append("![gap jitter](shaping-jitter.png)")
        pr = sh.get("probe")
        if pr:
            md.append("The stall probe made %s wake-ups during the shaping runs: %d were more "
                      "than 0.5 ms late, %d more than 2 ms, the worst %.1f ms late."
                      % (format(pr["wakeups"], ","), pr["over_500us"], pr["over_2ms"],
                         pr["max_us"] / 1000))
    fl = res.get("fleet")
    if fl:
        rows = []
        for r, t in zip(fl["shaped"], fl["fast"]):
            d, e = r["daemon"], r["endpoint"]
            rows.append([r["processes"], pct(d["error"]), pct(e["error"]),
                         "%s / %s / %s" % (f(d["jitter_p50_us"]), f(d["jitter_p99_us"]),
                                           f(d["jitter_max_us"])),
                         "%d / %d (%d)" % (d["max_in_window"], e["max_in_window"], d["bound"]),
                         " + ".join(str(s) for s in r["shares"]), f(t["rate_steady"]),
                         f(t["sluice_cpu_per_1k"], "%.3f"), f(t["round_trips_per_job"], "%.4f"),
                         "yes" if r["complete"] and t["complete"] else "NO"])
        md.append("## 4. Fleet: several daemons on one tenant\n\nEach process has 1 worker and "
                  "its own trace; the traces are merged, and the window bound of SPEC §4 "
                  "applies to the merged departures. Shaped: 1,000/s for %d jobs. "
                  "Throughput: rate far above, %d jobs, concurrency %s per process. Keyspace "
                  "notifications off.\n"
                  % (fl["shaped"][0]["jobs"], fl["fast"][0]["jobs"],
                     fl["fast"][0]["config"]["concurrency"]))
        md.append(table(["processes", "rate error (daemon)", "rate error (endpoint)",
                         "jitter us daemon p50/p99/max", "most in W daemon/endpoint (bound)",
                         "departures per process", "throughput jobs/s", "sluice CPU s/1k",
                         "round trips/job", "all delivered"], rows))
    tn = res.get("tenants")
    if tn:
        rows = []
        for key, label in (("notify", "on"), ("polling", "off")):
            r = tn[key]
            rows.append([label, r["tenants"], "%.0f s after start, %.0f s" % (r["warm_s"], r["window_s"]),
                         "%.2f%%" % r["sluice_cpu_pct"], "%.2f%%" % r["redis_cpu_pct"],
                         "%.0f" % r["round_trips_per_s"], "%.0f" % r["commands_per_s"],
                         "%.1f" % (r["rss_kib"] / MIB),
                         "%s / %s / %s" % (f(r["pickup_p50_ms"], "%.2f"), f(r["pickup_p99_ms"], "%.2f"),
                                           f(r["pickup_max_ms"], "%.2f")),
                         "%d/%d" % (r["picked"], r["pickups"])])
        md.append("## 5. Many tenants\n\nTenants listed in the config (rate 10/s, concurrency "
                  "4 each), all idle, 2 workers. CPU as % of one core. Idle polling backs off "
                  "from 10 ms to 1 s (notifications off) or 30 s (on), so the window starts "
                  "once that has settled. Then one job at a time is LPUSHed to an idle tenant "
                  "(a different one each time, 50-100 ms apart): pickup = arrival at the "
                  "endpoint minus the moment the bench sent the LPUSH (same clock).\n")
        md.append(table(["keyspace notifications", "tenants", "window", "sluice CPU",
                         "Redis CPU", "round trips/s", "commands/s (with scripts' inner calls)",
                         "sluice RSS MiB", "pickup ms p50/p99/max", "picked up"], rows))
    mem = res.get("memory")
    if mem:
        n_rss = tn["notify"]["rss_kib"] / MIB if tn else None
        md.append("## 6. Memory\n\n" + table(["what", "figure"], [
            ["sluice RSS, %s idle tenants" % (format(tn["notify"]["tenants"], ",") if tn else "-"),
             "%s MiB" % f(n_rss, "%.1f")],
            ["sluice RSS, %s queued, %d claimed (%d requests held by a slow endpoint)"
             % (format(mem["queued"], ","), mem["claimed"], mem["held"]),
             "%.1f MiB" % (mem["rss_slow_kib"] / MIB)],
            ["sluice RSS, draining that backlog at full speed (max of 100 ms samples)",
             "%.1f MiB (VmHWM %.1f MiB; %s jobs drained)" % (mem["rss_drain_max_kib"] / MIB,
                                                             mem["hwm_drain_kib"] / MIB,
                                                             format(mem["drained"], ","))],
            ["job payload (the list element; 16 lengths, one job in 16 each)",
             "%.1f bytes" % mem["payload"]],
            ["Redis bytes per queued job (used_memory delta / jobs)", "%.1f" % mem["per_queued"]],
            ["  the same by MEMORY USAGE of the list", "%.1f" % (mem["queue_memory_usage"] / mem["queued"])],
            ["Redis bytes per claimed job (MEMORY USAGE of jobs + inflight / claimed)",
             "%.1f (%d claimed)" % (mem["per_claimed_keys"], mem["claimed"])],
            ["  their payload (the claimed jobs' own)", "%.1f bytes" % mem["claimed_payload"]],
            ["claimed-job overhead beyond the payload", "%.1f bytes" % mem["claimed_overhead"]],
        ]))
    ad = res.get("adaptive")
    if ad:
        md.append(adaptive_section(ad))
    ch = res.get("chaos")
    if ch:
        md.append(chaos_section(ch))
    cl = res.get("cluster")
    if cl:
        md.append(cluster_section(cl))
    noise = res.get("noise")
    if noise:
        rows = [[k, "%.0f s" % v["wall_s"], "%.1f%%" % v["ours_pct"], "%.1f%%" % v["foreign_pct"],
                 "%.1f%%" % v["steal_pct"]] for k, v in noise.items()]
        md.append("## Noise\n\nCPU of the whole machine during each scenario, as %% of all "
                  "%s vCPUs: what the bench's own processes used, what other processes used "
                  "(foreign), and what the hypervisor stole.\n\n" % facts.get("nproc", "?") +
                  table(["scenario", "wall", "bench processes", "foreign", "steal"], rows))
    return md


def markdown(res, facts, command, notes, tg=None):
    """The text of RESULTS.md: the run, the machine, the targets, a section
    per scenario that ran, the noise and the notes. tg: targets(res), when
    the caller has them already."""
    tg = targets(res) if tg is None else tg
    md = ["# sluice benchmarks\n",
          ("**Partial run** (--quick, --only, or stopped early): not the figures of record.\n"
           if facts.get("partial") else ""),
          "Command: `%s` (from the top of the checkout; it installs what is missing, builds "
          "`build-release/` with `meson setup build-release --buildtype=release`, and runs "
          "`python3 -m bench`). Date: %s. Duration: %s.\n" % (command, facts["date"], facts["duration"]),
          "## Machine\n\n" + table(["", ""], [[k, facts[k]] for k in
                                              ("nproc", "cpu", "memory", "kernel", "os", "redis",
                                               "libcurl", "libevent", "hiredis", "wrk", "cc",
                                               "sluice", "commit", "buildtype")]),
          "Every server is private to the run, on 127.0.0.1: a `redis-server` (`--save '' "
          "--appendonly no`), started fresh per scenario, with `notify-keyspace-events Kl` "
          "only for the bursty-input run and the first many-tenants run (said where it "
          "applies), and `sluice-sink` (tests/sink) as the HTTP endpoint, which logs one line "
          "per request. sluice, Redis, the sink (and wrk) share the machine's vCPUs.\n",
          "## Targets\n\n" + summary_table(tg)]
    md += sections(res, facts, command)
    if notes:
        md.append("## Notes\n\n" + "\n".join("- " + n for n in notes))
    return "\n\n".join(s.strip() for s in md if s.strip()) + "\n"


def summary_table(tg):
    """The targets as a table: target, measured, met (yes or **NO**)."""
    return table(["target", "measured", "met"],
                 [[t, m, "yes" if ok else "**NO**"] for t, m, ok in tg])


def write(res, facts, command, out, workdir):
    """Writes the plots, results.json and RESULTS.md into out (the plots'
    data files into workdir) and prints the targets and the sections."""
    notes = list(res.get("notes", []))
    made = plots(res, out, workdir, notes)
    tg = targets(res)
    text = markdown(res, facts, command, notes, tg)
    with open(os.path.join(out, "results.json"), "w") as fh:
        json.dump({"facts": facts, "command": command, "results": res,
                   "targets": [{"target": t, "measured": m, "met": ok} for t, m, ok in tg]},
                  fh, indent=1, default=str)
    path = os.path.join(out, "RESULTS.md")
    with open(path, "w") as fh:
        fh.write(text)
    print()
    print("=" * 78)
    print(summary_table(tg))
    print()
    for s in sections(res, facts, command):
        print(s)
        print()
    if notes:
        print("notes: " + "; ".join(notes))
    print("bench: wrote %s%s" % (path, "".join(", " + p for p in made)))
