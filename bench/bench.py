#!/usr/bin/env python3
"""bench.py - sluice's benchmarks; run it through bench/run, which installs
what is missing and builds the release binary first.

Scenarios (each bounded in time; every server is private, on 127.0.0.1):
  throughput  100,000 queued jobs, 1 tenant and 100 tenants, rate far above
              what the box can do: delivered jobs/s, CPU per 1,000 jobs,
              Redis commands per job
  ceiling     the same endpoint driven by wrk (50 connections)
  shaping     1 .. 20,000 jobs/s from a backlog: rate error, gap jitter,
              most departures in 10 intervals; a bursty input, plotted
  fleet       1, 2, 4 daemons on one tenant: global rate error, throughput
  tenants     10,000 idle tenants: CPU, Redis commands/s; pickup latency
  memory      RSS with 10,000 tenants and 1,000,000 queued jobs; Redis bytes
              per queued and per claimed job

Prints a table and writes RESULTS.md and the PNG plots into --out."""

import argparse
import json
import os
import random
import resource
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import traceback

sys.dont_write_bytecode = True  # no __pycache__ in the checkout
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
HERE = os.path.dirname(os.path.abspath(__file__))
import procs as P  # noqa: E402
import report  # noqa: E402
import stats as S  # noqa: E402

HARD_CAP_S = 1500  # the whole run, whatever happens
FAST_RATE = 1000000  # jobs/s: far above what one box can deliver (the config's maximum)
SHAPED_CONCURRENCY = 256  # never the bound of a shaped run, even at 20,000/s on a loaded box
TWIN_MAX_RATE = 1000  # jobs/s: the jitter target's range, and as often as a Python timer keeps up
PAD = b"0123456789abcdef"


class Timeout(Exception):
    pass


def log(msg):
    print("bench: " + msg, flush=True)


def job(i, extra_pad=0):
    return b'{"body":{"n":%d,"pad":"%s"}}' % (i, PAD + b"x" * extra_pad)


