#!/usr/bin/env bash
# Server CPU time per request under a fixed open-loop rate, for mrcached's defaults and for a variant.
#
#   scripts/cpu-per-request.sh [-r RATE] [-n ROUNDS] [-- VARIANT FLAGS]
#
# Default variant: "-o mrc_sample_rate=0 --slab-policy memcached" (profiling and the rebalancer off).
# Below saturation the server's CPU seconds per request (utime + stime from /proc/PID/stat, 10 ms ticks)
# vary far less on a shared machine than peak throughput does. Server on core 0, load on core 1,
# 127.0.0.1 only; 100k keys of 32 bytes with 200-byte values preloaded, 90/10 get/set, 50 connections.
set -euo pipefail
cd "$(dirname "$0")/.."
rate=60000 rounds=4
while getopts "r:n:" opt; do
    case "$opt" in
        r) rate=$OPTARG ;; n) rounds=$OPTARG ;;
        *) echo "usage: $0 [-r RATE] [-n ROUNDS] [-- variant flags]" >&2; exit 64 ;;
    esac
done
shift $((OPTIND - 1))
variant=("$@")
[ ${#variant[@]} -eq 0 ] && variant=(-o mrc_sample_rate=0 --slab-policy memcached)
cargo build --release -q -p mrcache-server -p mrcache-cli
server_cpu=() client_cpu=()
if [ "$(nproc)" -ge 2 ] && command -v taskset >/dev/null; then
    server_cpu=(taskset -c 0) client_cpu=(taskset -c 1)
fi
log=$(mktemp)
pid=""
trap '[ -n "$pid" ] && kill "$pid" 2>/dev/null; rm -f "$log"' EXIT

measure() {
    "${server_cpu[@]}" target/release/mrcached -l 127.0.0.1 -p 0 -m 64 -t 1 "$@" > "$log" 2>&1 &
    pid=$!
    for _ in $(seq 1 200); do grep -q "listening on" "$log" && break; sleep 0.05; done
    local addr; addr=$(grep -o "listening on [0-9.:]*" "$log" | awk '{print $3}')
    local load=(--server "$addr" --threads 1 --connections 50 --keys 100000 --key-size 32 --value-size 200
        --get-ratio 0.9 --warmup 0s --json)
    "${client_cpu[@]}" target/release/mrcache bench "${load[@]}" --duration 1s --preload > /dev/null 2>&1
    local before; before=$(awk '{print $14 + $15}' "/proc/$pid/stat")
    local ops
    ops=$("${client_cpu[@]}" target/release/mrcache bench "${load[@]}" --duration 8s --rate "$rate" 2>/dev/null |
        /usr/bin/python3 -c 'import json,sys; print(json.load(sys.stdin)["ops"]["total"])')
    local after; after=$(awk '{print $14 + $15}' "/proc/$pid/stat")
    kill "$pid"; wait "$pid" 2>/dev/null || true
    pid=""
    /usr/bin/python3 -c "print(f'{($after - $before) * 1e4 / $ops:.3f}')"
}

echo "open loop at $rate requests/s; variant: ${variant[*]}"
printf '%-6s %22s %22s %8s\n' round default_cpu_us_per_req variant_cpu_us_per_req ratio
for round in $(seq 1 "$rounds"); do
    d=$(measure)
    v=$(measure "${variant[@]}")
    printf '%-6s %22s %22s %8s\n' "$round" "$d" "$v" "$(/usr/bin/python3 -c "print(f'{$d / $v:.3f}')")"
done
