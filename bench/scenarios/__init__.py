"""The scenarios, in the order a full run takes them (later ones read what
earlier ones found: fleet and memory drain at the concurrency the
throughput sweep chose). Each module has NAME, the --only name and its
key in the results, and run(ctx), which leaves its figures in
ctx.results[NAME]; report.py turns them into the table, RESULTS.md and
the plots. chaos, the soak of faults, goes last: it reads nothing of the
others and needs a machine they no longer load."""

from . import adaptive, ceiling, chaos, cluster, fleet, memory, shaping, tenants, throughput

SCENARIOS = [throughput, ceiling, shaping, fleet, cluster, tenants, memory, adaptive, chaos]
NAMES = [s.NAME for s in SCENARIOS]
