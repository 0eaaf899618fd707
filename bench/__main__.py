"""python3 -m bench - sluice's benchmarks; run them through bench/run, which
installs what is missing and builds the release binary first.

Scenarios (each bounded in time; every server is private, on 127.0.0.1):
  throughput  100,000 queued jobs, 1 tenant and 100 tenants, rate far above
              what the box can do: delivered jobs/s, CPU per 1,000 jobs,
              Redis commands per job
  ceiling     the same endpoint driven by wrk (50 connections)
  shaping     1 .. 20,000 jobs/s from a backlog: most departures in any
              window W beside SPEC §4's bound, rate error, gap jitter beside
              a bare timer's, lateness; three tenants on one worker; 60 s
              runs; a bursty input, plotted
  fleet       1, 2, 4 daemons on one tenant: global rate error, throughput
  cluster     a cluster of 3 primaries beside one redis-server: throughput,
              Redis CPU per 1,000 jobs per shard; 2 daemons shaping one tenant
  tenants     10,000 idle tenants: CPU, Redis commands/s; pickup latency
  memory      RSS with 10,000 tenants and 1,000,000 queued jobs; Redis bytes
              per queued and per claimed job
  adaptive    one adaptive tenant against a hidden limit of 100, 40, 80/s
              (15 s each), without and with X-RateLimit headers: 429s,
              time to within 10% of each limit, plotted (about 100 s)
  chaos       50 tenants through 2 daemons while daemons are SIGKILLed, Redis
              restarts or is busy and the endpoint flaps: every job delivered
              or dead-lettered, none lost; duplicates; stuck tenants; RSS
              (about 5 minutes, --quick about 1)

Prints a table and writes RESULTS.md and the PNG plots into --out."""

import argparse
import os
import resource
import shutil
import signal
import sys
import tempfile
import time
import traceback

from . import machine, report
from .context import Context, log
from .scenarios import NAMES, SCENARIOS

HARD_CAP_S = 1500  # the whole run, whatever happens
HERE = os.path.dirname(os.path.abspath(__file__))


class Timeout(Exception):
    pass


def parse_args(argv=None):
    ap = argparse.ArgumentParser(prog="python3 -m bench", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", default="build-release", help="meson build dir with sluice")
    ap.add_argument("--out", default=None,
                    help="where RESULTS.md and the plots go (default: bench/ for a full run, "
                         "a temp dir with --quick or --only)")
    ap.add_argument("--quick", action="store_true", help="short runs: a smoke test, not figures")
    ap.add_argument("--only", default="", help="comma-separated scenarios: " + ",".join(NAMES))
    ap.add_argument("--rates", default="", help="shaping: only these of its rates, and "
                                                "\"mix\" or \"long\" for those runs "
                                                "(comma-separated, e.g. 10000,20000)")
    ap.add_argument("--seed", type=int, default=None,
                    help="chaos: the seed of its plan of faults (default: a random one, printed)")
    ap.add_argument("--keep", action="store_true", help="keep the work dir (configs, logs, traces)")
    ap.add_argument("--command", default="bench/run", help="the command line, for RESULTS.md")
    return ap.parse_args(argv)


def run_scenarios(ctx, only):
    """Each scenario in order (those of only, when not empty), its noise
    measured, every process it left stopped before the next."""
    for scenario in SCENARIOS:
        if only and scenario.NAME not in only:
            continue
        t = ctx.noise_start()
        scenario.run(ctx)
        ctx.noise_end(scenario.NAME, t)
        ctx.procs.stop_all()


def main():
    args = parse_args()
    only = [s for s in args.only.split(",") if s]
    unknown = [s for s in only if s not in NAMES]
    if unknown:
        sys.exit("bench: --only: no scenario %s (there are %s)" % (", ".join(unknown), ",".join(NAMES)))
    out = args.out or (HERE if not (args.quick or only) else tempfile.mkdtemp(prefix="sluice-bench-out-"))
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
    ctx = Context(args)
    facts = machine.facts(ctx.sluice)
    started = time.monotonic()
    code = 0
    try:
        log("work dir %s; results to %s" % (ctx.workdir, out))
        run_scenarios(ctx, only)
    except Timeout as e:
        log("stopped (%s): reporting what was measured" % e)
        code = 1
    except Exception as e:  # report what there is, then fail
        log("FAILED: %s: %s" % (type(e).__name__, e))
        traceback.print_exc()
        ctx.results["notes"].append("the run failed: %s: %s" % (type(e).__name__, e))
        code = 1
        args.keep = True
    finally:
        signal.alarm(0)
        ctx.procs.stop_all()
    facts["duration"] = "%.0f s" % (time.monotonic() - started)
    facts["partial"] = bool(args.quick or only or code)
    try:
        report.write(ctx.results, facts, args.command, out, ctx.workdir)
    finally:
        if args.keep:
            log("work dir kept: %s" % ctx.workdir)
        else:
            shutil.rmtree(ctx.workdir, ignore_errors=True)
    return code


if __name__ == "__main__":
    sys.exit(main())
