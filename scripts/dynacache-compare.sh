#!/usr/bin/env bash
# Dynacache against lama-mr, memcached's default and the upper bound (docs/results.md §16).
#
#   scripts/dynacache-compare.sh etc     [OUT_DIR]   ETC, uniform popularity, 1/4 scale (§7's sweep)
#   scripts/dynacache-compare.sh tenants [OUT_DIR]   per tenant: mPart's six applications (§12.1, 90% WSS,
#                                                    mpart arbiter) and the qos pair (ETC-sized tenants,
#                                                    static halves), each tenant's classes divided by
#                                                    each slab policy
#   scripts/dynacache-compare.sh traces  [OUT_DIR]   the shared real traces (§14's shares and sizes)
#   scripts/dynacache-compare.sh table   [OUT_DIR]   prints §16's tables from what the others wrote and
#                                                    draws docs/figures/dynacache-etc-sweep.svg
#
# Every run is `mrcache sim --memcached-defaults` (deterministic; the simulator's defaults when §16 was
# recorded: slab layout, memcached's accounting, profilers at 10% of the memory). env: MRCACHE (default target/release/mrcache), JOBS (2),
# TRACES_DIR (default ../shared/traces).
# Build first: cargo build --release -p mrcache-cli
set -euo pipefail
cd "$(dirname "$0")/.."
mrcache=${MRCACHE:-target/release/mrcache}
jobs=${JOBS:-2}
what=${1:?etc, tenants, traces or table}
out=${2:-target/dynacache}
mkdir -p "$out"
[ -x "$mrcache" ] || { echo "no $mrcache: cargo build --release -p mrcache-cli" >&2; exit 1; }
etc="etc:objects=1750000,requests=12500000,popularity=uniform"
traces=${TRACES_DIR:-../shared/traces}
case $what in
etc)
  # §7's sweep with memcached and dynacache (lama-mr and the upper bound are §7's, deterministic; FULL=1
  # runs them here too), and memcached alone out to 1 GiB for the memory the default allocation needs to
  # match dynacache (Dynacache Table 1's "additional memory" column).
  extra=()
  [ -n "${FULL:-}" ] && extra=(--policy lama-mr:max_interval=1250000 --policy upper-bound)
  "$mrcache" sim --memcached-defaults --workload "$etc" --sweep 32MiB..256MiB:32MiB --policy memcached --policy dynacache \
    "${extra[@]}" --window-requests 500000 --threads "$jobs" --json > "$out/etc.jsonl"
  "$mrcache" sim --memcached-defaults --workload "$etc" --sweep 384MiB..1024MiB:128MiB --policy memcached \
    --window-requests 500000 --threads "$jobs" --json > "$out/etc-memcached-large.jsonl"
  ;;
tenants)
  # mPart §4.1 at 1/20 (scripts/tenant-experiments.sh mpart-six 20 5000000, 90% WSS), under mpart.
  scale=20 per_app=5000000 chunk=304
  total=$((per_app * 6))
  memory=$((25965000 * chunk / scale))
  tenants=""
  for t in 0:6273 1:3123 2:5508 3:3042 4:4752 5:3267; do
    initial=$((${t#*:} * 1000 * chunk / scale))
    tenants="$tenants --tenant ${t%%:*}:initial=$initial,reserved=$((initial / 2))"
  done
  for p in memcached lama-mr dynacache; do
    # shellcheck disable=SC2086
    "$mrcache" sim --memcached-defaults --workload "mpart-six:scale=$scale,requests=$per_app" --memory "$memory" \
      --window-requests $((total / 100)) --json $tenants --tenant-policy "mpart:interval=$((total / 50))" \
      --policy "$p" > "$out/mpart-six-$p.jsonl" &
    [ "$(jobs -r | wc -l)" -ge "$jobs" ] && wait -n
  done
  wait
  # Two tenants whose items spread over the classes: LAMA §5.7's pair (APP1 three-phase, ETC values
  # then 1-4 KB; APP2 ETC), 80 MiB each, kept fixed (static), 20M requests.
  total=20000000
  "$mrcache" sim --memcached-defaults --workload "qos:objects=100000,etc_objects=1000000,requests=$total,popularity1=zipf:0.9,popularity2=zipf:0.9,value_size1=etc,value_size2=1000-4000" \
    --memory 160MiB --window-requests $((total / 100)) --json \
    --tenant "0:initial=80MiB,reserved=80MiB" --tenant "1:initial=80MiB,reserved=80MiB" \
    --tenant-policy static --policy memcached --policy lama-mr --policy dynacache \
    --threads "$jobs" > "$out/qos-static.jsonl"
  ;;
traces)
  # dynacache (and with guard=model), and memcached as a check, on §14's shares and sizes (lama-mr and the upper bound are
  # §14's, deterministic; POLICIES="memcached lama-mr dynacache upper-bound" runs them here too).
  policies=${POLICIES:-"memcached dynacache dynacache:guard=model"}
  POLICIES="$policies" JOBS=$jobs MRCACHE=$mrcache \
    scripts/real-trace-policies.sh "$traces" "$out/traces" > "$out/traces-shares.md" || true
  POLICIES="$policies" JOBS=$jobs MRCACHE=$mrcache \
    SHARES="16MiB 32MiB 64MiB" TRACES="kv/cache2k-orm-busy.trace.xz kv/cache2k-orm-night.trace.xz \
    kv/corda_vaultservice.trace.gz block/arc-OLTP.lis.zst" scripts/real-trace-policies.sh "$traces" \
    "$out/traces" > "$out/traces-sizes.md" || true
  ;;
table)
  python3 scripts/dynacache-table.py "$out" docs/figures/dynacache-etc-sweep.svg
  ;;
*)
  echo "unknown: $what (etc, tenants, traces, table)" >&2
  exit 2
  ;;
esac
