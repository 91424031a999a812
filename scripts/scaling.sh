#!/usr/bin/env bash
# Scaling with worker threads: memcached, mrcached (default and slab layout) and Pelikan Segcache at
# N = 1, 2, 4, 8, ... server threads, each on its own cores, under the same load (issue 38).
#
#   scripts/scaling.sh OUT_DIR
#
# For each server and each N in THREADS, the server is started alone with N worker threads (-t N) and
# -m MEMORY on a free 127.0.0.1 port, pinned to cores 0..N-1 (taskset), and `mrcache bench` runs on the
# other cores N..nproc-1. The load is the one of scripts/compare-memcached.sh: 90/10 get/set, 32-byte
# keys, 200-byte values, 100k keys preloaded, uniform popularity, one request in flight per connection.
# Four measurements per server and N:
#   peak   closed loop: the highest throughput; the server's CPU time per request over it (utime + stime
#          from /proc/PID/stat over the gets + sets its counters say it served, warm-up included)
#   qos    the highest open-loop rate whose QOS (default p95=500us) holds, by mrcache bench's binary
#          search below the measured peak (QOS_DURATION per step)
#   load50, load80  open loop (Poisson) at 50% and 80% of that server's own peak: p99 latency
# Raw bench reports go to OUT_DIR/SERVER-tN-{peak,qos,load50,load80}.json and the CPU readings to
# OUT_DIR/SERVER-tN-cpu.json; OUT_DIR/scaling.md holds the table (also printed) and OUT_DIR/scaling.svg
# the figure (peak and QoS throughput against N, per server).
#
# Environment:
#   THREADS      server thread counts (default: 1 2 4 8 and nproc/2, keeping those that leave the client
#                at least half the cores: "1 2 4 8" on 16 cores, "1" on 2)
#   SERVERS      default "memcached mrcached mrcached-slab segcache"; mrcached is the default build
#                (log layout), mrcached-slab runs -o memory_layout=slab
#   DURATION, WARMUP          each peak/load run (default 2s and 500ms)
#   QOS, QOS_DURATION, QOS_WARMUP  the QoS target and each search step (default p95=500us, 1s, 300ms)
#   MEMORY       -m in MiB (default 1024; Segcache gets the same bytes as its heap)
#   CONNECTIONS  client connections (default 50 or 32 per server thread, whichever is more)
#   CLIENT_THREADS  bench threads (default one per client core)
#   MRCACHED, MRCACHE  binaries (default target/release/...), MEMCACHED (default memcached from PATH),
#   SEGCACHE     Segcache's launcher (default ../shared/anchors/segcache/run.sh PORT HEAP_BYTES)
#   MEASURE=0    measure nothing: rebuild scaling.md and scaling.svg from the reports already in OUT_DIR
# Segcache takes its worker count from `[worker] threads` in its config template: the script runs the
# anchor's run.sh unchanged from a scratch copy whose template says threads = N. With N > 1 Segcache adds
# a storage thread that owns the cache (the workers hand it requests), so its N workers are not memcached's
# N shards; all its threads stay on the same N cores.
# With defaults the whole run takes about 6 minutes on 16 cores (16 cells of ~20 s) and under 2 on 2.
# On a 2-core machine only N=1 fits and the one client core may limit the peak: see the "client CPU"
# column (near 100%: the client, not the server, set the peak; CPU per request still compares servers)
# and the "server CPU" column (its CPU seconds over the peak run's wall time on its N cores).
set -euo pipefail
[ $# -eq 1 ] || { echo "usage: $0 OUT_DIR (env: THREADS SERVERS DURATION MEMORY ..., see the header)" >&2; exit 64; }
out=$(realpath -m -- "$1")
for var in MRCACHED MRCACHE SEGCACHE; do  # paths given from the caller's directory stay right after the cd
    [ -n "${!var:-}" ] && printf -v "$var" '%s' "$(realpath -m -- "${!var}")"
done
cd "$(dirname "$0")/.."  # binaries and the Segcache launcher are found from the repository root
MRCACHED=${MRCACHED:-target/release/mrcached}
MRCACHE=${MRCACHE:-target/release/mrcache}
MEMCACHED=${MEMCACHED:-memcached}
SEGCACHE=${SEGCACHE:-../shared/anchors/segcache/run.sh}
SERVERS=${SERVERS:-"memcached mrcached mrcached-slab segcache"}
DURATION=${DURATION:-2s} WARMUP=${WARMUP:-500ms}
QOS=${QOS:-p95=500us} QOS_DURATION=${QOS_DURATION:-1s} QOS_WARMUP=${QOS_WARMUP:-300ms}
MEMORY=${MEMORY:-1024}

cores=$(nproc)
for tool in taskset timeout python3 awk; do
    command -v "$tool" >/dev/null || { echo "$tool not found: the script needs it" >&2; exit 1; }
done
[ "$cores" -ge 2 ] || { echo "scaling.sh needs 2+ cores (server and client on separate cores); nproc = $cores" >&2; exit 1; }
for b in "$MRCACHE" "$MRCACHED"; do
    [ -x "$b" ] || { echo "no $b: cargo build --release -p mrcache-server -p mrcache-cli" >&2; exit 1; }
done
for s in $SERVERS; do
    case "$s" in
        memcached) command -v "$MEMCACHED" >/dev/null ||
                       { echo "memcached not found ($MEMCACHED; apt-get install memcached)" >&2; exit 1; } ;;
        segcache) { [ -x "$SEGCACHE" ] && [ -f "$(dirname "$SEGCACHE")/segcache.toml.template" ]; } ||
                      { echo "Segcache launcher $SEGCACHE (with segcache.toml.template beside it) not found" >&2; exit 1; } ;;
        mrcached | mrcached-slab) ;;
        *) echo "unknown server $s (memcached, mrcached, mrcached-slab or segcache)" >&2; exit 64 ;;
    esac
