"""Tests of bench/report.py: the formatting, the targets and RESULTS.md."""

import unittest

from bench import report as R

FACTS = {"date": "2026-01-01 00:00:00 UTC", "duration": "9 s", "partial": True,
         "nproc": "2", "cpu": "c", "memory": "1.0 GiB", "kernel": "k", "os": "o", "redis": "r",
         "libcurl": "l", "libevent": "e", "hiredis": "h", "wrk": "w", "cc": "cc",
         "sluice": "s", "commit": "abc", "buildtype": "b"}


def drain(label, rate, round_trips, concurrency=64):
    return {"label": label, "jobs": 1000, "config": {"concurrency": concurrency},
            "rate_steady": rate, "rate_e2e": rate, "sluice_cpu_per_1k": 0.015,
            "thread_cpu_pct": 48.0, "redis_cpu_per_1k": 0.015, "sink_cpu_per_1k": 0.02,
            "round_trips_per_job": round_trips, "commands_per_job": 9.0,
            "sluice_rss_kib": 2048, "complete": True}


def throughput(one_rate, many_rate, round_trips=0.01):
    return {"throughput": {"sweep": [drain("sweep-c64", one_rate, round_trips)],
                           "one": drain("one-tenant", one_rate, round_trips),
                           "many": drain("hundred-tenants", many_rate, round_trips, 4)}}


class Format(unittest.TestCase):
    def test_f(self):
        self.assertEqual(R.f(None), "-")
        self.assertEqual(R.f(33707.6), "33708")
        self.assertEqual(R.f(0.0153, "%.3f"), "0.015")
        self.assertEqual(R.f(None, none="n/a"), "n/a")

    def test_pct(self):
        self.assertEqual(R.pct(0.00145), "+0.145%")
        self.assertEqual(R.pct(-0.01, 1), "-1.0%")
        self.assertEqual(R.pct(None), "-")

    def test_probe_us(self):
        self.assertEqual(R.probe_us(None, 0), "-")  # the probe did not run
        self.assertEqual(R.probe_us(None, 1000), "< 300")  # below what it records
        self.assertEqual(R.probe_us(412.4, 1000), "412")

    def test_table(self):
        self.assertEqual(R.table(["a", "b"], [[1, "x"], [2, None]]),
                         "| a | b |\n|---|---|\n| 1 | x |\n| 2 | None |")


class Targets(unittest.TestCase):
    def test_throughput_met_and_missed(self):
        tg = R.targets(throughput(33708, 24000))
        self.assertEqual(tg[0], ("throughput >= 25,000 jobs/s end to end (1 tenant)",
                                 "33708 jobs/s", True))
        self.assertEqual(tg[1], ("(same, 100 tenants)", "24000 jobs/s", False))
        self.assertEqual([ok for _, _, ok in tg], [True, False, True, True])

    def test_round_trips_over_the_bound(self):
        tg = R.targets(throughput(30000, 30000, round_trips=0.25))
        self.assertEqual([ok for _, _, ok in tg], [True, True, False, False])

    def test_ceiling_fraction(self):
        res = throughput(30000, 30000)
        res["ceiling"] = {"rps": 60000.0}
        tg = dict((t, (m, ok)) for t, m, ok in R.targets(res))
        self.assertEqual(tg[">= 0.6 of the wrk ceiling"], ("0.50 (30000 / 60000)", False))

    def test_only_what_ran(self):
        self.assertEqual(R.targets({}), [])
        mem = {"memory": {"claimed_overhead": 190.4}}
        self.assertEqual(R.targets(mem), [
            ("claimed-job overhead in Redis < 200 bytes beyond the payload", "190 bytes", True)])


