#!/usr/bin/env bash
# The tenant experiments of docs/results.md through `mrcache sim`, one JSON report per line. Every run
# takes --memcached-defaults (slab layout, memcached's accounting and policy, profilers at 10% of the
# memory), the simulator's defaults when §12 was recorded.
#
#   scripts/tenant-experiments.sh mpart-six [SCALE] [REQUESTS_PER_APP] [OUT_DIR]
#   scripts/tenant-experiments.sh noisy     [SCALE] [OUT_DIR]
#   scripts/tenant-experiments.sh diurnal   [SCALE] [OUT_DIR]
#   scripts/tenant-experiments.sh qos       [OUT_DIR]
#
# mpart-six — mPart §4.1: Table 4.1's applications, each of Table 4.2's initial allocations, under the
#   mpart, memshare and static arbiters. Objects, memory (90% of the summed working sets, as in the
#   thesis), initial allocations, Memshare's credit (500 objects) and shadow queue (50K objects) are
#   divided by SCALE (default 10). Objects are 200-byte values with 16-byte keys: 304-byte chunks under
#   memcached's accounting. Each tenant reserves half its initial allocation. mPart arbitrates 50 times
#   a run (the thesis's every 2M of 100M accesses) with its ±30% change bound.
# noisy — mPart §4.3: the same six applications (90%-WSS allocation) and, from hour 5 of 10, tenant 6
#   with 30% of all requests spread uniformly over 100M/SCALE objects (no locality: a flood of
#   one-time keys), reserved 1% of memory; under mpart, memshare and pooled (no isolation of memory).
# diurnal — mPart §4.2: the six applications (90%-WSS allocation) with request rates on day curves
#   staggered by 4 hours, under mpart and memshare.
# qos — LAMA §5.7: three-phase APP1 (tenant 0, target hit ratio 0.85; 100k objects, Zipf 0.9, ETC
#   values then 1-4 KB values, as in section 8) and ETC APP2 (tenant 1, 1M objects), 4:1, 160 MiB
#   starting 50/50, lama-qos every 1% and every 4% of the run (LAMA's 10^7 of 250M), and every 1%
#   aiming 2 points above the target (margin=0.02), against both
#   sharing one pool (pooled); lama-mr divides each tenant's pages among its classes.
set -euo pipefail
mrcache=${MRCACHE:-target/release/mrcache}
chunk=304
# Table 4.2, thousands of objects: etc etc.small psa psa.small ycsb ycsb.small
declare -A alloc=(
  [wss90]="6273 3123 5508 3042 4752 3267"
  [unique75]="5250 2625 5250 2625 7500 3750"
  [equal]="4327 4327 4327 4327 4327 4327"
)

# six_tenants ALLOCATION SCALE: --tenant flags for the six applications.
six_tenants() {
  local objs t initial
  read -r -a objs <<<"${alloc[$1]}"
  for t in 0 1 2 3 4 5; do
    initial=$((objs[t] * 1000 * chunk / $2))
    printf -- '--tenant %s ' "$t:initial=$initial,reserved=$((initial / 2))"
  done
}

experiment=${1:?mpart-six, noisy, diurnal or qos}
shift
case $experiment in
mpart-six)
  scale=${1:-10}
  per_app=${2:-$((100000000 / scale))}
  out=${3:-docs/figures}
  total=$((per_app * 6))
  memory=$((25965000 * chunk / scale))
  for name in wss90 unique75 equal; do
    echo "== mpart-six $name: memory $memory bytes, $total requests" >&2
    # shellcheck disable=SC2046
    "$mrcache" sim --memcached-defaults --workload "mpart-six:scale=$scale,requests=$per_app" --memory "$memory" \
      --window-requests $((total / 100)) --json $(six_tenants "$name" "$scale") \
      --tenant-policy "mpart:interval=$((total / 50))" \
      --tenant-policy "memshare:credit=$((500 * chunk / scale)),shadow=$((50000 * chunk / scale))" \
      --tenant-policy static --plot "$out/mpart-six-$name.svg" \
      --plot-tenants "$out/mpart-six-$name-pages.svg" >"$out/mpart-six-$name.jsonl"
  done
  ;;
noisy)
  scale=${1:-10}
  out=${2:-docs/figures}
  total=$((600000000 / scale))
  memory=$((25965000 * chunk / scale))
  noisy_reserve=$((memory / 100))
  echo "== noisy: memory $memory bytes, $total requests" >&2
  # shellcheck disable=SC2046
  "$mrcache" sim --memcached-defaults --workload "noisy-neighbour:scale=$scale,noisy_share=0.3,noisy_popularity=uniform" --memory "$memory" \
    --window-requests $((total / 100)) --json $(six_tenants wss90 "$scale") \
    --tenant "6:initial=$noisy_reserve,reserved=$noisy_reserve" \
    --tenant-policy "mpart:interval=$((total / 50))" \
    --tenant-policy "memshare:credit=$((500 * chunk / scale)),shadow=$((50000 * chunk / scale))" \
    --tenant-policy pooled --plot "$out/noisy-neighbour.svg" \
    --plot-tenants "$out/noisy-neighbour-pages.svg" >"$out/noisy-neighbour.jsonl"
  ;;
diurnal)
  scale=${1:-10}
  out=${2:-docs/figures}
  total=$((600000000 / scale))
  memory=$((25965000 * chunk / scale))
  echo "== diurnal: memory $memory bytes, $total requests" >&2
  # shellcheck disable=SC2046
  "$mrcache" sim --memcached-defaults --workload "diurnal:scale=$scale" --memory "$memory" \
    --window-requests $((total / 100)) --json $(six_tenants wss90 "$scale") \
    --tenant-policy "mpart:interval=$((total / 50))" \
    --tenant-policy "memshare:credit=$((500 * chunk / scale)),shadow=$((50000 * chunk / scale))" \
    --plot "$out/diurnal.svg" >"$out/diurnal.jsonl"
  ;;
qos)
  out=${1:-docs/figures}
  total=20000000
  echo "== qos: 160 MiB, $total requests" >&2
  "$mrcache" sim --memcached-defaults --workload "qos:objects=100000,etc_objects=1000000,requests=$total,popularity1=zipf:0.9,popularity2=zipf:0.9,value_size1=etc,value_size2=1000-4000" \
    --memory 160MiB --policy lama-mr --window-requests $((total / 100)) --json \
    --tenant "0:initial=80MiB,target=0.85" --tenant "1:initial=80MiB" \
    --tenant-policy "lama-qos:interval=$((total / 100))" --tenant-policy "lama-qos:interval=$((total / 25))" \
    --tenant-policy "lama-qos:interval=$((total / 100)),margin=0.02" \
    --tenant-policy pooled --plot-tenants "$out/qos-pages.svg" >"$out/qos.jsonl"
  ;;
*)
  echo "unknown experiment $experiment (mpart-six, noisy, diurnal, qos)" >&2
  exit 2
  ;;
esac
