#!/usr/bin/env bash
# Mean absolute error of each sampled MRC method against the exact LRU curve, on every shared
# trace, at 10%, 1% and 0.1% sampling: prints the Markdown table of docs/mrc-accuracy.md.
# Usage: scripts/mrc-accuracy.sh [TRACES_DIR]   (default: ../shared/traces beside the repo)
set -euo pipefail
cd "$(dirname "$0")/.."
traces="${1:-../shared/traces}"
cargo build --release -q -p mrcache-cli
bin="${CARGO_TARGET_DIR:-target}/release/mrcache"
files=(kv/cache2k-web07.trace.xz kv/cache2k-web12.trace.xz kv/cache2k-orm-busy.trace.xz
       kv/cache2k-orm-night.trace.xz kv/corda_vaultservice.trace.gz
       block/cloudPhysicsIO.oracleGeneral.bin block/arc-OLTP.lis.zst)
echo "| trace | rate | footprint MAE | AET MAE | SHARDS MAE |"
echo "|---|---|---|---|---|"
for file in "${files[@]}"; do
  for rate in 0.1 0.01 0.001; do
    # Lines "# method=NAME ... mae_vs_exact=E", in the order footprint, aet, shards.
    errors=$("$bin" mrc --trace "$traces/$file" --method footprint,aet,shards --rate "$rate" \
               --compare-exact | sed -n 's/^# method=.* mae_vs_exact=\([0-9.]*\)$/\1/p' | paste -sd'|')
    echo "| $(basename "$file") | $rate | ${errors//|/ | } |"
  done
done
