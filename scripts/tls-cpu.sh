#!/usr/bin/env bash
# What TLS costs the server: mrcached's CPU per request with -Z against plain TCP, same run (issue 40:
# at most 1.5x, unpipelined; docs/results.md §20).
#
#   scripts/tls-cpu.sh [-r RATE] [-d DURATION] [-n REPEATS]
#
# Makes a test CA and a server certificate for 127.0.0.1 with openssl in a temporary directory, then
# starts three servers on core 0 (the load generator on core 1), 127.0.0.1 only, each `mrcached -t 1 -m
# 64`: plain on epoll (the path TLS runs on), plain on the default path (io_uring where the kernel runs
# it), and `-Z` with that certificate. The load is scripts/io-paths.sh's (50 connections, 90/10
# get/set, 32-byte keys, 200-byte values, 100k keys preloaded, one request per connection at a time),
# open loop at RATE requests/s (default 20000) for DURATION (default 8s), REPEATS rounds (default 3)
# that run each server in turn; `mrcache bench --tls-ca` speaks TLS to the third. Per run: the
# server's utime + stime from /proc/PID/stat over the requests it served (cmd_get + cmd_set), and the
# load's p50 and p99. The last lines are the medians and the TLS / plain-epoll ratio.
set -euo pipefail
cd "$(dirname "$0")/.."

rate=20000 duration=8s repeats=3
while getopts "r:d:n:" opt; do
    case "$opt" in
        r) rate=$OPTARG ;; d) duration=$OPTARG ;; n) repeats=$OPTARG ;;
        *) echo "usage: $0 [-r RATE] [-d DURATION] [-n REPEATS]" >&2; exit 64 ;;
    esac
done
command -v openssl >/dev/null || { echo "$0: needs openssl (apt-get install openssl)" >&2; exit 69; }

cargo build --release -q -p mrcache-server -p mrcache-cli
mrcache=target/release/mrcache
# shellcheck source=scripts/lib/ports.sh
. scripts/lib/ports.sh
bench_placement
pki=$(mktemp -d)
trap 'stop_servers; rm -rf "$pki"' EXIT

openssl req -x509 -newkey rsa:2048 -nodes -days 1 -subj "/CN=mrcache test CA" \
    -keyout "$pki/ca-key.pem" -out "$pki/ca.pem" 2>/dev/null
openssl req -newkey rsa:2048 -nodes -subj "/CN=127.0.0.1" \
    -keyout "$pki/server-key.pem" -out "$pki/server.csr" 2>/dev/null
printf 'subjectAltName=IP:127.0.0.1\nbasicConstraints=CA:FALSE\nextendedKeyUsage=serverAuth\n' >"$pki/ext"
openssl x509 -req -in "$pki/server.csr" -CA "$pki/ca.pem" -CAkey "$pki/ca-key.pem" -CAcreateserial \
    -days 1 -extfile "$pki/ext" -out "$pki/server.pem" 2>/dev/null

names=(epoll default tls)
declare -A port pid args ca tls_flag
args[epoll]="-o io=epoll"
args[default]=""
args[tls]="-Z -o ssl_chain_cert=$pki/server.pem,ssl_key=$pki/server-key.pem"
ca[tls]=$pki/ca.pem
for name in "${names[@]}"; do
    port[$name]=$(free_port)
    # shellcheck disable=SC2086 # args holds several words
    "${server_cpu[@]}" target/release/mrcached "${user_flag[@]}" -l 127.0.0.1 -p "${port[$name]}" \
        -m 64 -t 1 ${args[$name]} &
    pid[$name]=$!
    pids+=("${pid[$name]}")
    wait_port "${port[$name]}"
    tls_flag[$name]=""
    [ -n "${ca[$name]:-}" ] && tls_flag[$name]="--tls-ca ${ca[$name]}"
    # shellcheck disable=SC2086
    "${client_cpu[@]}" "$mrcache" bench --server "127.0.0.1:${port[$name]}" "${io_load[@]}" \
        ${tls_flag[$name]} --preload --rate 1000 --warmup 0s --duration 1s >/dev/null 2>&1
done

echo "open loop at $rate requests/s for $duration, $repeats rounds; load average $(cut -d' ' -f1-3 /proc/loadavg)"
printf '%-8s %3s %9s %9s %7s %7s\n' server run ops/s cpu_us p50_us p99_us
results=$(mktemp)
for k in $(seq 1 "$repeats"); do
    for name in "${names[@]}"; do
        before=$(server_cpu_and_commands "${port[$name]}" "${pid[$name]}" "${ca[$name]:-}")
        # shellcheck disable=SC2086
        report=$("${client_cpu[@]}" "$mrcache" bench --server "127.0.0.1:${port[$name]}" "${io_load[@]}" \
            ${tls_flag[$name]} --rate "$rate" --warmup 1s --duration "$duration" 2>/dev/null)
        after=$(server_cpu_and_commands "${port[$name]}" "${pid[$name]}" "${ca[$name]:-}")
        cpu=$(cpu_us_per_request "$before" "$after")
        read -r ops p50 p99 < <(echo "$report" | /usr/bin/python3 -c '
import json, sys
r = json.load(sys.stdin)
t = r["latency_us"]["total"]
print(int(r["throughput_ops"]), t["p50"], t["p99"])')
        printf '%-8s %3d %9d %9s %7s %7s\n' "$name" "$k" "$ops" "$cpu" "$p50" "$p99" | tee -a "$results"
    done
done
/usr/bin/python3 - "$results" <<'PY'
import statistics, sys
rows = [l.split() for l in open(sys.argv[1])]
med = {}
for name in ("epoll", "default", "tls"):
    cpu = [float(r[3]) for r in rows if r[0] == name]
    p99 = [float(r[5]) for r in rows if r[0] == name]
    med[name] = statistics.median(cpu)
    print(f"median   {name:8s} cpu_us/request {med[name]:.2f}  p99_us {statistics.median(p99):.0f}")
print(f"tls / plain epoll: {med['tls'] / med['epoll']:.2f}x   tls / plain default: {med['tls'] / med['default']:.2f}x")
PY
rm -f "$results"
