#!/usr/bin/env bash
# The log layout's ghost (`mrcache sim --log-ghost on`) against the same ranking without it, on every
# shared trace at 10/25/50% of its distinct bytes and at 16/32 MiB (key-only traces get ETC value
# sizes, block traces keep theirs), in the simulator: deterministic. docs/results.md §15.7, recorded
# under the simulator's former defaults (memcached's accounting): --memcached-defaults.
#   scripts/log-ghost.sh [TRACES_DIR] [RANKING]      (RANKING: density, the default, lfu, slru, lru)
set -euo pipefail
cd "$(dirname "$0")/.."
TRACES_DIR=${1:-../shared/traces}
RANKING=${2:-density}
MRCACHE=${MRCACHE:-target/release/mrcache}
[ -x "$MRCACHE" ] || { echo "no $MRCACHE: cargo build --release -p mrcache-cli" >&2; exit 1; }
TRACES="kv/cache2k-orm-busy.trace.xz kv/cache2k-orm-night.trace.xz kv/cache2k-web07.trace.xz
kv/cache2k-web12.trace.xz kv/corda_vaultservice.trace.gz block/arc-OLTP.lis.zst
block/cloudPhysicsIO.oracleGeneral.bin"
miss_ratio() {
    "$MRCACHE" sim --memcached-defaults --trace "$1" --memory "$2" --value-size etc --layout log --ranking "$RANKING" \
        --log-ghost "$3" --json 2>/dev/null |
        python3 -c 'import json, sys; print("%.4f" % json.load(sys.stdin)["miss_ratio"])'
}
echo "| trace | memory | $RANKING | $RANKING + ghost | change |"
echo "|---|---:|---:|---:|---:|"
for t in $TRACES; do
    for m in 10% 25% 50% 16MiB 32MiB; do
        off=$(miss_ratio "$TRACES_DIR/$t" "$m" off)
        on=$(miss_ratio "$TRACES_DIR/$t" "$m" on)
        python3 -c "import sys; off, on = float(sys.argv[1]), float(sys.argv[2]); \
print('| %s | %s | %.4f | %.4f | %+.1f%% |' % (sys.argv[3], sys.argv[4], off, on, (on - off) / off * 100))" \
            "$off" "$on" "$(basename "$t" | cut -d. -f1)" "$m"
    done
done
