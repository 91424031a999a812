#!/usr/bin/env bash
# Latency isolation (Leverich & Kozyrakis, "Managing Interference for Latency-sensitive Workloads"):
# the QoS-constrained throughput (highest rate with p95 <= 500 us, `mrcache bench --qos p95=500us
# --qos-repeats 3`) of memcached and mrcached alone, then with a CPU-bound batch job on the server's
# core, then with each isolation measure; and of one mrcached tenant beside a flooding neighbour tenant,
# with and without the neighbour's rate limit. docs/results.md §17.
#
#   scripts/interference.sh [-d DURATION] [-w WARMUP] [-c CONFIGS] [-q] OUT_DIR
#
# Placement (2 cores): the server on CPU 0 (one worker, -t 1), the load generator on CPU 1, the batch
# job (a busy loop at nice 0, the paper's CPU antagonist of Table 3) on CPU 0.
#
# A shared machine: other work on CPU 0 is interference the rows cannot tell from the batch job, and
# other work on CPU 1 delays the load generator, whose delays count as latency (it measures from each
# request's intended send time). So by default the load generator runs under SCHED_FIFO (chrt -f 60;
# it busy-polls, so CPU 1 is taken while a search runs), and the "alone" baselines run the server under
# SCHED_FIFO too, which keeps the machine's other work off its core: the baseline is the server with its
# core to itself, as on the paper's dedicated machine. -q (quiet machine) runs the load generator and the
# baselines under the normal policy instead.
#
# CONFIGS (comma-separated, default all) picks rows by name:
#   memcached            memcached alone (chrt -f 50 unless -q)
#   memcached+batch      memcached, normal policy, with the batch job on its core
#   memcached+batch+fifo memcached under chrt -f 50 (the paper's measure) with the batch job
#   mrcached             mrcached alone (-o worker_cpus=0, plus sched=fifo:50 unless -q)
#   mrcached+load        mrcached, normal policy, no batch job: the machine's own load only
#   mrcached+batch       mrcached, normal policy, with the batch job on its core
#   mrcached+batch+fifo  mrcached -o worker_cpus=0,sched=fifo:50 with the batch job
#   mrcached+batch+rr    mrcached -o worker_cpus=0,sched=rr:50 with the batch job
#   mrcached+flood       tenant v measured while tenant n floods the same worker (closed loop, 4
#                        connections x 16 pipelined, from CPU 0 under the normal policy; server as in
#                        the mrcached row)
#   mrcached+flood+limit the same with rate_limit = 2000 (burst 200) on tenant n
# OUT_DIR receives one bench report per row (ROW.json), the table (interference.txt, interference.md)
# and the figure (interference.svg). Bounded: each search is at most 1 + 12 x 3 runs of WARMUP +
# DURATION (defaults 500ms + 1s); every server, batch job and flood is stopped on exit.
set -euo pipefail
cd "$(dirname "$0")/.."

duration=1s warmup=500ms configs=all quiet=0
usage="usage: $0 [-d DURATION] [-w WARMUP] [-c CONFIGS] [-q] OUT_DIR"
while getopts "d:w:c:q" opt; do
    case "$opt" in
        d) duration=$OPTARG ;; w) warmup=$OPTARG ;; c) configs=$OPTARG ;; q) quiet=1 ;;
        *) echo "$usage" >&2; exit 64 ;;
    esac
