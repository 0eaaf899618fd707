#!/bin/sh
# Push jobs for a tenant with redis-cli. Usage: produce.sh TENANT [COUNT]
# The job is an envelope (SPEC section 3): id (the Idempotency-Key the
# endpoint sees), body, optional headers, method, path and deadline (unix ms).
set -eu
tenant=${1:?usage: produce.sh TENANT [COUNT]}
count=${2:-10}
i=1
while [ "$i" -le "$count" ]; do
  redis-cli LPUSH "sluice:{$tenant}:queue" \
    "{\"id\":\"order-$i\",\"body\":{\"order\":$i},\"headers\":{\"X-Source\":\"produce.sh\"}}" >/dev/null
  i=$((i + 1))
done
echo "pushed $count jobs to $tenant"
