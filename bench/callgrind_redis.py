"""callgrind_redis - Redis's instructions per job for one fixed claim and ack
sequence, counted by valgrind's callgrind (instruction counts repeat where
wall time on a shared VM does not).

    python3 -m bench.callgrind_redis --build build-release [--jobs 10000]

Starts redis-server under `valgrind --tool=callgrind` on a free loopback
port, loads the claim and ack scripts as BUILD embeds them (read from
BUILD/lua_scripts_data.c, so a build of any commit is measured with its
own scripts), pushes the jobs, zeroes the counters, then drives the
sequence the daemon sends a fast tenant at backlog: claims of
SL_CLAIM_BATCH jobs with the daemon's arguments (see sl_claim_build in
src/redis/claim.c) while it holds fewer than SL_CLAIM_MAX_WAITING jobs,
else the oldest jobs it holds acked `done`, --ack-batch per ack call. It dumps the counters, stops Redis and prints Ir (instructions
executed by redis-server) in total and per job, and the commands per job
from INFO commandstats (the scripts' inner calls included). The sequence
does not depend on timing: the same build gives the same counts, give or
take Redis's timer (serverCron) during the run.

--slowlog runs the same sequence on a redis-server without valgrind, its
SLOWLOG logging every command, and prints the microseconds Redis itself
timed for the claims and for the acks (wall time: it varies run to run on
a shared VM, where the instruction counts do not).

--cpu runs the same sequence on a redis-server without valgrind and
prints the CPU time the redis-server process spent on it (its
/proc/PID/schedstat, in ns: the scripts, the network and the event loop,
what INFO cpu counts in a real run), per job.

--floor runs the same sequence against two minimal scripts that do only
the Redis work of the data model (LRANGE, LTRIM, HSET of the records, ZADD
of the leases, the reply; ZMSCORE, HMGET, ZREM, HDEL at the ack) and no
decision: what any claim and ack of this data model cost at least."""

import argparse
import glob
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

from . import procs as P
from .workload import job

PREFIX = "sluice"
TENANT = "t0"
CLAIM_BATCH = 512  # SL_CLAIM_BATCH
MAX_WAITING = 4 * CLAIM_BATCH  # SL_CLAIM_MAX_WAITING
RATE_MILLI = 1000000 * 1000  # the fast tenant: 1,000,000 jobs/s
CAPACITY = 9000000
LOOKAHEAD_US = 50000 + 20  # sl_claim_lookahead_us(RATE_MILLI)
REFILL_US = 50000  # SL_CLAIM_REFILL_US
LEASE_US = 30000 * 1000 + 10000000  # sl_claim_lease_us(30 s timeout)
MAX_JOB_BYTES = 1 << 20  # SL_JOB_MAX_BYTES_DEFAULT


# --floor: the Redis work the claim and ack scripts' data model needs and
# nothing else (no schedule, limits, deadlines, checkpoints or retries):
# the same keys, arguments, writes and reply, the least Lua around them.
FLOOR_CLAIM = r"""
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
local lease_us, prefix = tonumber(ARGV[7]), ARGV[8]
local q = redis.call('LRANGE', KEYS[1], -tonumber(ARGV[6]), -1)
local records, leases, reply = {}, {}, {now, now, 0, 0, 0, {}, 0, 0, 0, 0, {}} -- claim.lua's REPLY_HEADER fields
for i = #q, 1, -1 do
  local id = prefix .. string.format('%x', #q - i)
  records[#records + 1] = id
  records[#records + 1] = '0:' .. string.format('%x', now) .. ':' .. q[i]
  leases[#leases + 1] = string.format('%d', now + lease_us + i)
  leases[#leases + 1] = id
  local at = #reply
  reply[at + 1], reply[at + 2] = now + i, q[i]
end
redis.call('LTRIM', KEYS[1], 0, -#q - 1)
redis.call('HSET', KEYS[4], unpack(records))
redis.call('ZADD', KEYS[3], unpack(leases))
return reply
"""
FLOOR_ACK = r"""
redis.call('TIME')
local ids = {}
for i = 3, #ARGV, 3 do ids[#ids + 1] = ARGV[i] end
local scores = redis.call('ZMSCORE', KEYS[1], unpack(ids))
local records = redis.call('HMGET', KEYS[2], unpack(ids))
local done = {}
for k = 1, #ids do
  if scores[k] == ARGV[3 * k + 1] and records[k] then done[#done + 1] = ids[k] end
end
redis.call('ZREM', KEYS[1], unpack(done))
redis.call('HDEL', KEYS[2], unpack(done))
return {#done, #ids - #done}
"""


