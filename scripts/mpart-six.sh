#!/usr/bin/env bash
# mPart §4.1 (Table 4.1 workloads, Table 4.2 initial allocations) through `mrcache sim`: the mpart,
# memshare and static tenant arbiters side by side for each initial allocation.
#
#   scripts/mpart-six.sh [SCALE] [REQUESTS_PER_APP] [OUT_DIR]
#
# Everything is divided by SCALE (default 10): objects, memory (90% of the summed working sets, as in
# the thesis), initial allocations, Memshare's credit (500 objects) and shadow queue (50K objects).
# Objects are 200-byte values with 16-byte keys: 304-byte chunks under memcached's accounting. Each
# tenant reserves half of its initial allocation. mPart arbitrates 50 times per run (the thesis's
# 2M of 100M accesses) with its ±30% change bound. Writes one JSON report per line to
# OUT_DIR/mpart-six-ALLOCATION.jsonl.
set -euo pipefail
scale=${1:-10}
per_app=${2:-$((100000000 / scale))}
out=${3:-docs/figures}
mrcache=${MRCACHE:-target/release/mrcache}
chunk=304
mkdir -p "$out"
total_requests=$((per_app * 6))
interval=$((total_requests / 50))
memory=$((25965000 * chunk / scale))
credit=$((500 * chunk / scale))
shadow=$((50000 * chunk / scale))
# Table 4.2, thousands of objects: etc etc.small psa psa.small ycsb ycsb.small
declare -A alloc=(
  [wss90]="6273 3123 5508 3042 4752 3267"
  [unique75]="5250 2625 5250 2625 7500 3750"
  [equal]="4327 4327 4327 4327 4327 4327"
)
for name in wss90 unique75 equal; do
  read -r -a objs <<<"${alloc[$name]}"
  tenants=()
  for t in 0 1 2 3 4 5; do
    initial=$((objs[t] * 1000 * chunk / scale))
    tenants+=(--tenant "$t:initial=$initial,reserved=$((initial / 2))")
  done
  echo "== $name: memory $memory bytes, $total_requests requests, interval $interval" >&2
  "$mrcache" sim --workload "mpart-six:scale=$scale,requests=$per_app" --memory "$memory" \
    --window-requests $((total_requests / 100)) --json "${tenants[@]}" \
    --tenant-policy "mpart:interval=$interval" \
    --tenant-policy "memshare:credit=$credit,shadow=$shadow" \
    --tenant-policy static >"$out/mpart-six-$name.jsonl"
done
