#!/usr/bin/env bash
# What a key dump or a crawl costs the other clients: one client's latency under an open-loop load,
# without and with a concurrent `lru_crawler metadump all` or `lru_crawler crawl all`, on mrcached
# (slab and log layouts) and memcached 1.6.18 (issue 37: other clients' p99 during a metadump within
# 2x of their p99 without it; no client waiting more than 10 ms for a crawl).
#
#   scripts/crawler-latency.sh [-k KEYS] [-v VALUE_SIZE] [-m MB] [-t THREADS] [-r RATE] [-d DURATION]
#                              [-n REPEATS] [-s "SERVERS"] OUT_DIR [-- extra mrcache bench flags]
#
# Each server (-s, default "slab log memcached": mrcached -o memory_layout=slab, =log, and Debian's
# memcached) gets -m MB (default 1024) and -t THREADS (default 4) on 127.0.0.1, is preloaded with KEYS
# items (default 1,000,000; 32-byte keys, VALUE_SIZE-byte values, default 100) and then measured in
# three scenarios, REPEATS times (default 3), in turn (MRCACHED=PATH runs another mrcached binary,
# e.g. an earlier build, for a side-by-side comparison):
#   idle      the load alone: mrcache bench, open loop at RATE requests/s (default 20000; Poisson
#             arrivals, 90% gets over the preloaded keys, 16 connections), DURATION (default 10s) after
#             2s of warm-up; latency counted from each request's intended send time;
#   metadump  the same load while another client dumps every key, `lru_crawler metadump all` on a
#             connection of its own, read as fast as it comes and started again as soon as it ends;
#   crawl     the same load while `lru_crawler crawl all` runs back to back (the next one started as
#             soon as `stats lru_crawler_running` is 0 again), at the default lru_crawler_sleep.
# With two or more cores the servers run on core 0 and the load generator on core 1
# (scripts/lib/ports.sh); the dumping or crawling client runs on the servers' core at idle priority
# (`chrt --idle`), so that the CPU it spends reading a dump (millions of lines a second) neither delays
# the load generator's sends, which would count as server latency, nor takes the servers' CPU. OUT_DIR receives every bench report (SERVER.SCENARIO.K.json), what the
# dumper or crawler did in each run (SERVER.SCENARIO.K.side: dumps or crawls completed, lines, seconds)
# and summary.txt (the table printed: the median over the repeats of p50, p99, p99.9 and max in
# microseconds, each scenario's p99 and max against idle's, and the dump and crawl rates).
set -euo pipefail
cd "$(dirname "$0")/.."

keys=1000000 value_size=100 memory=1024 threads=4 rate=20000 duration=10s repeats=3
servers="slab log memcached"
usage="usage: $0 [-k KEYS] [-v VALUE_SIZE] [-m MB] [-t THREADS] [-r RATE] [-d DURATION] [-n REPEATS] [-s \"SERVERS\"] OUT_DIR [-- bench flags]"
while getopts "k:v:m:t:r:d:n:s:" opt; do
    case "$opt" in
        k) keys=$OPTARG ;; v) value_size=$OPTARG ;; m) memory=$OPTARG ;; t) threads=$OPTARG ;;
        r) rate=$OPTARG ;; d) duration=$OPTARG ;; n) repeats=$OPTARG ;; s) servers=$OPTARG ;;
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
mrcached=${MRCACHED:-target/release/mrcached}
mrcache=target/release/mrcache
# shellcheck source=scripts/lib/ports.sh
. scripts/lib/ports.sh  # the script runs from the repository root
bench_placement
side_cpu=("${server_cpu[@]}")
command -v chrt > /dev/null && side_cpu+=(chrt --idle 0)
trap stop_servers EXIT

# The side client of a scenario: `dump` runs metadumps back to back, `crawl` crawls back to back, for
# SECONDS; prints "RUNS LINES SECONDS" (runs completed, metadump lines read, time they took).
cat > "$out/side.py" <<'PY'
import socket, sys, time
mode, port, seconds = sys.argv[1], int(sys.argv[2]), float(sys.argv[3])
def connect():
    s = socket.create_connection(("127.0.0.1", port), timeout=60)
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return s
def reply(s, end):
    buf = b""
    while not buf.endswith(end):
        chunk = s.recv(1 << 20)
        if not chunk:
            raise SystemExit("server closed the connection")
        buf += chunk
    return buf
stop = time.monotonic() + seconds
runs = lines = 0
busy = 0.0
control = connect()
while time.monotonic() < stop:
    t = time.monotonic()
    if mode == "dump":
        s = connect()
        s.sendall(b"lru_crawler metadump all\r\n")
        first = s.recv(1 << 20)
        if first.startswith(b"BUSY"):
            s.close()
            time.sleep(0.01)
            continue
        if not (first.startswith(b"key=") or first.startswith(b"END")):
            raise SystemExit(f"metadump refused: {first[:80]!r}")
        chunk, tail = first, b""
        while True:
            lines += chunk.count(b"\n")
            tail = (tail + chunk)[-8:]
            if tail.endswith(b"\nEND\r\n") or tail == b"END\r\n":
                break
            chunk = s.recv(1 << 20)
            if not chunk:
                raise SystemExit("server closed the dump")
        s.close()
        lines -= 1  # END
    else:
        control.sendall(b"lru_crawler crawl all\r\n")
        if not reply(control, b"\r\n").startswith(b"OK"):
            time.sleep(0.01)
            continue
        while time.monotonic() < stop + 60:
            control.sendall(b"stats\r\n")
            if b"STAT lru_crawler_running 0\r\n" in reply(control, b"END\r\n"):
                break
            time.sleep(0.002)
    runs += 1
    busy += time.monotonic() - t
