#!/usr/bin/env bash
# mrcached's two network I/O paths side by side with Debian's memcached, in one run (docs/results.md §4,
# "io_uring against epoll").
#
#   scripts/io-paths.sh [-d DURATION] [-r ROUNDS] [-n REPEATS] [-q QOS_STEP_DURATION] [-c CLIENT_IO]
#                       [-b BASELINE_MRCACHED]
#
# -c picks the load generator's own I/O path (mrcache bench --io epoll|uring; default epoll, as in the
# other §4 measurements): with uring the client spends less of its core in the kernel per request, so an
# unpipelined run is less limited by the one client core.
# -b adds a fourth server, `BASELINE_MRCACHED -o io=uring` (named uring-base), run alternately with the
# others: an earlier build of mrcached to compare a change of the io_uring path with, in the same run.
#
# Three servers, each -t 1 -m 64 on core 0 (the load generator on core 1), listening on 127.0.0.1 only:
# memcached, `mrcached -o io=epoll` and `mrcached -o io=uring`. The load is scripts/compare-memcached.sh's:
# 50 connections, 90/10 get/set, 32-byte keys, 200-byte values, 100k keys preloaded.
#   1. Closed loop, unpipelined then pipelined (--pipeline 8), ROUNDS alternating rounds of the three
#      servers: throughput, p99, the client core's busy share (client_cpu_util) and the server's CPU per
#      request (utime + stime from /proc over its cmd_get + cmd_set; the most robust figure on a loaded
#      machine). The summary gives the median of the rounds.
#   2. Open loop at 50% and 80% of memcached's median unpipelined closed-loop throughput, REPEATS runs per
#      server alternating, median p99 and median server CPU per request (at the same offered rate, so
#      not skewed by how much of a loaded machine each server got), and, where `perf` is installed
#      (Debian's linux-perf), the server's system calls per request (`perf stat -e raw_syscalls:sys_enter`
#      on its process: what io_uring's batching saves, a count that a loaded machine hardly moves).
#      -n 0 skips it.
#   3. QoS throughput: the highest open-loop rate with p95 < 500 us (mrcache bench --qos, each search
#      step QOS_STEP_DURATION). -q 0 skips it (on a loaded machine no server meets the bound).
set -euo pipefail
cd "$(dirname "$0")/.."

duration=5s rounds=3 repeats=3 qos_duration=2s client_io=epoll baseline=
while getopts "d:r:n:q:c:b:" opt; do
    case "$opt" in
        d) duration=$OPTARG ;; r) rounds=$OPTARG ;; n) repeats=$OPTARG ;; q) qos_duration=$OPTARG ;;
        c) client_io=$OPTARG ;; b) baseline=$OPTARG ;;
        *) echo "usage: $0 [-d DURATION] [-r ROUNDS] [-n REPEATS] [-q QOS_STEP_DURATION] [-c CLIENT_IO]" \
               "[-b BASELINE_MRCACHED]" >&2
           exit 64 ;;
    esac
done

command -v memcached >/dev/null || { echo "memcached not installed (apt-get install memcached)" >&2; exit 1; }
cargo build --release -q -p mrcache-server -p mrcache-cli
mrcached=target/release/mrcached
mrcache=target/release/mrcache
# shellcheck source=scripts/lib/ports.sh
. scripts/lib/ports.sh
bench_placement

tmp=$(mktemp -d)
trap 'stop_servers; rm -rf "$tmp"' EXIT

names=(memcached epoll uring)
if [ -n "$baseline" ]; then
    [ -x "$baseline" ] || { echo "-b $baseline: not an executable" >&2; exit 64; }
    names+=(uring-base)
fi
declare -A port pid
for name in "${names[@]}"; do
    port[$name]=$(free_port)
    case $name in
        memcached) "${server_cpu[@]}" memcached "${user_flag[@]}" -U 0 -l 127.0.0.1 -p "${port[$name]}" -m 64 -t 1 & ;;
        uring-base) "${server_cpu[@]}" "$baseline" -l 127.0.0.1 -p "${port[$name]}" -m 64 -t 1 -o io=uring & ;;
        *) "${server_cpu[@]}" "$mrcached" "${user_flag[@]}" -l 127.0.0.1 -p "${port[$name]}" -m 64 -t 1 -o "io=$name" & ;;
    esac
    pid[$name]=$!
    pids+=("${pid[$name]}")
    wait_port "${port[$name]}"
done

load=("${io_load[@]}" --io "$client_io")
preload_io_load "${port[@]}"

# One closed-loop bench against $1 with extra flags; prints "OPS P99 CLIENT_UTIL CPU_US".
closed() {
    local name=$1 before after
    shift
    before=$(server_cpu_and_commands "${port[$name]}" "${pid[$name]}")
    "${client_cpu[@]}" "$mrcache" bench --server "127.0.0.1:${port[$name]}" "${load[@]}" \
        --warmup 1s --duration "$duration" "$@" > "$tmp/r.json" 2>/dev/null
    after=$(server_cpu_and_commands "${port[$name]}" "${pid[$name]}")
    /usr/bin/python3 -c '
import json, sys
r = json.load(open(sys.argv[1]))
print(int(r["throughput_ops"]), r["latency_us"]["total"]["p99"], r.get("client_cpu_util") or 0, sys.argv[2])' \
        "$tmp/r.json" "$(cpu_us_per_request "$before" "$after")"
}

echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs); -m 64 -t 1;" \
    "closed loop $duration x $rounds rounds; open loop ${duration} x $repeats; qos steps $qos_duration;" \
    "client --io $client_io; load average $(cut -d' ' -f1-3 /proc/loadavg)"
