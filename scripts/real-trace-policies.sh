#!/usr/bin/env bash
# Slab policies on the shared real traces (docs/results.md, "Slab policies on real traces").
#
# Replays every real trace through `mrcache sim` at 10%, 25% and 50% of the trace's distinct-object
# bytes under memcached's accounting (`--memory P%`: every distinct item in its slab chunk, from a
# first exact pass), with each slab policy, and prints one table: miss ratio per policy, the default
# (lama-mr) against the best baseline and against memcached, and the upper bound's potential. Every
# run takes --memcached-defaults (memcached's accounting, profilers at 10% of the memory), the
# simulator's defaults when §14 was recorded.
# Key-only traces (kv/*) get ETC value sizes and the lookaside pattern (a GET miss is followed by a SET,
# which `mrcache sim` always does); the block traces keep their own object sizes.
#
# Usage: scripts/real-trace-policies.sh [TRACES_DIR] [OUT_DIR]
#   env: MRCACHE (binary, default target/release/mrcache), JOBS (parallel runs, default 2),
#        POLICIES (`log` runs the log-structured layout, `log:density` it with that ranking,
#        `log:clock:0.1` with a ranking and a probationary share, `choose:density,clock+p` the log
#        with its policy chooser over those candidates), SHARES (default "10 25 50"; an entry with a unit, e.g. 32MiB, is a fixed size), TRACES (file names under TRACES_DIR, space-separated).
# Build first: cargo build --release -p mrcache-cli
set -euo pipefail
cd "$(dirname "$0")/.."
TRACES_DIR=${1:-../shared/traces}
OUT=${2:-target/real-trace-policies}
MRCACHE=${MRCACHE:-target/release/mrcache}
JOBS=${JOBS:-2}
POLICIES=${POLICIES:-"memcached automove psa facebook twemcache lama-mr upper-bound"}
SHARES=${SHARES:-"10 25 50"}
TRACES=${TRACES:-"kv/cache2k-orm-busy.trace.xz kv/cache2k-orm-night.trace.xz kv/cache2k-web07.trace.xz
kv/cache2k-web12.trace.xz kv/corda_vaultservice.trace.gz block/arc-OLTP.lis.zst
block/cloudPhysicsIO.oracleGeneral.bin"}
[ -x "$MRCACHE" ] || { echo "no $MRCACHE: cargo build --release -p mrcache-cli" >&2; exit 1; }
mkdir -p "$OUT"
jobs_file="$OUT/jobs"
: > "$jobs_file"
for t in $TRACES; do
  [ -f "$TRACES_DIR/$t" ] || { echo "missing $TRACES_DIR/$t" >&2; exit 1; }
  for s in $SHARES; do
    for p in $POLICIES; do
      echo "$t $s $p" >> "$jobs_file"
    done
  done
done
run_one() {
  local t=$1 s=$2 p=$3
  local name
  name=$(basename "$t" | cut -d. -f1)
  local out="$OUT/$name-$s-$p.json"
  [ -s "$out" ] && return 0
  local memory=$s
  case "$s" in *[A-Za-z]*) ;; *) memory="$s%" ;; esac
  # `log` is the log-structured layout (its runs take no slab policy), `log:RANKING` it with a ranking.
  local run=(--policy "$p")
  case "$p" in
  log) run=(--layout log) ;;
  choose:*) run=(--layout log --log-choose "${p#choose:}") ;;
  log:*:*) run=(--layout log --ranking "$(echo "$p" | cut -d: -f2)" --log-probation "${p##*:}") ;;
  log:*) run=(--layout log --ranking "${p#log:}") ;;
  esac
  "$MRCACHE" sim --memcached-defaults --trace "$TRACES_DIR/$t" --memory "$memory" --value-size etc "${run[@]}" --json \
    > "$out.tmp" 2> "$OUT/$name-$s-$p.err"
  mv "$out.tmp" "$out"
}
export -f run_one
export OUT TRACES_DIR MRCACHE
xargs -P "$JOBS" -L 1 bash -c 'run_one "$@"' _ < "$jobs_file"
python3 - "$OUT" "$jobs_file" <<'PY'
import json, sys, os, collections
out, jobs = sys.argv[1], sys.argv[2]
rows = collections.OrderedDict()
policies = []
for line in open(jobs):
    t, s, p = line.split()
    name = os.path.basename(t).split('.')[0]
    r = json.load(open(f"{out}/{name}-{s}-{p}.json"))
    rows.setdefault((name, s), {})[p] = r
    if p not in policies:
        policies.append(p)
baselines = [p for p in ("memcached", "automove", "psa", "facebook", "twemcache") if p in policies]
head = ["trace", "share", "MiB"] + policies + ["best base", "lama/best", "lama/memc", "ub/memc", "moves"]
print("| " + " | ".join(head) + " |")
print("|" + "---|" * len(head))
for (name, s), by in rows.items():
    any_r = next(iter(by.values()))
    cells = [name, s if any(c.isalpha() for c in s) else s + "%", f"{any_r['memory_bytes'] / 2**20:.1f}"]
    cells += [f"{by[p]['miss_ratio']:.4f}" for p in policies]
    best = min(baselines, key=lambda p: by[p]["miss_ratio"]) if baselines else None
    lama = by.get("lama-mr")
    rel = lambda a, b: "-" if b == 0 else f"{a / b - 1:+.1%}"
    cells.append(best or "-")
    cells.append(rel(lama["miss_ratio"], by[best]["miss_ratio"]) if lama and best else "-")
    cells.append(rel(lama["miss_ratio"], by["memcached"]["miss_ratio"]) if lama and "memcached" in by else "-")
    ub = by.get("upper-bound")
    cells.append(rel(ub["miss_ratio"], by["memcached"]["miss_ratio"]) if ub and "memcached" in by else "-")
    cells.append(str(lama["page_moves"]) if lama else "-")
    print("| " + " | ".join(cells) + " |")
PY
