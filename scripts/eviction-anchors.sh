#!/usr/bin/env bash
# Eviction anchors (issue 36): libCacheSim's fixed algorithms against `mrcache sim` at equal object capacity.
#
# For every shared trace (kv/*: cache2k-orm-busy, -orm-night, -web07, -web12, corda_vaultservice; and the
# block traces cloudPhysicsIO and arc-OLTP read as key traces), at 1/5/10/25% of the trace's distinct
# objects (N = floor(share x distinct)), with unit object sizes, this runs libCacheSim (PyPI `libcachesim`
# 0.3.5, in a virtualenv) LRU, FIFO, SIEVE, S3-FIFO, W-TinyLFU, 2Q, ARC, LIRS, LHD and Belady, each with the
# library's default parameters; and beside each cell `mrcache sim` replaying the same trace file through
# the real engine with one fixed value size at the same object capacity: the slab layout with the memcached
# policy, and the log layout with each of its rankings (lru, lfu, slru, density), under the simulator's
# default clock and under an exact clock (one logical second per request; env CLOCKS). Every request is a
# GET; a miss inserts the object (lookaside: `mrcache sim` SETs after a GET miss). Whole traces, no prefix.
#
# How "N objects" becomes memory (value size V, key size 16, `--override-sizes`):
#   Slab (`--policy memcached`): all items have one size, so they share one slab class, and that class's LRU
#     is the cache: exactly LRU of capacity P x c (P = pages of -m, c = chunks a page). memcached accounts an
#     item as 48 (header) + 8 (CAS) + key + 1 + 2 + V = 75 + V bytes. We pick a divisor P >= 2 of N
#     (`-I` <= -m/2 forces two pages), c = N/P, the smallest chunk S of the default -f 1.25 ladder with
#     c x S >= 1 MiB, and set -I = c x S (the page is max(1 MiB, -I)), V = S - 75, -m = P x page. The
#     capacity is then exactly N (c = 1 and 2 use the whole-page and half-page classes of a 1 MiB page).
#     Where N has no divisor that keeps -m <= 512 MiB (N prime: orm-busy 25% = 19087, corda 5% = 4523), the
#     nearest capacity that has one is used (N - 1: error -0.005% and -0.022%); web12 1% = 137 (prime) is
#     exact with 137 pages of one item. The script checks every slab cell: its final item count equals the
#     capacity and its miss ratio equals libCacheSim's LRU at that capacity, to the last digit.
#   Log (`--layout log --ranking R`): a record is 4 (prefix) + 28 (header) + key + V bytes, padded to 8, in
#     segments of one page; the budget is P = floor(-m / page) segments, plus one segment beside it that the
#     cleaner copies survivors into. We choose V so a record is exactly R = page / c bytes (-I = c x R >=
#     1 MiB), so every segment holds c items. In steady state, each time the head fills, a cleaning pass
#     takes the two oldest segments (2c items), keeps the c highest ranked and evicts c, its evictions paced
#     into the last 1/16 of the next head's filling: live items rise from (P-1)c to (P-1/16)c and fall back
#     every c insertions, a time mean of (P - 17/32)c (measured on web07: 0.57 +- 0.05 below P, 17/32 = 0.53
#     by the pacing rule). We set that mean to N: P within 25% of LOG_SEGMENTS (default 32, a 32 MiB server
#     of 1 MiB segments) and c minimising |(P - 17/32)c - N|. Exact equality is impossible, as the count is
#     never constant: the mean misses N by a few items (`capacity_error` in the CSV: at most 0.25%, 137.34
#     for 137), and the instantaneous count swings +-0.47c around it, +-1.5% of N at P = 32. P itself
#     matters a little: with
#     16, 32, 64 or 128 segments the best ranking's miss ratio moved by 0.2% on web07 at 10%, 3% on web12 at
#     5% and 0.1% on cloudPhysicsIO at 10%.
#   Clock: `mrcache sim` advances its logical clock one second per 100,000 requests (the default); access
#     times have one-second resolution as in memcached, so the `lru` and `slru` rankings see ties wherever
#     the cache turns over within a second (all these cells). The `@exact` runs add
#     `--requests-per-second 1`; the slab layout's LRU list is exact under either clock.
#
# Output (OUT_DIR, default docs/anchors): anchors.md (the table, the summary, the per-cell mapping),
# anchors.csv (one row per cell and engine), anchors.json (everything, with every mrcache command).
#
# Usage: scripts/eviction-anchors.sh [OUT_DIR]
#        scripts/eviction-anchors.sh --fixture [OUT_JSON] [--trace NAME] [--requests N] [--shares 5,10]
#            the suite's fixture (default crates/sim/tests/fixtures/anchors.json): libCacheSim's miss
#            ratios on the whole cache2k-web07 (76,118 requests) at 5% and 10% of its distinct objects, with
#            the mrcache configurations of the same capacity and the command that produced them
#        scripts/eviction-anchors.sh --sized-fixture [OUT_JSON] [--trace NAME] [--requests N] [--shares 50,75]
#            the default eviction's fixture (default crates/sim/tests/fixtures/default_eviction.json):
#            libCacheSim's miss ratios at equal bytes, each object the size of its log record with the ETC
#            value `mrcache sim` gives it, on arc-OLTP (914,145 requests) at 50% and 75% of the distinct
#            objects' bytes (needs cargo build --release -p mrcache-sim --example sized_trace)
#        scripts/eviction-anchors.sh --sized [--traces A,B] [--memories 10%,25%,50%,16MiB,32MiB]
#            a markdown table: libCacheSim at equal bytes (objects the size of their log records) beside
#            `mrcache sim`'s default (log), slab + memcached and slab + lama-mr, with the pages each held
#        scripts/eviction-anchors.sh --report [OUT_DIR]    rewrite anchors.md and .csv from anchors.json
#   env: VENV (virtualenv, default target/venv-anchors; made here, never committed), MRCACHE (default
#        target/release/mrcache), TRACES_DIR (default ../shared/traces), WORK (converted traces, default
#        target/eviction-anchors), LOG_SEGMENTS (32), SHARES ("1 5 10 25"), TRACES (names: cache2k-orm-busy
#        cache2k-orm-night cache2k-web07 cache2k-web12 corda_vaultservice cloudPhysicsIO arc-OLTP),
#        CLOCKS ("default exact").
# Runs on one core: about 7 minutes of CPU (10 minutes wall on a shared 2-core machine). Needs python3
# with venv (Debian: apt-get install python3-venv), zstd, and the binary: cargo build --release -p mrcache-cli
set -euo pipefail
cd "$(dirname "$0")/.."
VENV=${VENV:-target/venv-anchors}
MRCACHE=${MRCACHE:-target/release/mrcache}
export TRACES_DIR=${TRACES_DIR:-../shared/traces} WORK=${WORK:-target/eviction-anchors} MRCACHE
[ -x "$MRCACHE" ] || { echo "no $MRCACHE: cargo build --release -p mrcache-cli" >&2; exit 1; }
command -v zstd > /dev/null || { echo "zstd is needed to read arc-OLTP (apt-get install zstd)" >&2; exit 1; }
if ! "$VENV/bin/python" -c 'import libcachesim, numpy' 2> /dev/null; then
  python3 -m venv "$VENV" || { echo "python3 -m venv failed: apt-get install python3-venv" >&2; exit 1; }
  "$VENV/bin/pip" install --quiet 'libcachesim==0.3.5' numpy
fi
# One core: libCacheSim and mrcache sim run one at a time; keep BLAS and friends to one thread too.
export OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1
if [ "${1:-}" = "--fixture" ]; then
  out=${2:-crates/sim/tests/fixtures/anchors.json}
  exec "$VENV/bin/python" scripts/eviction_anchors.py fixture "$out" \
    --command "scripts/eviction-anchors.sh --fixture $out" "${@:3}"
fi
if [ "${1:-}" = "--sized-fixture" ]; then
  out=${2:-crates/sim/tests/fixtures/default_eviction.json}
  exec "$VENV/bin/python" scripts/eviction_anchors.py sized-fixture "$out" \
    --command "scripts/eviction-anchors.sh --sized-fixture $out" "${@:3}"
fi
if [ "${1:-}" = "--sized" ]; then
  exec "$VENV/bin/python" scripts/eviction_anchors.py sized "${@:2}"
fi
if [ "${1:-}" = "--report" ]; then
  exec "$VENV/bin/python" scripts/eviction_anchors.py report "${2:-docs/anchors}"
fi
exec "$VENV/bin/python" scripts/eviction_anchors.py run "${1:-docs/anchors}"
