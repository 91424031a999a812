#!/usr/bin/env bash
# The dynamic oracle against the fixed upper bound (docs/results.md §14.2). Every run takes
# --memcached-defaults (slab layout, memcached's accounting, profilers at 10% of the memory), the
# simulator's defaults when §14.2 was recorded.
#
# Runs memcached, upper-bound, oracle (the dynamic oracle, default window and horizon) and lama-mr on
#   - the shared real traces: cache2k-orm-busy and -orm-night at 10/25/50% of their distinct-object
#     bytes, cloudPhysicsIO at 10/25/50% (the sim flags of scripts/real-trace-policies.sh: ETC value
#     sizes, lookaside, --window-requests 1000000);
#   - the three-phase workload of §8 and the ETC 1/4-scale sweep of §7 at 64-256 MiB, uniform (`etc`)
#     and Zipf 0.9 (`etc-zipf`) popularity (500k-request windows; lama-mr with max_interval=1250000, as
#     there);
# and prints one table per group: each policy's miss ratio (an oracle's page moves in brackets), each
# oracle's model miss ratio (the sum of every window's best misses by the exact curves), and lama-mr's
# share of the potential against the fixed bound and against the best oracle run:
# (memcached - lama) / (memcached - bound). POLICIES may name several oracles, clairvoyant
# (oracle:window=100000 ...) and online (oracle:window=100000,past=2: each allocation from the exact
# curves of the windows before it only; its "model" column is still the clairvoyant per-window best).
#
# Usage: scripts/oracle-bound.sh [OUT_DIR]
#   env: MRCACHE (binary, default target/release/mrcache), TRACES_DIR (default ../shared/traces),
#        SETS (default "traces three-phase etc"; also etc-zipf), POLICIES (default "memcached upper-bound oracle
#        lama-mr"; the synthetic groups use lama-mr:max_interval=1250000 for lama-mr), JOBS (default 2).
# Build first: cargo build --release -p mrcache-cli
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=${1:-target/oracle-bound}
MRCACHE=${MRCACHE:-target/release/mrcache}
TRACES_DIR=${TRACES_DIR:-../shared/traces}
GROUPS_RUN=${SETS:-"traces three-phase etc"}
POLICIES=${POLICIES:-"memcached upper-bound oracle lama-mr"}
JOBS=${JOBS:-2}
[ -x "$MRCACHE" ] || { echo "no $MRCACHE: cargo build --release -p mrcache-cli" >&2; exit 1; }
mkdir -p "$OUT"
THREE_PHASE="three-phase:objects=500000,requests=12000000,popularity1=zipf:0.9,popularity2=zipf:0.9,value_size1=etc,value_size2=1000-4000"
ETC="etc:objects=1750000,requests=12500000,popularity=uniform"
ETC_ZIPF="etc:objects=1750000,requests=12500000,popularity=zipf:0.9"
jobs_file="$OUT/jobs"
: > "$jobs_file"
# One job per cell: all its policies in one command, so that one exact pass serves `--memory P%`,
# the upper bound and the oracle (the ETC sizes run as one sweep, which shares the pass too).
pols=$(echo $POLICIES | tr ' ' ',')
for g in $GROUPS_RUN; do
  case $g in
    traces)
      for cell in "kv/cache2k-orm-busy.trace.xz 10" "kv/cache2k-orm-busy.trace.xz 25" \
        "kv/cache2k-orm-busy.trace.xz 50" "kv/cache2k-orm-night.trace.xz 10" \
        "kv/cache2k-orm-night.trace.xz 25" "kv/cache2k-orm-night.trace.xz 50" \
        "block/cloudPhysicsIO.oracleGeneral.bin 10" "block/cloudPhysicsIO.oracleGeneral.bin 25" \
        "block/cloudPhysicsIO.oracleGeneral.bin 50"; do
        echo "trace $cell $pols" >> "$jobs_file"
      done ;;
    three-phase) echo "three-phase - 64MiB $pols" >> "$jobs_file" ;;
    etc) echo "etc - 64MiB..256MiB:64MiB $pols" >> "$jobs_file" ;;
    etc-zipf) echo "etc-zipf - 64MiB..256MiB:64MiB $pols" >> "$jobs_file" ;;
    *) echo "unknown set $g" >&2; exit 1 ;;
  esac
