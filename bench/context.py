"""context.py - what every scenario is given: the binaries, a private work
dir, the processes started so far (procs.Procs), the results gathered so
far, and the steps scenarios share (write a config, push jobs, start and
stop a daemon or a sink, wait for the sink, account for the noise).

A scenario reads ctx.quick through ctx.scale(full, quick), names every
file and process through ctx.name(base), so that nothing collides, and
leaves its figures in ctx.results[its name]."""

import json
import os
import subprocess
import tempfile
import time

from . import procs as P
from . import stats as S


def sluice_binary(build):
    """Where the meson build dir build has the daemon (the top meson.build)."""
    return os.path.join(build, "sluice")


def log(msg):
    print("bench: " + msg, flush=True)


class Context:
    def __init__(self, args):
        self.args = args
        self.quick = args.quick
        self.sluice = sluice_binary(args.build)
        self.sink_bin = os.path.join(args.build, "tests", "sluice-sink")
        self.workdir = tempfile.mkdtemp(prefix="sluice-bench-")
        self.procs = P.Procs(self.workdir)
        self.results = {"notes": [], "noise": {}}
        self.seq = 0

    # ---- names and scale ----------------------------------------------------

    def name(self, base):
        """base-N, unique in this run: file and process names."""
        self.seq += 1
        return "%s-%d" % (base, self.seq)

    def scale(self, full, quick):
        return quick if self.quick else full

    def path(self, filename):
        return os.path.join(self.workdir, filename)

    # ---- the noise of a scenario --------------------------------------------

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
        self.results["noise"][scenario] = S.noise_shares(
            t1 - t0, os.cpu_count() or 1, busy1 - busy0, steal1 - steal0, total1 - total0,
            ours1 - ours0, P.CLK_TCK)

    # ---- sluice -------------------------------------------------------------

    def config(self, path, redis, tenants, workers=2, grace_ms=2000):
        """Writes a daemon config to path and has `sluice check-config` accept
        it; redis: a port or a Cluster (procs.redis_view)."""
        cfg = {
            "redis": P.redis_view(redis).url(),
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

    # ---- the endpoint -------------------------------------------------------

    def sink(self, base):
        """A sluice-sink of its own: (process, base URL, its request log)."""
        p, port, path = P.start_sink(self.procs, self.sink_bin, self.name(base))
        return p, "http://127.0.0.1:%d" % port, path

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
