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


def summary(rate, most, error=0.0, jitter_p99=100):
    """A stats.tenants_summary of a run at rate with `most` departures in
    its worst window W."""
    from bench import stats as S
    return {"n": 100, "tenants": 1, "rate": rate, "error": error, "jitter_p50_us": 10,
            "jitter_p99_us": jitter_p99, "jitter_max_us": 900, "max_in_10": 11,
            "window_us": S.window_us(rate), "bound": S.window_bound(rate), "max_in_window": most,
            "min_gap": 0.9}


def run(rate, most, twin=None, error=0.0, jitter_p99=100, seconds=10, ends=(None, None)):
    return {"rate": rate, "seconds": seconds, "jobs": rate * seconds + 1, "tenants": 1,
            "complete": True, "daemon": summary(rate, most, error, jitter_p99),
            "endpoint": summary(rate, most, error, jitter_p99), "twin_jitter_p99_us": twin,
            "twin_jitter_max_us": None, "late_p50_us": 20, "late_p99_us": 900,
            "late_max_us": 2000, "late_first_p99_us": ends[0], "late_last_p99_us": ends[1],
            "round_trips_per_job": 0.1, "commands_per_job": 9.0, "sluice_cpu_pct": 5.0,
            "thread_cpu_pct": 5.0}


class Steady(unittest.TestCase):
    """SPEC §4's targets: the window bound, the rate error, lateness that
    does not grow, jitter against a bare timer."""

    def targets(self, sh, fleet=None):
        res = {"shaping": sh}
        if fleet:
            res["fleet"] = fleet
        return dict((t, (m, ok)) for t, m, ok in R.targets(res))

    BOUND = ("in every window W = max(10 intervals, 100 ms) at most floor(1.02 x rate x W) + 1 "
             "departures, per tenant (daemon trace)")
    JITTER = ("p99 gap jitter <= a bare timer's p99 in the same run (0.5 ms where the timer gets "
              "better), up to 1,000/s (daemon trace)")

    def test_the_window_bound_met_and_missed(self):
        tg = self.targets({"runs": [run(100, 11), run(1000, 103)]})
        self.assertEqual(tg[self.BOUND], ("closest 103/103 (1000/s, most/bound)", True))
        tg = self.targets({"runs": [run(100, 11), run(5000, 520)]})
        self.assertEqual(tg[self.BOUND], ("closest 520/511 (5000/s, most/bound)", False))

    def test_the_mix_and_the_longer_runs_count_too(self):
        mix = {"seconds": 4, "twin_rate": 550, "twin_jitter_p99_us": 800,
               "twin_jitter_max_us": 900, "complete": True,
               "tenants": [dict(run(r, m), tenant="m%d" % r) for r, m in
                           ((50, 11), (500, 52), (5000, 520))]}
        tg = self.targets({"runs": [run(1000, 103)], "mix": mix})
        self.assertFalse(tg[self.BOUND][1])
        self.assertEqual(tg["(same, three tenants on one worker: 50/s, 500/s, 5000/s)"],
                         ("50/s 11/11, 500/s 52/52, 5000/s 520/511", False))
        longer = [run(1000, 104, seconds=60, ends=(900, 800))]
        tg = self.targets({"runs": [run(1000, 103)], "long": longer})
        self.assertEqual(tg[self.BOUND], ("closest 104/103 (1000/s for 60 s, most/bound)", False))

    def test_the_fleet_bound_is_on_the_merged_departures(self):
        fleet = {"shaped": [{"processes": k, "rate": 1000, "daemon": summary(1000, m)}
                            for k, m in ((1, 100), (2, 103), (4, 106))], "fast": []}
        tg = self.targets({"runs": []}, fleet)
        self.assertEqual(tg["(same, the merged departures of 2 and 4 processes at 1000/s)"],
                         ("fleet x2 103/103, fleet x4 106/103", False))
        # a fleet run alone still reports its bound
        tg = dict((t, (m, ok)) for t, m, ok in R.targets({"fleet": fleet}))
        self.assertFalse(tg["(same, the merged departures of 2 and 4 processes at 1000/s)"][1])

    def test_jitter_is_judged_against_the_bare_timer(self):
        tg = self.targets({"runs": [run(10, 11, twin=700, jitter_p99=650),
                                    run(1000, 103, twin=400, jitter_p99=300),
                                    run(10000, 1021, twin=None, jitter_p99=5000)]})
        self.assertEqual(tg[self.JITTER], ("worst 10/s: 650 us (bare timer 700 us)", True))
        # a timer better than 0.5 ms: sluice must get 0.5 ms too, no more
        tg = self.targets({"runs": [run(100, 11, twin=400, jitter_p99=450)]})
        self.assertEqual(tg[self.JITTER], ("worst 100/s: 450 us (bare timer 400 us)", True))
        tg = self.targets({"runs": [run(100, 11, twin=400, jitter_p99=550)]})
        self.assertEqual(tg[self.JITTER], ("worst 100/s: 550 us (bare timer 400 us)", False))
        tg = self.targets({"runs": [run(100, 11, twin=700, jitter_p99=750)]})
        self.assertEqual(tg[self.JITTER], ("worst 100/s: 750 us (bare timer 700 us)", False))

    def test_longer_runs_rate_error_and_lateness_that_does_not_grow(self):
        longer = [run(100, 11, seconds=60, error=0.0004, ends=(1000, 1200)),
                  run(1000, 103, seconds=60, error=-0.0002, ends=(5000, 900))]
        tg = self.targets({"runs": [], "long": longer})
        self.assertEqual(tg["rate error < 0.1% over 60 s at 100/s, 1,000/s (daemon trace)"],
                         ("worst +0.040% at 100/s", True))
        key = "lateness does not grow: p99 of the last 10 s <= the first 10 s' + 0.5 ms"
        self.assertEqual(tg[key], ("100/s 1000 -> 1200 us; 1000/s 5000 -> 900 us", True))
        longer[0]["late_last_p99_us"] = 1600
        longer[1]["daemon"]["error"] = 0.0011
        tg = self.targets({"runs": [], "long": longer})
        self.assertFalse(tg[key][1])
        self.assertFalse(tg["rate error < 0.1% over 60 s at 100/s, 1,000/s (daemon trace)"][1])

    def test_the_sections_show_the_bound_beside_the_most(self):
        mix = {"seconds": 4, "twin_rate": 550, "twin_jitter_p99_us": 800,
               "twin_jitter_max_us": 900, "complete": True,
               "tenants": [dict(run(r, m), tenant="m%d" % r) for r, m in ((50, 11), (5000, 511))]}
        sh = {"runs": [run(1000, 102, twin=500)], "mix": mix,
              "long": [run(100, 11, seconds=60, ends=(1000, 900))]}
        text = R.markdown({"shaping": sh}, FACTS, "bench/run", [])
        self.assertIn("| 102 / 102 (103) |", text)
        self.assertIn("### Three tenants on one worker", text)
        self.assertIn("| 5,000/s | 50001 | 511 / 511 (511) |", text)
        self.assertIn("### Longer runs", text)
        self.assertIn("| 1000 / 900 |", text)