done
shift $((OPTIND - 1))
[ $# -eq 1 ] || { echo "$usage" >&2; exit 64; }
out=$1
mkdir -p "$out"

[ "$(nproc)" -ge 2 ] || { echo "needs 2 CPUs (server and batch job on CPU 0, load on CPU 1)" >&2; exit 1; }
command -v memcached >/dev/null || { echo "memcached not installed (apt-get install memcached)" >&2; exit 1; }
command -v taskset >/dev/null && command -v chrt >/dev/null ||
    { echo "taskset and chrt (util-linux) are needed" >&2; exit 1; }
cargo build --release -q -p mrcache-server -p mrcache-cli
mrcache=target/release/mrcache
mrcached=target/release/mrcached
# shellcheck source=scripts/lib/ports.sh
. scripts/lib/ports.sh
bench_placement
client_cpu=(taskset -c 1)
baseline_fifo=(chrt -f 50) baseline_sched=(-o sched=fifo:50)
if [ "$quiet" = 0 ]; then
    client_cpu=(taskset -c 1 chrt -f 60)
else
    baseline_fifo=() baseline_sched=()
fi

tmp=$(mktemp -d)
trap 'stop_servers; rm -rf "$tmp"' EXIT
trap 'exit 130' INT TERM

wanted() { [ "$configs" = all ] || [[ ",$configs," == *",$1,"* ]]; }

# The load of scripts/compare-memcached.sh: 16 connections, 90/10 get/set, 32-byte keys, 200-byte
# values, 100k keys preloaded, Poisson arrivals, latency from each request's intended send time.
load=(--threads 1 --connections 16 --keys 100000 --key-size 32 --value-size 200 --get-ratio 0.9)

start_batch() {
    taskset -c 0 /bin/sh -c 'while :; do :; done' &
    pids+=($!)
}

# qos ROW PORT [bench flags]: the QoS search against 127.0.0.1:PORT, report in OUT_DIR/ROW.json.
qos() {
    local row=$1 port=$2
    shift 2
    "${client_cpu[@]}" "$mrcache" bench --server "127.0.0.1:$port" "${load[@]}" "$@" --preload \
        --rate 1000 --warmup 0s --duration 500ms > /dev/null 2>&1
    echo "== $row" >&2
    "${client_cpu[@]}" "$mrcache" bench --server "127.0.0.1:$port" "${load[@]}" "$@" \
        --qos p95=500us --qos-repeats 3 --warmup "$warmup" --duration "$duration" --json > "$out/$row.json"
}

start_memcached() { # start_memcached PREFIX...: sets $port
    port=$(free_port)
    "$@" memcached "${user_flag[@]}" -U 0 -l 127.0.0.1 -p "$port" -m 64 -t 1 &
    pids+=($!)
    wait_port "$port"
}

start_mrcached() { # start_mrcached PREFIX... -- FLAGS...: sets $port
    local prefix=()
    while [ "$1" != -- ]; do prefix+=("$1"); shift; done
    shift
    port=$(free_port)
    "${prefix[@]}" "$mrcached" "${user_flag[@]}" -U 0 -l 127.0.0.1 -p "$port" -m 64 -t 1 "$@" &
    pids+=($!)
    wait_port "$port"
}

for row in memcached memcached+batch memcached+batch+fifo; do
    wanted "$row" || continue
    case $row in
        memcached) start_memcached taskset -c 0 "${baseline_fifo[@]}" ;;
        memcached+batch) start_memcached taskset -c 0; start_batch ;;
        memcached+batch+fifo) start_memcached taskset -c 0 chrt -f 50; start_batch ;;
    esac
    qos "$row" "$port"
    stop_servers
done

for row in mrcached mrcached+load mrcached+batch mrcached+batch+fifo mrcached+batch+rr; do
    wanted "$row" || continue
    case $row in
        mrcached) start_mrcached -- -o worker_cpus=0 "${baseline_sched[@]}" ;;
        mrcached+load) start_mrcached -- -o worker_cpus=0 ;;
        mrcached+batch) start_mrcached -- -o worker_cpus=0; start_batch ;;
        mrcached+batch+fifo) start_mrcached -- -o worker_cpus=0,sched=fifo:50; start_batch ;;
        mrcached+batch+rr) start_mrcached -- -o worker_cpus=0,sched=rr:50; start_batch ;;
    esac
    qos "$row" "$port"
    stop_servers
done

# A neighbour tenant floods the same worker: 4 connections, 16 requests pipelined each, closed loop,
# from CPU 0 under the normal policy (CPU 1 is the measuring client's).
for row in mrcached+flood mrcached+flood+limit; do
    wanted "$row" || continue
    limit=""
    [ "$row" = mrcached+flood+limit ] && limit=$'rate_limit = 2000\nrate_burst = 200'
    printf '[[tenant]]\nname = "victim"\nprefix = "v:"\n\n[[tenant]]\nname = "noisy"\nprefix = "n:"\n%s\n' \
        "$limit" > "$tmp/tenants.toml"
    start_mrcached -- -o worker_cpus=0 "${baseline_sched[@]}" --config "$tmp/tenants.toml" \
        --tenant-policy pooled
    taskset -c 0 "$mrcache" bench --server "127.0.0.1:$port" --tenant ::1:n: --connections 4 \
        --pipeline 16 --keys 10000 --key-size 32 --value-size 200 --get-ratio 0.9 --warmup 0s \
        --duration 300s --timeout 5s > "$tmp/flood.txt" 2>&1 &
    pids+=($!)
    qos "$row" "$port" --tenant ::1:v:
    stop_servers
done

/usr/bin/python3 - "$out" "$quiet" <<'PY'
import json, os, sys
out = sys.argv[1]
quiet = sys.argv[2] == "1"
order = ["memcached", "memcached+batch", "memcached+batch+fifo", "mrcached", "mrcached+load",
         "mrcached+batch", "mrcached+batch+fifo", "mrcached+batch+rr", "mrcached+flood",
         "mrcached+flood+limit"]