done
if [ -z "${THREADS:-}" ]; then
    THREADS=""
    for n in 1 2 4 8 $((cores / 2)); do
        [ "$n" -le $((cores / 2)) ] && [[ " $THREADS " != *" $n "* ]] && THREADS="$THREADS $n"
    done
fi
for n in $THREADS; do
    { [[ "$n" =~ ^[1-9][0-9]*$ ]] && { [ "$n" -lt "$cores" ] || [ "${MEASURE:-1}" = 0 ]; }; } ||
        { echo "THREADS: $n is not a thread count below nproc ($cores): the client needs a core" >&2; exit 64; }
done
mkdir -p "$out"

# shellcheck source=scripts/lib/ports.sh
. scripts/lib/ports.sh
bench_placement

# Seconds (rounded up) of a bench duration such as 2s, 500ms or 1m, for the bound on each bench run.
secs() { awk -v d="$1" 'BEGIN { v = d + 0; if (d ~ /ms$/) v /= 1000; else if (d ~ /us$/) v /= 1e6;
                               else if (d ~ /m$/) v *= 60; print int(v) + 1 }'; }
run_secs=$(($(secs "$WARMUP") + $(secs "$DURATION") + 30))
qos_secs=$((13 * ($(secs "$QOS_WARMUP") + $(secs "$QOS_DURATION")) + 30))  # 12 search steps at most

# The server running now; killed on exit whatever happens (TERM, then KILL after 5 s).
pid="" scratch=$(mktemp -d)
stop_server() {
    [ -n "$pid" ] || return 0
    kill "$pid" 2>/dev/null || true
    for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -9 "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
    pid=""
}
trap 'stop_server; rm -rf "$scratch"' EXIT
trap 'exit 130' INT TERM

# A Segcache launcher for N workers: run.sh and the binary as they are, the template with threads = N.
segcache_launcher() {
    local dir="$scratch/segcache-t$1" anchors
    anchors=$(cd "$(dirname "$SEGCACHE")" && pwd)
    mkdir -p "$dir"
    cp "$SEGCACHE" "$dir/run.sh"
    ln -sf "$anchors/pelikan-segcache" "$dir/pelikan-segcache"
    sed "/^\[worker\]/,/^\[/ s/^threads = .*/threads = $1/" "$anchors/segcache.toml.template" \
        > "$dir/segcache.toml.template"
    grep -q "^threads = $1\$" "$dir/segcache.toml.template" ||
        { echo "no [worker] threads setting in $anchors/segcache.toml.template" >&2; return 1; }
    echo "$dir/run.sh"
}

