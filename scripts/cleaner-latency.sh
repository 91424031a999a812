#!/usr/bin/env bash
# Does the log layout's cleaner delay requests? Tail latency of mrcached's slab layout against the log
# layout (the default) under one open-loop load at a fraction of peak, with the cleaner busy
# throughout (docs/results.md §15.5; issue 14's target: p99.9 at most 1 ms at half of peak).
#
#   scripts/cleaner-latency.sh [-m MB] [-t THREADS] [-k KEYS] [-v VALUE_SIZE] [-g GET_RATIO]
#                              [-f FRACTION] [-p PEAK_DURATION] [-d DURATION] [-n REPEATS] OUT_DIR
#                              [-- extra mrcache bench flags]
#
# Both servers get the same -m (default 16) and -t (default 1), listen on 127.0.0.1 only, and (with 2+
# cores) run on core 0 while the load generator runs on core 1 (scripts/lib/ports.sh). The load is set
# heavy (default 50/50 get/set) over more keys than fit (default 100k keys of 32 bytes with 200-byte
# values, about 27 MB of items), preloaded, uniform popularity, 50 connections: every set appends to
# the log, so the cleaner runs for as long as the load does.
#
# 1. Peak: the bench's closed loop (-p, default 5s, after 2s of warm-up) against each layout,
#    alternating, REPEATS times; a layout's peak is the median of its runs.
# 2. Open loop at FRACTION (default 0.5) of the lower of the two peaks, the same rate for both: Poisson
#    arrivals, latency counted from each request's intended send time, -d (default 10s) after 2s of
#    warm-up, alternating slab then log, REPEATS (default 3) times.
#
# Each open-loop run reports the total (get + set) p50, p99, p99.9 and max in microseconds, how late
# requests were sent against their schedule (late_p99.9, mrcache bench's send_delay p99.9: with one
# request in flight per connection it grows when the load generator is descheduled and when every
# connection waits on a stalled server) and the log cleaner's passes and copied MB during the run (the
# `log_cleaner_passes` and `log_cleaner_bytes` stats, read before and after; 0 under slab). The summary
# gives each layout's median over the repeats and log / slab. OUT_DIR receives every bench report
# (peak.LAYOUT.K.json, open.LAYOUT.K.json), cleaner.txt (the cleaner counters around each open-loop
# run) and summary.txt (the table printed: every run, then the medians).
set -euo pipefail
cd "$(dirname "$0")/.."

memory=16 threads=1 keys=100000 value_size=200 get_ratio=0.5 fraction=0.5 peak_duration=5s duration=10s
repeats=3
usage="usage: $0 [-m MB] [-t THREADS] [-k KEYS] [-v VALUE_SIZE] [-g GET_RATIO] [-f FRACTION] [-p PEAK_DURATION] [-d DURATION] [-n REPEATS] OUT_DIR [-- bench flags]"
while getopts "m:t:k:v:g:f:p:d:n:" opt; do
    case "$opt" in
        m) memory=$OPTARG ;; t) threads=$OPTARG ;; k) keys=$OPTARG ;; v) value_size=$OPTARG ;;
        g) get_ratio=$OPTARG ;; f) fraction=$OPTARG ;; p) peak_duration=$OPTARG ;; d) duration=$OPTARG ;;
        n) repeats=$OPTARG ;;
        *) echo "$usage" >&2; exit 64 ;;
    esac
done
shift $((OPTIND - 1))
[ $# -ge 1 ] || { echo "$usage" >&2; exit 64; }
out=$1
shift
[ "${1:-}" = "--" ] && shift
mkdir -p "$out"

cargo build --release -q -p mrcache-server -p mrcache-cli
mrcached=target/release/mrcached
mrcache=target/release/mrcache
# shellcheck source=scripts/lib/ports.sh
. scripts/lib/ports.sh  # the script runs from the repository root
bench_placement

trap stop_servers EXIT

declare -A port
for layout in slab log; do
    port[$layout]=$(free_port)
    "${server_cpu[@]}" "$mrcached" "${user_flag[@]}" -l 127.0.0.1 -p "${port[$layout]}" -m "$memory" -t "$threads" \
        -o "memory_layout=$layout" > /dev/null &
    pids+=($!)
done
wait_port "${port[slab]}"
wait_port "${port[log]}"

load=(--threads 1 --connections 50 --keys "$keys" --key-size 32 --value-size "$value_size"
    --get-ratio "$get_ratio" --warmup 2s --json "$@")
# Prints "PASSES BYTES": the log cleaner's work so far on the server on port $1.
cleaner() { server_stats "$1" | awk '$1 == "log_cleaner_passes" {p = $2} $1 == "log_cleaner_bytes" {b = $2} END {print p + 0, b + 0}'; }

echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs); load average at start: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "servers: mrcached -m $memory -t $threads, -o memory_layout=slab | log; load: 50 conns, $get_ratio gets, $keys keys of 32 B, values $value_size"
for layout in slab log; do
    "${client_cpu[@]}" "$mrcache" bench --server "127.0.0.1:${port[$layout]}" "${load[@]}" --preload \
        --duration 1s > /dev/null 2>&1
