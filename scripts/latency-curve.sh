#!/usr/bin/env bash
# Latency against throughput of Debian's memcached and mrcached under the same open-loop load, in one run,
# and the figure of both (docs/results.md §4).
#
#   scripts/latency-curve.sh [-t THREADS] [-m MB] [-d DURATION] [-s FROM..TO:STEP] [-n REPEATS] OUT_DIR
#                            [-- extra bench flags]
#
# Both servers get the same -m and -t, listen on 127.0.0.1 only, and (with 2+ cores) run on core 0 while
# the load generator runs on core 1. Each rate of the scan is run against memcached, then against mrcached
# (so machine noise falls on both alike), with the load of scripts/compare-memcached.sh: 50 connections,
# 90/10 get/set, 32-byte keys, 200-byte values, 100k keys preloaded, Poisson arrivals, latency from each
# request's intended send time. With -n REPEATS every rate is measured that many times per server
# (alternating) and each percentile reported is the median of the repeats: on a shared machine one
# disturbed step can otherwise decide a comparison. OUT_DIR receives memcached.json and mrcached.json
# (per server, a bench report whose `scan` holds the median step of each rate), latency.svg, latency.txt
# (the table) and repeats.txt (every repeat).
set -euo pipefail
cd "$(dirname "$0")/.."

threads=1 memory=64 duration=3s scan=20000..200000:20000 repeats=1
while getopts "t:m:d:s:n:" opt; do
    case "$opt" in
        t) threads=$OPTARG ;; m) memory=$OPTARG ;; d) duration=$OPTARG ;; s) scan=$OPTARG ;;
        n) repeats=$OPTARG ;;
        *) echo "usage: $0 [-t THREADS] [-m MB] [-d DURATION] [-s FROM..TO:STEP] [-n REPEATS] OUT_DIR [-- bench flags]" >&2
           exit 64 ;;
    esac
done
shift $((OPTIND - 1))
[ $# -ge 1 ] || { echo "usage: $0 [-t THREADS] [-m MB] [-d DURATION] [-s FROM..TO:STEP] [-n REPEATS] OUT_DIR" >&2; exit 64; }
out=$1
shift
[ "${1:-}" = "--" ] && shift
mkdir -p "$out"

command -v memcached >/dev/null || { echo "memcached not installed (apt-get install memcached)" >&2; exit 1; }
cargo build --release -q -p mrcache-server -p mrcache-cli
mrcache=target/release/mrcache
# shellcheck source=scripts/lib/ports.sh
. scripts/lib/ports.sh
bench_placement
trap stop_servers EXIT

mport=$(free_port)
"${server_cpu[@]}" memcached "${user_flag[@]}" -U 0 -l 127.0.0.1 -p "$mport" -m "$memory" -t "$threads" &
pids+=($!)
rport=$(free_port)
"${server_cpu[@]}" target/release/mrcached "${user_flag[@]}" -l 127.0.0.1 -p "$rport" -m "$memory" -t "$threads" &
pids+=($!)
wait_port "$mport"
wait_port "$rport"

load=(--threads 1 --connections 50 --keys 100000 --key-size 32 --value-size 200 --get-ratio 0.9 --json "$@")
for port in "$mport" "$rport"; do
    "${client_cpu[@]}" "$mrcache" bench --server "127.0.0.1:$port" "${load[@]}" --preload --rate 1000 \
        --warmup 0s --duration 1s > /dev/null 2>&1
done

# One rate at a time, memcached then mrcached; the per-rate reports are joined into one per server.
tmp=$(mktemp -d)
trap 'stop_servers; rm -rf "$tmp"' EXIT
i=0
range=${scan%%:*}
for rate in $(seq "${range%%..*}" "${scan#*:}" "${range#*..}"); do
    i=$((i + 1))
    for k in $(seq 1 "$repeats"); do
        for name in memcached mrcached; do
            port=$mport
            [ "$name" = mrcached ] && port=$rport
            "${client_cpu[@]}" "$mrcache" bench --server "127.0.0.1:$port" "${load[@]}" \
                --scan "$rate..$rate:1" --warmup 1s --duration "$duration" > "$tmp/$name.$i.$k.json" 2>/dev/null
        done
    done
done
/usr/bin/python3 - "$tmp" "$i" "$repeats" "$out" <<'PY'
import json, statistics, sys
tmp, n, repeats, out = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
rows = {}
every = open(f"{out}/repeats.txt", "w")
print("server offered repeat achieved p50 p95 p99", file=every)
for name in ("memcached", "mrcached"):
    steps = []
    for i in range(1, n + 1):
        runs = []
        for k in range(1, repeats + 1):
            with open(f"{tmp}/{name}.{i}.{k}.json") as f:
                r = json.load(f)
            runs.append(r["scan"][0])
            l = runs[-1]["latency_us"]
            print(name, int(runs[-1]["offered_ops"]), k, int(runs[-1]["throughput_ops"]), l["p50"], l["p95"], l["p99"],
                  file=every)
        median = dict(runs[0])
        median["throughput_ops"] = statistics.median(s["throughput_ops"] for s in runs)
        median["errors"] = max(s["errors"] for s in runs)
        median["latency_us"] = {key: statistics.median(s["latency_us"][key] for s in runs)
                                for key in runs[0]["latency_us"]}
        median["repeats"] = repeats
        steps.append(median)
    r["scan"] = steps
    with open(f"{out}/{name}.json", "w") as f:
        json.dump(r, f)
    rows[name] = steps
with open(f"{out}/latency.txt", "w") as f:
    head = f"{'offered':>8} | {'memcached ops/s':>15} {'p50':>5} {'p95':>6} {'p99':>6} | {'mrcached ops/s':>14} {'p50':>5} {'p95':>6} {'p99':>6}"
    print(head, file=f)
    for m, r in zip(rows["memcached"], rows["mrcached"]):
        lm, lr = m["latency_us"], r["latency_us"]
        print(f"{m['offered_ops']:>8.0f} | {m['throughput_ops']:>15.0f} {lm['p50']:>5.0f} {lm['p95']:>6.0f} {lm['p99']:>6.0f} | "
              f"{r['throughput_ops']:>14.0f} {lr['p50']:>5.0f} {lr['p95']:>6.0f} {lr['p99']:>6.0f}", file=f)
PY
"$mrcache" latency-plot -o "$out/latency.svg" --percentiles p50,p95,p99 \
    "memcached=$out/memcached.json" "mrcached=$out/mrcached.json"
echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs); -m $memory -t $threads; median of $repeats per rate"
cat "$out/latency.txt"
