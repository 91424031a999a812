#!/usr/bin/env bash
# The spread of a slab policy's miss ratio over the ETC value-size seed on one real trace
# (docs/results.md §14, "Why orm-busy at 10% and 25% moved"). `--seed` draws each key's ETC value
# size, so each seed is the same key sequence with another class mix; a policy whose result hinges on
# when one page moves shows it as a spread between seeds.
#
# Usage: scripts/lama-seed-spread.sh [TRACE] [SHARES] [SEEDS]
#   defaults: kv/cache2k-orm-busy.trace.xz, "10% 25% 50%", "1 2 3 4 5 6"
#   env: MRCACHE (binary, default target/release/mrcache), POLICY (default lama-mr),
#        TRACES_DIR (default ../shared/traces), JOBS (parallel runs, default 2), SIM_FLAGS (more
#        `mrcache sim` flags for every run, e.g. "--mrc-memory-share 0.01": the server's profile memory;
#        every run starts from --memcached-defaults, the simulator's defaults when §14 was recorded).
# Prints one line per share and seed (memcached, the policy, their relative difference) and the mean.
# Build first: cargo build --release -p mrcache-cli
set -euo pipefail
cd "$(dirname "$0")/.."
TRACE=${1:-kv/cache2k-orm-busy.trace.xz}
SHARES=${2:-"10% 25% 50%"}
SEEDS=${3:-"1 2 3 4 5 6"}
MRCACHE=${MRCACHE:-target/release/mrcache}
POLICY=${POLICY:-lama-mr}
TRACES_DIR=${TRACES_DIR:-../shared/traces}
JOBS=${JOBS:-2}
[ -x "$MRCACHE" ] || { echo "no $MRCACHE: cargo build --release -p mrcache-cli" >&2; exit 1; }
[ -f "$TRACES_DIR/$TRACE" ] || { echo "missing $TRACES_DIR/$TRACE" >&2; exit 1; }
run_one() {
  local share=$1 seed=$2 policy=$3
  local line
  # shellcheck disable=SC2086 # SIM_FLAGS is split into words on purpose
  line=$("$MRCACHE" sim --memcached-defaults --trace "$TRACES_DIR/$TRACE" --memory "$share" --value-size etc --seed "$seed" \
    --policy "$policy" $SIM_FLAGS --json 2>/dev/null)
  python3 -c 'import json,sys; r=json.loads(sys.argv[1]); print(sys.argv[2], sys.argv[3], sys.argv[4], r["miss_ratio"], r["page_moves"])' \
    "$line" "$share" "$seed" "$policy"
}
export -f run_one
SIM_FLAGS=${SIM_FLAGS:-}
export MRCACHE TRACES_DIR TRACE SIM_FLAGS
for s in $SHARES; do for seed in $SEEDS; do for p in memcached "$POLICY"; do echo "$s $seed $p"; done; done; done |
  xargs -P "$JOBS" -L 1 bash -c 'run_one "$@"' _ |
  python3 -c '
import sys, collections
policy = sys.argv[1]
r = {}
for line in sys.stdin:
    share, seed, p, mr, moves = line.split()
    r[(share, seed, p)] = (float(mr), int(moves))
shares = list(dict.fromkeys(k[0] for k in r))
seeds = sorted({k[1] for k in r}, key=int)
print(f"| share | seed | memcached | {policy} | moves | relative |")
print("|---|---:|---:|---:|---:|---:|")
for s in shares:
    rel = []
    for seed in seeds:
        m, _ = r[(s, seed, "memcached")]
        l, moves = r[(s, seed, policy)]
        rel.append(l / m - 1)
        print(f"| {s} | {seed} | {m:.4f} | {l:.4f} | {moves} | {l / m - 1:+.1%} |")
    print(f"| {s} | mean | | | | {sum(rel) / len(rel):+.1%} |")
' "$POLICY"
