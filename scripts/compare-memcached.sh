#!/usr/bin/env bash
# Side-by-side throughput of Debian's memcached and mrcached under the same load, in one run.
#
#   scripts/compare-memcached.sh [-t THREADS] [-m MB] [-d DURATION] [-r ROUNDS] [-b "MRCACHED FLAGS"]
#                                [-- extra mrcache bench flags]
#
# -b adds a third server, mrcached with the given extra flags (e.g. "-o memory_layout=slab,mrc_sample_rate=0 --slab-policy
# memcached": profiling and the rebalancer off), benchmarked in the same rounds and compared with the
# default mrcached.
#
# Both servers get the same -m and -t, listen on 127.0.0.1 only, and (with 2+ cores) are pinned to core 0
# while the load generator runs on core 1. Each round benchmarks memcached then mrcached with the same
# closed-loop load (default: 90/10 get/set, 32-byte keys, 200-byte values, 50 connections, preloaded keys),
# alternating to spread machine noise; the table gives each round's ops/s and the ratio. With
# `-- --qos p95=500us` each cell is instead the highest open-loop rate that met the target (and the
# percentile measured there), found by mrcache bench's binary search.
#
# Each cell also gives the server's CPU time per request over its whole bench invocation (utime + stime
# of the server process over its cmd_get + cmd_set), and cpu_ratio = memcached's over mrcached's: how many
# more requests mrcached serves per CPU second. Where the one client core, not the server, limits
# throughput (unpipelined loads on a 2-core machine), that ratio is the server-bound comparison.
# The client column is the load generator's own CPU share over the measured window (mrcache bench's
# client_cpu_util): near 100% in a closed loop, the client may be what limits the row.
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

# shellcheck source=scripts/lib/ports.sh
. scripts/lib/ports.sh  # the script runs from the repository root
bench_placement

trap stop_servers EXIT

# Prints "OPS PCTL CLIENT_PCT CPU_US_PER_REQUEST" for one bench invocation against the server on port $1,
# pid $2.
bench() {
    local port=$1 pid=$2
    shift 2
    local before after result
    before=$(server_cpu_and_commands "$port" "$pid")
    result=$(bench_load "$port" "$@")
    after=$(server_cpu_and_commands "$port" "$pid")
    echo "$result $(cpu_us_per_request "$before" "$after")"
}

bench_load() {
    local port=$1
    shift
    "${client_cpu[@]}" "$mrcache" bench --server "127.0.0.1:$port" --threads 1 --connections 50 \
        --duration "$duration" --warmup 2s --keys 100000 --key-size 32 --value-size 200 --get-ratio 0.9 \
        --preload --json "$@" 2>/dev/null |
        /usr/bin/python3 -c '
import json, sys
r = json.load(sys.stdin)
q = r.get("qos")
u = r.get("client_cpu_util")
client = "-" if u is None else f"{100 * u:.0f}%"
if q:  # --qos: the highest rate that met the target, and its percentile
    b = q.get("best") or {"achieved_ops": 0, "percentile_us": 0}
    print(int(b["achieved_ops"]), b["percentile_us"], client)
else:
    print(int(r["throughput_ops"]), r["latency_us"]["total"]["p99"], client)'
}

mport=$(free_port)
"${server_cpu[@]}" memcached "${user_flag[@]}" -U 0 -l 127.0.0.1 -p "$mport" -m "$memory" -t "$threads" &
mpid=$!
pids+=("$mpid")
rport=$(free_port)
"${server_cpu[@]}" "$mrcached" "${user_flag[@]}" -l 127.0.0.1 -p "$rport" -m "$memory" -t "$threads" &
rpid=$!
pids+=("$rpid")
wait_port "$mport"
wait_port "$rport"
if [ -n "$variant" ]; then
    vport=$(free_port)
    # shellcheck disable=SC2086 # the variant's flags are meant to split
    "${server_cpu[@]}" "$mrcached" "${user_flag[@]}" -l 127.0.0.1 -p "$vport" -m "$memory" -t "$threads" $variant &
    vpid=$!
    pids+=("$vpid")
    wait_port "$vport"
fi

echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs); -m $memory -t $threads; load: closed loop, 50 conns, 90/10, 32 B keys, 200 B values, $duration"
[ -n "$variant" ] && echo "variant: mrcached $variant"
head=(round memcached_ops p99_us client cpu_us mrcached_ops p99_us client cpu_us ratio cpu_ratio)
row='%-6s %14s %8s %6s %7s %14s %8s %6s %7s %6s %9s'
if [ -z "$variant" ]; then
    printf "$row\n" "${head[@]}"
else
    printf "$row %14s %8s %6s %7s %15s\n" "${head[@]}" variant_ops p99_us client cpu_us default/variant
fi
for round in $(seq 1 "$rounds"); do
    read -r m_ops m_p99 m_client m_cpu < <(bench "$mport" "$mpid" "$@")
    read -r r_ops r_p99 r_client r_cpu < <(bench "$rport" "$rpid" "$@")
    ratio=$(/usr/bin/python3 -c "print(f'{$r_ops / $m_ops:.2f}')")
    cpu_ratio=$(/usr/bin/python3 -c "print(f'{$m_cpu / $r_cpu:.2f}')")
    cells=("$round" "$m_ops" "$m_p99" "$m_client" "$m_cpu" "$r_ops" "$r_p99" "$r_client" "$r_cpu" "$ratio" "$cpu_ratio")
    if [ -z "$variant" ]; then
        printf "$row\n" "${cells[@]}"
    else
        read -r v_ops v_p99 v_client v_cpu < <(bench "$vport" "$vpid" "$@")
        vratio=$(/usr/bin/python3 -c "print(f'{$r_ops / $v_ops:.3f}')")
        printf "$row %14s %8s %6s %7s %15s\n" "${cells[@]}" "$v_ops" "$v_p99" "$v_client" "$v_cpu" "$vratio"
    fi
done
