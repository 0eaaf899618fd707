"""chaos_verdict.py - the figures of the chaos soak (scenarios/chaos.py) from
what it collected: the sink's log, the dead-letter records, the tenants'
key counts over time, RSS samples and the daemons' logs. Pure: no clock,
no I/O."""

import json
import re

_BODY_ID = re.compile(rb'"id":"([^"\\]+)"')
_LOG_LINE = re.compile(r'level=(error|warning) msg="([^"]*)"')


def parse_sink_line(line):
    """(arrival us, key, body id, status, sender) of one sink log line
    (bytes); body id is None when the body names none; sender is the X-Test
    header (the soak's daemons name themselves there), "-" when absent;
    None for a malformed line. The log's fields: arrival_us method uri key
    tenant status body x_test."""
    parts = line.rstrip(b"\n").split(b"\t")
    if len(parts) < 8:
        return None
    try:
        status, at = int(parts[5]), int(parts[0])
    except ValueError:
        return None
    m = _BODY_ID.search(parts[6])
    return (at, parts[3].decode("ascii", "replace"), m.group(1).decode() if m else None, status,
            parts[7].decode("ascii", "replace"))


def dead_letter(record):
    """(job id, reason, http status) of a dead-letter record (the JSON text
    of sluice:{T}:dlq). The job id is the pushed envelope's (the record's
    own "id" is the claim's, not the job's), else the record's; None when
    neither parses."""
    try:
        d = json.loads(record)
    except ValueError:
        return None
    if not isinstance(d, dict):
        return None
    job = d.get("job")
    m = _BODY_ID.search(job.encode()) if isinstance(job, str) else None
    jid = m.group(1).decode() if m else d.get("id")
    if not isinstance(jid, str):
        return None
    return jid, str(d.get("reason")), d.get("http_status")


def status_class(status):
    """How the sink answered, in a word: 2xx, 429, 5xx, none (no answer:
    close or reset), other."""
    if 200 <= status < 300:
        return "2xx"
    if status == 429:
        return "429"
    if 500 <= status < 600:
        return "5xx"
    if status == 0:
        return "none"
    return "other"


def verdict(pushed, ambiguous, requests, dead):
    """The soak's accounting.
    pushed: {job id: tenant} surely pushed; ambiguous: ids whose push had
    no answer (pushed or not); requests: [(arrival us, key, body id,
    status, sender)] in arrival order; dead: [(job id, reason, http status)] of every record.
    A job is delivered when the sink answered 2xx to a request carrying it
    (a slow answer counts even if sluice had given up on it); a duplicate is
    each 2xx delivery after a job's first (duplicate_firsts: the arrival and
    sender of that first, one per duplicate); lost is a pushed job neither
    delivered nor dead-lettered."""
    known = set(pushed) | set(ambiguous)
    first_key, first, delivered_n = {}, {}, {}
    dup_other_key = key_mismatch = unknown = 0
    statuses = {}
    attempts = {}
    dup_firsts = []
    for at, key, jid, status, sender in requests:
        c = status_class(status)
        statuses[c] = statuses.get(c, 0) + 1
        if jid is None or jid not in known:
            unknown += 1
            continue
        attempts[jid] = attempts.get(jid, 0) + 1
        if key != jid:
            key_mismatch += 1
        if c != "2xx":
            continue
        n = delivered_n.get(jid, 0)
        if n == 0:
            first_key[jid], first[jid] = key, (at, sender)
        else:
            dup_firsts.append(first[jid])
            if key != first_key[jid]:
                dup_other_key += 1
        delivered_n[jid] = n + 1
    dead_reason, dead_by_reason, dead_twice = {}, {}, 0
    for jid, reason, _ in dead:
        if jid in dead_reason:
            dead_twice += 1
            continue
        dead_reason[jid] = reason
        dead_by_reason[reason] = dead_by_reason.get(reason, 0) + 1
    delivered = set(delivered_n)
    lost = sorted(j for j in pushed if j not in delivered and j not in dead_reason)
    seen_ambiguous = sum(1 for j in ambiguous if j in delivered or j in dead_reason)
    return {
        "pushed": len(pushed),
        "ambiguous": len(ambiguous),
        "ambiguous_seen": seen_ambiguous,
        "delivered": len(delivered & set(pushed)),
        "dead_lettered": sum(1 for j in dead_reason if j in pushed),
        "dead_by_reason": dead_by_reason,
        "dead_twice": dead_twice,
        "delivered_and_dead": len(delivered & set(dead_reason)),
        "lost": len(lost),
        "lost_ids": lost,
        "duplicates": sum(n - 1 for n in delivered_n.values()),
        "duplicated_jobs": sum(1 for n in delivered_n.values() if n > 1),
        "duplicates_other_key": dup_other_key,
        "duplicate_firsts": dup_firsts,
        "key_mismatch": key_mismatch,
        "unknown_requests": unknown,
        "requests": len(requests),
        "statuses": statuses,
        "max_attempts_seen": max(attempts.values()) if attempts else 0,
    }


