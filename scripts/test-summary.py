#!/usr/bin/env python3
"""The closing lines of scripts/test: how many tests the suite has and how
each build did, counted from meson's own logs.

A test is a Criterion test case, a Python unittest case, or any other
check meson runs (a shell or Python check counts as one). Every test runs
in both builds, so the closing line counts each test once: it passed if it
passed in both builds; every failure of either build, and every report of
the sanitizers, is counted as failed.

Usage: test-summary.py SANITIZER_REPORTS LABEL=TESTLOG.json...
Prints the lines; exits 1 if anything failed, else 0."""
import json
import re
import sys

CRITERION = re.compile(r"Synthesis: Tested: (\d+) \| Passing: (\d+) \| Failing: (\d+) \| Crashing: (\d+)")
UNITTEST_RAN = re.compile(r"^Ran (\d+) tests? in", re.M)
UNITTEST_FAILED = re.compile(r"^FAILED \(([^)]*)\)", re.M)
UNITTEST_SKIPPED = re.compile(r"skipped=(\d+)")


def count(result):
    """(passed, failed, skipped, kind) of one meson test result."""
    out = (result.get("stdout") or "") + (result.get("stderr") or "")
    crit = CRITERION.search(out)
    if crit:
        tested, passing = int(crit.group(1)), int(crit.group(2))
        if result["result"] != "OK" and passing == tested:
            passing -= 1  # all its cases passed, yet the process failed (at exit)
        return passing, tested - passing, 0, "Criterion"
    ran = UNITTEST_RAN.search(out)
    if ran:
        n = int(ran.group(1))
        failed = UNITTEST_FAILED.search(out)
        bad = sum(int(x) for x in re.findall(r"(?:failures|errors)=(\d+)", failed.group(1))) if failed else 0
        skipped = sum(int(x) for x in UNITTEST_SKIPPED.findall(out))
        if result["result"] != "OK" and bad == 0:
            bad = 1  # the run itself failed (an import error, a timeout)
        return n - bad - skipped, bad, skipped, "Python unittest"
    if result["result"] == "SKIP":
        return 0, 0, 1, "other"
    return (1, 0, 0, "other") if result["result"] == "OK" else (0, 1, 0, "other")


def main():
    reports = int(sys.argv[1])
    builds = []
    for arg in sys.argv[2:]:
        label, path = arg.split("=", 1)
        totals = {"passed": 0, "failed": 0, "skipped": 0}
        kinds, skipped_names = {}, []
        with open(path, encoding="utf-8") as f:
            for line in f:
                if not line.strip():
                    continue
                result = json.loads(line)
                passed, failed, skipped, kind = count(result)
                totals["passed"] += passed
                totals["failed"] += failed
                totals["skipped"] += skipped
                kinds[kind] = kinds.get(kind, 0) + passed + failed + skipped
                if result["result"] == "SKIP":
                    skipped_names.append(result["name"])
        builds.append((label, totals, kinds, skipped_names))
        skips = f" ({', '.join(skipped_names)})" if skipped_names else ""
        print(f"{label}: {totals['passed']} passed, {totals['failed']} failed, "
              f"{totals['skipped']} skipped{skips}")
    if reports:
        print(f"sanitizers: {reports} report(s) in the ASan+UBSan build's log, counted as failed")
    kinds = builds[0][2]
    size = sum(kinds.values())
    print(f"the suite: {size} tests ({', '.join(f'{n} {k}' for k, n in kinds.items())}), "
          f"each run in {len(builds)} builds")
    failed = sum(b[1]["failed"] for b in builds) + reports
    passed = min(b[1]["passed"] for b in builds)
    print(f"tests: {passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