class Bench:
    def __init__(self, args):
        self.args = args
        self.quick = args.quick
        self.sluice = os.path.join(args.build, "sluice")
        self.sink_bin = os.path.join(args.build, "tests", "sluice-sink")
        self.workdir = tempfile.mkdtemp(prefix="sluice-bench-")
        self.procs = P.Procs(self.workdir)
        self.results = {"notes": [], "noise": {}}
        self.seq = 0
        soft = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
        # requests held by the slow endpoint in the memory scenario
        self.held = 1000 if soft == resource.RLIM_INFINITY or soft >= 4096 else 400

    # ---- helpers ------------------------------------------------------------

    def name(self, base):
        self.seq += 1
        return "%s-%d" % (base, self.seq)

    def scale(self, full, quick):
        return quick if self.quick else full

    def our_cpu_s(self):
        """CPU of this process, its waited-for children and its live ones."""
        t = os.times()
        total = t.user + t.system + t.children_user + t.children_system
        for _, p in self.procs.children:
            if p.poll() is None:
                try:
                    total += P.proc_cpu_s(p.pid)
                except OSError:
                    pass
        return total

    def noise_start(self):
        return (time.monotonic(), P.system_cpu(), self.our_cpu_s())

    def noise_end(self, scenario, start):
        t0, (busy0, steal0, total0), ours0 = start
        t1, (busy1, steal1, total1), ours1 = time.monotonic(), P.system_cpu(), self.our_cpu_s()
        wall = t1 - t0
        ncpu = os.cpu_count() or 1
        busy_s = (busy1 - busy0) / P.CLK_TCK
        foreign = max(0.0, busy_s - (ours1 - ours0))
        self.results["noise"][scenario] = {
            "wall_s": wall,
            "foreign_pct": 100.0 * foreign / (wall * ncpu) if wall > 0 else 0.0,
            "steal_pct": 100.0 * (steal1 - steal0) / max(1, total1 - total0),
            "ours_pct": 100.0 * (ours1 - ours0) / (wall * ncpu) if wall > 0 else 0.0,
        }

    def config(self, path, redis_port, tenants, workers=2, grace_ms=2000):
        cfg = {
            "redis": "redis://127.0.0.1:%d/0" % redis_port,
            "workers": workers,
            "admin": None,
            "grace_ms": grace_ms,
            "tenants": tenants,
        }
        with open(path, "w") as f:
            json.dump(cfg, f, indent=1)
        out = subprocess.run([self.sluice, "check-config", path], capture_output=True, text=True)
        if out.returncode != 0:
            raise RuntimeError("sluice check-config %s: %s%s" % (path, out.stdout, out.stderr))
        return path

    def push(self, cfg, tenant, lines):
        """sluice push from stdin, 100,000 jobs per call (each call atomic)."""
        for i in range(0, len(lines), 100000):
            data = b"\n".join(lines[i:i + 100000]) + b"\n"
            out = subprocess.run([self.sluice, "push", "-c", cfg, tenant, "-"], input=data,
                                 capture_output=True, timeout=120)
            if out.returncode != 0:
                raise RuntimeError("sluice push %s: %s" % (tenant, out.stderr.decode()))

    def start_sluice(self, name, cfg, trace=None):
        argv = [self.sluice, "run", "-c", cfg]
        if trace:
            argv += ["--trace-departures", trace]
        return self.procs.start(name, argv)

    def stop_sluice(self, p):
        code = self.procs.stop(p, timeout=15.0)
        if code not in (0, None):
            self.results["notes"].append("a sluice process exited %s (see %s)" % (code, self.workdir))
        return code

    def wait_count(self, tail, n, timeout_s, alive=(), poll_s=0.02):
        """Polls the sink log until it holds n requests; False on timeout or
        when one of `alive` exited."""
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            tail.count_new()
            if tail.count >= n:
                return True
            for p in alive:
                if p.poll() is not None:
                    return False
            time.sleep(poll_s)
        tail.count_new()
        return tail.count >= n

    def start_probe(self, base):
        name = self.name(base)
        path = os.path.join(self.workdir, name + ".tsv")
        p = self.procs.start(name, [sys.executable, os.path.join(HERE, "stall_probe.py"), path])
        return p, path

    def start_twin(self, base, wakeups_per_s, max_s):
        """A bare timer with the daemon's wake-up rate (bench/timer_twin.py)."""
        name = self.name(base)
        path = os.path.join(self.workdir, name + ".txt")
        argv = [sys.executable, os.path.join(HERE, "timer_twin.py"), path,
                str(int(1e6 / wakeups_per_s)), str(max_s)]
        return self.procs.start(name, argv), path, wakeups_per_s

    def stop_twin(self, twin):
        """The twin's gap jitter: (p50, p99, max) us."""
        p, path, wakeups_per_s = twin
        self.procs.stop(p)
        with open(path) as f:
            times = [int(line) for line in f if line.strip()]
        return S.gap_jitter(times, wakeups_per_s)

    def stop_probe(self, probe):
        p, path = probe
        self.procs.stop(p)
        stalls, marks = [], []
        with open(path) as f:
            for line in f:
                if line.startswith("# at "):
                    parts = line.split()
                    marks.append((int(parts[2]), int(parts[4])))
                elif line.strip():
                    a, b = line.split()
                    stalls.append((int(a), int(b)))
        wakeups = max((n for _, n in marks), default=0)
        late = [b - a for a, b in stalls]
        return {"stalls": stalls, "marks": marks, "wakeups": wakeups,
                "over_500us": sum(1 for x in late if x > 500),
                "over_2ms": sum(1 for x in late if x > 2000),
                "max_us": max(late, default=0)}

    def sink(self, base):
        p, port, path = P.start_sink(self.procs, self.sink_bin, self.name(base))
        return p, "http://127.0.0.1:%d" % port, path

    # ---- 1. throughput ------------------------------------------------------

    def drain_run(self, label, redis_port, tenants_jobs, tenant_cfg, workers=2, processes=1):
        """Pushes jobs for each tenant, starts `processes` daemons, waits until
        the sink saw every job; returns the figures. tenants_jobs: {name: n}."""
        r = P.Redis(redis_port)
        r.call("FLUSHALL")
        sink_p, url, sink_log = self.sink("sink-" + label)
        tenants = {}
        for t in tenants_jobs:
            c = dict(tenant_cfg)
            c["endpoint"] = url + "/hook/" + t
            tenants[t] = c
        cfg = self.config(os.path.join(self.workdir, self.name(label) + ".json"), redis_port,
                          tenants, workers=workers)
        total = 0
        for t, n in tenants_jobs.items():
            self.push(cfg, t, [job(i) for i in range(n)])
            total += n
        cmd0, rcpu0 = r.commandstats(), r.cpu_s()
        sink_cpu0 = P.proc_cpu_s(sink_p.pid)
        tail = P.LogTail(sink_log)
        t_start = P.now_us()
        daemons = [self.start_sluice(self.name("sluice-" + label), cfg) for _ in range(processes)]
        threads0 = [P.thread_sched(p.pid) for p in daemons]
        ok = self.wait_count(tail, total, self.scale(180, 60), alive=daemons)
        time.sleep(0.05)  # the last acks
        sluice_cpu = sum(P.proc_cpu_s(p.pid) for p in daemons if p.poll() is None)
        thread_s = max((P.busiest_thread_s(t0, P.thread_sched(p.pid))
                        for p, t0 in zip(daemons, threads0) if p.poll() is None), default=0.0)
        rss = max((P.proc_status_kib(p.pid, "VmHWM") for p in daemons if p.poll() is None),
                  default=0)
        cmd1, rcpu1 = r.commandstats(), r.cpu_s()
        sink_cpu = P.proc_cpu_s(sink_p.pid) - sink_cpu0
        for p in daemons:
            self.stop_sluice(p)
        self.procs.stop(sink_p)
        r.close()
        recs = P.sink_records(sink_log)
        arrivals = [a for a, _, _, st in recs if st == 200]
        delta = S.command_counts(cmd0, cmd1)
        client, everything = S.sluice_commands(delta)
        n = len(arrivals)
        res = {
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
            "redis_cpu_per_1k": (rcpu1 - rcpu0) / max(1, n) * 1000,
            "sink_cpu_per_1k": sink_cpu / max(1, n) * 1000,
            "round_trips_per_job": client / max(1, n),
            "commands_per_job": everything / max(1, n),
            "sluice_rss_kib": rss,
            "config": tenant_cfg,
            "processes": processes,
            "workers": workers,
            "commandstats": delta,
        }
        return res

    def s_throughput(self):
        log("[throughput] private redis-server (keyspace notifications off)")
        _, port = P.start_redis(self.procs, self.name("redis-throughput"))
        n = self.scale(100000, 20000)
        sweep = []
        for conc in self.scale((16, 64, 256), (64,)):
            res = self.drain_run("sweep-c%d" % conc, port, {"t0": self.scale(30000, 10000)},
                                 {"rate": FAST_RATE, "capacity": 9000000, "concurrency": conc})
            log("[throughput] concurrency %d: %.0f jobs/s" % (conc, res["rate_steady"] or 0))
            sweep.append(res)
        best = max(sweep, key=lambda x: x["rate_steady"] or 0)
        conc = best["config"]["concurrency"]
        self.results["concurrency"] = conc
        one = self.drain_run("one-tenant", port, {"t0": n},
                             {"rate": FAST_RATE, "capacity": 9000000, "concurrency": conc})
        log("[throughput] 1 tenant, %d jobs, concurrency %d: %.0f jobs/s" % (n, conc, one["rate_steady"] or 0))
        per = n // 100
        many_conc = 4
        many = self.drain_run("hundred-tenants", port,
                              {"b%03d" % i: per for i in range(100)},
                              {"rate": FAST_RATE, "capacity": 9000000, "concurrency": many_conc})
        log("[throughput] 100 tenants x %d jobs, concurrency %d each: %.0f jobs/s"
            % (per, many_conc, many["rate_steady"] or 0))
        self.results["throughput"] = {"sweep": sweep, "one": one, "many": many}

    # ---- 2. the wrk ceiling -------------------------------------------------

    def s_ceiling(self):
        sink_p, url, sink_log = self.sink("sink-wrk")
        script = os.path.join(self.workdir, "post.lua")
        body = job(12345).decode()
        with open(script, "w") as f:
            f.write('wrk.method = "POST"\n'
                    "wrk.body = '%s'\n"
                    'wrk.headers["Content-Type"] = "application/json"\n'
                    'wrk.headers["Idempotency-Key"] = "0123456789abcdef.1f"\n' % body)
        secs = self.scale(10, 3)
        cpu0 = P.proc_cpu_s(sink_p.pid)
        argv = ["wrk", "-t2", "-c50", "-d%ds" % secs, "--timeout", "5s", "-s", script,
                url + "/hook/wrk"]
        out = subprocess.run(argv, capture_output=True, text=True, timeout=secs + 30)
        sink_cpu = P.proc_cpu_s(sink_p.pid) - cpu0
        self.procs.stop(sink_p)
        rps = None
        for line in out.stdout.splitlines():
            if line.startswith("Requests/sec:"):
                rps = float(line.split()[1])
        requests = sum(1 for _ in open(sink_log, "rb"))
        self.results["ceiling"] = {
            "command": " ".join(argv[:-1]) + " http://127.0.0.1:PORT/hook/wrk",
            "rps": rps,
            "requests": requests,
            "sink_cpu_per_1k": sink_cpu / max(1, requests) * 1000,
            "output": out.stdout,
        }
        log("[ceiling] wrk -t2 -c50: %.0f requests/s" % (rps or 0))

    # ---- 3. shaping ---------------------------------------------------------

    def shaped_backlog(self, redis_port, label, tenants, rate, seconds, workers=2):
        """A fresh Redis holding seconds * rate + 1 jobs for each of tenants,
        all shaped to rate, and a sink of their own: (sink process, sink log,
        config, jobs per tenant)."""
        r = P.Redis(redis_port)
        r.call("FLUSHALL")
        r.close()
        sink_p, url, sink_log = self.sink("sink-" + label)
        cfg = self.config(os.path.join(self.workdir, self.name(label) + ".json"), redis_port,
                          {t: {"endpoint": url + "/hook/" + t, "rate": rate,
                               "concurrency": SHAPED_CONCURRENCY} for t in tenants},
                          workers=workers)
        n = int(rate * seconds) + 1
        for t in tenants:
            self.push(cfg, t, [job(i) for i in range(n)])
        return sink_p, sink_log, cfg, n

    @staticmethod
    def stagger(redis_port, tenants, rate):
        """Spreads the tenants' schedules over one interval, starting in 1 s
        (each tenant's next_free, as a pause sets it): tenants started
        together would share every slot, and one stall of the machine would
        then spoil a gap of each, a single event counted once per tenant."""
        r = P.Redis(redis_port)
        sec, usec = r.call("TIME")
        start = int(sec) * 1000000 + int(usec) + 1000000
        for k, t in enumerate(tenants):
            r.call("HSET", "sluice:{%s}:shape" % t, "next_free",
                   str(start + k * int(1e6 / rate) // len(tenants)), "frac", "0")
        r.close()

    def shaping_run(self, redis_port, rate, seconds, tenant_count):
        """tenant_count tenants at rate, each its own schedule: a low rate
        gives few gaps in a run, and a p99 needs more than 100 of them."""
        tenants = ["s%d" % rate] if tenant_count == 1 else \
            ["s%d-%d" % (rate, k) for k in range(tenant_count)]
        sink_p, sink_log, cfg, per_tenant = self.shaped_backlog(
            redis_port, "shaping-%d" % rate, tenants, rate, seconds)
        n = per_tenant * tenant_count
        if tenant_count > 1:
            self.stagger(redis_port, tenants, rate)
        trace = os.path.join(self.workdir, self.name("trace-%d" % rate) + ".tsv")
        tail = P.LogTail(sink_log)
        r = P.Redis(redis_port)
        cmd0 = r.commandstats()
        # Where the jitter target applies, a bare timer keeping the daemon's
        # wake-up rate runs beside it: the floor this machine gives that run.
        twin = self.start_twin("timer-twin-%d" % rate, rate * tenant_count, seconds * 1.5 + 20) \
            if rate <= TWIN_MAX_RATE else None
        p = self.start_sluice(self.name("sluice-shaping-%d" % rate), cfg, trace)
        cpu0, threads0 = P.proc_cpu_s(p.pid), P.thread_sched(p.pid)
        t0 = time.monotonic()
        window = [P.now_us()]
        ok = self.wait_count(tail, n, seconds * 1.5 + 15, alive=[p], poll_s=0.05)
        cpu = P.proc_cpu_s(p.pid) - cpu0 if p.poll() is None else None
        threads1 = P.thread_sched(p.pid) if p.poll() is None else None
        thread = P.busiest_thread_s(threads0, threads1) if threads1 else None
        runq = P.busiest_thread_wait(threads0, threads1) if threads1 else None
        wall = time.monotonic() - t0
        window.append(P.now_us())
        cmd1 = r.commandstats()
        r.close()
        self.stop_sluice(p)
        self.procs.stop(sink_p)
        twin_jitter = self.stop_twin(twin) if twin else (None, None, None)
        client, everything = S.sluice_commands(S.command_counts(cmd0, cmd1))
        tr = P.trace_records(trace)
        daemon = [[d_local for (t, _, _, _, d_local) in tr if t == tenant] for tenant in tenants]
        late = [d_redis - slot for (_, _, slot, d_redis, _) in tr]
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

    def bursty_run(self):
        """Bursts into a 100/s tenant; input and output per 100 ms bin."""
        _, port = P.start_redis(self.procs, self.name("redis-bursty"), notify=True)
        sink_p, url, sink_log = self.sink("sink-bursty")
        rate, burst, every_s, bursts = 100, 150, 2.0, self.scale(6, 3)
        tenant = "bursty"
        cfg = self.config(os.path.join(self.workdir, "bursty.json"), port,
                          {tenant: {"endpoint": url + "/hook/" + tenant, "rate": rate,
                                    "concurrency": 16}})
        trace = os.path.join(self.workdir, "trace-bursty.tsv")
        p = self.start_sluice(self.name("sluice-bursty"), cfg, trace)
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
        ok = self.wait_count(tail, total, total / rate + 15, alive=[p], poll_s=0.05)
        time.sleep(0.2)
        self.stop_sluice(p)
        self.procs.stop(sink_p)
        daemon = [d for (_, _, _, _, d) in P.trace_records(trace)]
        endpoint = [a for a, _, _, st in P.sink_records(sink_log) if st == 200]
        bin_us = 100000
        start = t0 - 500000
        last = max(daemon + endpoint + pushes)
        nbins = int((last - start) // bin_us) + 11  # a second past the last departure
        inp = [0] * nbins
        for at in pushes:
            i = (at - start) // bin_us
            if 0 <= i < nbins:
                inp[i] += burst
        out_d = S.bins(daemon, start, bin_us, nbins)
        out_e = S.bins(endpoint, start, bin_us, nbins)
        data = os.path.join(self.workdir, "bursty.dat")
        with open(data, "w") as f:
            f.write("# t_s input_per_s daemon_per_s endpoint_per_s"
                    " input_total daemon_total endpoint_total\n")
            ci = cd = ce = 0
            for i in range(nbins):
                ci, cd, ce = ci + inp[i], cd + out_d[i], ce + out_e[i]
                f.write("%.2f %d %d %d %d %d %d\n" % ((i * bin_us + start - t0) / 1e6, inp[i] * 10,
                                                       out_d[i] * 10, out_e[i] * 10, ci, cd, ce))
        pickup = [min((d for d in daemon if d >= at), default=at) - at for at in pushes]
        return {
            "rate": rate, "burst": burst, "every_s": every_s, "bursts": bursts,
            "complete": ok and len(endpoint) >= total,
            "data": data,
            "daemon": S.shaping_summary(daemon, rate),
            "endpoint": S.shaping_summary(endpoint, rate),
            "peak_bin_daemon_per_s": max(out_d) * 10,
            "peak_bin_endpoint_per_s": max(out_e) * 10,
            "first_departure_ms": [x / 1000 for x in pickup],
        }

    def s_shaping(self):
        log("[shaping] private redis-server (keyspace notifications off)")
        _, port = P.start_redis(self.procs, self.name("redis-shaping"))
        runs = []
        probe = self.start_probe("stall-probe-shaping")
        # (rate, seconds, tenants): at 1/s and 10/s, 20 and 5 tenants give 600
        # and 1,000 gaps, as 100/s gives with one.
        plan = self.scale([(1, 30, 20), (10, 20, 5), (100, 10, 1), (1000, 10, 1),
                           (10000, 10, 1), (20000, 10, 1)],
                          [(1, 5, 20), (10, 3, 5), (100, 3, 1), (1000, 3, 1), (10000, 3, 1),
                           (20000, 3, 1)])
        if self.args.rates:
            wanted = [int(r) for r in self.args.rates.split(",")]
            plan = [p for p in plan if p[0] in wanted]
        for rate, seconds, tenant_count in plan:
            res = self.shaping_run(port, rate, seconds, tenant_count)
            d = res["daemon"]
            log("[shaping] %d/s for %d s: error %.3f%%, p99 jitter %s us, max in 10 intervals %d"
                % (rate, seconds, 100 * (d["error"] or 0), d["jitter_p99_us"], d["max_in_10"]))
            runs.append(res)
        log("[shaping] bursty input into a 100/s tenant (keyspace notifications on)")
        bursty = self.bursty_run()
        stalls = self.stop_probe(probe)
        for res in runs:
            res["late_over_500us"] = len(res["late_windows"])
            res["late_in_stall"] = S.overlapping(res.pop("late_windows"), stalls["stalls"])
            a, z = res.pop("window_us")
            res["probe_wakeups"], res["probe_p99_us"], res["probe_p999_us"] = \
                S.probe_window(stalls["stalls"], stalls["marks"], a, z)
        stalls["stalls"] = len(stalls["stalls"])
        del stalls["marks"]
        self.results["shaping"] = {"runs": runs, "bursty": bursty, "probe": stalls}

    # ---- 4. fleet -----------------------------------------------------------

    def fleet_run(self, redis_port, k, rate, seconds):
        tenant = "f%d" % k
        sink_p, sink_log, cfg, n = self.shaped_backlog(redis_port, "fleet-%d" % k, [tenant], rate,
                                                       seconds, workers=1)
        tail = P.LogTail(sink_log)
        traces = [os.path.join(self.workdir, self.name("trace-fleet-%d" % k) + ".tsv")
                  for _ in range(k)]
        daemons = [self.start_sluice(self.name("sluice-fleet-%d" % k), cfg, t) for t in traces]
        ok = self.wait_count(tail, n, seconds * 1.5 + 15, alive=daemons, poll_s=0.05)
        for p in daemons:
            self.stop_sluice(p)
        self.procs.stop(sink_p)
        merged, shares = [], []
        for t in traces:
            d = [x for (_, _, _, _, x) in P.trace_records(t)]
            shares.append(len(d))
            merged += d
        endpoint = [a for a, _, _, st in P.sink_records(sink_log) if st == 200]
        return {"processes": k, "rate": rate, "jobs": n, "complete": ok and len(endpoint) >= n,
                "daemon": S.shaping_summary(merged, rate),
                "endpoint": S.shaping_summary(endpoint, rate), "shares": shares}

    def s_fleet(self):
        log("[fleet] private redis-server (keyspace notifications off)")
        _, port = P.start_redis(self.procs, self.name("redis-fleet"))
        shaped, fast = [], []
        conc = self.results.get("concurrency", 64)
        for k in (1, 2, 4):
            res = self.fleet_run(port, k, 1000, self.scale(10, 3))
            log("[fleet] %d x sluice at 1,000/s: error %.3f%%, max in 10 intervals %d, shares %s"
                % (k, 100 * (res["daemon"]["error"] or 0), res["daemon"]["max_in_10"], res["shares"]))
            shaped.append(res)
            t = self.drain_run("fleet-fast-%d" % k, port, {"ft": self.scale(50000, 10000)},
                               {"rate": FAST_RATE, "capacity": 9000000, "concurrency": conc},
                               workers=1, processes=k)
            log("[fleet] %d x sluice, rate far above: %.0f jobs/s" % (k, t["rate_steady"] or 0))
            fast.append(t)
        self.results["fleet"] = {"shaped": shaped, "fast": fast}

    # ---- 5. many tenants and 6. memory --------------------------------------

    def idle_run(self, notify, tenants, warm_s, window_s, pickups, spacing_s):
        label = "notify" if notify else "polling"
        _, port = P.start_redis(self.procs, self.name("redis-tenants-" + label), notify=notify)
        sink_p, url, sink_log = self.sink("sink-tenants-" + label)
        names = ["m%05d" % i for i in range(tenants)]
        cfg = self.config(os.path.join(self.workdir, "tenants-%s.json" % label), port,
                          {t: {"endpoint": url + "/hook", "rate": 10, "concurrency": 4}
                           for t in names})
        p = self.start_sluice(self.name("sluice-tenants-" + label), cfg)
        r = P.Redis(port)
        time.sleep(warm_s)
        if p.poll() is not None:
            raise RuntimeError("sluice exited during the warm-up (see %s)" % self.workdir)
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
        ok = self.wait_count(tail, pickups, 5.0, alive=[p], poll_s=0.05)
        r.close()
        self.stop_sluice(p)
        self.procs.stop(sink_p)
        lat = [(a - pushed[k]) / 1000 for a, k, _, st in P.sink_records(sink_log) if k in pushed]
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

    def s_tenants(self):
        tenants = self.scale(10000, 2000)
        log("[tenants] %d idle tenants, keyspace notifications on (idle polls back off to 30 s)"
            % tenants)
        notified = self.idle_run(True, tenants, self.scale(45, 8), self.scale(30, 5),
                                 self.scale(200, 30), 0.05)
        log("[tenants] notifications on: sluice %.2f%% CPU, %.0f round trips/s, pickup p50 %.2f ms p99 %.2f ms"
            % (notified["sluice_cpu_pct"], notified["round_trips_per_s"],
               notified["pickup_p50_ms"] or -1, notified["pickup_p99_ms"] or -1))
        log("[tenants] %d idle tenants, keyspace notifications off (polling, at most 1 s)" % tenants)
        polled = self.idle_run(False, tenants, self.scale(5, 3), self.scale(10, 3),
                               self.scale(50, 10), 0.1)
        log("[tenants] notifications off: sluice %.2f%% CPU, %.0f round trips/s, pickup p50 %.0f ms"
            % (polled["sluice_cpu_pct"], polled["round_trips_per_s"], polled["pickup_p50_ms"] or -1))
        self.results["tenants"] = {"notify": notified, "polling": polled}

    def s_memory(self):
        log("[memory] private redis-server (keyspace notifications off)")
        _, port = P.start_redis(self.procs, self.name("redis-memory"))
        r = P.Redis(port)
        n = self.scale(1000000, 100000)
        tenant = "mem"
        sink_p, url, sink_log = self.sink("sink-memory")
        slow = {tenant: {"endpoint": url + "/slow/30000/hook", "rate": FAST_RATE,
                         "capacity": 9000000, "concurrency": self.held, "timeout_ms": 60000}}
        cfg_slow = self.config(os.path.join(self.workdir, "memory-slow.json"), port, slow,
                               workers=1, grace_ms=200)
        # The delta also holds the list's key and the tenants set: nothing per job.
        # Payloads take 16 consecutive lengths, so that the allocator's size
        # classes (16 bytes apart) average out instead of favouring one length.
        used0 = r.used_memory()
        jobs = [job(i, i % 16) for i in range(n)]
        payload = sum(len(j) for j in jobs) / n
        self.push(cfg_slow, tenant, jobs)
        del jobs
        used1 = r.used_memory()
        qkey = "sluice:{%s}:queue" % tenant
        queued = r.call("LLEN", qkey)
        per_queued = (used1 - used0) / queued
        mu_queue = r.call("MEMORY", "USAGE", qkey, "SAMPLES", "0")
        log("[memory] %d queued: %.1f bytes each in Redis (payload %.1f)" % (queued, per_queued, payload))

        # Claimed: a slow endpoint holds self.held requests for 30 s; the daemon
        # claims up to its concurrency plus what waits for a slot, then stops.
        p = self.start_sluice(self.name("sluice-memory-slow"), cfg_slow)
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
        # The claimed jobs are the oldest, not a sample of all: their own payload
        # (a record ends with the job as pushed, which starts at its '{').
        records = r.call("HVALS", "sluice:{%s}:jobs" % tenant)
        claimed_payload = sum(len(v) - v.index(b"{") for v in records) / max(1, len(records))
        self.stop_sluice(p)
        self.procs.stop(sink_p)

        # Draining the backlog at full speed for a few seconds: RSS sampled.
        sink_p, url, sink_log = self.sink("sink-memory-fast")
        fast = {tenant: {"endpoint": url + "/hook", "rate": FAST_RATE, "capacity": 9000000,
                         "concurrency": self.results.get("concurrency", 64)}}
        cfg_fast = self.config(os.path.join(self.workdir, "memory-fast.json"), port, fast)
        queued_before = r.call("LLEN", qkey)  # the held jobs were handed back
        p = self.start_sluice(self.name("sluice-memory-fast"), cfg_fast)
        rss_max, end = 0, time.monotonic() + self.scale(5, 2)
        while time.monotonic() < end and p.poll() is None:
            rss_max = max(rss_max, P.proc_status_kib(p.pid, "VmRSS"))
            time.sleep(0.1)
        hwm = P.proc_status_kib(p.pid, "VmHWM")
        queued_after = r.call("LLEN", qkey)
        self.stop_sluice(p)
        self.procs.stop(sink_p)
        r.close()
        self.results["memory"] = {
            "queued": queued, "payload": payload, "per_queued": per_queued,
            "queue_memory_usage": mu_queue,
            "claimed": claimed, "inflight": inflight, "per_claimed_keys": per_claimed_keys,
            "held": self.held, "moved": moved,
            "claimed_payload": claimed_payload,
            "claimed_overhead": per_claimed_keys - claimed_payload,
            "rss_slow_kib": rss_slow, "rss_drain_max_kib": rss_max, "hwm_drain_kib": hwm,
            "drained": queued_before - queued_after,
        }
        log("[memory] claimed: %.1f bytes each (payload %.1f); sluice RSS %d KiB holding, %d KiB draining"
            % (per_claimed_keys, claimed_payload, rss_slow, rss_max))

    # ---- the run ------------------------------------------------------------

    def run(self, only):
        scenarios = [("throughput", self.s_throughput), ("ceiling", self.s_ceiling),
                     ("shaping", self.s_shaping), ("fleet", self.s_fleet),
                     ("tenants", self.s_tenants), ("memory", self.s_memory)]
        for name, fn in scenarios:
            if only and name not in only:
                continue
            t = self.noise_start()
            fn()
            self.noise_end(name, t)
            self.procs.stop_all()


def dirty(porcelain):
    # "XY PATH" lines; the first may have lost its leading space to strip()
    files = [parts[1] for parts in (line.split(None, 1) for line in porcelain.splitlines())
             if len(parts) == 2]
    if not files:
        return ""
    more = " and %d more" % (len(files) - 5) if len(files) > 5 else ""
    return " (uncommitted changes in %s%s)" % (", ".join(files[:5]), more)


def machine_facts(args):
    def sh(cmd):
        try:
            return subprocess.run(cmd, shell=True, capture_output=True, text=True,
                                  timeout=10).stdout.strip()
        except (OSError, subprocess.SubprocessError):
            return "?"
    cpu = "?"
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    with open("/proc/meminfo") as f:
        mem_kib = int(f.readline().split()[1])
    return {
        "date": time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime()),
        "nproc": sh("nproc"),
        "cpu": cpu,
        "memory": "%.1f GiB" % (mem_kib / 1048576),
        "kernel": sh("uname -sr"),
        "os": sh(". /etc/os-release && echo \"$PRETTY_NAME\""),
        "redis": sh("redis-server --version"),
        "libcurl": sh("dpkg-query -W -f='${Version}' libcurl4 2>/dev/null"),
        "libevent": sh("dpkg-query -W -f='${Version}' libevent-2.1-7 2>/dev/null"),
        "hiredis": sh("dpkg-query -W -f='${Version}' libhiredis0.14 2>/dev/null"),
        "wrk": sh("dpkg-query -W -f='${Version}' wrk 2>/dev/null"),
        "cc": sh("cc --version | head -1"),
        "sluice": sh("'%s' version" % os.path.join(args.build, "sluice")),
        "commit": sh("git rev-parse --short HEAD") + dirty(sh("git status --porcelain "
                                                              "--untracked-files=no")),
        "buildtype": "release (meson --buildtype=release: -O3, no debug info)",
    }


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", default="build-release", help="meson build dir with sluice")
    ap.add_argument("--out", default=None,
                    help="where RESULTS.md and the plots go (default: bench/ for a full run, "
                         "a temp dir with --quick or --only)")
    ap.add_argument("--quick", action="store_true", help="short runs: a smoke test, not figures")
    ap.add_argument("--only", default="", help="comma-separated scenarios: throughput,ceiling,"
                                               "shaping,fleet,tenants,memory")
    ap.add_argument("--rates", default="", help="shaping: only these of its rates "
                                                "(comma-separated, e.g. 10000,20000)")
    ap.add_argument("--keep", action="store_true", help="keep the work dir (configs, logs, traces)")
    ap.add_argument("--command", default="bench/run", help="the command line, for RESULTS.md")
    args = ap.parse_args()
    only = [s for s in args.only.split(",") if s]
    here = os.path.dirname(os.path.abspath(__file__))
    out = args.out or (here if not (args.quick or only) else tempfile.mkdtemp(prefix="sluice-bench-out-"))
    os.makedirs(out, exist_ok=True)

    def on_signal(signum, frame):
        raise Timeout("signal %d" % signum)
    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    signal.signal(signal.SIGALRM, on_signal)
    signal.alarm(HARD_CAP_S)

    # A slow endpoint holding 1,000 requests, 100 tenants x 4 connections:
    # more descriptors than a default soft limit of 1,024.
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft != resource.RLIM_INFINITY and (hard == resource.RLIM_INFINITY or hard > soft):
        resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, 65536), hard))
    b = Bench(args)
    facts = machine_facts(args)
    started = time.monotonic()
    code = 0
    try:
        log("work dir %s; results to %s" % (b.workdir, out))
        b.run(only)
    except Timeout as e:
        log("stopped (%s): reporting what was measured" % e)
        code = 1
    except Exception as e:  # report what there is, then fail
        log("FAILED: %s: %s" % (type(e).__name__, e))
        traceback.print_exc()
        b.results["notes"].append("the run failed: %s: %s" % (type(e).__name__, e))
        code = 1
        args.keep = True
    finally:
        signal.alarm(0)
        b.procs.stop_all()
    facts["duration"] = "%.0f s" % (time.monotonic() - started)
    facts["partial"] = bool(args.quick or only or code)
    try:
        report.write(b.results, facts, args.command, out, b.workdir)
    finally:
        if args.keep:
            log("work dir kept: %s" % b.workdir)
        else:
            shutil.rmtree(b.workdir, ignore_errors=True)
    return code


if __name__ == "__main__":
    sys.exit(main())
