"""Tests of bench/stats.py."""

import unittest

from bench import stats as S


class Stats(unittest.TestCase):
    def test_percentile_nearest_rank(self):
        v = list(range(1, 101))
        self.assertEqual(S.percentile(v, 50), 50)
        self.assertEqual(S.percentile(v, 99), 99)
        self.assertEqual(S.percentile(v, 100), 100)
        self.assertEqual(S.percentile([7], 99), 7)
        self.assertIsNone(S.percentile([], 50))
        # 30 values: p99 is the largest
        self.assertEqual(S.percentile(list(range(30)), 99), 29)

    def test_worst_window_names_who_crowded_it(self):
        # process 0 on its slots every 10 ms; process 1 sends 3 late jobs
        # at 50-52 ms, 20 ms after their slots
        on_time = [("t", "a%d" % i, i * 10000, i * 10000, i * 10000) for i in range(10)]
        late = [("t", "b%d" % i, 30000 + i, 50000 + i, 50000 + i) for i in range(3)]
        ww = S.worst_window([on_time, late], 25000)
        self.assertEqual(ww["most"], 6)
        self.assertEqual(ww["start_us"], 30000)
        self.assertEqual(ww["sent"], [3, 3])
        self.assertEqual(ww["late_us"], [0, 20000])
        self.assertIsNone(S.worst_window([[], []], 25000))

    def test_exact_schedule(self):
        times = [1000 * k for k in range(1001)]  # 1,000/s exactly
        s = S.shaping_summary(times, 1000)
        self.assertAlmostEqual(s["rate"], 1000.0)
        self.assertAlmostEqual(s["error"], 0.0)
        self.assertEqual(s["jitter_max_us"], 0)
        self.assertEqual(s["max_in_10"], 10)  # [t, t + 10 intervals) holds 10
        self.assertEqual(s["min_gap"], 1.0)

    def test_slow_rate_error(self):
        times = [1010 * k for k in range(101)]  # 1% slow
        self.assertAlmostEqual(S.rate_error(times, 1000), 1000 / 1010 - 1)

    def test_burst_counted(self):
        times = [1000 * k for k in range(100)] + [50500, 50600, 50700]
        self.assertEqual(S.most_in_window(times, 10000), 13)
        p50, p99, mx = S.gap_jitter(sorted(times), 1000)
        self.assertEqual(mx, 900)

    def test_tenants_pool_their_own_gaps_and_keep_the_worst(self):
        exact = [1000 * k for k in range(101)]  # 1,000/s
        slow = [5 + 1010 * k for k in range(101)]  # 1% slow, 5 us after the first
        s = S.tenants_summary([exact, slow], 1000)
        self.assertEqual(s["n"], 202)
        self.assertEqual(s["tenants"], 2)
        self.assertAlmostEqual(s["error"], 1000 / 1010 - 1)  # the worst tenant's
        self.assertEqual(s["max_in_10"], 10)  # not 20: each tenant on its own
        self.assertEqual(s["jitter_max_us"], 10)  # no gap across tenants (5 us)
        self.assertEqual(s["jitter_p99_us"], 10)  # 200 gaps, half of them 10 off
        self.assertEqual(s["jitter_p50_us"], 0)
        self.assertEqual(S.shaping_summary(exact, 1000)["jitter_max_us"], 0)
        # a first departure one claim round trip late is pickup, not jitter
        late_start = [700] + exact[1:]
        self.assertEqual(S.shaping_summary(late_start, 1000)["jitter_max_us"], 0)
        self.assertEqual(S.gap_jitter(late_start, 1000)[2], 700)

    def test_the_window_and_bound_of_spec_section_4(self):
        self.assertEqual(S.window_us(1), 10e6)  # 10 intervals
        self.assertEqual(S.window_us(100), 100000)
        self.assertEqual(S.window_us(1000), 100000)  # 100 ms, not 10 intervals
        self.assertEqual(S.window_bound(1), 11)  # 11 in any 10 intervals
        self.assertEqual(S.window_bound(10), 11)
        self.assertEqual(S.window_bound(100), 11)
        self.assertEqual(S.window_bound(1000), 103)  # 102 exactly, + 1
        self.assertEqual(S.window_bound(5000), 511)
        self.assertEqual(S.window_bound(20000), 2041)
        self.assertEqual(S.window_bound(250), 26)  # floor(25.5) + 1
        s = S.shaping_summary([1000 * k for k in range(1001)], 1000)
        self.assertEqual((s["window_us"], s["bound"], s["max_in_window"]), (100000, 103, 100))

    def test_a_stall_made_up_in_a_burst_breaks_the_bound(self):
        on_time = [1000 * k for k in range(1000)]
        # the 5 jobs of a 5 ms stall leave together at its end
        burst = [k * 1000 if not 500 <= k < 505 else 505000 for k in range(1000)]
        self.assertLessEqual(S.most_in_window(on_time, S.window_us(1000)), 103)
        self.assertEqual(S.most_in_window(burst, S.window_us(1000)), 105)

    def test_lateness_from_the_trace(self):
        recs = [("t", "a", 100, 150, 7), ("t", "b", 200, 200, 9)]
        self.assertEqual(S.lateness(recs), [50, 0])

    def test_lateness_at_the_ends_of_a_run(self):
        # 30 s at 100/s: 2 ms late in the first 10 s, on time after
        recs = [("t", str(k), 10000 * k, 10000 * k + (2000 if k < 1000 else 0), 10000 * k)
                for k in range(3001)]
        self.assertEqual(S.lateness_ends(recs, 10e6), (2000, 0))
        growing = [(t, i, slot, d + int(slot) // 1000, local) for t, i, slot, d, local in recs]
        first, last = S.lateness_ends(growing, 10e6)
        self.assertGreater(last, first)
        self.assertEqual(S.lateness_ends(recs[:1500], 10e6), (None, None))  # 15 s: too short
        self.assertEqual(S.lateness_ends([], 10e6), (None, None))

    def test_window_is_half_open(self):
        self.assertEqual(S.most_in_window([0, 10, 20], 20), 2)
        self.assertEqual(S.most_in_window([0, 10, 20], 21), 3)

    def test_bins(self):
        self.assertEqual(S.bins([0, 99, 100, 250, -1, 300], 0, 100, 3), [2, 1, 1])

    def test_sluice_commands(self):
        delta = {"evalsha": 10, "time": 13, "zadd": 500, "hset": 500, "info": 2, "scan": 1}
        client, everything = S.sluice_commands(delta)
        self.assertEqual(client, 10 + 3 + 1)  # scripts, clock probes, SCAN
        self.assertEqual(everything, 10 + 13 + 500 + 500 + 1)  # not the bench's INFO

    def test_overlapping(self):
        stalls = [(100, 200), (1000, 5000), (6000, 6100)]
        windows = [(50, 99), (50, 100), (150, 160), (4000, 9000), (5001, 5999), (7000, 8000)]
        self.assertEqual(S.overlapping(windows, stalls), 3)
        self.assertEqual(S.overlapping(windows, []), 0)

    def test_probe_window(self):
        marks = [(0, 0), (1000000, 1000), (2000000, 2000), (3000000, 3000)]
        stalls = [(1000000 + 10 * i, 1000000 + 10 * i + 400 + i) for i in range(20)]
        wakeups, p99, p999 = S.probe_window(stalls, marks, 1000000, 2000000)
        self.assertEqual(wakeups, 1000)
        self.assertEqual(p99, 400 + 10)  # the 10th latest of 1,000
        self.assertEqual(p999, 400 + 19)  # the latest
        self.assertEqual(S.probe_window([], marks, 0, 3000000), (3000, None, None))

    def test_command_counts(self):
        self.assertEqual(S.command_counts({"a": 1, "b": 2}, {"a": 4, "b": 2, "c": 1}),
                         {"a": 3, "c": 1})

    def test_noise_shares(self):
        # 10 s on 2 CPUs; the machine was busy 8 s (800 jiffies at 100/s),
        # 3 s of it ours; 50 of 2,000 jiffies stolen
        n = S.noise_shares(10.0, 2, 800, 50, 2000, 3.0, 100)
        self.assertEqual(n["wall_s"], 10.0)
        self.assertAlmostEqual(n["ours_pct"], 15.0)
        self.assertAlmostEqual(n["foreign_pct"], 25.0)
        self.assertAlmostEqual(n["steal_pct"], 2.5)
        # ours beyond the machine's busy time (jiffies are coarse): no negative foreign
        self.assertEqual(S.noise_shares(10.0, 2, 100, 0, 0, 3.0, 100)["foreign_pct"], 0.0)
        self.assertEqual(S.noise_shares(0.0, 2, 0, 0, 0, 0.0, 100)["ours_pct"], 0.0)

    def test_rate_needs_two_departures_and_a_span(self):
        self.assertIsNone(S.rate_per_s([5]))
        self.assertIsNone(S.rate_per_s([5, 5]))
        self.assertAlmostEqual(S.rate_per_s([0, 500000, 1000000]), 2.0)
        self.assertIsNone(S.rate_error([], 10))
        self.assertAlmostEqual(S.rate_error([0, 200000, 400000], 10), -0.5)  # 5/s of 10/s

    def test_min_gap_ratio(self):
        self.assertAlmostEqual(S.min_gap_ratio([0, 1000, 1500, 2500], 1000), 0.5)
        self.assertIsNone(S.min_gap_ratio([7], 1000))


if __name__ == "__main__":
    unittest.main()
