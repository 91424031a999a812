#!/usr/bin/env bash
# Where mrcached's server CPU per request goes on each network I/O path at a fixed open-loop rate: user
# time against system time, and context switches, per request (docs/results.md §4.1, "Where the
# half-load CPU goes").
#
#   scripts/io-cpu-split.sh [-r RATE] [-d DURATION] [-n REPEATS]
#
# Two servers, `mrcached -t 1 -m 64 -o io=epoll` and `-o io=uring`, on core 0 (the load generator on
# core 1), 127.0.0.1 only; the load is scripts/io-paths.sh's (50 connections, 90/10 get/set, 32-byte
# keys, 200-byte values, 100k keys preloaded), open loop at RATE requests/s (default 60000, about half of
# memcached's peak on the development VM) for DURATION (default 8s), REPEATS alternating runs per server
# (default 3). Per run: utime and stime from /proc/PID/stat over the requests served (cmd_get + cmd_set),
# and the voluntary and involuntary context switches of all the server's threads
# (/proc/PID/task/*/status). A VM without hardware counters cannot split cycles further; this split says
# whether a difference is in mrcached's own code (user) or in the kernel's (system).
set -euo pipefail
cd "$(dirname "$0")/.."

rate=60000 duration=8s repeats=3
while getopts "r:d:n:" opt; do
    case "$opt" in
        r) rate=$OPTARG ;; d) duration=$OPTARG ;; n) repeats=$OPTARG ;;
        *) echo "usage: $0 [-r RATE] [-d DURATION] [-n REPEATS]" >&2; exit 64 ;;
    esac
done

cargo build --release -q -p mrcache-server -p mrcache-cli
mrcache=target/release/mrcache
# shellcheck source=scripts/lib/ports.sh
. scripts/lib/ports.sh
bench_placement
trap stop_servers EXIT

names=(epoll uring)
declare -A port pid
for name in "${names[@]}"; do
    port[$name]=$(free_port)
    "${server_cpu[@]}" target/release/mrcached "${user_flag[@]}" -l 127.0.0.1 -p "${port[$name]}" -m 64 -t 1 -o "io=$name" &
    pid[$name]=$!
    pids+=("${pid[$name]}")
    wait_port "${port[$name]}"
done
preload_io_load "${port[@]}"

# Prints "USER_SECONDS SYSTEM_SECONDS COMMANDS VOLUNTARY INVOLUNTARY" for server $1: its CPU times and
# requests served (server_times_and_commands), and the context switches of all its threads.
reading() {
    local p=${pid[$1]}
    echo "$(server_times_and_commands "${port[$1]}" "$p") $(cat /proc/"$p"/task/*/status |
        awk '/^voluntary_ctxt_switches/ {v += $2} /^nonvoluntary_ctxt_switches/ {n += $2} END {print v, n}')"
}

echo "open loop at $rate requests/s for $duration, $repeats runs per server; load average $(cut -d' ' -f1-3 /proc/loadavg)"
printf '%-6s %3s %9s %9s %9s %9s %11s %11s\n' path run ops/s user_us sys_us total_us vol_cs/req invol_cs/req
for k in $(seq 1 "$repeats"); do
    for name in "${names[@]}"; do
        before=$(reading "$name")
        ops=$("${client_cpu[@]}" "$mrcache" bench --server "127.0.0.1:${port[$name]}" "${io_load[@]}" \
            --rate "$rate" --warmup 1s --duration "$duration" 2>/dev/null |
            /usr/bin/python3 -c 'import json, sys; print(int(json.load(sys.stdin)["throughput_ops"]))')
        after=$(reading "$name")
        echo "$before $after" | awk -v name="$name" -v k="$k" -v ops="$ops" '{
            n = $8 - $3; if (n <= 0) n = 1
            u = ($6 - $1) * 1e6 / n; s = ($7 - $2) * 1e6 / n
            printf "%-6s %3d %9d %9.2f %9.2f %9.2f %11.3f %11.3f\n", name, k, ops, u, s, u + s, ($9 - $4) / n, ($10 - $5) / n
        }'
    done
done
