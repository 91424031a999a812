#!/usr/bin/env bash
# Side-by-side throughput of Debian's memcached and mrcached under the same load, in one run.
#
#   scripts/compare-memcached.sh [-t THREADS] [-m MB] [-d DURATION] [-r ROUNDS] [-b "MRCACHED FLAGS"]
#                                [-- extra mrcache bench flags]
#
# -b adds a third server, mrcached with the given extra flags (e.g. "-o mrc_sample_rate=0 --slab-policy
# memcached": profiling and the rebalancer off), benchmarked in the same rounds and compared with the
# default mrcached.
#
# Both servers get the same -m and -t, listen on 127.0.0.1 only, and (with 2+ cores) are pinned to core 0
# while the load generator runs on core 1. Each round benchmarks memcached then mrcached with the same
# closed-loop load (default: 90/10 get/set, 32-byte keys, 200-byte values, 50 connections, preloaded keys),
# alternating to spread machine noise; the table gives each round's ops/s and the ratio. With
# `-- --qos p95=500us` each cell is instead the highest open-loop rate that met the target (and the
# percentile measured there), found by mrcache bench's binary search.
set -euo pipefail
cd "$(dirname "$0")/.."

threads=1 memory=64 duration=10s rounds=3 variant=""
while getopts "t:m:d:r:b:" opt; do
    case "$opt" in
        t) threads=$OPTARG ;; m) memory=$OPTARG ;; d) duration=$OPTARG ;; r) rounds=$OPTARG ;;
        b) variant=$OPTARG ;;
        *) echo "usage: $0 [-t THREADS] [-m MB] [-d DURATION] [-r ROUNDS] [-b MRCACHED_FLAGS] [-- bench flags]" >&2; exit 64 ;;
    esac
done
shift $((OPTIND - 1))

command -v memcached >/dev/null || { echo "memcached not installed (apt-get install memcached)" >&2; exit 1; }
cargo build --release -q -p mrcache-server -p mrcache-cli
mrcached=target/release/mrcached
mrcache=target/release/mrcache

server_cpu=() client_cpu=()
if [ "$(nproc)" -ge 2 ] && command -v taskset >/dev/null; then
    server_cpu=(taskset -c 0) client_cpu=(taskset -c 1)
fi
user_flag=()
[ "$(id -u)" -eq 0 ] && user_flag=(-u root)

# shellcheck source=scripts/lib/ports.sh
. scripts/lib/ports.sh  # the script runs from the repository root
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; }
trap cleanup EXIT

bench() {
    local port=$1
    shift
    "${client_cpu[@]}" "$mrcache" bench --server "127.0.0.1:$port" --threads 1 --connections 50 \
        --duration "$duration" --warmup 2s --keys 100000 --key-size 32 --value-size 200 --get-ratio 0.9 \
        --preload --json "$@" 2>/dev/null |
        /usr/bin/python3 -c '
import json, sys
r = json.load(sys.stdin)
q = r.get("qos")
if q:  # --qos: the highest rate that met the target, and its percentile
    b = q.get("best") or {"achieved_ops": 0, "percentile_us": 0}
    print(int(b["achieved_ops"]), b["percentile_us"])
else:
    print(int(r["throughput_ops"]), r["latency_us"]["total"]["p99"])'
}

mport=$(free_port)
"${server_cpu[@]}" memcached "${user_flag[@]}" -U 0 -l 127.0.0.1 -p "$mport" -m "$memory" -t "$threads" &
pids+=($!)
rport=$(free_port)
"${server_cpu[@]}" "$mrcached" -l 127.0.0.1 -p "$rport" -m "$memory" -t "$threads" &
pids+=($!)
wait_port "$mport"
wait_port "$rport"
if [ -n "$variant" ]; then
    vport=$(free_port)
    # shellcheck disable=SC2086 # the variant's flags are meant to split
    "${server_cpu[@]}" "$mrcached" -l 127.0.0.1 -p "$vport" -m "$memory" -t "$threads" $variant &
    pids+=($!)
    wait_port "$vport"
fi

echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs); -m $memory -t $threads; load: closed loop, 50 conns, 90/10, 32 B keys, 200 B values, $duration"
[ -n "$variant" ] && echo "variant: mrcached $variant"
if [ -z "$variant" ]; then
    printf '%-6s %14s %10s %14s %10s %8s\n' round memcached_ops p99_us mrcached_ops p99_us ratio
else
    printf '%-6s %14s %10s %14s %10s %8s %14s %10s %14s\n' round memcached_ops p99_us mrcached_ops p99_us ratio \
        variant_ops p99_us default/variant
fi
for round in $(seq 1 "$rounds"); do
    read -r m_ops m_p99 < <(bench "$mport" "$@")
    read -r r_ops r_p99 < <(bench "$rport" "$@")
    ratio=$(/usr/bin/python3 -c "print(f'{$r_ops / $m_ops:.2f}')")
    if [ -z "$variant" ]; then
        printf '%-6s %14s %10s %14s %10s %8s\n' "$round" "$m_ops" "$m_p99" "$r_ops" "$r_p99" "$ratio"
    else
        read -r v_ops v_p99 < <(bench "$vport" "$@")
        vratio=$(/usr/bin/python3 -c "print(f'{$r_ops / $v_ops:.3f}')")
        printf '%-6s %14s %10s %14s %10s %8s %14s %10s %14s\n' "$round" "$m_ops" "$m_p99" "$r_ops" "$r_p99" \
            "$ratio" "$v_ops" "$v_p99" "$vratio"
    fi
done
