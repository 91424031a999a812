#!/usr/bin/env bash
# Server CPU time per request under a fixed open-loop rate: mrcached's defaults against a variant.
#
#   scripts/cpu-per-request.sh [-r RATE] [-n ROUNDS] [-t THREADS] [-k KEYS] [-v VALUE_SIZE] [-z POPULARITY]
#                              [-- VARIANT]
#
# VARIANT is one of
#   (nothing)                 mrcached with "-o memory_layout=slab,mrc_sample_rate=0 --slab-policy memcached" (profiling and
#                             the rebalancer off)
#   memcached                 Debian's memcached with the same -m and -t
#   bin=PATH [FLAGS...]       another mrcached binary (e.g. an older build), with FLAGS
#   FLAGS...                  mrcached with these flags
# Below saturation the server's CPU seconds per request (utime + stime from /proc/PID/stat over the gets
# and sets it served, see scripts/lib/ports.sh)
# vary far less on a shared machine than peak throughput does, and at saturation the server's peak is
# about 1 / (CPU per request). Server on core 0, load on core 1, 127.0.0.1 only; KEYS (default 100k) keys
# of 32 bytes with 200-byte values (VALUE_SIZE: any `mrcache bench --value-size`, e.g. etc) preloaded,
# 90/10 get/set, keys drawn uniformly (POPULARITY: any `--popularity`, e.g. zipf:0.9), 50 connections,
# one request in flight per connection. A few hundred keys fit the profilers' key bound, so every access
# is profiled: the worst case for profiling. Many keys of ETC sizes (-k 1000000 -v etc) do not fit -m 64:
# sets evict in every class, LAMA's rounds move pages among them, and paced moves are granted pages
# taken on that eviction path: the worst case for the rebalancer.
set -euo pipefail
cd "$(dirname "$0")/.."
rate=60000 rounds=4 threads=1 keys=100000 value_size=200 popularity=uniform
while getopts "r:n:t:k:v:z:" opt; do
    case "$opt" in
        r) rate=$OPTARG ;; n) rounds=$OPTARG ;; t) threads=$OPTARG ;; k) keys=$OPTARG ;;
        v) value_size=$OPTARG ;; z) popularity=$OPTARG ;;
        *) echo "usage: $0 [-r RATE] [-n ROUNDS] [-t THREADS] [-k KEYS] [-v VALUE_SIZE] [-z POPULARITY]" \
               "[-- memcached | bin=PATH [flags] | flags]" >&2
           exit 64 ;;
    esac
done
shift $((OPTIND - 1))
variant=("$@")
[ ${#variant[@]} -eq 0 ] && variant=(-o memory_layout=slab,mrc_sample_rate=0 --slab-policy memcached)
cargo build --release -q -p mrcache-server -p mrcache-cli
# shellcheck source=scripts/lib/ports.sh
. scripts/lib/ports.sh
bench_placement
pid=""
trap '[ -n "$pid" ] && kill "$pid" 2>/dev/null' EXIT

# Starts the server named by the arguments (as VARIANT above, or none for the default mrcached) on a
# free port, loads it, and prints its CPU microseconds per request.
measure() {
    local port; port=$(free_port)
    local common=(-l 127.0.0.1 -p "$port" -m 64 -t "$threads")
    local first=${1:-}
    if [ "$first" = memcached ]; then
        "${server_cpu[@]}" memcached "${user_flag[@]}" -U 0 "${common[@]}" &
    elif [ "${first#bin=}" != "$first" ]; then
        local bin=${first#bin=}
        shift
        "${server_cpu[@]}" "$bin" "${common[@]}" "$@" > /dev/null 2>&1 &
    else
        "${server_cpu[@]}" target/release/mrcached "${user_flag[@]}" "${common[@]}" "$@" > /dev/null 2>&1 &
    fi
    pid=$!
    wait_port "$port"
    local load=(--server "127.0.0.1:$port" --threads 1 --connections 50 --keys "$keys" --key-size 32
        --value-size "$value_size" --popularity "$popularity" --get-ratio 0.9 --warmup 0s --json)
    "${client_cpu[@]}" target/release/mrcache bench "${load[@]}" --duration 1s --preload > /dev/null 2>&1
    local before after
    before=$(server_cpu_and_commands "$port" "$pid")
    "${client_cpu[@]}" target/release/mrcache bench "${load[@]}" --duration 8s --rate "$rate" > /dev/null 2>&1
    after=$(server_cpu_and_commands "$port" "$pid")
    kill "$pid"; wait "$pid" 2>/dev/null || true
    pid=""
    cpu_us_per_request "$before" "$after"
}

echo "open loop at $rate requests/s, $keys keys (values $value_size, $popularity), -m 64 -t $threads;" \
    "variant: ${variant[*]}"
printf '%-6s %22s %22s %8s\n' round default_cpu_us_per_req variant_cpu_us_per_req ratio
for round in $(seq 1 "$rounds"); do
    d=$(measure)
    v=$(measure "${variant[@]}")
    printf '%-6s %22s %22s %8s\n' "$round" "$d" "$v" "$(/usr/bin/python3 -c "print(f'{$d / $v:.3f}')")"
done
