"""workload.py - what the benchmarks push and the tenant settings they share."""

FAST_RATE = 1000000  # jobs/s: far above what one box can deliver (the config's maximum)
FAST_CAPACITY = 9000000  # a bucket that never empties during a run
SHAPED_CONCURRENCY = 256  # never the bound of a shaped run, even at 20,000/s on a loaded box
PAD = b"0123456789abcdef"


def job(i, extra_pad=0):
    """The body of job i as `sluice push` reads it: 16 bytes of padding plus
    extra_pad more (the memory scenario varies it)."""
    return b'{"body":{"n":%d,"pad":"%s"}}' % (i, PAD + b"x" * extra_pad)


def fast_tenant(concurrency):
    """A tenant whose rate is never the bound: only concurrency is."""
    return {"rate": FAST_RATE, "capacity": FAST_CAPACITY, "concurrency": concurrency}
