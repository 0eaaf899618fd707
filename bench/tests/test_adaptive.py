"""Tests of the adaptive scenario's arithmetic (bench/scenarios/adaptive.py):
no server, no clock."""

import unittest

from bench.scenarios import adaptive as A

S = 1000000


def steady(start_us, end_us, rate):
    """Arrivals at exactly rate/s from start_us to end_us."""
    step = S // rate
    return list(range(start_us, end_us, step))


class Phases(unittest.TestCase):
    def test_phases_follow_each_other(self):
        self.assertEqual(A.phase_bounds(10, 5, 3), [(10, 15), (15, 20), (20, 25)])


class Convergence(unittest.TestCase):
    def test_at_the_limit_from_the_start(self):
        # the first 2 s window is already within: settled at its end
        self.assertEqual(A.convergence_us(steady(0, 10 * S, 40), 0, 10 * S, 40), 2 * S)

    def test_a_slow_start_settles_at_the_first_window_that_stays_within(self):
        # 20/s for 3 s, then 40/s: [2.5, 4.5) holds 10 + 60 (35/s, out),
        # [3, 5) holds 80 (40/s): settled at 5 s
        times = steady(0, 3 * S, 20) + steady(3 * S, 10 * S, 40)
        self.assertEqual(A.convergence_us(times, 0, 10 * S, 40), 5 * S)

    def test_a_dip_later_restarts_the_count(self):
        # within from the start, then nothing in [6, 7)
        times = [t for t in steady(0, 12 * S, 40) if not 6 * S <= t < 7 * S]
        # every window touching [6, 7) holds at most 60 of 80: the first
        # window after the dip is [7, 9)
        self.assertEqual(A.convergence_us(times, 0, 12 * S, 40), 9 * S)

    def test_never_within_is_none(self):
        self.assertIsNone(A.convergence_us(steady(0, 10 * S, 30), 0, 10 * S, 40))
        self.assertIsNone(A.convergence_us([], 0, 10 * S, 40))

    def test_the_tolerance_is_ten_percent_both_ways(self):
        def one_window(n):  # n arrivals in the only window, [0, 2 s)
            return [i * 2 * S // n for i in range(n)]
        self.assertEqual(A.convergence_us(one_window(88), 0, 2 * S, 40), 2 * S)  # 44/s
        self.assertIsNone(A.convergence_us(one_window(90), 0, 2 * S, 40))  # 45/s
        self.assertEqual(A.convergence_us(one_window(72), 0, 2 * S, 40), 2 * S)  # 36/s
        self.assertIsNone(A.convergence_us(one_window(70), 0, 2 * S, 40))  # 35/s

    def test_relative_to_the_change(self):
        times = steady(100 * S, 104 * S, 40)
        self.assertEqual(A.convergence_us(times, 100 * S, 104 * S, 40), 2 * S)


class Fractions(unittest.TestCase):
    def test_the_share_of_429s(self):
        self.assertEqual(A.refused_fraction([200, 429, 200, 200]), 0.25)
        self.assertEqual(A.refused_fraction([200, 503]), 0.0)
        self.assertIsNone(A.refused_fraction([]))


class Series(unittest.TestCase):
    def test_bins_with_the_last_sample_and_the_limit(self):
        arrivals = [0, 100000, 600000, 1200000]
        samples = [(50000, 50.0), (700000, 55.0)]
        rows = A.rate_series(arrivals, samples, 0, 1500000,
                             lambda t: 100 if t < 1000000 else 40)
        self.assertEqual(rows, [(0.0, 4.0, 50.0, 100), (0.5, 2.0, 55.0, 100),
                                (1.0, 2.0, 55.0, 40)])

    def test_no_sample_yet_is_none(self):
        rows = A.rate_series([], [(600000, 50.0)], 0, 1000000, lambda t: 100)
        self.assertEqual(rows, [(0.0, 0.0, None, 100), (0.5, 0.0, 50.0, 100)])


if __name__ == "__main__":
    unittest.main()