: > "$tmp/closed.txt"
for round in $(seq 1 "$rounds"); do
    for mode in unpipelined pipelined; do
        extra=()
        [ "$mode" = pipelined ] && extra=(--pipeline 8)
        for name in "${names[@]}"; do
            echo "$mode $name $round $(closed "$name" "${extra[@]}")" | tee -a "$tmp/closed.txt"
        done
    done
done

perf=$(command -v perf || true)
[ -n "$perf" ] || echo "perf not installed: no system calls per request (apt-get install linux-perf)" >&2
peak=$(awk '$1 == "unpipelined" && $2 == "memcached" {print $4}' "$tmp/closed.txt" | sort -n |
    awk '{v[NR] = $1} END {print v[int((NR + 1) / 2)]}')
: > "$tmp/open.txt"
for pct in 50 80; do
    rate=$((peak * pct / 100))
    for k in $(seq 1 "$repeats"); do
        for name in "${names[@]}"; do
            before=$(server_cpu_and_commands "${port[$name]}" "${pid[$name]}")
            perf_pid=
            if [ -n "$perf" ]; then
                "$perf" stat -x, -e raw_syscalls:sys_enter -p "${pid[$name]}" -o "$tmp/perf.txt" &
                perf_pid=$!
            fi
            "${client_cpu[@]}" "$mrcache" bench --server "127.0.0.1:${port[$name]}" "${load[@]}" \
                --rate "$rate" --warmup 1s --duration "$duration" > "$tmp/r.json" 2>/dev/null
            syscalls=-1
            if [ -n "$perf_pid" ]; then
                kill -INT "$perf_pid"
                wait "$perf_pid" || true
                syscalls=$(awk -F, '/raw_syscalls/ {print $1 + 0}' "$tmp/perf.txt")
            fi
            after=$(server_cpu_and_commands "${port[$name]}" "${pid[$name]}")
            /usr/bin/python3 -c '
import json, sys
r = json.load(open(sys.argv[1]))
requests = int(sys.argv[7].split()[1]) - int(sys.argv[6].split()[1])
syscalls = int(sys.argv[8])
per = syscalls / requests if syscalls >= 0 and requests > 0 else -1
print(sys.argv[2], sys.argv[3], sys.argv[4], int(r["throughput_ops"]), r["latency_us"]["total"]["p99"],
      sys.argv[5], f"{per:.3f}")' \
                "$tmp/r.json" "$pct" "$rate" "$name" "$(cpu_us_per_request "$before" "$after")" \
                "$before" "$after" "$syscalls" | tee -a "$tmp/open.txt"
        done
    done
done

: > "$tmp/qos.txt"
for name in "${names[@]}"; do
    [ "$qos_duration" != 0 ] || break
    "${client_cpu[@]}" "$mrcache" bench --server "127.0.0.1:${port[$name]}" "${load[@]}" \
        --qos p95=500us --warmup 1s --duration "$qos_duration" > "$tmp/r.json" 2>/dev/null
    /usr/bin/python3 -c '
import json, sys
q = json.load(open(sys.argv[1])).get("qos") or {}
b = q.get("best") or {"achieved_ops": 0, "percentile_us": 0}
print(sys.argv[2], int(b["achieved_ops"]), b["percentile_us"])' "$tmp/r.json" "$name" | tee -a "$tmp/qos.txt"
done

/usr/bin/python3 - "$tmp" "$peak" "${names[@]}" <<'PY'
import statistics, sys
tmp, peak = sys.argv[1], int(sys.argv[2])
names = sys.argv[3:]
closed = [l.split() for l in open(f"{tmp}/closed.txt")]
print()
print("closed loop, median of rounds (server CPU per request; ratio = memcached's / this one's)")
print(f"{'mode':<12} {'server':<10} {'ops/s':>9} {'p99_us':>7} {'client':>7} {'cpu_us':>7} {'cpu_ratio':>9}")
for mode in ("unpipelined", "pipelined"):
    med = {}
    for n in names:
        rows = [r for r in closed if r[0] == mode and r[1] == n]
        med[n] = [statistics.median(float(r[i]) for r in rows) for i in (3, 4, 5, 6)]
    for n in names:
        ops, p99, client, cpu = med[n]
        print(f"{mode:<12} {n:<10} {ops:>9.0f} {p99:>7.0f} {100 * client:>6.0f}% {cpu:>7.2f} "
              f"{med['memcached'][3] / cpu:>9.2f}")
print()
opened = [l.split() for l in open(f"{tmp}/open.txt")]
columns = [(4, "p99 (us)", ".0f"), (5, "server CPU per request (us)", ".2f")]
if opened and all(float(r[6]) >= 0 for r in opened):
    columns.append((6, "server system calls per request (perf)", ".3f"))
for col, what, fmt in columns:
    if not opened:
        break
    print(f"open loop (memcached's peak {peak} ops/s), median of the repeats: {what}")
    print(f"{'load':<6} {'rate':>8} " + " ".join(f"{n:>10}" for n in names))
    for pct in ("50", "80"):
        rows = [r for r in opened if r[0] == pct]
        cells = [statistics.median(float(r[col]) for r in rows if r[2] == n) for n in names]
        print(f"{pct + '%':<6} {rows[0][1]:>8} " + " ".join(f"{c:>10{fmt}}" for c in cells))
    print()
qos = open(f"{tmp}/qos.txt").readlines()
if qos:
    print("QoS throughput (p95 < 500 us), ops/s")
for l in qos:
    n, ops, pct = l.split()
    print(f"{n:<10} {ops:>9} (p95 {pct} us)")
PY
