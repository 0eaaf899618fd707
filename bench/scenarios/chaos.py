"""chaos - the soak of issue 13: 50 tenants at mixed rates through 2 daemons
while a daemon is SIGKILLed and started again every 20-40 s, Redis restarts
about every 60 s (once from a dump that keeps it answering LOADING for
seconds) or is kept busy by a script, and the endpoint flaps between 5xx,
429 with Retry-After, slow answers, closed and reset connections, and
health; an end game (503s while a last batch is pushed, then both daemons
SIGKILLed at once) leaves work in the retry sets of tenants that only the
"*" template governs. Then the faults stop,
the endpoint heals, the daemons get a bounded time to drain, and every job
pushed is accounted for: delivered (the sink's log), dead-lettered with its
reason (sluice:{T}:dlq), or lost, and where it was left. Duplicates are
counted and their Idempotency-Keys checked; the daemons' RSS is sampled.

The plan (tenants, jobs, faults) comes from a seed, printed, which
--seed repeats. Everything runs on 127.0.0.1 and is stopped by PID; every
loop is bounded in count and in time. The figures go to
ctx.results["chaos"]; chaos_verdict.py does the arithmetic."""

import os
import random
import time
import urllib.request

from .. import chaos_plan as plan
from .. import chaos_verdict as V
from .. import procs as P
from ..context import log

NAME = "chaos"
TIMEOUT_MS = 2000  # per request; the slow modes answer in 1,500 and 3,000 ms
RETRY = {"max_attempts": 12, "base_ms": 200, "max_ms": 4000}
CONCURRENCY = 32  # 320/s at the healthy mode's 100 ms, above the fastest rate
LISTED, TEMPLATED = 40, 10
PREFIX = "sluice"
FINAL_SHARE = 0.03  # of each tenant's jobs, pushed as the end game begins
BUSY_SCRIPT = """
local t = redis.call('TIME')
local start = t[1] * 1000000 + t[2]
local n = 0
repeat
  t = redis.call('TIME')
  n = n + 1
until t[1] * 1000000 + t[2] - start >= tonumber(ARGV[1])
return n
"""
# A lease outlives a job's slot and timeout by 10 s (src/daemon/tenant.c):
# a job not acked by then is claimed again.
LEASE_US = (TIMEOUT_MS + 10000) * 1000


def params(quick):
    """The soak's dimensions, full (about 5 minutes) or quick (about 1)."""
    if quick:
        return {"seconds": 40.0, "drain_s": 30.0, "stall_s": 15.0, "kill_every": (8.0, 14.0),
                "redis_every": (18.0, 24.0), "busy_every": (12.0, 18.0),
                "mode_every": (2.0, 5.0), "load": 0.25,
                "cap": 8000, "filler": 3000, "loading_index": 0}
    return {"seconds": 200.0, "drain_s": 75.0, "stall_s": 25.0, "kill_every": (20.0, 40.0),
            "redis_every": (55.0, 65.0), "busy_every": (50.0, 70.0),
            "mode_every": (2.0, 8.0), "load": 0.25,
            "cap": 80000, "filler": 4000, "loading_index": 1}


class Link:
    """A Redis connection for the soak's own commands that survives Redis's
    restarts: a dropped connection is opened again at the next call."""

    def __init__(self, port):
        self.port = port
        self.conn = None

    def close(self):
        if self.conn:
            self.conn.close()
            self.conn = None

    def pipeline(self, cmds):
        """The replies of cmds, sent at once (an error reply is a RedisError
        in the list); None when Redis cannot be reached or the connection
        broke (then nothing is known of what ran)."""
        try:
            if self.conn is None:
                self.conn = P.Redis(self.port, timeout=10.0)
            self.conn.sock.sendall(b"".join(P.Redis.encode(*c) for c in cmds))
            return [self.conn._reply() for _ in cmds]
        except (OSError, P.RedisError):
            self.close()
            return None


