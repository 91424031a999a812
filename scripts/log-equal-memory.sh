#!/usr/bin/env bash
# The log layout against slab + the default slab policy at equal *held* memory (docs/results.md §15.3).
#
# At small shares of the small traces the slab layout holds far more than `--memory`: memcached's rule
# gives every class in use its first page even beyond the limit, and the slab layout keeps that rule.
# The log takes at most one segment per pool beyond the limit. So, for each trace and share, this runs
# slab + lama-mr at the share, reads the most pages it held in any window, and runs the log at that
# many MiB, beside the log at the share itself. Every run takes --memcached-defaults (memcached's
# accounting, profilers at 10% of the memory), the simulator's defaults when §15.3 was recorded.
#
# Usage: scripts/log-equal-memory.sh [TRACES_DIR] [OUT_DIR]
#   env: MRCACHE (binary, default target/release/mrcache), SHARES (default "10 25 50"), TRACES (file names
#        under TRACES_DIR; default the five key-only traces), RANKING (the log's, default its default).
# Build first: cargo build --release -p mrcache-cli
set -euo pipefail
cd "$(dirname "$0")/.."
TRACES_DIR=${1:-../shared/traces}
OUT=${2:-target/log-equal-memory}
MRCACHE=${MRCACHE:-target/release/mrcache}
SHARES=${SHARES:-"10 25 50"}
TRACES=${TRACES:-"kv/cache2k-orm-busy.trace.xz kv/cache2k-orm-night.trace.xz kv/cache2k-web07.trace.xz
kv/cache2k-web12.trace.xz kv/corda_vaultservice.trace.gz"}
[ -x "$MRCACHE" ] || { echo "no $MRCACHE: cargo build --release -p mrcache-cli" >&2; exit 1; }
mkdir -p "$OUT"
ranking=()
[ -n "${RANKING:-}" ] && ranking=(--ranking "$RANKING")
sim() { "$MRCACHE" sim --memcached-defaults --trace "$TRACES_DIR/$1" --value-size etc --json "${@:2}"; }
peak_pages() { python3 -c 'import json,sys; r=json.load(open(sys.argv[1])); print(max(sum(w["pages"]) for w in r["windows"]))' "$1"; }
miss() { python3 -c 'import json,sys; print("%.4f" % json.load(open(sys.argv[1]))["miss_ratio"])' "$1"; }
echo "| trace | share | -m MiB | slab pages held | lama-mr | log at -m | log at the slab's held MiB | log vs lama-mr, equal held memory |"
echo "|---|---:|---:|---:|---:|---:|---:|---:|"
for t in $TRACES; do
  [ -f "$TRACES_DIR/$t" ] || { echo "missing $TRACES_DIR/$t" >&2; exit 1; }
  name=$(basename "$t" | cut -d. -f1)
  for s in $SHARES; do
    slab="$OUT/$name-$s-lama-mr.json" log="$OUT/$name-$s-log.json"
    sim "$t" --memory "$s%" --policy lama-mr > "$slab"
    sim "$t" --memory "$s%" --layout log "${ranking[@]}" > "$log"
    pages=$(peak_pages "$slab")
    held="$OUT/$name-$s-log-${pages}MiB.json"
    sim "$t" --memory "${pages}MiB" --layout log "${ranking[@]}" > "$held"
    python3 - "$name" "$s" "$slab" "$log" "$held" "$pages" <<'PY'
import json, sys
name, share, slab, log, held, pages = sys.argv[1:]
s, l, h = (json.load(open(p)) for p in (slab, log, held))
rel = h["miss_ratio"] / s["miss_ratio"] - 1 if s["miss_ratio"] else 0.0
print(f"| {name} | {share}% | {s['memory_bytes'] / 2**20:.1f} | {pages} | {s['miss_ratio']:.4f} | "
      f"{l['miss_ratio']:.4f} | {h['miss_ratio']:.4f} | {rel:+.1%} |")
PY
  done
done