# Starts server $1 with $2 threads pinned to cores 0..$2-1; sets pid, port and stats_port. A port that
# was free when probed but is taken by then makes the server exit: up to 5 tries.
start_server() {
    local s=$1 n=$2 cmd launcher log="$out/$1-t$2-server.log"
    local pin=(taskset -c "0-$((n - 1))")
    [ "$s" = segcache ] && { launcher=$(segcache_launcher "$n") || return 1; }
    for _ in 1 2 3 4 5; do
        port=$(free_port) stats_port=$port
        case "$s" in
            memcached) cmd=("$MEMCACHED" "${user_flag[@]}" -U 0 -l 127.0.0.1 -p "$port" -m "$MEMORY" -t "$n") ;;
            mrcached) cmd=("$MRCACHED" "${user_flag[@]}" -l 127.0.0.1 -p "$port" -m "$MEMORY" -t "$n") ;;
            mrcached-slab) cmd=("$MRCACHED" "${user_flag[@]}" -l 127.0.0.1 -p "$port" -m "$MEMORY" -t "$n"
                                -o memory_layout=slab) ;;
            segcache) stats_port=$((port + 1)) cmd=("$launcher" "$port" $((MEMORY * 1048576))) ;;
        esac
        "${pin[@]}" "${cmd[@]}" > "$log" 2>&1 &
        pid=$!
        if wait_port "$port" 2>/dev/null && wait_port "$stats_port" 2>/dev/null && kill -0 "$pid" 2>/dev/null; then
            return 0
        fi
        stop_server
    done
    echo "$s -t $n did not start (see $log)" >&2
    return 1
}

# One bench run against the running server, client on cores $n..nproc-1, bounded by $1 seconds;
# the report goes to $2; the remaining arguments are added to the load.
bench() {
    local limit=$1 report=$2
    shift 2
    timeout -k 5 "$limit" "${client_pin[@]}" "$MRCACHE" bench --server "127.0.0.1:$port" \
        --threads "$client_threads" --connections "$connections" --keys 100000 --key-size 32 \
        --value-size 200 --get-ratio 0.9 --json -q "$@" > "$report" 2> "${report%.json}.err" ||
        { echo "bench failed: $report (see ${report%.json}.err)" >&2; return 1; }
}

# Field $2 (a Python expression on the report r) of bench report $1.
field() { python3 -c "import json, sys; r = json.load(open(sys.argv[1])); print($2)" "$1"; }

# All four measurements of server $1 with $2 threads.
measure() {
    local s=$1 n=$2 base="$out/$1-t$2" peak
    client_pin=(taskset -c "$n-$((cores - 1))")
    client_threads=${CLIENT_THREADS:-$((cores - n))}
    connections=${CONNECTIONS:-$((32 * n > 50 ? 32 * n : 50))}
    start_server "$s" "$n" || return 1
    bench 90 "$scratch/preload.json" --preload --rate 1000 --warmup 0s --duration 1s || return 1
    local before after
    read -r -a before <<< "$(server_cpu_and_commands "$stats_port" "$pid") $(date +%s.%N)"
    bench "$run_secs" "$base-peak.json" --warmup "$WARMUP" --duration "$DURATION" || return 1
    read -r -a after <<< "$(server_cpu_and_commands "$stats_port" "$pid") $(date +%s.%N)"
    # server_cpu_share: its CPU seconds over the run's wall time on its N cores (1.0 = all busy).
    python3 -c 'import json, sys
c0, n0, t0, c1, n1, t1 = map(float, sys.argv[1:7])
print(json.dumps({"cpu_seconds": c1 - c0, "commands": int(n1 - n0), "wall_seconds": t1 - t0,
                  "cpu_us_per_request": (c1 - c0) * 1e6 / max(n1 - n0, 1),
                  "server_cpu_share": (c1 - c0) / max(t1 - t0, 1e-9) / int(sys.argv[7])}))' \
        "${before[@]}" "${after[@]}" "$n" > "$base-cpu.json"
    peak=$(field "$base-peak.json" 'int(r["throughput_ops"])')
    [ "$peak" -gt 0 ] || { echo "$s -t $n: no throughput at peak (see $base-peak.json)" >&2; return 1; }
    bench "$qos_secs" "$base-qos.json" --qos "$QOS" --rate "$peak" --warmup "$QOS_WARMUP" \
        --duration "$QOS_DURATION" || return 1
    for pct in 50 80; do
        bench "$run_secs" "$base-load$pct.json" --rate $((peak * pct / 100)) --warmup "$WARMUP" \
            --duration "$DURATION" || return 1
    done
    stop_server
    echo "$s -t $n: peak $peak req/s, $(field "$base-cpu.json" 'round(r["cpu_us_per_request"], 2)') µs CPU/request" >&2
}