class Soak:
    """The soak's moving parts and what it records along the way."""

    def __init__(self, ctx, p, seed):
        self.ctx, self.p, self.seed = ctx, p, seed
        self.tenants = plan.tenants(LISTED, TEMPLATED)
        self.listed = {n: l for n, _, l in self.tenants}
        self.redis_dir = ctx.path(ctx.name("redis-chaos"))
        os.makedirs(self.redis_dir, exist_ok=True)
        self.port = P.free_port()
        self.redis = None
        self.link = Link(self.port)
        self.daemons = [None, None]
        self.senders = [None, None]
        self.pushed, self.ambiguous = {}, set()
        self.pending = []  # push batches due but not yet accepted
        self.rss_max = [0, 0]
        self.rss_samples = 0
        self.kills = self.redis_restarts = self.mode_changes = self.busy_n = 0
        self.unexpected_exits = []
        self.loading_since = None
        self.loading_s = []
        # When things happened, on the sink's clock (us since the epoch), so
        # that a duplicate can be set beside what preceded it.
        self.mode_at = [(P.now_us(), "ok")]
        self.killed = {}  # sender (a daemon's X-Test) -> us of its SIGKILL
        self.generation = 0
        self.restart_at = []  # (down, answering again) windows
        self.err_files = []
        self.opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))

    # ---- Redis ---------------------------------------------------------------

    def start_redis(self, load_delay_us=0):
        """redis-server on the soak's port and dir; returns once it answers
        PING (or LOADING, with a load delay). Bounded: 5 tries of 10 s."""
        argv = plan.redis_argv(self.port, self.redis_dir, load_delay_us)
        for _ in range(5):
            self.redis = self.ctx.procs.start(self.ctx.name("redis-chaos"), argv)
            for _ in range(500):
                if self.redis.poll() is not None:
                    break
                try:
                    r = P.Redis(self.port, timeout=1.0)
                    r.send("PING")
                    reply = r._reply()
                    r.close()
                    loading = isinstance(reply, P.RedisError) and str(reply).startswith("LOADING")
                    if reply == "PONG" or loading:
                        return loading
                except (OSError, P.RedisError):
                    pass
                time.sleep(0.02)
            self.ctx.procs.stop(self.redis)
            time.sleep(0.2)  # the old socket may linger a moment
        raise RuntimeError("redis-server did not start on port %d (see %s/redis.log)"
                           % (self.port, self.redis_dir))

    def restart_redis(self, loading):
        """SHUTDOWN SAVE, then the same server again on the same port and
        dir; with loading, a few thousand filler keys first and a load delay
        per key, so that it answers LOADING for seconds."""
        if loading:
            n = self.p["filler"]
            self.link.pipeline([("SET", "chaos:filler:%d" % i, "x") for i in range(n)])
        self.link.close()
        down = P.now_us()
        try:
            r = P.Redis(self.port, timeout=10.0)
            r.send("SHUTDOWN", "SAVE")
            try:
                r._reply()  # the connection closes when the server exits
            except (OSError, P.RedisError):
                pass
            r.close()
        except OSError:
            pass
        try:
            self.redis.wait(timeout=20)
        except Exception:  # noqa: BLE001 (subprocess.TimeoutExpired): stop it by PID
            self.ctx.results["notes"].append("chaos: Redis did not exit on SHUTDOWN SAVE")
        self.ctx.procs.stop(self.redis)
        answering_loading = self.start_redis(1000 if loading else 0)
        self.redis_restarts += 1
        self.restart_at.append([down, P.now_us()])
        if loading:
            self.loading_since = time.monotonic() if answering_loading else None
            if not answering_loading:
                self.ctx.results["notes"].append("chaos: the slow restart never answered LOADING")

    def busy(self, ms):
        """A script that keeps Redis busy for ms: everyone else is answered
        BUSY meanwhile (after the 100 ms of --lua-time-limit). Blocks until
        the script is done."""
        start = P.now_us()
        try:
            r = P.Redis(self.port, timeout=ms / 1000.0 + 10)
            try:
                r.call("EVAL", BUSY_SCRIPT, 0, ms * 1000)
                self.busy_n += 1
            finally:
                r.close()
        except (OSError, P.RedisError) as e:
            self.ctx.results["notes"].append("chaos: the busy script failed: %s" % e)
        self.restart_at.append([start, P.now_us()])

    def check_loading(self):
        """Ends the LOADING stopwatch once Redis answers PING."""
        if self.loading_since is None:
            return
        replies = self.link.pipeline([("PING",)])
        if replies and replies[0] == "PONG":
            self.loading_s.append(time.monotonic() - self.loading_since)
            self.loading_since = None
            self.restart_at[-1][1] = P.now_us()

    # ---- daemons -------------------------------------------------------------

    def start_daemon(self, i):
        """Daemon slot i, a new process with a config of its own whose
        requests carry X-Test: its name, so that the sink's log says which
        process sent what (and a duplicate, whether its sender was killed)."""
        self.generation += 1
        sender = "d%d.%d" % (i, self.generation)
        tcfg = {n: self.tenant_config(n, r, sender) for n, r, listed in self.tenants if listed}
        tcfg["*"] = self.tenant_config("template", plan.TEMPLATE_RATE, sender)
        del tcfg["*"]["headers"]["X-Tenant"]
        cfg = self.ctx.config(self.ctx.path(self.ctx.name("chaos-" + sender) + ".json"), self.port,
                              tcfg, workers=2, grace_ms=3000)
        name = self.ctx.name("sluice-chaos-" + sender)
        self.err_files.append(os.path.join(self.ctx.workdir, name + ".err"))
        self.daemons[i] = self.ctx.start_sluice(name, cfg)
        self.senders[i] = sender

    def kill_daemon(self, i, restart=True):
        p = self.daemons[i]
        if p.poll() is None:
            self.killed[self.senders[i]] = P.now_us()
            p.kill()
            p.wait()
        self.ctx.procs.stop(p)
        self.kills += 1
        if restart:
            self.start_daemon(i)

    def check_daemons(self, t):
        """A daemon that exited by itself is a finding: noted, started again."""
        for i, p in enumerate(self.daemons):
            if p.poll() is not None:
                self.unexpected_exits.append({"t": round(t, 1), "daemon": i, "code": p.returncode})
                self.ctx.procs.stop(p)
                self.start_daemon(i)

    def sample_rss(self):
        for i, p in enumerate(self.daemons):
            try:
                kib = P.proc_status_kib(p.pid, "VmRSS")
            except OSError:
                continue
            self.rss_max[i] = max(self.rss_max[i], kib)
            self.rss_samples += 1

    # ---- the endpoint and the jobs -------------------------------------------

    def set_mode(self, mode):
        try:
            with self.opener.open(self.sink_url + "/_mode/" + mode, timeout=5) as r:
                r.read()
            self.mode_at.append((P.now_us(), mode))
            self.mode_changes += 1
        except OSError as e:
            self.ctx.results["notes"].append("chaos: setting the mode %s: %s" % (mode, e))

    def push_due(self):
        """Pushes every pending batch (LPUSH of the batch, SADD of the
        tenant, one pipeline). An error reply (LOADING) leaves it pending;
        a broken connection makes its ids ambiguous (never pushed twice)."""
        keep = []
        for tenant, first, n in self.pending:
            lines = [plan.job_line(tenant, first + k) for k in range(n)]
            ids = [plan.job_id(tenant, first + k) for k in range(n)]
            replies = self.link.pipeline([("LPUSH", "%s:{%s}:queue" % (PREFIX, tenant), *lines),
                                          ("SADD", "%s:tenants" % PREFIX, tenant)])
            if replies is None:
                self.ambiguous.update(ids)
            elif isinstance(replies[0], P.RedisError):
                keep.append((tenant, first, n))
            else:
                for j in ids:
                    self.pushed[j] = tenant
        self.pending = keep

    def counts(self):
        """{tenant: (queued, retrying, inflight)}, or None if Redis is away."""
        cmds = []
        for name, _, _ in self.tenants:
            cmds += [("LLEN", "%s:{%s}:queue" % (PREFIX, name)),
                     ("ZCARD", "%s:{%s}:retry" % (PREFIX, name)),
                     ("ZCARD", "%s:{%s}:inflight" % (PREFIX, name))]
        replies = self.link.pipeline(cmds)
        if replies is None or any(isinstance(r, P.RedisError) for r in replies):
            return None
        return {name: tuple(replies[3 * k:3 * k + 3]) for k, (name, _, _) in enumerate(self.tenants)}

    def tenant_config(self, name, rate, sender):
        return {"endpoint": "%s/hook/%s" % (self.sink_url, name), "rate": rate,
                "concurrency": CONCURRENCY, "timeout_ms": TIMEOUT_MS, "retry": RETRY,
                "headers": {"X-Tenant": name, "X-Test": sender}}

    # ---- the run ---------------------------------------------------------------

    def run(self):
        ctx, p = self.ctx, self.p
        log("[chaos] seed %d (bench/run --only chaos --seed %d repeats this plan)"
            % (self.seed, self.seed))
        counts = plan.job_counts(self.tenants, p["seconds"], p["load"], p["cap"])
        pushes = plan.push_plan(counts, 0.4, p["seconds"] * 0.7, 1.0,
                                final_t=p["seconds"] * plan.END_FAIL + 0.5,
                                final_share=FINAL_SHARE)
        events = plan.timeline(self.seed, p["seconds"], p["kill_every"], p["redis_every"],
                               p["mode_every"], p["busy_every"],
                               loading_index=p["loading_index"])
        self.start_redis()
        self.sink_p, self.sink_url, sink_log = ctx.sink("sink-chaos")
        log("[chaos] %d tenants (%d in the configs, %d through the \"*\" template), %s jobs, "
            "%.0f s of faults (%d daemon kills, %d Redis restarts, %d times Redis busy, %d "
            "endpoint modes, then the end game: 503s, a last push, every daemon killed), then "
            "at most %.0f s to drain"
            % (len(self.tenants), LISTED, TEMPLATED, format(sum(counts.values()), ","),
               p["seconds"], sum(1 for e in events if e[1] == "kill"),
               sum(1 for e in events if e[1] == "redis"),
               sum(1 for e in events if e[1] == "busy"),
               sum(1 for e in events if e[1] == "mode"), p["drain_s"]))
        for i in range(2):
            self.start_daemon(i)
        tail = P.LogTail(sink_log)

        # The faults: one tick every 0.1 s, bounded in count as well as time.
        t0 = time.monotonic()
        ev, pu = 0, 0
        last_rss = -1.0
        for _ in range(int(p["seconds"] * 10) + 600):
            t = time.monotonic() - t0
            if t >= p["seconds"] and ev >= len(events):
                break
            while ev < len(events) and events[ev][0] <= t:
                _, kind, arg = events[ev]
                ev += 1
                if kind == "kill":
                    log("[chaos] %5.1f s: SIGKILL daemon %d, start it again" % (t, arg))
                    self.kill_daemon(arg)
                elif kind == "killall":
                    log("[chaos] %5.1f s: SIGKILL every daemon at once, start them again" % t)
                    for i in range(len(self.daemons)):
                        self.kill_daemon(i, restart=False)
                    for i in range(len(self.daemons)):
                        self.start_daemon(i)
                elif kind == "busy":
                    log("[chaos] %5.1f s: Redis busy with a script for %d ms" % (t, arg))
                    self.busy(arg)
                elif kind == "redis":
                    log("[chaos] %5.1f s: Redis SHUTDOWN SAVE and start again%s"
                        % (t, " (from a dump that loads slowly)" if arg else ""))
                    self.restart_redis(arg)
                else:
                    self.set_mode(arg)
            while pu < len(pushes) and pushes[pu][0] <= t:
                _, tenant, first, n = pushes[pu]
                self.pending.append((tenant, first, n))
                pu += 1
            if self.pending:
                self.push_due()
            self.check_loading()
            self.check_daemons(t)
            if t - last_rss >= 0.5:
                self.sample_rss()
                last_rss = t
            time.sleep(0.1)
        chaos_s = time.monotonic() - t0
        log("[chaos] faults over after %.0f s; the endpoint is healthy; draining" % chaos_s)

        # The drain: until nothing is left, nothing moved for stall_s, or drain_s.
        self.set_mode("ok")
        history = []
        d0 = time.monotonic()
        last_change, last_sample, last_lines = d0, None, tail.count_new()
        empty_polls = 0
        for _ in range(int(p["drain_s"] * 4) + 40):
            now = time.monotonic()
            if now - d0 >= p["drain_s"]:
                break
            if self.pending:
                self.push_due()
            self.check_loading()
            self.check_daemons(chaos_s + now - d0)
            self.sample_rss()
            c = self.counts()
            tail.count_new()
            if c is not None:
                history.append((now - d0, c))
                if c != last_sample or tail.count != last_lines:
                    last_change = now
                last_sample, last_lines = c, tail.count
                empty_polls = empty_polls + 1 if not any(any(v) for v in c.values()) else 0
                if empty_polls >= 3 and not self.pending:
                    break
            if now - last_change >= p["stall_s"] and not self.pending:
                break
            time.sleep(1.0)
        drain_s = time.monotonic() - d0
        stuck, moving = V.left_with_work(history, min(p["stall_s"], drain_s) - 1)
        log("[chaos] drain ended after %.0f s: %d tenants left with work they do not move, "
            "%d with work still moving" % (drain_s, len(stuck), len(moving)))

        # Stop the daemons (SIGTERM: hand back, exit 0), then the sink (it flushes).
        exits = []
        for i, d in enumerate(self.daemons):
            started = time.monotonic()
            code = ctx.procs.stop(d, timeout=15.0)
            exits.append({"daemon": i, "code": code, "s": round(time.monotonic() - started, 1)})
        ctx.procs.stop(self.sink_p)
        return self.account(sink_log, stuck, moving, exits, chaos_s, drain_s, events)

    def account(self, sink_log, stuck, moving, exits, chaos_s, drain_s, events):
        """Reads back the sink's log and the dead letters and does the sums."""
        requests = []
        with open(sink_log, "rb") as f:
            for line in f:
                r = V.parse_sink_line(line)
                if r is not None:
                    requests.append(r)
        dead, places = [], {}
        for name, _, _ in self.tenants:
            k = "%s:{%s}:" % (PREFIX, name)
            replies = self.link.pipeline([("LRANGE", k + "dlq", 0, -1), ("LRANGE", k + "queue", 0, -1),
                                          ("HGETALL", k + "jobs"), ("ZRANGE", k + "retry", 0, -1),
                                          ("ZRANGE", k + "inflight", 0, -1)])
            if replies is None or any(isinstance(r, P.RedisError) for r in replies):
                self.ctx.results["notes"].append("chaos: could not read %s's keys" % name)
                continue
            dlq, queue, jobs, retry, inflight = replies
            for rec in dlq:
                d = V.dead_letter(rec.decode("utf-8", "replace"))
                if d:
                    dead.append(d)
            retry, inflight = set(retry), set(inflight)
            held = {"retry": [], "inflight": [], "jobs hash only": []}
            for field, record in zip(jobs[0::2], jobs[1::2]):
                where = "retry" if field in retry else "inflight" if field in inflight \
                    else "jobs hash only"
                held[where].append(record)
            places[name] = {"queue": b"\n".join(queue)}
            places[name].update({w: b"\n".join(v) for w, v in held.items()})
        v = V.verdict(self.pushed, self.ambiguous, requests, dead)
        lost_ids = v.pop("lost_ids")
        causes = V.duplicate_causes(v.pop("duplicate_firsts"), self.mode_at, self.killed,
                                    self.restart_at, lambda m: plan.slow_past(m, TIMEOUT_MS),
                                    LEASE_US)
        lost_tenants = sorted(set(V.tenant_of(j) for j in lost_ids))
        err_lines = []
        for path in self.err_files:
            try:
                with open(path, errors="replace") as f:
                    err_lines += f.readlines()
            except OSError:
                pass
        listed_stuck, template_stuck = V.split_by(stuck, self.listed)
        lost_listed = sum(1 for j in lost_ids if self.listed.get(V.tenant_of(j)))
        return dict(v, **{
            "seed": self.seed, "tenants": len(self.tenants), "listed": LISTED,
            "templated": TEMPLATED, "chaos_s": round(chaos_s, 1), "drain_s": round(drain_s, 1),
            "kills": self.kills, "redis_restarts": self.redis_restarts, "busy": self.busy_n,
            "busy_ms": plan.BUSY_MS, "final_share": FINAL_SHARE,
            "loading_s": [round(x, 1) for x in self.loading_s],
            "mode_changes": self.mode_changes,
            "mode_shares": {m: round(s, 3) for m, s in
                            plan.mode_shares(events, self.p["seconds"]).items()},
            "duplicate_causes": causes,
            "lost_listed": lost_listed, "lost_templated": v["lost"] - lost_listed,
            "lost_where": V.where_stranded(lost_ids, places),
            "lost_tenants": lost_tenants, "lost_sample": lost_ids[:10],
            "stuck": {n: list(c) for n, c in sorted(stuck.items())},
            "stuck_listed": listed_stuck, "stuck_templated": template_stuck,
            "moving": {n: list(c) for n, c in sorted(moving.items())},
            "rss_max_kib": list(self.rss_max), "rss_samples": self.rss_samples,
            "unexpected_exits": self.unexpected_exits, "final_exits": exits,
            "log_messages": [list(m) for m in V.log_messages(err_lines)],
            "params": {k: (list(x) if isinstance(x, tuple) else x) for k, x in self.p.items()},
            "settings": {"concurrency": CONCURRENCY, "timeout_ms": TIMEOUT_MS,
                         "retry": dict(RETRY)},
        })


def run(ctx):
    seed = getattr(ctx.args, "seed", None)
    if seed is None:
        seed = random.SystemRandom().randrange(1, 1 << 31)
    soak = Soak(ctx, params(ctx.quick), seed)
    try:
        res = soak.run()
    finally:
        soak.link.close()
    ctx.results[NAME] = res
    log("[chaos] %d pushed: %d delivered, %d dead-lettered %s, %d lost (%d listed, %d template; "
        "where: %s); %d duplicates (%d jobs; %s), %d with another Idempotency-Key; %d tenants stuck "
        "(%d listed, %d template); RSS max %s KiB; final exits %s"
        % (res["pushed"], res["delivered"], res["dead_lettered"], res["dead_by_reason"],
           res["lost"], res["lost_listed"], res["lost_templated"], res["lost_where"],
           res["duplicates"], res["duplicated_jobs"], res["duplicate_causes"],
           res["duplicates_other_key"],
           len(res["stuck"]), res["stuck_listed"], res["stuck_templated"], res["rss_max_kib"],
           [e["code"] for e in res["final_exits"]]))
