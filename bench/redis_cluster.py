"""redis_cluster - a private Redis Cluster for the bench: 3 primaries and 3
replicas on free loopback ports, joined by `redis-cli --cluster create`,
stopped by PID with the bench's other processes. And the cluster's key
slot (CRC16 of the key's {hash tag}), pure, so a scenario can put its
tenants on every shard and charge each shard's CPU to its own jobs."""

import os
import subprocess
import time

from . import procs as P

SLOTS = 16384


def crc16(data):
    """CRC16-CCITT (XModem), the checksum Redis Cluster hashes keys with."""
    crc = 0
    for byte in data:
        crc ^= byte << 8
        for _ in range(8):
            crc = ((crc << 1) ^ 0x1021) if crc & 0x8000 else crc << 1
            crc &= 0xFFFF
    return crc


def key_slot(key):
    """The slot of key (str or bytes): the hash tag between the first '{'
    and the first '}' after it, if not empty, else the whole key."""
    if isinstance(key, str):
        key = key.encode()
    start = key.find(b"{")
    if start >= 0:
        end = key.find(b"}", start + 1)
        if end > start + 1:
            key = key[start + 1:end]
    return crc16(key) % SLOTS


def tenant_slot(tenant):
    """The slot of every key of a tenant (they all carry {tenant})."""
    return key_slot("{%s}" % tenant)


def shard_of(slot, ranges):
    """The index of the shard whose [first, last] range holds slot, where
    ranges is [(first, last, shard), ...]; None if no range does."""
    for first, last, shard in ranges:
        if first <= slot <= last:
            return shard
    return None


def ranges_after_move(ranges, slot, shard):
    """ranges [(first, last, shard)] once slot belongs to shard: the range
    that held it split around it."""
    out = []
    for first, last, owner in ranges:
        if not first <= slot <= last:
            out.append((first, last, owner))
            continue
        if first < slot:
            out.append((first, slot - 1, owner))
        if slot < last:
            out.append((slot + 1, last, owner))
    return sorted(out + [(slot, slot, shard)])


def tenants_per_shard(ranges, shards, per_shard, prefix="c"):
    """per_shard tenant names for each of shards shards, found by trying
    prefix0, prefix1, ... in order: {shard: [names]}."""
    found = {s: [] for s in range(shards)}
    i = 0
    while any(len(v) < per_shard for v in found.values()):
        name = "%s%d" % (prefix, i)
        s = shard_of(tenant_slot(name), ranges)
        if s is not None and len(found[s]) < per_shard:
            found[s].append(name)
        i += 1
        if i > 100000:
            raise RuntimeError("no tenant names found for every shard")
    return found


def _bindable(port):
    import socket
    s = socket.socket()
    try:
        s.bind(("127.0.0.1", port))
        return True
    except OSError:
        return False
    finally:
        s.close()


def node_port():
    """A free port for a cluster node: at most 55535, and its cluster bus
    port (10,000 above it, Redis's rule) free too."""
    for _ in range(200):
        port = P.free_port()
        if port <= 55535 and _bindable(port + 10000):
            return port
    raise RuntimeError("no free port pair for a cluster node")


def _node_argv(port, d, node_timeout_ms):
    return ["redis-server", "--port", str(port), "--bind", "127.0.0.1", "--save", "",
            "--appendonly", "no", "--daemonize", "no", "--dir", d,
            "--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf",
            "--cluster-node-timeout", str(node_timeout_ms),
            "--logfile", os.path.join(d, "redis.log"), "--loglevel", "warning"]


def _wait_ping(p, port, timeout_s):
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline and p.poll() is None:
        try:
            r = P.Redis(port, timeout=1.0)
            ok = r.call("PING") == "PONG"
            r.close()
            if ok:
                return True
        except (OSError, P.RedisError):
            pass
        time.sleep(0.02)
    return False