what = {
    "memcached": "memcached alone" + ("" if quiet else " (`chrt -f 50`)"),
    "memcached+batch": "memcached + batch job on its core",
    "memcached+batch+fifo": "memcached + batch, `chrt -f 50` (SCHED_FIFO)",
    "mrcached": "mrcached alone (`worker_cpus=0" + ("`)" if quiet else ",sched=fifo:50`)"),
    "mrcached+load": "mrcached, normal policy, no batch job",
    "mrcached+batch": "mrcached + batch job on its core",
    "mrcached+batch+fifo": "mrcached + batch, `worker_cpus=0,sched=fifo:50`",
    "mrcached+batch+rr": "mrcached + batch, `worker_cpus=0,sched=rr:50`",
    "mrcached+flood": "mrcached, tenant v beside flooding tenant n",
    "mrcached+flood+limit": "mrcached, the same, n at `rate_limit = 2000`",
}
rows = []
for name in order:
    path = f"{out}/{name}.json"
    if not os.path.exists(path):
        continue
    r = json.load(open(path))
    best = r["qos"]["best"]
    qps = best["achieved_ops"] if best else 0.0
    lat = r["latency_us"]["total"]
    rows.append((name, qps, lat["p95"] if best else None, lat["p99"] if best else None,
                 len(r["qos"]["steps"])))
qos_of = {name: qps for name, qps, *_ in rows}
base = {"memcached": qos_of.get("memcached"), "mrcached": qos_of.get("mrcached")}
lines = ["| configuration | QoS throughput (req/s, p95 ≤ 500 µs) | of alone | p95 (µs) | p99 (µs) | steps |",
         "|---|---|---|---|---|---|"]
txt = []
for name, qps, p95, p99, steps in rows:
    alone = base["memcached" if name.startswith("memcached") else "mrcached"]
    share = f"{qps / alone:.0%}" if alone else "—"
    fmt = lambda v: "—" if v is None else f"{v:,.0f}"
    lines.append(f"| {what[name]} | {qps:,.0f} | {share} | {fmt(p95)} | {fmt(p99)} | {steps} |")
    txt.append(f"{name:<22} {qps:>10.0f} {share:>6} p95 {fmt(p95):>7} p99 {fmt(p99):>7}")
open(f"{out}/interference.md", "w").write("\n".join(lines) + "\n")
open(f"{out}/interference.txt", "w").write("\n".join(txt) + "\n")

# The figure, Leverich's style: QoS throughput per configuration, the share of alone on each bar.
width, bar, gap, left = 860, 26, 10, 330
height = 60 + len(rows) * (bar + gap)
top = max([q for _, q, *_ in rows] + [1.0])
svg = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
       f'font-family="DejaVu Sans, sans-serif" font-size="12">',
       f'<rect width="{width}" height="{height}" fill="white"/>',
       f'<text x="{width / 2}" y="20" text-anchor="middle" font-size="14">QoS throughput '
       f'(p95 &#8804; 500 &#181;s), one worker on CPU 0, batch job on CPU 0</text>']
for i, (name, qps, p95, p99, _) in enumerate(rows):
    y = 40 + i * (bar + gap)
    w = (width - left - 150) * qps / top
    color = "#999999" if name.startswith("memcached") else "#1f77b4"
    if "batch" in name or "flood" in name:
        color = "#d62728" if name in ("memcached+batch", "mrcached+batch", "mrcached+flood") else "#2ca02c"
    if name == "mrcached+load":
        color = "#ff7f0e"
    alone = base["memcached" if name.startswith("memcached") else "mrcached"]
    share = f" ({qps / alone:.0%} of alone)" if alone else ""
    label = what[name].replace("`", "")
    svg.append(f'<text x="{left - 8}" y="{y + bar * 0.65}" text-anchor="end">{label}</text>')
    svg.append(f'<rect x="{left}" y="{y}" width="{w:.1f}" height="{bar}" fill="{color}"/>')
    p = "" if p95 is None else f", p95 {p95:.0f} / p99 {p99:.0f} &#181;s"
    svg.append(f'<text x="{left + w + 6:.1f}" y="{y + bar * 0.65}">{qps:,.0f}/s{share}{p}</text>')
svg.append("</svg>")
open(f"{out}/interference.svg", "w").write("\n".join(svg) + "\n")
print("\n".join(lines))
PY
echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs); load average $(cut -d' ' -f1-3 /proc/loadavg)"
