"""procs.py - the processes a benchmark starts (redis-server, sluice-sink,
sluice, wrk), a minimal Redis client, and what /proc says about them.

Everything listens on 127.0.0.1 only. Every child is started through
Procs, which records its PID, makes the kernel kill it if the benchmark
dies (PR_SET_PDEATHSIG) and stops it by that PID (SIGTERM, then SIGKILL).
Python standard library only."""

import ctypes
import os
import signal
import socket
import subprocess
import time

CLK_TCK = os.sysconf("SC_CLK_TCK")
_libc = ctypes.CDLL(None, use_errno=True)
_PR_SET_PDEATHSIG = 1


def _die_with_parent():
    # Runs in the child between fork and exec: SIGKILL when the bench dies.
    _libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)


def now_us():
    return time.time_ns() // 1000


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


class Procs:
    """The children of this run, stopped by PID in reverse start order."""

    def __init__(self, workdir):
        self.workdir = workdir
        self.children = []  # (name, Popen)

    def start(self, name, argv, stdin=None, stdout=None, stderr=None, env=None):
        out = open(stdout or os.path.join(self.workdir, name + ".out"), "ab")
        err = open(stderr or os.path.join(self.workdir, name + ".err"), "ab")
        try:
            p = subprocess.Popen(argv, stdin=stdin or subprocess.DEVNULL, stdout=out,
                                 stderr=err, preexec_fn=_die_with_parent, env=env,
                                 close_fds=True)
        finally:
            out.close()
            err.close()
        self.children.append((name, p))
        return p

    def stop(self, p, sig=signal.SIGTERM, timeout=10.0):
        """Stops one child: sig, up to timeout seconds, then SIGKILL.
        Returns its exit code (negative: killed by that signal)."""
        if p.poll() is None:
            try:
                p.send_signal(sig)
                p.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
        self.children = [(n, c) for (n, c) in self.children if c is not p]
        return p.returncode

    def stop_all(self):
        for _, p in reversed(list(self.children)):
            self.stop(p, timeout=5.0)


def proc_cpu_s(pid):
    """utime + stime of a process (all its threads), in seconds."""
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    # fields[0] is the state (field 3): utime, stime are fields 14, 15
    return (int(fields[11]) + int(fields[12])) / CLK_TCK


def thread_sched(pid):
    """{thread id: (ns on a CPU, ns runnable but waiting for a CPU, times
    it was scheduled)} of every thread of a process (/proc schedstat)."""
    out = {}
    for tid in os.listdir("/proc/%d/task" % pid):
        try:
            with open("/proc/%d/task/%s/schedstat" % (pid, tid)) as f:
                out[int(tid)] = tuple(int(x) for x in f.read().split()[:3])
        except (OSError, ValueError):
            pass
    return out


def _busiest_thread(before, after):
    """(ns on a CPU, ns waiting for one, times scheduled) between two
    thread_sched of the thread that ran the longest; None if none did."""
    deltas = [tuple(a - b for a, b in zip(v, before.get(t, (0, 0, 0)))) for t, v in after.items()]
    return max(deltas) if deltas else None


def busiest_thread_s(before, after):
    """The most CPU seconds any one thread used between two thread_sched."""
    busiest = _busiest_thread(before, after)
    return busiest[0] / 1e9 if busiest else 0.0


def busiest_thread_wait(before, after):
    """(seconds waiting for a CPU, times scheduled) of the thread that ran
    the longest between two thread_sched; None if there was none."""
    busiest = _busiest_thread(before, after)
    return (busiest[1] / 1e9, busiest[2]) if busiest else None


def proc_status_kib(pid, key):
    """A "kB" line of /proc/PID/status (VmRSS, VmHWM, ...), in KiB."""
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith(key + ":"):
                return int(line.split()[1])
    return 0


def system_cpu():
    """(busy, steal, total) jiffies of the whole machine, from /proc/stat."""
    with open("/proc/stat") as f:
        v = [int(x) for x in f.readline().split()[1:]]
    user, nice, system, idle, iowait, irq, softirq, steal = (v + [0] * 8)[:8]
    busy = user + nice + system + irq + softirq
    return busy, steal, busy + idle + iowait + steal


# ---- a minimal Redis client (RESP2) -----------------------------------------

class RedisError(Exception):
    pass


class Redis:
    def __init__(self, port, timeout=30.0):
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=timeout)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.buf = b""

    def close(self):
        self.sock.close()

    @staticmethod
    def encode(*args):
        out = [b"*%d\r\n" % len(args)]
        for a in args:
            if not isinstance(a, bytes):
                a = str(a).encode()
            out.append(b"$%d\r\n%s\r\n" % (len(a), a))
        return b"".join(out)

    def _line(self):
        while b"\r\n" not in self.buf:
            chunk = self.sock.recv(1 << 16)
            if not chunk:
                raise RedisError("connection closed")
            self.buf += chunk
        line, self.buf = self.buf.split(b"\r\n", 1)
        return line

    def _exact(self, n):
        while len(self.buf) < n + 2:
            chunk = self.sock.recv(max(1 << 16, n + 2 - len(self.buf)))
            if not chunk:
                raise RedisError("connection closed")
            self.buf += chunk
        data, self.buf = self.buf[:n], self.buf[n + 2:]
        return data

    def _reply(self):
        line = self._line()
        kind, rest = line[:1], line[1:]
        if kind == b"+":
            return rest.decode()
        if kind == b"-":
            return RedisError(rest.decode())
        if kind == b":":
            return int(rest)
        if kind == b"$":
            n = int(rest)
            return None if n < 0 else self._exact(n)
        if kind == b"*":
            n = int(rest)
            return None if n < 0 else [self._reply() for _ in range(n)]
        raise RedisError("bad reply %r" % line)

    def send(self, *args):
        self.sock.sendall(self.encode(*args))

    def call(self, *args):
        self.send(*args)
        r = self._reply()
        if isinstance(r, RedisError):
            raise r
        return r

    def info(self, section):
        text = self.call("INFO", section).decode()
        out = {}
        for line in text.splitlines():
            if ":" in line and not line.startswith("#"):
                k, v = line.split(":", 1)
                out[k] = v
        return out

    def commandstats(self):
        """{command: calls} from INFO commandstats."""
        out = {}
        for k, v in self.info("commandstats").items():
            if k.startswith("cmdstat_"):
                calls = v.split(",", 1)[0].split("=", 1)[1]
                out[k[len("cmdstat_"):]] = int(calls)
        return out

    def cpu_s(self):
        c = self.info("cpu")
        return float(c["used_cpu_sys"]) + float(c["used_cpu_user"])

    def used_memory(self):
        return int(self.info("memory")["used_memory"])