class Cluster:
    """A started cluster: nodes [(Popen, port)], the primaries' ports in
    shard order, and ranges [(first, last, shard)]."""

    def __init__(self, nodes, primaries, ranges):
        self.nodes, self.primaries, self.ranges = nodes, primaries, ranges

    def url(self):
        """The redis-cluster:// URL with every primary as a seed."""
        return "redis-cluster://" + ",".join("127.0.0.1:%d" % p for p in self.primaries)

    def cpu_s(self):
        """Each primary's used_cpu (user + sys), in shard order."""
        out = []
        for port in self.primaries:
            r = P.Redis(port)
            out.append(r.cpu_s())
            r.close()
        return out

    def commandstats(self):
        """Each primary's INFO commandstats, in shard order."""
        out = []
        for port in self.primaries:
            r = P.Redis(port)
            out.append(r.commandstats())
            r.close()
        return out

    def node_id(self, port):
        r = P.Redis(port)
        try:
            return r.call("CLUSTER", "MYID").decode()
        finally:
            r.close()

    def move_slot(self, slot, to_shard, ask_s=0.05, log=None):
        """Moves slot to shard to_shard as `redis-cli --cluster reshard`
        does: IMPORTING and MIGRATING, the keys in MIGRATE batches of 100;
        then, for ask_s, the source answers ASK for them (commands follow
        it to the new owner) until every primary is told the new owner (and
        commands meet MOVED). Returns the number of keys moved."""
        src = self.primaries[shard_of(slot, self.ranges)]
        dst = self.primaries[to_shard]
        src_id, dst_id = self.node_id(src), self.node_id(dst)
        a, b = P.Redis(src), P.Redis(dst)
        try:
            b.call("CLUSTER", "SETSLOT", slot, "IMPORTING", src_id)
            a.call("CLUSTER", "SETSLOT", slot, "MIGRATING", dst_id)
            moved = 0
            for _ in range(10000):  # bounded: a tenant has a handful of keys
                keys = a.call("CLUSTER", "GETKEYSINSLOT", slot, 100)
                if not keys:
                    break
                a.call("MIGRATE", "127.0.0.1", dst, "", 0, 5000, "KEYS", *keys)
                moved += len(keys)
            time.sleep(ask_s)
            for port in [dst, src] + [p for p in self.primaries if p not in (src, dst)]:
                r = P.Redis(port)
                r.call("CLUSTER", "SETSLOT", slot, "NODE", dst_id)
                r.close()
        finally:
            a.close()
            b.close()
        self.ranges = ranges_after_move(self.ranges, slot, to_shard)
        if log:
            log("moved slot %d (%d keys) to shard %d" % (slot, moved, to_shard))
        return moved

    def flushall(self):
        for port in self.primaries:
            r = P.Redis(port)
            r.call("FLUSHALL")
            r.close()


def start_cluster(procs, name, primaries=3, replicas=1, node_timeout_ms=2000, timeout_s=60):
    """Starts primaries x (1 + replicas) nodes and joins them; returns a
    Cluster once every node reports cluster_state:ok."""
    nodes = []
    for i in range(primaries * (1 + replicas)):
        d = os.path.join(procs.workdir, "%s-%d" % (name, i))
        os.makedirs(d, exist_ok=True)
        port = node_port()
        p = procs.start("%s-%d" % (name, i), _node_argv(port, d, node_timeout_ms))
        if not _wait_ping(p, port, 10):
            raise RuntimeError("cluster node %d did not start (see %s/redis.log)" % (i, d))
        nodes.append((p, port))
    argv = ["redis-cli", "--cluster", "create"] + ["127.0.0.1:%d" % port for _, port in nodes]
    argv += ["--cluster-replicas", str(replicas), "--cluster-yes"]
    out = subprocess.run(argv, capture_output=True, text=True, timeout=60)
    if out.returncode != 0:
        raise RuntimeError("redis-cli --cluster create: %s%s" % (out.stdout[-500:], out.stderr[-500:]))
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        states = []
        for _, port in nodes:
            r = P.Redis(port)
            states.append(b"cluster_state:ok" in r.call("CLUSTER", "INFO"))
            r.close()
        if all(states):
            break
        time.sleep(0.1)
    else:
        raise RuntimeError("the cluster did not reach cluster_state:ok in %d s" % timeout_s)
    r = P.Redis(nodes[0][1])
    slots = r.call("CLUSTER", "SLOTS")
    r.close()
    owners = sorted({int(s[2][1]) for s in slots})
    ranges = [(int(s[0]), int(s[1]), owners.index(int(s[2][1]))) for s in slots]
    return Cluster(nodes, owners, ranges)
