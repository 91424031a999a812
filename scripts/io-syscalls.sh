#!/usr/bin/env bash
# System calls per request of mrcached's network I/O path under the §4 load (docs/results.md §4.1).
#
#   scripts/io-syscalls.sh uring|epoll [-- extra mrcache bench flags, e.g. --pipeline 8]
#
# Starts `mrcached -t 1 -m 64 -o io=PATH` on core 0, preloads 100k keys, runs the closed-loop load of
# scripts/io-paths.sh (50 connections, 90/10, 32 B keys, 200 B values) from core 1 for 5 s, and counts the
# server's system calls with `strace -c -f` over 3 s of it, next to the requests served in that window
# (cmd_get + cmd_set). strace slows the server down; the counts per request are what it is for.
set -euo pipefail
cd "$(dirname "$0")/.."
[ $# -ge 1 ] || { echo "usage: $0 uring|epoll [-- bench flags]" >&2; exit 64; }
io=$1
shift
[ "${1:-}" = "--" ] && shift
command -v strace >/dev/null || { echo "strace not installed (apt-get install strace)" >&2; exit 1; }
cargo build --release -q -p mrcache-server -p mrcache-cli
# shellcheck source=scripts/lib/ports.sh
. scripts/lib/ports.sh
bench_placement
out=$(mktemp)
port=$(free_port)
"${server_cpu[@]}" target/release/mrcached "${user_flag[@]}" -l 127.0.0.1 -p "$port" -m 64 -t 1 -o "io=$io" &
pid=$!
trap 'kill $pid 2>/dev/null || true; rm -f "$out"' EXIT
wait_port "$port"
load=(--server "127.0.0.1:$port" --threads 1 --connections 50 --keys 100000 --key-size 32 --value-size 200
    --get-ratio 0.9 --json)
"${client_cpu[@]}" target/release/mrcache bench "${load[@]}" --preload --rate 1000 --warmup 0s --duration 1s \
    > /dev/null 2>&1
"${client_cpu[@]}" target/release/mrcache bench "${load[@]}" --warmup 0s --duration 5s "$@" > /dev/null 2>&1 &
bench=$!
sleep 1
commands() { server_stats "$port" | awk '$1 == "cmd_get" || $1 == "cmd_set" {n += $2} END {print n + 0}'; }
before=$(commands)
timeout -s INT 3 strace -c -f -p "$pid" -o "$out" 2>/dev/null || true
after=$(commands)
wait "$bench"
requests=$((after - before))
echo "io=$io $*: $requests requests in the strace window"
/usr/bin/python3 - "$out" "$requests" <<'PY'
import sys
path, n = sys.argv[1], int(sys.argv[2])
for line in open(path):
    t = line.split()
    # "% time  seconds  usecs/call  calls  [errors]  syscall"
    if len(t) >= 5 and t[0].replace(".", "").isdigit() and t[3].isdigit():
        print(f"  {t[-1]:<16} {int(t[3]):>8} calls  {int(t[3]) / max(n, 1):.3f} per request")
PY
