#!/usr/bin/env bash
# lama-mr's share of the upper bound's potential on ETC at 1/4 scale (docs/results.md §14.5): for each
# popularity, one sweep of 64-256 MiB with memcached, the policy and the upper bound, and per size the
# steady-state miss ratios (the last half of the 500k-request windows) and the share
# (memcached - policy) / (memcached - upper bound). Runs under --memcached-defaults (memcached's
# accounting, profilers at 10% of the memory), as §14.5 was recorded.
#
# Usage: scripts/lama-etc-share.sh [POPULARITIES]
#   default: "zipf:0.9 uniform"
#   env: MRCACHE (binary, default target/release/mrcache), POLICY (default lama-mr:max_interval=1250000,
#        as in §7 and §14), THREADS (parallel sizes, default 2), OUT (JSON directory, default
#        target/lama-etc-share).
# Build first: cargo build --release -p mrcache-cli
set -euo pipefail
cd "$(dirname "$0")/.."
POPULARITIES=${1:-"zipf:0.9 uniform"}
MRCACHE=${MRCACHE:-target/release/mrcache}
POLICY=${POLICY:-lama-mr:max_interval=1250000}
THREADS=${THREADS:-2}
OUT=${OUT:-target/lama-etc-share}
[ -x "$MRCACHE" ] || { echo "no $MRCACHE: cargo build --release -p mrcache-cli" >&2; exit 1; }
mkdir -p "$OUT"
for pop in $POPULARITIES; do
  json="$OUT/${pop//:/-}.json"
  "$MRCACHE" sim --memcached-defaults --workload "etc:objects=1750000,requests=12500000,popularity=$pop" \
    --sweep 64MiB..256MiB:64MiB --policy memcached --policy "$POLICY" --policy upper-bound \
    --window-requests 500000 --threads "$THREADS" --json -q > "$json"
  python3 - "$json" "$pop" "$POLICY" <<'PY'
import json, sys
path, pop, policy = sys.argv[1:]
by = {}
for r in json.load(open(path)):
    by.setdefault(r["policy"], {})[r["memory_bytes"] >> 20] = r
sizes = sorted(by["memcached"])
print(f"ETC {pop}, 1/4 scale, steady state | " + " | ".join(f"{m} MiB" for m in sizes))
for p in ("memcached", policy, "upper-bound"):
    print(f"{p} | " + " | ".join(f"{by[p][m]['steady_state_miss_ratio']:.4f}" for m in sizes))
print("page moves | " + " | ".join(str(by[policy][m]["page_moves"]) for m in sizes))
share = []
for m in sizes:
    mc, lama, ub = (by[p][m]["steady_state_miss_ratio"] for p in ("memcached", policy, "upper-bound"))
    share.append(f"{100 * (mc - lama) / (mc - ub):.1f}%")
print("share of the potential | " + " | ".join(share))
PY
done
