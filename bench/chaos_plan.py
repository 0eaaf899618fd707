"""chaos_plan.py - what the chaos soak (scenarios/chaos.py) will do, decided
up front: the tenants and their rates, the jobs each one gets and when, and
the timeline of faults (daemon kills, Redis restarts, endpoint modes), all
from one seed. Pure: no clock, no I/O; the same seed gives the same plan."""

import random

RATES = [5, 10, 20, 50, 100, 200]  # jobs/s of the listed tenants, in turn
TEMPLATE_RATE = 20  # jobs/s of the tenants only the "*" template governs

# What the endpoint does to plain paths (sluice-sink's /_mode/BEHAVIOUR),
# with weights: the failures the issue names, and health. Healthy is
# HEALTHY, an endpoint that answers 200 in 100 ms, as real ones take their
# time: so that requests are in flight when a daemon is killed or Redis
# goes away, and acks are pending then. After a failure the endpoint heals
# with probability HEAL, else it draws again: health about half the time,
# and failures that follow each other sometimes. The tenants' timeout_ms
# (chaos.TIMEOUT_MS) is 2,000: a 1,500 ms answer is slow, a 3,000 ms one a
# timeout (delivered at the sink, a failure for sluice: a duplicate by
# design).
HEALTHY = "slow/100"
HEAL = 0.5
MODES = [
    (HEALTHY, 6),
    ("ok", 4),
    ("status/503", 10),
    ("status/500", 6),
    ("status/429?retry_after=1", 8),
    ("status/429?retry_after=3", 6),
    ("slow/1500", 10),
    ("slow/3000", 4),
    ("close", 8),
    ("reset", 8),
]


def tenants(listed, templated):
    """[(name, rate, listed)]: the listed tenants take RATES in turn; the
    templated ones are named in no config and run at TEMPLATE_RATE."""
    out = [("c%02d" % i, RATES[i % len(RATES)], True) for i in range(listed)]
    out += [("w%02d" % i, TEMPLATE_RATE, False) for i in range(templated)]
    return out


def job_counts(tens, seconds, load, cap, floor=20):
    """{tenant: jobs}: load x rate x seconds each, all scaled down evenly
    when their sum would pass cap; never fewer than floor."""
    want = {name: rate * seconds * load for name, rate, _ in tens}
    total = sum(want.values())
    scale = min(1.0, float(cap) / total) if total > 0 else 1.0
    return {name: max(floor, int(w * scale)) for name, w in want.items()}


def job_id(tenant, i):
    """The id of a tenant's job i: its Idempotency-Key and its body's id."""
    return "%s-%05d" % (tenant, i)


def job_line(tenant, i):
    """The list element of job i (an envelope): the id twice, once as the
    job's (sent as Idempotency-Key) and once in the body, so that the sink's
    log shows which job a request carried whatever key it came with."""
    jid = job_id(tenant, i)
    return ('{"id":"%s","body":{"id":"%s"}}' % (jid, jid)).encode()


