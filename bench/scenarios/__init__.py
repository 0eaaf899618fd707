"""The scenarios, in the order a full run takes them (later ones read what
earlier ones found: fleet and memory drain at the concurrency the
throughput sweep chose). Each module has NAME, the --only name and its
key in the results, and run(ctx), which leaves its figures in
ctx.results[NAME]; report.py turns them into the table, RESULTS.md and
the plots."""

from . import ceiling, fleet, memory, shaping, tenants, throughput

SCENARIOS = [throughput, ceiling, shaping, fleet, tenants, memory]
NAMES = [s.NAME for s in SCENARIOS]