def adaptive_run(headers, refused, requests, converge):
    """An adaptive run: converge is the three phases' times (None: never)."""
    return {"headers": headers, "phase_s": 15, "refused": refused, "requests": requests,
            "refused_fraction": refused / requests,
            "phases": [{"limit": lim, "requests": requests // 3, "refused_fraction": 0.01,
                        "converge_s": c, "last_2s_rate": lim * 0.97}
                       for lim, c in zip((100, 40, 80), converge)]}


class Adaptive(unittest.TestCase):
    def test_targets_met(self):
        ad = {"runs": [adaptive_run(False, 72, 2892, [10.5, 2.0, 8.0]),
                       adaptive_run(True, 0, 2643, [10.5, 14.0, None])]}
        tg = R.adaptive_targets(ad)
        self.assertEqual([ok for _, _, ok in tg], [True, True, True])
        self.assertEqual(tg[0][1], "2.49% (72 of 2892)")
        # the first phase is no change: its 10.5 s does not count
        self.assertEqual(tg[1][1], "40/s: 2.0 s, 80/s: 8.0 s")

    def test_targets_missed(self):
        ad = {"runs": [adaptive_run(False, 90, 2892, [5.0, 10.5, 8.0]),
                       adaptive_run(True, 15, 2643, [5.0, 5.0, 5.0])]}
        self.assertEqual([ok for _, _, ok in R.adaptive_targets(ad)], [False, False, False])
        ad = {"runs": [adaptive_run(False, 10, 2892, [5.0, 2.0, None])]}
        tg = R.adaptive_targets(ad)
        self.assertFalse(tg[1][2])
        self.assertEqual(tg[1][1], "40/s: 2.0 s, 80/s: not within")
        self.assertEqual(R.adaptive_targets(None), [])

    def test_section(self):
        ad = {"runs": [adaptive_run(False, 72, 2892, [10.5, 2.0, 8.0])]}
        text = R.adaptive_section(ad)
        self.assertIn("| without | 80/s | 964 | 1.00% | 8.0 s | 77.6/s |", text)
        self.assertIn("without: 72 429s of 2892 requests (2.49%)", text)
        self.assertIn("15 s each", text)


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
