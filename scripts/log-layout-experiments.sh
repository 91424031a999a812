#!/usr/bin/env bash
# The log-structured layout against the slab layout in `mrcache sim`, at equal --memory
# (docs/results.md, "Log-structured memory"). Miss ratios are deterministic; run time is not measured.
# Every run takes --memcached-defaults (memcached's accounting, slab + memcached where no policy is
# named), the simulator's defaults when §15 was recorded.
#
#   scripts/log-layout-experiments.sh etc    [OUT_DIR]  ETC 1/4 scale sweep (section 7's sizes), uniform
#                                                       and Zipf 0.9: log vs slab+memcached, slab+lama-mr
#   scripts/log-layout-experiments.sh traces [OUT_DIR]  the shared real traces with ETC sizes (section 14's
#                                                       script): memcached, lama-mr (the default), log
#   scripts/log-layout-experiments.sh mpart  [OUT_DIR]  mPart's six applications at 1/20 scale, 90% WSS
#                                                       (section 12.1): mpart on slab pages vs on the log
#
# env: MRCACHE (binary, default target/release/mrcache), THREADS (default 2), SWEEP (etc's sizes,
#      default section 7's 32MiB..256MiB:32MiB), POPS (etc's popularities, default "uniform zipf:0.9"),
#      RANKING (the log cleaner's ranking for etc and mpart, default the server's default).
# Build first: cargo build --release -p mrcache-cli
set -euo pipefail
cd "$(dirname "$0")/.."
mrcache=${MRCACHE:-target/release/mrcache}
threads=${THREADS:-2}
[ -x "$mrcache" ] || { echo "no $mrcache: cargo build --release -p mrcache-cli" >&2; exit 1; }
what=${1:?etc, traces or mpart}
out=${2:-target/log-layout}
mkdir -p "$out"
case $what in
etc)
  for pop in ${POPS:-uniform zipf:0.9}; do
    name=${pop%%:*}
    "$mrcache" sim --memcached-defaults --workload "etc:objects=1750000,requests=12500000,popularity=$pop" \
      --sweep "${SWEEP:-32MiB..256MiB:32MiB}" --layout slab,log ${RANKING:+--ranking "$RANKING"} --policy memcached \
      --policy lama-mr:max_interval=1250000 --window-requests 500000 --threads "$threads" -q \
      --csv "$out/etc-$name.csv" > "$out/etc-$name.txt"
  done
  ;;
traces)
  POLICIES="memcached lama-mr log" JOBS=$threads scripts/real-trace-policies.sh ../shared/traces "$out/traces"  # TRACES=, SHARES= narrow it
  ;;
mpart)
  # scripts/tenant-experiments.sh's 90%-WSS setting at scale 20: 5M requests per application.
  scale=20 per_app=5000000 chunk=304
  total=$((per_app * 6))
  memory=$((25965000 * chunk / scale))
  tenants=""
  t=0
  for objs in 6273 3123 5508 3042 4752 3267; do
    initial=$((objs * 1000 * chunk / scale))
    tenants="$tenants --tenant $t:initial=$initial,reserved=$((initial / 2))"
    t=$((t + 1))
  done
  # shellcheck disable=SC2086
  "$mrcache" sim --memcached-defaults --workload "mpart-six:scale=$scale,requests=$per_app" --memory "$memory" \
    --window-requests $((total / 100)) --json $tenants --layout slab,log ${RANKING:+--ranking "$RANKING"} -q \
    --tenant-policy "mpart:interval=$((total / 50))" > "$out/mpart-six-wss90.jsonl"
  ;;
*) echo "unknown experiment $what" >&2; exit 1 ;;
esac