def duplicate_causes(firsts, modes, killed, outages, timed_out, lease_us):
    """{cause: count} of duplicate deliveries, each by the arrival (us) and
    sender of its job's first 2xx (firsts: [(us, sender)]):
      "timeout": the endpoint's mode then answered past the timeout, so
          sluice saw a failure and tried again (by design);
      "sender SIGKILLed": the daemon that sent it was SIGKILLed within
          lease_us after it, before it could ack (at-least-once, by design);
      "ack lost, sender alive, Redis outage": the sender lived on, and
          Redis was down or loading within lease_us after it (the ack
          failed and was not made good before the lease ran out);
      "ack lost, sender alive": neither.
    modes: [(us, mode)] in time order; killed: {sender: us of its SIGKILL};
    outages: [(down us, back us)]; timed_out(mode): True for a mode whose
    answers come after the timeout."""
    out = {}
    for t, sender in firsts:
        mode = None
        for since, m in modes:
            if since > t:
                break
            mode = m
        k = killed.get(sender)
        if mode is not None and timed_out(mode):
            cause = "timeout"
        elif k is not None and t <= k <= t + lease_us:
            cause = "sender SIGKILLed"
        elif any(d <= t + lease_us and e >= t for d, e in outages):
            cause = "ack lost, sender alive, Redis outage"
        else:
            cause = "ack lost, sender alive"
        out[cause] = out.get(cause, 0) + 1
    return out


def left_with_work(history, window_s):
    """Tenants left with work they do not move. history: [(t, {tenant:
    (queued, retrying, inflight)})] in time order. A tenant is stuck when
    its last sample holds work and its counts were the same in every
    sample from the last one taken window_s or more before the end (the
    history must reach back that far); moving when they changed. Returns
    ({tenant: counts} stuck, {tenant: counts} moving)."""
    if not history:
        return {}, {}
    t_end, last = history[-1]
    before = [k for k, (t, _) in enumerate(history) if t <= t_end - window_s]
    window = [c for _, c in history[before[-1]:]] if before else []
    stuck, moving = {}, {}
    for name, counts in last.items():
        if not any(counts):
            continue
        same = bool(window) and all(c.get(name) == counts for c in window)
        (stuck if same else moving)[name] = counts
    return stuck, moving


def split_by(names, listed):
    """(listed, templated) counts of names, from {tenant: listed?}."""
    a = sum(1 for n in names if listed.get(n))
    return a, len(names) - a


def tenant_of(job_id):
    """The tenant of a job id made by chaos_plan.job_id."""
    return job_id.rsplit("-", 1)[0]


def log_messages(lines, top=10):
    """[(count, level, msg)] of the error and warning lines of the daemons'
    logs (key=value lines: level=... msg="..."), the most frequent first."""
    counts = {}
    for line in lines:
        m = _LOG_LINE.search(line)
        if m:
            k = (m.group(1), m.group(2))
            counts[k] = counts.get(k, 0) + 1
    out = sorted(((n, lvl, msg) for (lvl, msg), n in counts.items()), key=lambda x: (-x[0], x[2]))
    return out[:top]


def where_stranded(lost_ids, places):
    """{place: count} of lost ids found in Redis (places: {name: bytes of
    what that place holds, e.g. the queue's elements joined}); "nowhere"
    counts those found in none."""
    out = {}
    for jid in lost_ids:
        needle = ('"%s"' % jid).encode()
        found = [p for p, blob in sorted(places.get(tenant_of(jid), {}).items()) if needle in blob]
        key = found[0] if found else "nowhere"
        out[key] = out.get(key, 0) + 1
    return out