def embedded_scripts(build):
    """{name: source} of the scripts BUILD embeds (BUILD/lua_scripts_data.c)."""
    with open(os.path.join(build, "lua_scripts_data.c")) as f:
        text = f.read()
    out = {}
    for name, body in re.findall(r"static const char script_(\w+)\[\] = \{(.*?)\};", text, re.S):
        data = bytes(int(h, 16) for h in re.findall(r"0x([0-9a-f]{2})", body))
        out[name] = data.rstrip(b"\0")
    return out


def keys(what):
    return "%s:{%s}:%s" % (PREFIX, TENANT, what)


def claim_args(sha, n, batch=CLAIM_BATCH):
    """EVALSHA of lua/claim.lua as sl_claim_build writes it; n: the call's
    number; batch: jobs asked for (SL_CLAIM_BATCH for a fast tenant, fewer
    for one of many sharing a worker)."""
    return ["EVALSHA", sha, 6, keys("queue"), keys("shape"), keys("inflight"), keys("jobs"),
            keys("retry"), keys("dlq"),
            CAPACITY, RATE_MILLI, "wait", 0, LOOKAHEAD_US, batch, LEASE_US,
            claim_prefix(n), TENANT, "envelope", REFILL_US, MAX_JOB_BYTES, 0, 0]


def claim_prefix(n):
    """The id prefix of claim call n (claim_args)."""
    return "cg%09d" % n


def claimed_jobs(reply, prefix):
    """(id, lease) of each job of a claim reply to a call with id prefix
    prefix. Since issue 18 the reply has 11 header fields (the 11th: the
    jobs that are not new, 4 fields each, by place) and 2 per job (slot,
    job): a new job's id is the prefix and its place in hex, every lease
    slot + LEASE_US. Before, 10 header fields and 6 per job (id, slot,
    lease, ...): a build of an older commit is measured too."""
    if len(reply) <= 10 or not isinstance(reply[10], list):
        return [(reply[i], reply[i + 2]) for i in range(10, len(reply), 6)]
    jobs = [((prefix + "%x" % k).encode(), reply[i] + LEASE_US)
            for k, i in enumerate(range(11, len(reply), 2))]
    retried = reply[10]
    for i in range(0, len(retried), 4):
        place = retried[i]
        jobs[place] = (retried[i + 1], jobs[place][1])
    return jobs


def ack_args(sha, jobs):
    args = ["EVALSHA", sha, 5, keys("inflight"), keys("jobs"), keys("retry"), keys("dlq"),
            keys("shape"), TENANT]
    for jid, lease in jobs:
        args += ["done", jid, lease]
    return args


def total_ir(path):
    """The Ir total of a callgrind output file."""
    with open(path) as f:
        for line in f:
            if line.startswith(("summary:", "totals:")):
                return int(line.split()[1])
    raise RuntimeError("no totals in %s" % path)


def commands(stats):
    """Calls of everything but the client's own INFO/CONFIG/PING."""
    return sum(v for k, v in stats.items() if k not in ("info", "config", "ping", "config|resetstat"))


def slowlog_us(r, claim_sha, ack_sha):
    """{"claim": us, "ack": us}: what Redis's SLOWLOG timed for each script."""
    out = {"claim": 0, "ack": 0}
    for entry in r.call("SLOWLOG", "GET", "1000000"):
        argv = entry[3]
        if len(argv) > 1 and argv[0].upper() == b"EVALSHA":
            sha = argv[1].decode()
            if sha in (claim_sha, ack_sha):
                out["claim" if sha == claim_sha else "ack"] += entry[2]
    return out


