"""Tests of bench/callgrind_redis.py's pure parts (no valgrind, no Redis)."""

import os
import tempfile
import unittest

from bench import callgrind_redis as G


class CallgrindRedis(unittest.TestCase):
    def test_embedded_scripts_are_read_back_byte_for_byte(self):
        text = ("static const char script_claim[] = {\n    0x72,0x65,0x0a,\n    0x64,0x00};\n"
                "static const char script_ack[] = {\n    0x61,0x00};\n")
        with tempfile.TemporaryDirectory() as d:
            with open(os.path.join(d, "lua_scripts_data.c"), "w") as f:
                f.write(text)
            self.assertEqual(G.embedded_scripts(d), {"claim": b"re\nd", "ack": b"a"})

    def test_claimed_jobs_take_id_and_lease_of_each_six_fields_before_issue_18(self):
        reply = [1, 2, 3, 4, 5, [], 10000, b"file", 16, 0] + [b"id0", 10, 110, 0, 7, b"{}"] + [b"id1", 11, 111, 2, 7, b"[]"]
        self.assertEqual(G.claimed_jobs(reply, "p"), [(b"id0", 110), (b"id1", 111)])
        self.assertEqual(G.claimed_jobs([1, 2, 3, 4, 5, [], 10000, b"file", 16, 0], "p"), [])

    def test_claimed_jobs_make_new_ids_and_every_lease_from_the_call(self):
        header = [1, 2, 3, 4, 5, [], 10000, b"file", 16, 0]
        reply = header + [[1, b"old.3", 2, 7]] + [10, b"{}", 11, b"[]", 12, b"0"]
        self.assertEqual(G.claimed_jobs(reply, "p."),
                         [(b"p.0", 10 + G.LEASE_US), (b"old.3", 11 + G.LEASE_US),
                          (b"p.2", 12 + G.LEASE_US)])
        self.assertEqual(G.claimed_jobs(header + [[]], "p."), [])

    def test_ack_args_are_done_ops_after_the_five_keys(self):
        args = G.ack_args("sha", [(b"a", 1), (b"b", 2)])
        self.assertEqual(args[:3], ["EVALSHA", "sha", 5])
        self.assertEqual(args[8], G.TENANT)
        self.assertEqual(args[9:], ["done", b"a", 1, "done", b"b", 2])

    def test_claim_args_follow_sl_claim_build(self):
        args = G.claim_args("sha", 3)
        self.assertEqual(args[2], 6)  # six keys, no limit
        self.assertEqual(len(args), 3 + 6 + 14)  # 14 ARGV, the last the limit count
        self.assertEqual(args[3 + 6 + 5], G.CLAIM_BATCH)
        self.assertEqual(len(args[3 + 6 + 7]), 11)  # the id prefix, as sl_claim_id_prefix's

    def test_total_ir_reads_the_summary_line(self):
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "callgrind.out.1")
            with open(path, "w") as f:
                f.write("events: Ir\nfl=x\n1 5\nsummary: 123456\n")
            self.assertEqual(G.total_ir(path), 123456)
            with open(path, "w") as f:
                f.write("events: Ir\n")
            with self.assertRaises(RuntimeError):
                G.total_ir(path)

    def test_commands_leave_out_the_clients_own(self):
        stats = {"evalsha": 3, "lrange": 2, "info": 9, "config|resetstat": 1, "ping": 4}
        self.assertEqual(G.commands(stats), 5)


if __name__ == "__main__":
    unittest.main()