def push_plan(counts, upfront, until_s, every_s, final_t=None, final_share=0.0):
    """[(t, tenant, first, n)] in time order: jobs first .. first+n-1 of a
    tenant are pushed at t seconds. A share `upfront` of each tenant's jobs
    at t=0; with final_t, a share final_share (at least one job) at final_t;
    the rest in equal batches every every_s from every_s to until_s."""
    steps = max(1, int(until_s // every_s))
    out = []
    for name in sorted(counts):
        total = counts[name]
        last = max(1, int(round(total * final_share))) if final_t is not None else 0
        last = min(last, total)
        first = min(total - last, int(round(total * upfront)))
        if first:
            out.append((0.0, name, 0, first))
        rest = total - last - first
        done = first
        for k in range(steps):
            end = first + rest * (k + 1) // steps
            if end > done:
                out.append(((k + 1) * every_s, name, done, end - done))
                done = end
        if last:
            out.append((float(final_t), name, done, last))
    out.sort(key=lambda e: (e[0], e[1]))
    return out


def pick_mode(rng, modes=MODES):
    """A mode drawn by the weights."""
    total = sum(w for _, w in modes)
    x = rng.uniform(0, total)
    for mode, w in modes:
        x -= w
        if x <= 0:
            return mode
    return modes[-1][0]


END_FAIL = 0.9  # from here the endpoint answers 503 and a last batch of jobs is pushed
END_KILL = 0.97  # then every daemon is SIGKILLed at once and started again
END_MODE = "status/503"
BUSY_MS = 3000  # a script keeps Redis busy this long (it answers BUSY meanwhile)


def timeline(seed, seconds, kill_every, redis_every, mode_every, busy_every, daemons=2,
             loading_index=1):
    """[(t, kind, arg)] in time order: faults drawn from the seed until
    END_FAIL x seconds, then the end game, then the endpoint healed ("ok")
    at `seconds`:
      ("kill", i): SIGKILL daemon i and start it again, every kill_every
                   (a (low, high) range of seconds);
      ("redis", loading): SHUTDOWN SAVE and start Redis again, every
                   redis_every; the restart number loading_index (or the
                   last, if there are fewer) loads a dump slowly;
      ("busy", ms): a script keeps Redis busy for ms, every busy_every;
      ("mode", m): the endpoint's mode from now, every mode_every; after a
                   failure, HEALTHY with probability HEAL;
    and the end game: ("mode", END_MODE) at END_FAIL x seconds, while the
    last jobs are pushed (push_plan's final_t), so that they wait in the
    retry sets; ("killall", None) at END_KILL x seconds: every daemon
    SIGKILLed at once and started again, so that none remembers a tenant
    it found by its queue alone (issue 13 item 5)."""
    rng = random.Random(seed)
    until = seconds * END_FAIL
    events = []
    t = rng.uniform(*kill_every)
    while t < until:
        events.append((t, "kill", rng.randrange(daemons)))
        t += rng.uniform(*kill_every)
    restarts = []
    t = rng.uniform(*redis_every)
    while t < until:
        restarts.append(t)
        t += rng.uniform(*redis_every)
    slow = min(loading_index, len(restarts) - 1)
    events += [(t, "redis", k == slow) for k, t in enumerate(restarts)]
    t = rng.uniform(*busy_every)
    while t < until:
        events.append((t, "busy", BUSY_MS))
        t += rng.uniform(*busy_every)
    t, mode = 0.0, HEALTHY
    while t < until:
        healthy = mode in (HEALTHY, "ok")
        mode = HEALTHY if not healthy and rng.random() < HEAL else pick_mode(rng)
        events.append((t, "mode", mode))
        t += rng.uniform(*mode_every)
    events += [(until, "mode", END_MODE), (seconds * END_KILL, "killall", None),
               (float(seconds), "mode", "ok")]
    events.sort(key=lambda e: e[0])
    return events


def mode_shares(events, seconds):
    """{mode: fraction of [0, seconds) it held}, from a timeline's modes."""
    modes = [(t, m) for t, kind, m in events if kind == "mode" and t < seconds]
    out = {}
    for k, (t, m) in enumerate(modes):
        end = modes[k + 1][0] if k + 1 < len(modes) else seconds
        out[m] = out.get(m, 0.0) + (end - t) / seconds
    return out


def redis_argv(port, directory, load_delay_us=0):
    """redis-server on 127.0.0.1:port keeping its dump in directory, no
    automatic saves (the soak saves with SHUTDOWN SAVE), answering BUSY once
    a script has run 100 ms (not 5 s: a busy fault is 3 s). With a load delay
    (Redis's test setting: that many us per key loaded) it answers clients
    every KiB loaded, so a dump of a few thousand keys keeps it answering
    LOADING for seconds (tests/support/redis_server.c does the same)."""
    argv = ["redis-server", "--port", str(port), "--bind", "127.0.0.1", "--save", "",
            "--appendonly", "no", "--daemonize", "no", "--dir", directory,
            "--logfile", directory + "/redis.log", "--loglevel", "warning",
            "--lua-time-limit", "100"]
    if load_delay_us:
        argv += ["--key-load-delay", str(load_delay_us),
                 "--loading-process-events-interval-bytes", "1024"]
    return argv


def slow_past(mode, timeout_ms):
    """True for a slow mode ("slow/MS") whose answers come after timeout_ms."""
    return mode.startswith("slow/") and int(mode.split("/")[1]) >= timeout_ms