def on_cpu_ns(pid):
    """The CPU time all threads of process pid ran, in ns (schedstat)."""
    total = 0
    for task in os.listdir("/proc/%d/task" % pid):
        with open("/proc/%d/task/%s/schedstat" % (pid, task)) as f:
            total += int(f.read().split()[0])
    return total


def run(build, jobs, ack_batch, workdir, max_waiting=MAX_WAITING, config=(), floor=False,
        claim_batch=CLAIM_BATCH, slowlog=False, cpu=False):
    scripts = {"claim": FLOOR_CLAIM, "ack": FLOOR_ACK} if floor else embedded_scripts(build)
    port = P.free_port()
    out_file = os.path.join(workdir, "callgrind.out")
    argv = [] if slowlog or cpu else ["valgrind", "--tool=callgrind", "--callgrind-out-file=" + out_file]
    argv += ["redis-server", "--port", str(port), "--bind", "127.0.0.1", "--save", "",
             "--appendonly", "no", "--daemonize", "no", "--dir", workdir, "--loglevel", "warning"]
    for setting in config:
        name, _, value = setting.partition("=")
        argv += ["--" + name, value]
    procs = P.Procs(workdir)
    p = procs.start("redis-callgrind", argv)
    try:
        r = None
        for _ in range(600):
            try:
                r = P.Redis(port, timeout=120.0)
                if r.call("PING") == "PONG":
                    break
            except (OSError, P.RedisError):
                r = None
            time.sleep(0.1)
        if r is None:
            raise RuntimeError("redis-server under callgrind did not start (%s)" % workdir)
        claim_sha = r.call("SCRIPT", "LOAD", scripts["claim"]).decode()
        ack_sha = r.call("SCRIPT", "LOAD", scripts["ack"]).decode()
        for first in range(0, jobs, 1000):
            r.call("LPUSH", keys("queue"), *[job(i) for i in range(first, min(first + 1000, jobs))])
        r.call("CONFIG", "RESETSTAT")
        if slowlog:
            r.call("CONFIG", "SET", "slowlog-log-slower-than", "0")
            r.call("CONFIG", "SET", "slowlog-max-len", "1000000")
            r.call("SLOWLOG", "RESET")
        elif cpu:
            cpu_before = on_cpu_ns(p.pid)
        else:
            subprocess.run(["callgrind_control", "--zero", str(p.pid)], check=True,
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        held, delivered, calls, queued = [], 0, 0, jobs
        while delivered < jobs:
            # As a tenant at backlog: claim while it holds fewer than
            # SL_CLAIM_MAX_WAITING jobs, else ack the oldest it holds.
            if queued > 0 and len(held) < max_waiting:
                got = claimed_jobs(r.call(*claim_args(claim_sha, calls, claim_batch)),
                                   claim_prefix(calls))
                calls += 1
                if not got:
                    raise RuntimeError("claim %d returned no job with %d queued" % (calls, queued))
                held += got
                queued -= len(got)
                continue
            done, held = held[:ack_batch], held[ack_batch:]
            applied = r.call(*ack_args(ack_sha, done))
            if applied[0] != len(done):
                raise RuntimeError("ack applied %r" % (applied,))
            delivered += len(done)
        if slowlog:
            timed = slowlog_us(r, claim_sha, ack_sha)
        elif cpu:
            cpu_ns = on_cpu_ns(p.pid) - cpu_before
        else:
            subprocess.run(["callgrind_control", "--dump", str(p.pid)], check=True,
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        stats = r.commandstats()
        if r.call("LLEN", keys("queue")) != 0 or r.call("HLEN", keys("jobs")) != 0:
            raise RuntimeError("jobs left behind")
        r.close()
    finally:
        procs.stop(p, timeout=60.0)
    if slowlog:
        return {"jobs": delivered, "claims": calls, "ack_batch": ack_batch,
                "claim_us": timed["claim"], "ack_us": timed["ack"],
                "commands_per_job": commands(stats) / delivered,
                "commandstats": {k: v for k, v in stats.items()
                                 if k not in ("info", "config|resetstat", "slowlog|reset",
                                              "slowlog|get", "config|set")}}
    if cpu:
        return {"jobs": delivered, "claims": calls, "ack_batch": ack_batch, "cpu_ns": cpu_ns,
                "commands_per_job": commands(stats) / delivered,
                "commandstats": {k: v for k, v in stats.items() if k not in ("info", "config|resetstat")}}
    dumps = sorted(glob.glob(out_file + ".*"), key=lambda f: int(f.rsplit(".", 1)[1]))
    if not dumps:
        raise RuntimeError("callgrind wrote no dump (%s)" % workdir)
    ir = total_ir(dumps[0])
    return {"jobs": delivered, "claims": calls, "ack_batch": ack_batch, "ir": ir,
            "ir_per_job": ir / delivered, "commands_per_job": commands(stats) / delivered,
            "commandstats": {k: v for k, v in stats.items() if k not in ("info", "config|resetstat")}}


def main():
    ap = argparse.ArgumentParser(prog="python3 -m bench.callgrind_redis")
    ap.add_argument("--build", required=True, help="a build dir (holds lua_scripts_data.c)")
    ap.add_argument("--jobs", type=int, default=10000)
    ap.add_argument("--ack-batch", type=int, default=100, help="done ops per ack call")
    ap.add_argument("--claim-batch", type=int, default=CLAIM_BATCH,
                    help="jobs asked for per claim (SL_CLAIM_BATCH; small: a tenant of many)")
    ap.add_argument("--max-waiting", type=int, default=MAX_WAITING,
                    help="claim while holding fewer jobs than this (SL_CLAIM_MAX_WAITING)")
    ap.add_argument("--config", action="append", default=[], metavar="NAME=VALUE",
                    help="a redis-server setting, e.g. hash-max-listpack-entries=128")
    ap.add_argument("--floor", action="store_true",
                    help="minimal scripts doing only the Redis work of the data model (no decisions)")
    ap.add_argument("--slowlog", action="store_true",
                    help="no valgrind: Redis's own timing of the claims and acks (SLOWLOG)")
    ap.add_argument("--cpu", action="store_true",
                    help="no valgrind: the CPU time redis-server spent on the sequence (schedstat)")
    ap.add_argument("--keep", action="store_true", help="keep the work dir (callgrind output)")
    a = ap.parse_args()
    workdir = tempfile.mkdtemp(prefix="sluice-callgrind-")
    try:
        res = run(a.build, a.jobs, a.ack_batch, workdir, a.max_waiting, a.config, a.floor,
                  a.claim_batch, a.slowlog, a.cpu)
    finally:
        if not a.keep:
            shutil.rmtree(workdir, ignore_errors=True)
    print("%s: %d jobs, %d claims of up to %d, acks of %d, claiming while holding < %d%s"
          % ("the floor scripts" if a.floor else "build " + a.build, res["jobs"], res["claims"],
             a.claim_batch, res["ack_batch"], a.max_waiting,
             "".join(", " + c for c in a.config)))
    if a.slowlog:
        print("redis-server SLOWLOG: claims %d us, acks %d us, %.2f us per job; commands per job "
              "%.2f" % (res["claim_us"], res["ack_us"],
                        (res["claim_us"] + res["ack_us"]) / res["jobs"], res["commands_per_job"]))
    elif a.cpu:
        print("redis-server CPU: %.1f ms, %.2f us per job; commands per job %.2f"
              % (res["cpu_ns"] / 1e6, res["cpu_ns"] / 1e3 / res["jobs"], res["commands_per_job"]))
    else:
        print("redis-server Ir: %d total, %.0f per job; commands per job %.2f"
              % (res["ir"], res["ir_per_job"], res["commands_per_job"]))
    print("commandstats: " + ", ".join("%s=%d" % kv for kv in sorted(res["commandstats"].items())))
    if a.keep:
        print("work dir: " + workdir)
    return 0


if __name__ == "__main__":
    sys.exit(main())