echo "scaling: $cores cores, THREADS=\"${THREADS# }\", SERVERS=\"$SERVERS\", -m $MEMORY;" \
    "$DURATION runs, QoS $QOS in $QOS_DURATION steps" >&2
failed=()
for n in $THREADS; do
    for s in $SERVERS; do
        [ "${MEASURE:-1}" = 0 ] && continue
        rm -f "$out/$s-t$n"-{peak,qos,load50,load80,cpu}.json
        measure "$s" "$n" || { failed+=("$s -t $n"); stop_server; }
    done
done

{
    echo "# Scaling with server threads"
    echo
    echo "machine: $cores cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), load $(cut -d' ' -f1-3 /proc/loadavg);" \
        "$(date -u +%Y-%m-%dT%H:%MZ)"
    echo
    echo "Server with N threads on cores 0..N-1, \`mrcache bench\` on cores N..$((cores - 1))" \
        "(${CLIENT_THREADS:-one thread per core}, ${CONNECTIONS:-max(50, 32 N)} connections); -m $MEMORY;" \
        "90/10 get/set, 32 B keys, 200 B values, 100k keys preloaded, uniform. Peak: closed loop, $WARMUP + $DURATION;" \
        "QoS: highest open-loop rate with $QOS ($QOS_WARMUP + $QOS_DURATION steps); p99 at 50% and 80% of" \
        "the server's own peak (Poisson, $WARMUP + $DURATION). memcached $("$MEMCACHED" -V 2>/dev/null | cut -d' ' -f2 || echo -)."
    case " $SERVERS " in *" segcache "*)
        echo "Segcache: Pelikan 0.3.2 with \`[worker] threads = N\`; above 1 it adds a storage thread that owns the" \
            "cache, on the same cores." ;;
    esac
    echo
    python3 - "$out" "$THREADS" "$SERVERS" "$QOS" <<'PY'
import json, os, sys
out, threads, servers, qos = sys.argv[1], sys.argv[2].split(), sys.argv[3].split(), sys.argv[4]

def load(path):
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError):
        return None

def errors(r):
    return sum(v for v in r["errors"].values() if isinstance(v, int)) if r else 0

def p99_cell(r):
    if not r:
        return "-"
    cell = f"{r['latency_us']['total']['p99']}"
    if r["throughput_ops"] < 0.95 * r["offered_ops"]:
        cell += f" (ran {r['throughput_ops']:.0f}/s)"
    return cell

rows, series = [], {}
notes = set()
for s in servers:
    for n in threads:
        base = f"{out}/{s}-t{n}"
        peak, cpu, q = load(base + "-peak.json"), load(base + "-cpu.json"), load(base + "-qos.json")
        l50, l80 = load(base + "-load50.json"), load(base + "-load80.json")
        if not peak:
            rows.append([s, n, "failed"] + ["-"] * 6)
            continue
        best = (q or {}).get("qos") or {}
        best = best.get("best")
        qos_ops = f"{best['achieved_ops']:.0f}" if best else ("none met" if q else "-")
        bad = sum(errors(r) for r in (peak, q, l50, l80))
        if bad:
            notes.add(f"{s} N={n}: {bad} request errors (timeouts, resets...) in its runs: see the reports")
        u = peak.get("client_cpu_util")
        share = cpu.get("server_cpu_share") if cpu else None
        rows.append([s, n, f"{peak['throughput_ops']:.0f}", f"{cpu['cpu_us_per_request']:.2f}" if cpu else "-",
                     qos_ops, p99_cell(l50), p99_cell(l80), "-" if share is None else f"{100 * share:.0f}%",
                     "-" if u is None else f"{100 * u:.0f}%"])
        series.setdefault(s, []).append((int(n), peak["throughput_ops"], best["achieved_ops"] if best else None))

