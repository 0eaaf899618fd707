"""ceiling - the endpoint alone, driven by wrk (2 threads, 50 connections):
what the sink and the loopback allow, the bound for sluice's throughput."""

import subprocess

from .. import procs as P
from ..context import log
from ..workload import job

NAME = "ceiling"


def wrk_script(body):
    """wrk's Lua: a POST of body with the headers sluice sends."""
    return ('wrk.method = "POST"\n'
            "wrk.body = '%s'\n"
            'wrk.headers["Content-Type"] = "application/json"\n'
            'wrk.headers["Idempotency-Key"] = "0123456789abcdef.1f"\n' % body)


def requests_per_s(wrk_stdout):
    """The "Requests/sec:" figure of wrk's report; None if there is none."""
    rps = None
    for line in wrk_stdout.splitlines():
        if line.startswith("Requests/sec:"):
            rps = float(line.split()[1])
    return rps


def run(ctx):
    sink_p, url, sink_log = ctx.sink("sink-wrk")
    script = ctx.path("post.lua")
    with open(script, "w") as f:
        f.write(wrk_script(job(12345).decode()))
    secs = ctx.scale(10, 3)
    cpu0 = P.proc_cpu_s(sink_p.pid)
    argv = ["wrk", "-t2", "-c50", "-d%ds" % secs, "--timeout", "5s", "-s", script,
            url + "/hook/wrk"]
    out = subprocess.run(argv, capture_output=True, text=True, timeout=secs + 30)
    sink_cpu = P.proc_cpu_s(sink_p.pid) - cpu0
    ctx.procs.stop(sink_p)
    rps = requests_per_s(out.stdout)
    with open(sink_log, "rb") as f:
        requests = sum(1 for _ in f)
    ctx.results[NAME] = {
        "command": " ".join(argv[:-1]) + " http://127.0.0.1:PORT/hook/wrk",
        "rps": rps,
        "requests": requests,
        "sink_cpu_per_1k": sink_cpu / max(1, requests) * 1000,
        "output": out.stdout,
    }
    log("[ceiling] wrk -t2 -c50: %.0f requests/s" % (rps or 0))