print(runs, lines, f"{busy:.3f}")
PY

declare -A port
for server in $servers; do
    port[$server]=$(free_port)
    case "$server" in
        memcached) "${server_cpu[@]}" /usr/bin/memcached "${user_flag[@]}" -U 0 -l 127.0.0.1 \
            -p "${port[$server]}" -m "$memory" -t "$threads" > /dev/null 2>&1 & ;;
        *) "${server_cpu[@]}" "$mrcached" "${user_flag[@]}" -U 0 -l 127.0.0.1 -p "${port[$server]}" -m "$memory" \
            -t "$threads" -o "memory_layout=$server" > /dev/null 2>&1 & ;;
    esac
    pids+=($!)
done
for server in $servers; do wait_port "${port[$server]}"; done

load=(--threads 1 --connections 16 --keys "$keys" --key-size 32 --value-size "$value_size"
    --get-ratio 0.9 --json "$@")
echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs); load average at start: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "servers: -m $memory -t $threads; $keys items (32 B keys, $value_size B values); load: open loop $rate/s, 90% gets, 16 conns, $duration"
for server in $servers; do
    "${client_cpu[@]}" "$mrcache" bench --server "127.0.0.1:${port[$server]}" "${load[@]}" --preload \
        --rate 1000 --warmup 0s --duration 1s > /dev/null 2>&1
    items=$(server_stats "${port[$server]}" | awk '$1 == "curr_items" {print $2}')
    echo "$server: $items items after preload"
done

# The side client runs from the start of the warm-up (2 s) to the end of the measurement.
side_seconds=$(/usr/bin/python3 -c "import sys; d=sys.argv[1]; print(2 + (float(d[:-2]) / 1000 if d.endswith('ms') else float(d.rstrip('s'))))" "$duration")
for k in $(seq 1 "$repeats"); do
    for server in $servers; do
        for scenario in idle metadump crawl; do
            side=()
            case "$scenario" in
                metadump) side=(dump) ;;
                crawl) side=(crawl) ;;
            esac
            if [ ${#side[@]} -gt 0 ]; then
                "${side_cpu[@]}" /usr/bin/python3 "$out/side.py" "${side[0]}" "${port[$server]}" \
                    "$side_seconds" > "$out/$server.$scenario.$k.side" &
                side_pid=$!
            fi
            "${client_cpu[@]}" "$mrcache" bench --server "127.0.0.1:${port[$server]}" "${load[@]}" \
                --rate "$rate" --warmup 2s --duration "$duration" > "$out/$server.$scenario.$k.json" 2>/dev/null
            if [ ${#side[@]} -gt 0 ]; then wait "$side_pid"; fi
        done
    done
done

/usr/bin/python3 - "$out" "$repeats" "$servers" <<'PY'
import json, statistics, sys
out, repeats, servers = sys.argv[1], int(sys.argv[2]), sys.argv[3].split()
keys = ("p50", "p99", "p999", "max")
rows = [f"{'server':<10} {'scenario':<9} {'p50':>6} {'p99':>7} {'p99.9':>7} {'max':>7} {'p99/idle':>8} {'max/idle':>8} "
        f"{'late_p99':>8} {'errors':>6}  side (median per run)"]
for server in servers:
    med = {}
    for scenario in ("idle", "metadump", "crawl"):
        runs, errors, side, late = [], 0, [], []
        for k in range(1, repeats + 1):
            r = json.load(open(f"{out}/{server}.{scenario}.{k}.json"))
            runs.append(r["latency_us"]["total"])
            late.append(r["send_delay_us"]["p99"])
            errors += sum(r["errors"].values())
            if scenario != "idle":
                n, lines, busy = open(f"{out}/{server}.{scenario}.{k}.side").read().split()
                side.append((int(n), int(lines), float(busy)))
        med[scenario] = {key: statistics.median(l[key] for l in runs) for key in keys}
        m, idle = med[scenario], med["idle"]
        what = ""
        if side:
            n = statistics.median(s[0] for s in side)
            per = statistics.median(s[2] / s[0] for s in side if s[0]) if any(s[0] for s in side) else 0
            if scenario == "metadump":
                lines = statistics.median(s[1] / s[0] for s in side if s[0]) if n else 0
                what = f"{n:.0f} dumps of {lines:.0f} lines, {per:.2f} s each"
            else:
                what = f"{n:.0f} crawls, {per:.2f} s each"
        rows.append(f"{server:<10} {scenario:<9} {m['p50']:>6.0f} {m['p99']:>7.0f} {m['p999']:>7.0f} {m['max']:>7.0f} "
                    f"{m['p99'] / idle['p99']:>8.2f} {m['max'] / idle['max']:>8.2f} {statistics.median(late):>8.0f} "
                    f"{errors:>6}  {what}")
text = "\n".join(rows) + (f"\n(latencies in microseconds, medians over {repeats} runs; late_p99: p99 of how late the "
                           "load generator sent requests against their schedule, which grows when the client machine "
                           "is busy and when every connection waits on a slow server)")
open(f"{out}/summary.txt", "w").write(text + "\n")
print(text)
PY
echo "load average at end: $(cut -d' ' -f1-3 /proc/loadavg)"