head = ["server", "N", "peak req/s", "server CPU µs/request", f"QoS req/s ({qos})",
        "p99 µs at 50% of peak", "p99 µs at 80% of peak", "server CPU at peak", "client CPU at peak"]
print("| " + " | ".join(head) + " |")
print("|" + " --- |" * len(head))
for row in rows:
    print("| " + " | ".join(str(c) for c in row) + " |")
print()
print("\"ran X/s\": the open loop achieved less than 95% of the offered rate. Server and client CPU at peak: the share of"
      " their cores they were on a CPU; near 100% the client, not the server, may have set the peak, and both far below"
      " 100% mean the machine itself (other work, stolen time) limited the run.")
for note in sorted(notes):
    print(f"warning: {note}")
print()
print("![peak (solid) and QoS (dashed) throughput against server threads](scaling.svg)")

# The figure: throughput against N, one colour per server; solid = peak, dashed = QoS throughput.
W, H, L, R, T, B = 640, 400, 80, 170, 30, 50
xs = sorted({int(n) for n in threads})
highest = max([p for pts in series.values() for _, p, _ in pts] + [1])
step = min(m * 10 ** e for e in range(10) for m in (1, 2, 5) if m * 10 ** e >= highest / 5)
ticks = -(-highest // step)  # round the axis up to a whole step
top = step * ticks
x = lambda n: L + (W - L - R) * (xs.index(n) + 0.5) / len(xs)
y = lambda v: H - B - (H - T - B) * v / top
colours = ["#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b"]
svg = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" font-family="sans-serif" font-size="12">',
       f'<rect width="{W}" height="{H}" fill="white"/>',
       f'<line x1="{L}" y1="{H - B}" x2="{W - R}" y2="{H - B}" stroke="black"/>',
       f'<line x1="{L}" y1="{T}" x2="{L}" y2="{H - B}" stroke="black"/>',
       f'<text x="{(L + W - R) / 2}" y="{H - 10}" text-anchor="middle">server threads N</text>',
       f'<text x="15" y="{(T + H - B) / 2}" text-anchor="middle" transform="rotate(-90 15 {(T + H - B) / 2})">requests/s</text>']
for n in xs:
    svg.append(f'<text x="{x(n)}" y="{H - B + 18}" text-anchor="middle">{n}</text>')
for i in range(int(ticks) + 1):
    v = step * i
    label = f"{v / 1000:g}k" if v >= 1000 else f"{v:g}"
    svg.append(f'<line x1="{L - 4}" y1="{y(v)}" x2="{W - R}" y2="{y(v)}" stroke="#ddd"/>')
    svg.append(f'<text x="{L - 6}" y="{y(v) + 4}" text-anchor="end">{label}</text>')
for k, (s, pts) in enumerate(series.items()):
    c = colours[k % len(colours)]
    for idx, dash in ((1, ""), (2, ' stroke-dasharray="5,4"')):
        p = [(x(n), y(v[idx - 1])) for n, *v in pts if v[idx - 1] is not None]
        if len(p) > 1:
            svg.append(f'<polyline fill="none" stroke="{c}" stroke-width="2"{dash} points="'
                       + " ".join(f"{a:.1f},{b:.1f}" for a, b in p) + '"/>')
        for a, b in p:
            svg.append(f'<circle cx="{a:.1f}" cy="{b:.1f}" r="{4 if idx == 1 else 3}" fill="{c if idx == 1 else "white"}" stroke="{c}"/>')
    svg.append(f'<line x1="{W - R + 15}" y1="{T + 18 * k + 10}" x2="{W - R + 35}" y2="{T + 18 * k + 10}" stroke="{c}" stroke-width="2"/>')
    svg.append(f'<text x="{W - R + 40}" y="{T + 18 * k + 14}">{s}</text>')
k = len(series)
svg.append(f'<text x="{W - R + 15}" y="{T + 18 * k + 20}" font-size="10">solid: peak; dashed: QoS</text>')
svg.append("</svg>")
with open(f"{out}/scaling.svg", "w") as f:
    f.write("\n".join(svg) + "\n")
PY
} > "$out/scaling.md"
cat "$out/scaling.md"
if [ ${#failed[@]} -gt 0 ]; then
    echo "failed: ${failed[*]} (see the .err and -server.log files in $out)" >&2
    exit 1
fi
