#!/usr/bin/env bash
# Mean absolute error (MAE) of each sampled MRC method against the exact LRU curve, on every
# shared trace, at 10%, 1% and 0.1% sampling, over SEEDS sampler seeds: prints the Markdown
# table of docs/mrc-accuracy.md (mean ± standard deviation over seeds, the error of the
# seed-averaged curve, and the predicted noise floor).
# Usage: scripts/mrc-accuracy.sh [TRACES_DIR]   (default: ../shared/traces beside the repo)
# Environment: SEEDS (default 20), ADJUST (default regression; a comma list such as
# regression,shards-adj,scale-reuses,none adds one row per adjustment), RAW (a folder to keep
# each trace's raw `mrcache mrc --seeds` output in).
set -euo pipefail
cd "$(dirname "$0")/.."
traces="${1:-../shared/traces}"
seeds="${SEEDS:-20}"
adjust="${ADJUST:-regression}"
cargo build --release -q -p mrcache-cli
bin="${CARGO_TARGET_DIR:-target}/release/mrcache"
# file:reference-name
files=(kv/cache2k-web07.trace.xz:cache2k-web07 kv/cache2k-web12.trace.xz:cache2k-web12
       kv/cache2k-orm-busy.trace.xz:cache2k-orm-busy kv/cache2k-orm-night.trace.xz:cache2k-orm-night
       kv/corda_vaultservice.trace.gz:corda-vaultservice
       block/cloudPhysicsIO.oracleGeneral.bin:cloudPhysicsIO block/arc-OLTP.lis.zst:arc-OLTP)
echo "| trace | rate | keys sampled (effective) | method | adjust | MAE log grid | MAE log ≥ 1/rate | MAE linear grid | seed-mean curve MAE (log / linear) | noise floor (log / linear) |"
echo "|---|---|---|---|---|---|---|---|---|---|"
for entry in "${files[@]}"; do
  file="${entry%%:*}"
  name="${entry##*:}"
  out=$("$bin" mrc --trace "$traces/$file" --method footprint,aet,shards --rate 0.1,0.01,0.001 \
          --adjust "$adjust" --seeds "$seeds" --reference "$traces/reference/$name.lru-mrc.csv")
  if [[ -n "${RAW:-}" ]]; then mkdir -p "$RAW" && printf '%s\n' "$out" >"$RAW/$name.txt"; fi
  printf '%s\n' "$out" | awk -v name="$name" '
    function kv(line,   n, i, parts, at) {
      delete f; n = split(line, parts, " ")
      for (i = 2; i <= n; i++) if ((at = index(parts[i], "=")) > 0)
        f[substr(parts[i], 1, at - 1)] = substr(parts[i], at + 1)
    }
    function grid_of(g, rate) {
      if (g == "log" || g == "linear") return g
      if (g == sprintf("log>=1/%d", 1 / rate + 0.5)) return "resolved"
      return ""
    }
    /^floor/ {
      kv($0); g = grid_of(f["grid"], f["rate"]); if (g == "") next
      floor_[f["rate"], g] = f["regression"]
      keys[f["rate"]] = sprintf("%d (%.1f)", f["sampled_keys"], f["effective_keys"])
    }
    /^mae/ {
      kv($0); g = grid_of(f["grid"], f["rate"]); if (g == "") next
      id = f["rate"] SUBSEP f["method"] SUBSEP f["adjust"]
      if (!(id in seen)) { seen[id] = 1; order[++count] = id }
      cell[id, g] = sprintf("%.4f ± %.4f", f["mean"], f["sd"])
      bias[id, g] = sprintf("%.4f", f["bias_mae"])
    }
    END {
      for (i = 1; i <= count; i++) {
        id = order[i]; split(id, k, SUBSEP)
        printf "| %s | %s | %s | %s | %s | %s | %s | %s | %s / %s | %.4f / %.4f |\n", \
          name, k[1], keys[k[1]], k[2], k[3], cell[id, "log"], cell[id, "resolved"], \
          cell[id, "linear"], bias[id, "log"], bias[id, "linear"], \
          floor_[k[1], "log"], floor_[k[1], "linear"]
      }
    }'
done