done
run_one() {
  local group=$1 trace=$2 size=$3 pols=$4
  local name out
  name=$group
  [ "$group" = trace ] && name=$(basename "$trace" | cut -d. -f1)
  out="$OUT/$name-${size//[:.]/_}.json"
  [ -s "$out" ] && return 0
  local synth=${pols//lama-mr/lama-mr:max_interval=1250000}
  case $group in
    trace) "$MRCACHE" sim --memcached-defaults --trace "$TRACES_DIR/$trace" --memory "$size%" --value-size etc \
             --policy "$pols" --json -q > "$out.tmp" 2> "$out.err" ;;
    three-phase) "$MRCACHE" sim --memcached-defaults --workload "$THREE_PHASE" --memory "$size" --policy "$synth" \
             --window-requests 500000 --json -q > "$out.tmp" 2> "$out.err" ;;
    etc | etc-zipf)
      local workload=$ETC
      [ "$group" = etc-zipf ] && workload=$ETC_ZIPF
      "$MRCACHE" sim --memcached-defaults --workload "$workload" --sweep "$size" --policy "$synth" \
             --window-requests 500000 --threads 2 --json -q > "$out.tmp" 2> "$out.err" ;;
  esac
  mv "$out.tmp" "$out"
}
export -f run_one
export OUT TRACES_DIR MRCACHE THREE_PHASE ETC ETC_ZIPF
xargs -P "$JOBS" -L 1 bash -c 'run_one "$@"' _ < "$jobs_file"
python3 - "$OUT" "$jobs_file" <<'PY'
import json, sys, os, collections
out, jobs = sys.argv[1], sys.argv[2]
rows = collections.OrderedDict()
policies = []
def column(policy):  # lama-mr's interval cap is the synthetic runs' setting, not a column of its own
    return "lama-mr" if policy.startswith("lama-mr") else policy

for line in open(jobs):
    group, trace, size, pols = line.split()
    name = group if group != "trace" else os.path.basename(trace).split('.')[0]
    path = f"{out}/{name}-{size.replace(':', '_').replace('.', '_')}.json"
    text = open(path).read().strip()
    if group.startswith("etc"):  # one sweep: a JSON array of points, each (policy, memory)
        for pt in json.loads(text):
            p = column(pt["policy"])
            mib = pt["memory_bytes"] >> 20
            pt["steady"] = pt["steady_state_miss_ratio"]
            rows.setdefault((group, name, f"{mib}MiB"), {})[p] = pt
            if p not in policies:
                policies.append(p)
        continue
    for l in text.splitlines():
        r = json.loads(l)
        p = column(r["policy"])
        rows.setdefault((group, name, size), {})[p] = r
        if p not in policies:
            policies.append(p)

def steady(r):  # the sweep's steady state: the last half of the windows
    return r["steady"]

def phases(r):  # three equal phases of the run, by windows
    w = r["windows"]; k = len(w) // 3
    out = []
    for i in range(3):
        part = w[i * k:(i + 1) * k] if i < 2 else w[2 * k:]
        g = sum(x["gets"] for x in part); m = sum(x["misses"] for x in part)
        out.append(m / g if g else 0.0)
    return out

def share(memc, lama, bound):
    return "-" if memc - bound <= 1e-12 else f"{(memc - lama) / (memc - bound):.1%}"

last = None
for (group, name, size), by in rows.items():
    if group != last:
        last = group
        measure = {"trace": "whole-run miss ratio", "etc": "steady-state miss ratio (last half)",
                   "etc-zipf": "steady-state miss ratio (last half)",
                   "three-phase": "whole-run miss ratio; phases 1/2/3"}[group]
        print(f"\n{group}: {measure}\n")
        oracles = [p for p in policies if p.startswith("oracle")]
        model = " model, whole run" if group.startswith("etc") else " model"
        head = ["cell"] + policies + [p + model for p in oracles] + [
            "lama share (fixed)", "lama share (best oracle)"]
        print("| " + " | ".join(head) + " |")
        print("|" + "---|" * len(head))
    f = steady if group.startswith("etc") else (lambda r: r["miss_ratio"])
    mib = next(iter(by.values()))["memory_bytes"] / 2**20
    cells = [f"{name} {size}" + (f"% ({mib:.1f} MiB)" if group == "trace" else "")]
    for p in policies:
        c = f"{f(by[p]):.4f}"
        if p.startswith("oracle"):
            c += f" [{by[p]['page_moves']}]"
        if group == "three-phase":
            c += " (" + " / ".join(f"{x:.4f}" for x in phases(by[p])) + ")"
        cells.append(c)
    for p in oracles:
        o = by.get(p)
        c = f"{o['model_miss_ratio']:.4f}" if o and o.get("model_miss_ratio") is not None else "-"
        if o and group.startswith("etc"):  # the model is over the whole run: beside the replay's whole run
            c += f" (replay {o['miss_ratio']:.4f})"
        cells.append(c)
    ran = [by[p] for p in oracles if p in by]
    o = min(ran, key=f) if ran else None
    m, l = by.get("memcached"), by.get("lama-mr")
    ub = by.get("upper-bound")
    cells.append(share(f(m), f(l), f(ub)) if m and l and ub else "-")
    cells.append(share(f(m), f(l), f(o)) if m and l and o else "-")
    print("| " + " | ".join(cells) + " |")
PY
