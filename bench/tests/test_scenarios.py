"""Tests of the scenarios' pure helpers (bench/scenarios/*.py) and of the
list of scenarios bench/run offers."""

import unittest

from bench import __main__ as main
from bench import context, scenarios
from bench.scenarios import ceiling, memory, shaping, tenants, throughput


class Registry(unittest.TestCase):
    def test_scenarios_in_the_order_of_a_full_run(self):
        # fleet, cluster and memory read the concurrency throughput chose: it goes first
        self.assertEqual(scenarios.NAMES,
                         ["throughput", "ceiling", "shaping", "fleet", "cluster", "tenants",
                          "memory", "adaptive", "chaos"])
        for s in scenarios.SCENARIOS:
            self.assertTrue(callable(s.run), s.NAME)

    def test_the_flags_of_bench_run(self):
        a = main.parse_args(["--quick", "--only", "throughput,fleet", "--rates", "10,100",
                             "--keep", "--build", "b", "--out", "o", "--command", "c"])
        self.assertEqual((a.quick, a.only, a.rates, a.keep, a.build, a.out, a.command),
                         (True, "throughput,fleet", "10,100", True, "b", "o", "c"))
        a = main.parse_args([])
        self.assertEqual((a.quick, a.only, a.rates, a.keep, a.build, a.out, a.command),
                         (False, "", "", False, "build-release", None, "bench/run"))
        self.assertIsNone(a.seed)  # chaos draws one and prints it
        self.assertEqual(main.parse_args(["--seed", "42"]).seed, 42)

    def test_the_daemon_of_a_build_dir(self):
        self.assertEqual(context.sluice_binary("build-release"), "build-release/sluice")


class Throughput(unittest.TestCase):
    def test_best_concurrency_is_the_fastest_run(self):
        sweep = [{"rate_steady": 100, "config": {"concurrency": 16}},
                 {"rate_steady": 300, "config": {"concurrency": 64}},
                 {"rate_steady": None, "config": {"concurrency": 256}},
                 {"rate_steady": 300, "config": {"concurrency": 512}}]
        self.assertEqual(throughput.best_concurrency(sweep), 64)  # the first of equals


class Ceiling(unittest.TestCase):
    def test_requests_per_s_from_wrk(self):
        out = ("Running 3s test @ http://127.0.0.1:1/hook/wrk\n"
               "  2 threads and 50 connections\n"
               "  150000 requests in 3.00s, 10.00MB read\n"
               "Requests/sec:  50012.34\n"
               "Transfer/sec:      3.33MB\n")
        self.assertAlmostEqual(ceiling.requests_per_s(out), 50012.34)
        self.assertIsNone(ceiling.requests_per_s("unable to connect\n"))

    def test_wrk_script_posts_the_body(self):
        s = ceiling.wrk_script('{"n":1}')
        self.assertIn('wrk.method = "POST"', s)
        self.assertIn("wrk.body = '{\"n\":1}'", s)
        self.assertIn('wrk.headers["Idempotency-Key"]', s)


class Shaping(unittest.TestCase):
    def test_stagger_spreads_over_one_interval(self):
        # 10/s: an interval of 100,000 us; 4 tenants 25,000 us apart
        self.assertEqual(shaping.stagger_starts(7, 10, 4), [7, 25007, 50007, 75007])
        self.assertEqual(shaping.stagger_starts(7, 1000, 1), [7])
        # 3 tenants at 1,000/s: rounded down, within the interval
        self.assertEqual(shaping.stagger_starts(0, 1000, 3), [0, 333, 666])

    def test_plan_and_rates(self):
        full = shaping.plan(False)
        self.assertEqual([r for r, _, _ in full], [1, 10, 100, 1000, 10000, 20000])
        self.assertEqual(full[0], (1, 30, 20))  # 20 tenants at 1/s: 600 gaps
        self.assertEqual(shaping.plan(True)[0], (1, 5, 20))
        self.assertEqual(shaping.plan(False, "10000,20000"), [(10000, 10, 1), (20000, 10, 1)])
        self.assertEqual(shaping.plan(True, "7"), [])
        self.assertEqual(shaping.plan(False, "1000,mix"), [(1000, 10, 1)])

    def test_the_mix_and_the_longer_runs(self):
        self.assertEqual(shaping.plan_more(False),
                         (True, [(100, 60), (1000, 60), (10000, 60)]))
        self.assertEqual(shaping.plan_more(True), (True, [(100, 21), (1000, 21), (10000, 21)]))
        self.assertEqual(shaping.plan_more(False, "1000,mix"), (True, []))
        self.assertEqual(shaping.plan_more(False, "long"),
                         (False, [(100, 60), (1000, 60), (10000, 60)]))
        self.assertEqual(shaping.plan_more(False, "1000"), (False, []))

    def test_a_rate_for_all_tenants_or_each_its_own(self):
        self.assertEqual(shaping.rate_of(100, "a"), 100)
        self.assertEqual(shaping.rate_of({"a": 50, "b": 5000}, "b"), 5000)

    def test_burst_series(self):
        t0 = 10000000
        pushes = [t0, t0 + 2000000]
        departures = [t0 + 10000, t0 + 20000, t0 + 150000, t0 + 2005000]
        arrivals = [t0 + 11000, t0 + 21000, t0 + 151000, t0 + 2099999]
        rows = shaping.burst_series(pushes, 3, departures, arrivals, t0)
        # half a second before t0 to a second past the last event (bin 25)
        self.assertEqual(len(rows), 25 + 11)
        self.assertAlmostEqual(rows[0][0], -0.5)
        self.assertEqual(rows[4][1:], (0, 0, 0, 0, 0, 0))
        t, inp, dep, arr, ci, cd, ce = rows[5]  # [t0, t0 + 100 ms)
        self.assertAlmostEqual(t, 0.0)
        self.assertEqual((inp, dep, arr, ci, cd, ce), (30, 20, 20, 3, 2, 2))  # per s: x10
        self.assertEqual(rows[6][1:], (0, 10, 10, 3, 3, 3))
        self.assertEqual(rows[25][1:], (30, 10, 10, 6, 4, 4))
        self.assertEqual(rows[-1][4:], (6, 4, 4))
        self.assertEqual(max(r[2] for r in rows), 20)  # the busiest bin

    def test_first_after(self):
        self.assertEqual(shaping.first_after([100, 500, 900], [50, 120, 130, 700]),
                         [20, 200, 0])  # none after 900


class Tenants(unittest.TestCase):
    def test_pickup_ms_of_the_pushed_jobs_only(self):
        records = [(5000, "pick-0", "/hook", 200), (9000, "other", "/hook", 200),
                   (13500, "pick-1", "/hook", 200)]
        self.assertEqual(tenants.pickup_ms(records, {"pick-0": 1000, "pick-1": 12000}),
                         [4.0, 1.5])


class Memory(unittest.TestCase):
    def test_held_requests_by_the_descriptor_limit(self):
        self.assertEqual(memory.held_requests(65536), 1000)
        self.assertEqual(memory.held_requests(4096), 1000)
        self.assertEqual(memory.held_requests(4095), 400)
        self.assertEqual(memory.held_requests(memory.resource.RLIM_INFINITY), 1000)

    def test_claimed_payload_from_the_records(self):
        records = [b'abc\t12\t{"body":1}', b'x{"b":2}']
        self.assertEqual(memory.claimed_payload(records), (10 + 7) / 2)
        self.assertEqual(memory.claimed_payload([]), 0)


if __name__ == "__main__":
    unittest.main()