def chaos(lost=0, stuck=None, other_key=0, rss=(20480, 30720)):
    stuck = stuck or {}
    return {"chaos": {
        "seed": 7, "tenants": 50, "listed": 40, "templated": 10, "chaos_s": 200.3,
        "drain_s": 31.0, "kills": 7, "redis_restarts": 3, "loading_s": [4.2],
        "mode_changes": 41, "mode_shares": {"ok": 0.4, "reset": 0.6}, "pushed": 50000,
        "ambiguous": 0, "ambiguous_seen": 0, "delivered": 49000, "dead_lettered": 1000 - lost,
        "dead_by_reason": {"exhausted": 1000 - lost}, "dead_twice": 0, "delivered_and_dead": 3,
        "lost": lost, "lost_listed": lost, "lost_templated": 0,
        "lost_where": {"nowhere": lost} if lost else {}, "lost_tenants": [], "lost_sample": [],
        "duplicates": 120, "duplicated_jobs": 110, "duplicates_other_key": other_key,
        "duplicate_causes": {"timeout": 100, "ack lost, sender alive, Redis outage": 20},
        "key_mismatch": 0, "unknown_requests": 0, "requests": 70000,
        "statuses": {"2xx": 49120, "5xx": 20880}, "max_attempts_seen": 8,
        "stuck": stuck, "stuck_listed": 0, "stuck_templated": len(stuck), "moving": {},
        "rss_max_kib": list(rss), "rss_samples": 800, "unexpected_exits": [],
        "final_exits": [{"daemon": 0, "code": 0, "s": 0.4}, {"daemon": 1, "code": 1, "s": 3.1}],
        "log_messages": [[12, "error", "ack failed"]],
        "settings": {"concurrency": 8, "timeout_ms": 2000,
                     "retry": {"max_attempts": 12, "base_ms": 200, "max_ms": 4000}},
        "params": {"kill_every": [20.0, 40.0], "redis_every": [55.0, 65.0],
                   "mode_every": [2.0, 8.0], "drain_s": 75.0, "stall_s": 25.0}}}


class Chaos(unittest.TestCase):
    def test_targets_met(self):
        tg = R.targets(chaos())
        self.assertEqual([ok for _, _, ok in tg], [True, True, True, True])
        self.assertEqual(tg[0][1], "0 of 50,000 lost (0 of listed tenants, 0 of template ones)")
        self.assertEqual(tg[3][1], "max 30.0 MiB (800 samples)")

    def test_targets_missed(self):
        tg = R.targets(chaos(lost=5, stuck={"w01": [0, 3, 0]}, other_key=1, rss=(70000, 1)))
        self.assertEqual([ok for _, _, ok in tg], [False, False, False, False])
        self.assertEqual(tg[1][1], "1 stuck (0 listed, 1 template)")

    def test_section(self):
        text = R.markdown(chaos(stuck={"w01": [0, 3, 0]}), FACTS, "bench/run --only chaos", [])
        self.assertIn("## 7. Chaos soak", text)
        self.assertIn("| seed | 7 (`bench/run --only chaos --seed 7` repeats the plan) |", text)
        self.assertIn("| tenants left with work they do not move (queued/retrying/in flight) "
                      "| 1: w01 0/3/0 |", text)
        self.assertIn("| dead-lettered, by reason | 1,000 (exhausted 1,000) |", text)
        self.assertIn("| SIGTERM at the end: exit codes | 0 in 0.4 s, 1 in 3.1 s |", text)
        self.assertIn('12 x error "ack failed"', text)
        self.assertIn("| duplicates, by why the first delivery was not acked | timeout 100, "
                      "ack lost, sender alive, Redis outage 20 |", text)
        self.assertIn("LOADING for 4.2 s once", text)
        self.assertIn('concurrency 8, timeout 2,000 ms, retry {"base_ms": 200, "max_attempts": 12, '
                      '"max_ms": 4000}', text)
        self.assertNotIn("## 7. Chaos", R.markdown({}, FACTS, "c", []))

    def test_counts_text(self):
        self.assertEqual(R.counts_text({"a": 1, "b": 2000}), "b 2,000, a 1")
        self.assertEqual(R.counts_text({}), "none")


class Markdown(unittest.TestCase):
    def test_results_md(self):
        res = throughput(33708, 24000)
        text = R.markdown(res, FACTS, "bench/run --quick", ["a note"])
        self.assertTrue(text.startswith("# sluice benchmarks\n\n**Partial run**"))
        self.assertIn("Command: `bench/run --quick`", text)
        self.assertIn("| commit | abc |", text)
        self.assertIn("| (same, 100 tenants) | 24000 jobs/s | **NO** |", text)
        self.assertIn("## 1. Throughput", text)
        self.assertIn("| one-tenant | 1000 | 64 | 33708 | 33708 | 0.015 | 48% | 0.015 | 0.020 "
                      "| 0.0100 | 9.00 | 2.0 | yes |", text)
        self.assertNotIn("## 3. Shaping", text)
        self.assertTrue(text.endswith("## Notes\n\n- a note\n"))

    def test_a_full_run_is_not_partial(self):
        facts = dict(FACTS, partial=False)
        text = R.markdown({}, facts, "bench/run", [])
        self.assertNotIn("Partial run", text)
        self.assertNotIn("## Notes", text)


if __name__ == "__main__":
    unittest.main()
