#!/usr/bin/env bash
# Bytes of RSS per cached item, memcached and mrcached side by side in one run (docs/results.md §6).
#
#   scripts/rss-per-item.sh [-m MB] [-t THREADS] [-k KEYS] [-n] [-- extra mrcached -o options ...]
#
# Each server is started on 127.0.0.1 with the same -m and -t, filled past -m with KEYS distinct 32-byte
# keys and Facebook ETC values (`mrcache bench --keys KEYS --value-size etc --preload`), then measured:
# VmRSS from /proc/PID/status and curr_items from `stats`. One mrcached row per configuration: the
# default, then `-o shards=1`, then one row per extra argument (each an -o option list, e.g.
# `item_accounting=memcached`). -n skips the build. Servers are stopped on exit.
set -euo pipefail
cd "$(dirname "$0")/.."

memory=256 threads=2 keys=2500000 build=1
while getopts "m:t:k:n" opt; do
    case "$opt" in
        m) memory=$OPTARG ;; t) threads=$OPTARG ;; k) keys=$OPTARG ;; n) build=0 ;;
        *) echo "usage: $0 [-m MB] [-t THREADS] [-k KEYS] [-n] [-- mrcached -o options ...]" >&2; exit 64 ;;
    esac
done
shift $((OPTIND - 1))

command -v memcached >/dev/null || { echo "memcached not installed (apt-get install memcached)" >&2; exit 1; }
target=${CARGO_TARGET_DIR:-target}
[ "$build" -eq 1 ] && cargo build --release -q -p mrcache-server -p mrcache-cli
mrcached=$target/release/mrcached
mrcache=$target/release/mrcache

pid=
cleanup() { [ -n "$pid" ] && kill "$pid" 2>/dev/null || true; }
trap cleanup EXIT

# shellcheck source=scripts/lib/ports.sh
. scripts/lib/ports.sh  # the script runs from the repository root
bench_placement  # only user_flag: both servers run unpinned here

# `stats` NAME of the server on port $1.
stat() { server_stats "$1" | awk -v name="$2" '$1 == name {print $2}'; }

# Fills the server on port $2 (process $3) and prints one table row named $1.
measure() {
    local name=$1 port=$2
    "$mrcache" bench --server "127.0.0.1:$port" --keys "$keys" --value-size etc --preload \
        --preload-timeout 300s >/dev/null 2>&1
    local rss_kb items
    rss_kb=$(awk '/^VmRSS:/ {print $2}' "/proc/$pid/status")
    items=$(stat "$port" curr_items)
    /usr/bin/python3 -c 'import sys; n, rss, items = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]);
print(f"| {n} | {rss:,} kB | {items:,} | {rss * 1024 // items} |")' "$name" "$rss_kb" "$items"
    kill "$pid"
    wait "$pid" 2>/dev/null || true
    pid=
}

run_memcached() {
    local port
    port=$(free_port)
    memcached "${user_flag[@]}" -U 0 -l 127.0.0.1 -p "$port" -m "$memory" -t "$threads" &
    pid=$!
    wait_port "$port"
    measure "memcached $(memcached -V | awk '{print $2}')" "$port"
}

# mrcached on an ephemeral port (-p 0): the port comes from its `listening on ADDR` line.
run_mrcached() {
    local name=$1 log port
    shift
    log=$(mktemp)
    "$mrcached" "${user_flag[@]}" -l 127.0.0.1 -p 0 -m "$memory" -t "$threads" "$@" >"$log" 2>&1 &
    pid=$!
    for _ in $(seq 1 200); do
        port=$(sed -n 's/.*listening on [^ ]*:\([0-9]*\).*/\1/p' "$log" | head -1)
        [ -n "$port" ] && break
        sleep 0.05
    done
    rm -f "$log"
    [ -n "$port" ] || { echo "mrcached did not start" >&2; return 1; }
    measure "$name" "$port"
}

echo "-m $memory -t $threads; filled with: mrcache bench --keys $keys --value-size etc --preload"
echo
echo "| server | RSS | items | bytes of RSS per item |"
echo "|---|---:|---:|---:|"
run_memcached
run_mrcached "mrcached (default)"
run_mrcached "mrcached \`-o shards=1\`" -o shards=1
for opts in "$@"; do
    run_mrcached "mrcached \`-o $opts\`" -o "$opts"
done