done

for k in $(seq 1 "$repeats"); do
    for layout in slab log; do
        "${client_cpu[@]}" "$mrcache" bench --server "127.0.0.1:${port[$layout]}" "${load[@]}" \
            --duration "$peak_duration" > "$out/peak.$layout.$k.json" 2>/dev/null
    done
done
rate=$(/usr/bin/python3 - "$out" "$repeats" "$fraction" <<'PY'
import json, statistics, sys
out, repeats, fraction = sys.argv[1], int(sys.argv[2]), float(sys.argv[3])
peaks = {}
for layout in ("slab", "log"):
    runs = [json.load(open(f"{out}/peak.{layout}.{k}.json"))["throughput_ops"] for k in range(1, repeats + 1)]
    peaks[layout] = statistics.median(runs)
    print(f"closed-loop peak {layout}: median {peaks[layout]:.0f} ops/s of {', '.join(f'{r:.0f}' for r in runs)}",
          file=sys.stderr)
print(int(fraction * min(peaks.values())))
PY
)
echo "open loop at $rate ops/s ($fraction of the lower peak), $duration per run"

: > "$out/cleaner.txt"
for k in $(seq 1 "$repeats"); do
    for layout in slab log; do
        before=$(cleaner "${port[$layout]}")
        "${client_cpu[@]}" "$mrcache" bench --server "127.0.0.1:${port[$layout]}" "${load[@]}" --rate "$rate" \
            --duration "$duration" > "$out/open.$layout.$k.json" 2>/dev/null
        echo "$layout $k $before $(cleaner "${port[$layout]}")" >> "$out/cleaner.txt"
    done
done

/usr/bin/python3 - "$out" "$repeats" <<'PY'
import json, statistics, sys
out, repeats = sys.argv[1], int(sys.argv[2])
cleaner = {}
for line in open(f"{out}/cleaner.txt"):
    layout, k, p0, b0, p1, b1 = line.split()
    cleaner[layout, int(k)] = (int(p1) - int(p0), (int(b1) - int(b0)) / 1e6)
keys = ("p50", "p99", "p999", "max")
head = f"{'layout':<6} {'run':>3} {'achieved':>9} {'p50':>6} {'p99':>7} {'p99.9':>7} {'max':>7} {'late_p99.9':>10} {'errors':>6} {'passes':>6} {'copied_MB':>9}"
rows, med = [head], {}
for layout in ("slab", "log"):
    runs = []
    for k in range(1, repeats + 1):
        r = json.load(open(f"{out}/open.{layout}.{k}.json"))
        lat, late = r["latency_us"]["total"], r["send_delay_us"]["p999"]
        errors = sum(r["errors"].values())
        passes, mb = cleaner[layout, k]
        runs.append(lat)
        rows.append(f"{layout:<6} {k:>3} {r['throughput_ops']:>9.0f} {lat['p50']:>6} {lat['p99']:>7} {lat['p999']:>7} "
                    f"{lat['max']:>7} {late:>10} {errors:>6} {passes:>6} {mb:>9.1f}")
    med[layout] = {key: statistics.median(l[key] for l in runs) for key in keys}
rows.append("")
rows.append(f"{'median':<10} {'p50':>6} {'p99':>7} {'p99.9':>7} {'max':>7}   (microseconds, over {repeats} runs)")
for layout in ("slab", "log"):
    m = med[layout]
    rows.append(f"{layout:<10} {m['p50']:>6.0f} {m['p99']:>7.0f} {m['p999']:>7.0f} {m['max']:>7.0f}")
ratio = lambda key: f"{med['log'][key] / med['slab'][key]:.2f}" if med["slab"][key] else "-"
rows.append(f"{'log/slab':<10} {ratio('p50'):>6} {ratio('p99'):>7} {ratio('p999'):>7} {ratio('max'):>7}")
text = "\n".join(rows)
open(f"{out}/summary.txt", "w").write(text + "\n")
print(text)
PY
echo "load average at end: $(cut -d' ' -f1-3 /proc/loadavg)"