class SingleRedis:
    """One redis-server as a scenario sees it: the calls of
    redis_cluster.Cluster, with one node."""

    def __init__(self, port):
        self.port = port

    def url(self):
        return "redis://127.0.0.1:%d/0" % self.port

    def _each(self, fn):
        r = Redis(self.port)
        try:
            return [fn(r)]
        finally:
            r.close()

    def flushall(self):
        self._each(lambda r: r.call("FLUSHALL"))

    def commandstats(self):
        return self._each(lambda r: r.commandstats())

    def cpu_s(self):
        return self._each(lambda r: r.cpu_s())


def redis_view(redis):
    """A scenario's Redis: a port (one redis-server) or a Cluster as it is."""
    return SingleRedis(redis) if isinstance(redis, int) else redis


def start_redis(procs, name, notify=False):
    """A private redis-server on a free loopback port: no persistence; with
    notify, keyspace notifications for lists (K, l) as sluice can use them.
    Returns (Popen, port)."""
    d = os.path.join(procs.workdir, name)
    os.makedirs(d, exist_ok=True)
    for _ in range(5):
        port = free_port()
        argv = ["redis-server", "--port", str(port), "--bind", "127.0.0.1", "--save", "",
                "--appendonly", "no", "--daemonize", "no", "--dir", d,
                "--logfile", os.path.join(d, "redis.log"), "--loglevel", "warning"]
        if notify:
            argv += ["--notify-keyspace-events", "Kl"]
        p = procs.start(name, argv)
        for _ in range(200):
            if p.poll() is not None:
                break
            try:
                r = Redis(port, timeout=1.0)
                ok = r.call("PING") == "PONG"
                r.close()
                if ok:
                    return p, port
            except (OSError, RedisError):
                pass
            time.sleep(0.02)
        procs.stop(p)
    raise RuntimeError("redis-server did not start (see %s/redis.log)" % d)


def start_sink(procs, sink_bin, name):
    """A sluice-sink on a free loopback port, logging one TSV line per
    request to WORKDIR/NAME.log. Returns (Popen, port, log path)."""
    port_file = os.path.join(procs.workdir, name + ".port")
    log = os.path.join(procs.workdir, name + ".log")
    for path in (port_file, log):
        if os.path.exists(path):
            os.unlink(path)
    open(log, "w").close()
    p = procs.start(name, [sink_bin, "--port-file", port_file, "--log", log,
                           "--bind", "127.0.0.1"])
    for _ in range(250):
        if os.path.exists(port_file):
            with open(port_file) as f:
                text = f.read().strip()
            if text:
                return p, int(text), log
        if p.poll() is not None:
            break
        time.sleep(0.02)
    procs.stop(p)
    raise RuntimeError("sluice-sink did not start (see %s.err)" % os.path.join(procs.workdir, name))


class LogTail:
    """Reads a growing file of lines incrementally: only whole lines, each
    read once. The sink writes whole lines only, within ~10 ms."""

    def __init__(self, path):
        self.path = path
        self.offset = 0
        self.partial = b""
        self.count = 0

    def _complete_lines(self):
        """The bytes of the lines completed since the last call."""
        with open(self.path, "rb") as f:
            f.seek(self.offset)
            data = f.read()
        self.offset += len(data)
        data = self.partial + data
        cut = data.rfind(b"\n") + 1
        self.partial = data[cut:]
        return data[:cut]

    def read_new(self):
        lines = self._complete_lines().splitlines()
        self.count += len(lines)
        return lines

    def count_new(self):
        """Like read_new, but only counts (cheap for large logs)."""
        n = self._complete_lines().count(b"\n")
        self.count += n
        return n


def sink_records(path):
    """(arrival_us, key, uri, status) of each request in a sink log."""
    out = []
    with open(path, "rb") as f:
        for line in f:
            parts = line.split(b"\t", 6)
            if len(parts) >= 6:
                out.append((int(parts[0]), parts[3].decode(), parts[2].decode(), int(parts[5])))
    return out


def trace_records(path):
    """(tenant, claim id, slot_redis_us, depart_redis_us, depart_local_us)
    of each departure in a --trace-departures file."""
    out = []
    with open(path) as f:
        for line in f:
            p = line.rstrip("\n").split("\t")
            if len(p) >= 5:
                out.append((p[0], p[1], int(p[2]), int(p[3]), int(p[4])))
    return out
