"""Tests of the readers of bench/procs.py, bench/stall_probe.py,
bench/timer_twin.py and bench/machine.py: the Redis wire codec, the sink
log and the departure trace, the witnesses' files, git's porcelain.
Local files and a socketpair only."""

import os
import socket
import tempfile
import unittest

from bench import machine
from bench import procs as P
from bench import stall_probe, timer_twin


def redis_over(data):
    """A Redis client reading data from the other end of a socketpair."""
    a, b = socket.socketpair()
    b.sendall(data)
    b.close()
    r = P.Redis.__new__(P.Redis)
    r.sock, r.buf = a, b""
    return r


class Resp(unittest.TestCase):
    def test_encode(self):
        self.assertEqual(P.Redis.encode("HSET", b"k", 5),
                         b"*3\r\n$4\r\nHSET\r\n$1\r\nk\r\n$1\r\n5\r\n")

    def test_replies(self):
        r = redis_over(b"+PONG\r\n:42\r\n$3\r\nabc\r\n$-1\r\n*2\r\n$1\r\na\r\n:1\r\n"
                       b"-ERR nope\r\n")
        self.assertEqual(r._reply(), "PONG")
        self.assertEqual(r._reply(), 42)
        self.assertEqual(r._reply(), b"abc")
        self.assertIsNone(r._reply())
        self.assertEqual(r._reply(), [b"a", 1])
        e = r._reply()
        self.assertIsInstance(e, P.RedisError)
        self.assertEqual(str(e), "ERR nope")
        with self.assertRaises(P.RedisError):  # the server went away
            r._reply()
        r.close()

    def test_commandstats(self):
        body = (b"# Commandstats\r\ncmdstat_evalsha:calls=10,usec=5,usec_per_call=0.5\r\n"
                b"cmdstat_client|id:calls=2,usec=1,usec_per_call=0.5\r\n")
        r = redis_over(b"$%d\r\n%s\r\n" % (len(body), body))
        r.send = lambda *args: None
        self.assertEqual(r.commandstats(), {"evalsha": 10, "client|id": 2})
        r.close()


class Files(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.TemporaryDirectory()

    def tearDown(self):
        self.dir.cleanup()

    def write(self, name, data):
        path = os.path.join(self.dir.name, name)
        with open(path, "wb") as f:
            f.write(data)
        return path

    def test_log_tail_reads_whole_lines_once(self):
        path = self.write("sink.log", b"a\nb\npart")
        tail = P.LogTail(path)
        self.assertEqual(tail.read_new(), [b"a", b"b"])
        self.assertEqual(tail.read_new(), [])
        with open(path, "ab") as f:
            f.write(b"ial\nc\n")
        self.assertEqual(tail.count_new(), 2)  # "partial" and "c"
        self.assertEqual(tail.count, 4)

    def test_sink_records(self):
        path = self.write("sink.log", b"1000\tPOST\t/hook/t\tkey-1\t17\t200\t{}\n"
                                      b"2000\tPOST\t/hook/u\tkey-2\t17\t503\n"
                                      b"short\tline\n")
        self.assertEqual(P.sink_records(path), [(1000, "key-1", "/hook/t", 200),
                                                (2000, "key-2", "/hook/u", 503)])

    def test_trace_records(self):
        path = self.write("trace.tsv", b"t\tc1\t100\t150\t1150\nbad\n")
        self.assertEqual(P.trace_records(path), [("t", "c1", 100, 150, 1150)])


class Witnesses(unittest.TestCase):
    def test_stall_probe_read(self):
        lines = ["# at 1000000 wakeups 1000\n", "1000100 1000700\n", "1500000 1502500\n",
                 "\n", "# at 2000000 wakeups 1990\n"]
        got = stall_probe.read(lines)
        self.assertEqual(got["stalls"], [(1000100, 1000700), (1500000, 1502500)])
        self.assertEqual(got["marks"], [(1000000, 1000), (2000000, 1990)])
        self.assertEqual((got["wakeups"], got["over_500us"], got["over_2ms"], got["max_us"]),
                         (1990, 2, 1, 2500))
        self.assertEqual(stall_probe.read([])["wakeups"], 0)

    def test_timer_twin_read(self):
        self.assertEqual(timer_twin.read(["10\n", "\n", "1010\n"]), [10, 1010])


class Machine(unittest.TestCase):
    def test_dirty(self):
        self.assertEqual(machine.dirty(""), "")
        self.assertEqual(machine.dirty("M bench/run\n M src/a.c"),
                         " (uncommitted changes in bench/run, src/a.c)")
        seven = "\n".join(" M f%d" % i for i in range(7))
        self.assertEqual(machine.dirty(seven),
                         " (uncommitted changes in f0, f1, f2, f3, f4 and 2 more)")


if __name__ == "__main__":
    unittest.main()
