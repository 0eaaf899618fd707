"""Tests of the chaos soak's pure parts: its plan (bench/chaos_plan.py) and
its arithmetic (bench/chaos_verdict.py)."""

import json
import unittest

from bench import chaos_plan as plan
from bench import chaos_verdict as V
from bench.scenarios import chaos


class Plan(unittest.TestCase):
    def test_tenants_listed_then_templated(self):
        t = plan.tenants(7, 2)
        self.assertEqual(t[:2], [("c00", 5, True), ("c01", 10, True)])
        self.assertEqual(t[6], ("c06", 5, True))  # the rates come round again
        self.assertEqual(t[7:], [("w00", 20, False), ("w01", 20, False)])

    def test_job_counts_scaled_to_the_cap_with_a_floor(self):
        t = [("a", 100, True), ("b", 10, True)]
        self.assertEqual(plan.job_counts(t, 100, 0.5, 10 ** 6), {"a": 5000, "b": 500})
        # 5,500 wanted, 1,100 allowed: a fifth each, b up to its floor
        self.assertEqual(plan.job_counts(t, 100, 0.5, 1100, floor=150), {"a": 1000, "b": 150})

    def test_job_line_carries_the_id_twice(self):
        self.assertEqual(plan.job_id("c03", 7), "c03-00007")
        d = json.loads(plan.job_line("c03", 7))
        self.assertEqual(d, {"id": "c03-00007", "body": {"id": "c03-00007"}})

    def test_push_plan_pushes_every_job_once(self):
        p = plan.push_plan({"a": 10, "b": 3}, 0.4, 3.0, 1.0)
        self.assertEqual(p[0], (0.0, "a", 0, 4))
        for name, total in (("a", 10), ("b", 3)):
            ids = [i for _, n, first, k in p if n == name for i in range(first, first + k)]
            self.assertEqual(ids, list(range(total)), name)
        self.assertEqual([t for t, _, _, _ in p], sorted(t for t, _, _, _ in p))
        self.assertTrue(all(t <= 3.0 for t, _, _, _ in p))

    def test_push_plan_keeps_a_last_batch(self):
        p = plan.push_plan({"a": 100, "b": 3}, 0.4, 3.0, 1.0, final_t=9.0, final_share=0.05)
        self.assertEqual(p[-2:], [(9.0, "a", 95, 5), (9.0, "b", 2, 1)])  # at least one
        for name, total in (("a", 100), ("b", 3)):
            ids = [i for _, n, first, k in p if n == name for i in range(first, first + k)]
            self.assertEqual(ids, list(range(total)), name)

    def test_timeline_from_the_seed(self):
        def tl(seed):
            return plan.timeline(seed, 200, (20, 40), (55, 65), (2, 8), (50, 70))
        a = tl(7)
        self.assertEqual(a, tl(7))
        self.assertNotEqual(a, tl(8))
        self.assertEqual([e[0] for e in a], sorted(e[0] for e in a))
        kills = [t for t, k, _ in a if k == "kill"]
        self.assertTrue(4 <= len(kills) <= 9, kills)
        gaps = [b - c for b, c in zip(kills[1:], kills)]
        self.assertTrue(all(20 <= g <= 40 for g in gaps), gaps)
        redis = [(t, slow) for t, k, slow in a if k == "redis"]
        self.assertTrue(2 <= len(redis) <= 3, redis)  # about every 60 s until 180 s
        self.assertEqual([slow for _, slow in redis][:2], [False, True])  # the second loads
        self.assertEqual(sum(slow for _, slow in redis), 1)
        busy = [t for t, k, _ in a if k == "busy"]
        self.assertTrue(2 <= len(busy) <= 3, busy)
        modes = [m for _, k, m in a if k == "mode"]
        healed = [b for m, b in zip(modes, modes[1:]) if m not in ("ok", plan.HEALTHY)]
        self.assertGreater(healed.count(plan.HEALTHY), len(healed) // 4)  # HEAL, 0.5
        # the end game: 503 from 180 s, every daemon killed at 194 s, healed at 200 s
        self.assertEqual(a[-3:], [(180.0, "mode", "status/503"), (194.0, "killall", None),
                                  (200.0, "mode", "ok")])
        self.assertTrue(all(t < 180 for t, k, _ in a[:-3]))

    def test_the_slow_restart_is_the_last_when_there_are_fewer(self):
        a = plan.timeline(1, 30, (8, 14), (18, 24), (2, 5), (10, 15), loading_index=1)
        self.assertEqual([slow for _, k, slow in a if k == "redis"], [True])

    def test_pick_mode_by_weight(self):
        class Fixed:
            def __init__(self, x):
                self.x = x

            def uniform(self, lo, hi):
                return self.x
        modes = [("ok", 1), ("close", 3)]
        self.assertEqual(plan.pick_mode(Fixed(0.5), modes), "ok")
        self.assertEqual(plan.pick_mode(Fixed(1.5), modes), "close")
        self.assertEqual(plan.pick_mode(Fixed(4.0), modes), "close")

    def test_mode_shares(self):
        ev = [(0.0, "mode", "ok"), (2.0, "kill", 0), (5.0, "mode", "close"), (8.0, "mode", "ok"),
              (10.0, "mode", "ok")]  # the last one, at the end, holds no time
        self.assertEqual(plan.mode_shares(ev, 10), {"ok": 0.7, "close": 0.3})

    def test_redis_argv(self):
        a = plan.redis_argv(7000, "/d")
        self.assertEqual(a[:5], ["redis-server", "--port", "7000", "--bind", "127.0.0.1"])
        self.assertNotIn("--key-load-delay", a)
        self.assertEqual(a[-2:], ["--lua-time-limit", "100"])
        b = plan.redis_argv(7000, "/d", 1000)
        self.assertEqual(b[-4:], ["--key-load-delay", "1000",
                                  "--loading-process-events-interval-bytes", "1024"])

    def test_quick_is_about_a_minute_and_full_about_five(self):
        q, f = chaos.params(True), chaos.params(False)
        self.assertLessEqual(q["seconds"] + q["drain_s"], 75)
        self.assertLessEqual(f["seconds"] + f["drain_s"], 300)
        self.assertEqual(f["kill_every"], (20.0, 40.0))


class Verdict(unittest.TestCase):
    def test_parse_sink_line(self):
        line = b'17\tPOST\t/hook/c01\tc01-00002\tc01\t503\t{"id":"c01-00002"}\td1.4\n'
        self.assertEqual(V.parse_sink_line(line), (17, "c01-00002", "c01-00002", 503, "d1.4"))
        self.assertEqual(V.parse_sink_line(b"17\tPOST\t/x\t-\t-\t200\tplain\t-\n"),
                         (17, "-", None, 200, "-"))
        self.assertIsNone(V.parse_sink_line(b"garbage\n"))
        self.assertIsNone(V.parse_sink_line(b"1\t2\t3\t4\t5\tsix\t7\t8\n"))

    def test_dead_letter_takes_the_jobs_own_id(self):
        rec = json.dumps({"id": "claim.0", "reason": "exhausted", "http_status": 429,
                          "job": '{"id":"c30-00010","body":{"id":"c30-00010"}}'})
        self.assertEqual(V.dead_letter(rec), ("c30-00010", "exhausted", 429))
        rec = json.dumps({"id": "x-1", "reason": "bad_json", "job": "not json"})
        self.assertEqual(V.dead_letter(rec), ("x-1", "bad_json", None))
        self.assertIsNone(V.dead_letter("[1]"))
        self.assertIsNone(V.dead_letter("{"))
        self.assertIsNone(V.dead_letter(json.dumps({"id": None, "job": "x"})))

    def test_status_class(self):
        self.assertEqual([V.status_class(s) for s in (200, 204, 429, 503, 0, 404)],
                         ["2xx", "2xx", "429", "5xx", "none", "other"])

    def test_verdict_accounts_for_every_job(self):
        pushed = {"a-1": "a", "a-2": "a", "a-3": "a", "a-4": "a", "b-1": "b"}
        requests = [(10 * k,) + r + ("d0.%d" % k,) for k, r in enumerate([
            ("a-1", "a-1", 503), ("a-1", "a-1", 200),   # delivered after a retry
            ("a-2", "a-2", 200), ("a-2", "a-2", 200),   # a duplicate, same key
            ("zz", "a-2", 200),                          # a duplicate, another key
            ("a-3", "a-3", 0),                           # no answer, then dead-lettered
            ("b-1", "b-1", 429),                         # never delivered: lost
            ("q-9", "q-9", 200),                         # not ours
            ("c-1", "c-1", 200),                         # an ambiguous push, seen
        ])]
        dead = [("a-3", "exhausted", None), ("a-4", "bad_header", None),
                ("a-4", "bad_header", None), ("a-2", "exhausted", 503)]
        v = V.verdict(pushed, {"c-1", "c-2"}, requests, dead)
        self.assertEqual((v["pushed"], v["delivered"], v["dead_lettered"]), (5, 2, 3))
        self.assertEqual(v["dead_by_reason"], {"exhausted": 2, "bad_header": 1})
        self.assertEqual(v["dead_twice"], 1)
        self.assertEqual(v["delivered_and_dead"], 1)  # a-2
        self.assertEqual((v["lost"], v["lost_ids"]), (1, ["b-1"]))
        self.assertEqual((v["duplicates"], v["duplicated_jobs"], v["duplicates_other_key"]),
                         (2, 1, 1))
        self.assertEqual(v["duplicate_firsts"], [(20, "d0.2"), (20, "d0.2")])  # a-2's first, twice
        self.assertEqual(v["key_mismatch"], 1)
        self.assertEqual(v["unknown_requests"], 1)
        self.assertEqual((v["ambiguous"], v["ambiguous_seen"]), (2, 1))
        self.assertEqual(v["statuses"], {"2xx": 6, "5xx": 1, "none": 1, "429": 1})
        self.assertEqual(v["max_attempts_seen"], 3)  # a-2

    def test_duplicate_causes(self):
        modes = [(0, "ok"), (100, "slow/3000"), (200, "slow/1500"), (300, "ok")]
        killed = {"d0.1": 5000000}
        outages = [(30000000, 33000000)]
        lease = 12000000
        firsts = [(150, "d0.1"),       # under slow/3000: a timeout
                  (250, "d0.1"),       # in time, its sender killed 5 s later
                  (4000000, "d0.1"),   # killed 1 s later
                  (5600000, "d0.1"),   # sent after the kill (cannot be): not the kill
                  (20000000, "d1.2"),  # Redis down 10 s later, within the lease
                  (31000000, "d1.2"),  # Redis loading then
                  (34000000, "d1.2"),  # after the outage, sender alive
                  (1000, "-")]         # no sender, nothing near: alive
        c = V.duplicate_causes(firsts, modes, killed, outages,
                               lambda m: plan.slow_past(m, 2000), lease)
        self.assertEqual(c, {"timeout": 1, "sender SIGKILLed": 2,
                             "ack lost, sender alive, Redis outage": 2,
                             "ack lost, sender alive": 3})
        self.assertEqual(V.duplicate_causes([], modes, killed, outages, bool, lease), {})

    def test_slow_past(self):
        self.assertTrue(plan.slow_past("slow/3000", 2000))
        self.assertFalse(plan.slow_past("slow/1500", 2000))
        self.assertFalse(plan.slow_past("status/503", 2000))

    def test_left_with_work(self):
        h = [(0, {"a": (1, 0, 0), "b": (0, 2, 0), "c": (0, 0, 0)}),
             (5, {"a": (0, 1, 0), "b": (0, 2, 0), "c": (0, 0, 0)}),
             (10, {"a": (0, 0, 1), "b": (0, 2, 0), "c": (0, 0, 0)})]
        self.assertEqual(V.left_with_work(h, 10), ({"b": (0, 2, 0)}, {"a": (0, 0, 1)}))
        self.assertEqual(V.left_with_work(h, 4), ({"b": (0, 2, 0)}, {"a": (0, 0, 1)}))
        # a history shorter than the window proves nothing stuck
        self.assertEqual(V.left_with_work(h, 11), ({}, {"a": (0, 0, 1), "b": (0, 2, 0)}))
        self.assertEqual(V.left_with_work([], 5), ({}, {}))

    def test_split_and_tenant_of(self):
        self.assertEqual(V.tenant_of("c01-00002"), "c01")
        self.assertEqual(V.split_by(["c01", "w00", "c02"], {"c01": True, "c02": True}), (2, 1))

    def test_log_messages(self):
        lines = ['level=error msg="ack failed" tenant=a\n', 'level=info msg="x"\n',
                 'level=error msg="ack failed" tenant=b\n', 'level=warning msg="slow"\n']
        self.assertEqual(V.log_messages(lines), [(2, "error", "ack failed"), (1, "warning", "slow")])
        self.assertEqual(V.log_messages(lines, top=1), [(2, "error", "ack failed")])

    def test_where_stranded(self):
        places = {"a": {"queue": b'{"id":"a-1"}', "retry": b'1:x:{"id":"a-2"}'}}
        self.assertEqual(V.where_stranded(["a-1", "a-2", "a-3", "b-1"], places),
                         {"queue": 1, "retry": 1, "nowhere": 2})
        # a-1 is not a-10
        self.assertEqual(V.where_stranded(["a-10"], places), {"nowhere": 1})


if __name__ == "__main__":
    unittest.main()
