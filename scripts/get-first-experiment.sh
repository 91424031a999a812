#!/usr/bin/env bash
# GETs before SETs within one batch of ready connections (docs/results.md §17): measured, not kept. The
# option existed only at commit 7dbc0aa (`-o get_first`: a worker ran the connections whose next request
# starts with `get`/`mg`, classified by a MSG_PEEK of three bytes, before the others of the same epoll
# batch). Build that commit and pass its mrcached:
#
#   git worktree add /tmp/get-first 7dbc0aa && (cd /tmp/get-first && cargo build --release -p mrcache-server)
#   scripts/get-first-experiment.sh /tmp/get-first/target/release/mrcached OUT_DIR
#
# Part 1: the QoS search (p95 <= 500 us, --qos-repeats 3) with and without get_first, alternated twice.
# Part 2: p50/p95/p99 at fixed rates (6k and 12k req/s), both servers up at once, runs alternated three
# times. Servers on CPU 0 (-t 1 -o worker_cpus=0,sched=fifo:50), load generator on CPU 1 under chrt -f 60.
set -euo pipefail
[ $# -eq 2 ] || { echo "usage: $0 MRCACHED_OF_7dbc0aa OUT_DIR" >&2; exit 64; }
mrcached=$(realpath "$1")
out=$2
mkdir -p "$out"
cd "$(dirname "$0")/.."
cargo build --release -q -p mrcache-cli
mrcache=target/release/mrcache
# shellcheck source=scripts/lib/ports.sh
. scripts/lib/ports.sh
user_flag=()
[ "$(id -u)" -eq 0 ] && user_flag=(-u root)
L=(--threads 1 --connections 16 --keys 100000 --key-size 32 --value-size 200 --get-ratio 0.9)
client=(taskset -c 1 chrt -f 60)
trap stop_servers EXIT
trap 'exit 130' INT TERM

start() { # start OPT: sets $port
    local extra=""
    [ "$1" = on ] && extra=",get_first"
    port=$(free_port)
    taskset -c 0 "$mrcached" "${user_flag[@]}" -U 0 -l 127.0.0.1 -p "$port" -m 64 -t 1 -o "worker_cpus=0,sched=fifo:50$extra" &
    pids+=($!)
    wait_port "$port"
    "${client[@]}" "$mrcache" bench -s "127.0.0.1:$port" "${L[@]}" --preload --rate 1000 --warmup 0s \
        --duration 500ms > /dev/null 2>&1
}

for round in 1 2; do
    for opt in off on; do
        start "$opt"
        "${client[@]}" "$mrcache" bench -s "127.0.0.1:$port" "${L[@]}" --qos p95=500us --qos-repeats 3 \
            --warmup 300ms --duration 1s --json > "$out/qos.$opt.$round.json" 2>/dev/null
        kill "${pids[-1]}"
        /usr/bin/python3 -c "
import json; r=json.load(open('$out/qos.$opt.$round.json')); b=r['qos']['best']; l=r['latency_us']['total']
print('qos get_first=$opt round $round', int(b['achieved_ops']) if b else 0, 'p95', l['p95'], 'p99', l['p99'])"
    done
done

declare -A ports
for opt in off on; do
    start "$opt"
    ports[$opt]=$port
done
for rate in 6000 12000; do
    for round in 1 2 3; do
        for opt in off on; do
            "${client[@]}" "$mrcache" bench -s "127.0.0.1:${ports[$opt]}" "${L[@]}" --rate "$rate" \
                --warmup 300ms --duration 2s --json 2>/dev/null | /usr/bin/python3 -c "
import json,sys; r=json.load(sys.stdin); l=r['latency_us']['total']
print('rate $rate round $round get_first=$opt', int(r['throughput_ops']), 'p50', l['p50'], 'p95', l['p95'], 'p99', l['p99'])"
        done
    done
done
