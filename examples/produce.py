"""Push jobs for a tenant from Python (pip install redis).

Usage: python3 produce.py TENANT [COUNT]
Each job is an envelope (SPEC section 3). Give every job a stable "id": it
becomes the Idempotency-Key, so the endpoint can drop a duplicate after a
worker crash (delivery is at least once).
"""
import json
import sys
import time

import redis

tenant = sys.argv[1]
count = int(sys.argv[2]) if len(sys.argv) > 2 else 10
r = redis.Redis(host="127.0.0.1", port=6379)
deadline_ms = int(time.time() * 1000) + 3_600_000  # useless after an hour
jobs = [
    json.dumps({"id": f"invoice-{i}", "body": {"invoice": i}, "deadline": deadline_ms})
    for i in range(1, count + 1)
]
r.lpush(f"sluice:{{{tenant}}}:queue", *jobs)  # one round trip for the batch
print(f"pushed {count} jobs to {tenant}")
