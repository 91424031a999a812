#!/usr/bin/env bash
# Live: the shared real key traces replayed against memcached 1.6.18 and mrcached (docs/results.md
# §14.1, issue 13's live target).
#
# For each trace and each -m in MEMS, every server in SERVERS is started alone on a free loopback port,
# gets one pass of the trace from `mrcache bench --popularity trace:PATH --once` (every request a GET,
# a miss followed by a SET of the item: --lookaside; ETC value sizes drawn from the trace's key ids with
# --seed 1 and 16-byte keys, the sizes `mrcache sim --trace` gives them; the block traces' keys get ETC
# sizes too, not their block sizes, and the simulator is told so: --override-sizes), and its `stats` are read
# (get_hits, get_misses, the page moves) before it is stopped. "pages moved" gives mrcached's policy
# moves by rule (slab_policy_moves_*) and all its page moves (slabs_moved: also the first pages that
# classes emptied by idle moves take back, from the class that got their page, when they are used
# again). One connection and --pipeline 1 by
# default, so the server sees the trace's own order with each miss's SET right after its GET. The table
# gives each server's GET miss ratio, mrcached's (and mrcached-slab's) against memcached's, and beside
# each the simulator's (`mrcache sim`, whole trace; omitted with REQUESTS) for the same trace, memory,
# layout, slab policy and item accounting: memcached's for memcached (policy memcached: demand-filled),
# mrcached's default compact accounting for mrcached (the log layout, its default), mrcached-slab
# (slab, lama-mr) and mrcached:POLICY (slab, POLICY).
#
# Usage: scripts/live-replay.sh [TRACES_DIR] [OUT_DIR]
#   env: TRACES (file names under TRACES_DIR), MEMS (default "16 32", memcached -m in MiB),
#        SERVERS (default "memcached mrcached mrcached-slab"; mrcached is the default: Memshare's
#        log-structured memory with its default ranking, §15; mrcached-slab runs -o memory_layout=slab
#        (slab classes, lama-mr); mrcached:POLICY runs -o memory_layout=slab --slab-policy POLICY;
#        mrcached-log is mrcached with -o memory_layout=log given), REQUESTS (cap on GETs per replay;
#        default one whole pass),
#        CONNECTIONS and PIPELINE (default 1 and 1), THREADS (server -t, default 1: one engine shard, as
#        the simulator), JOBS (replays run at once, default 1), SIM (0: no simulator column).
# Results are kept in OUT_DIR (default target/live-replay); a rerun reuses them (delete them to rerun).
# Build first: cargo build --release -p mrcache-server -p mrcache-cli; needs memcached (1.6.18 measured).
set -euo pipefail
cd "$(dirname "$0")/.."
TRACES_DIR=${1:-../shared/traces}
OUT=${2:-target/live-replay}
MRCACHE=${MRCACHE:-target/release/mrcache}
MRCACHED=${MRCACHED:-target/release/mrcached}
TRACES=${TRACES:-"kv/cache2k-orm-busy.trace.xz kv/cache2k-orm-night.trace.xz kv/cache2k-web07.trace.xz
kv/cache2k-web12.trace.xz kv/corda_vaultservice.trace.gz block/arc-OLTP.lis.zst
block/cloudPhysicsIO.oracleGeneral.bin"}
MEMS=${MEMS:-"16 32"}
SERVERS=${SERVERS:-"memcached mrcached mrcached-slab"}
REQUESTS=${REQUESTS:-}
CONNECTIONS=${CONNECTIONS:-1}
PIPELINE=${PIPELINE:-1}
THREADS=${THREADS:-1}
JOBS=${JOBS:-1}
SIM=${SIM:-1}
[ -n "$REQUESTS" ] && SIM=0  # the simulator replays whole traces: no like-for-like column
for b in "$MRCACHE" "$MRCACHED"; do
    [ -x "$b" ] || { echo "no $b: cargo build --release -p mrcache-server -p mrcache-cli" >&2; exit 1; }
done
command -v memcached >/dev/null || { echo "memcached not installed (apt-get install memcached)" >&2; exit 1; }
mkdir -p "$OUT"
jobs_file="$OUT/jobs"
: > "$jobs_file"
for t in $TRACES; do
    [ -f "$TRACES_DIR/$t" ] || { echo "missing $TRACES_DIR/$t" >&2; exit 1; }
    for m in $MEMS; do
        for s in $SERVERS; do echo "live $t $m $s" >> "$jobs_file"; done
        if [ "$SIM" = 1 ]; then
            for s in $SERVERS; do echo "sim $t $m $s" >> "$jobs_file"; done
        fi
    done
done

# One replay: starts the server, replays, saves the bench's JSON and the server's stats, stops it.
run_live() {
    local t=$1 m=$2 s=$3 name base port pid
    name=$(basename "$t" | cut -d. -f1)
    base="$OUT/$name-$m-${s//:/-}"
    [ -s "$base.stats" ] && return 0
    # shellcheck source=scripts/lib/ports.sh
    . scripts/lib/ports.sh
    bench_placement
    local cmd
    for _ in 1 2 3 4 5; do
        port=$(free_port)
        case "$s" in
            memcached) cmd=(memcached "${user_flag[@]}" -U 0 -l 127.0.0.1 -p "$port" -m "$m" -t "$THREADS") ;;
            mrcached) cmd=("$MRCACHED" "${user_flag[@]}" -l 127.0.0.1 -p "$port" -m "$m" -t "$THREADS") ;;
            mrcached-slab) cmd=("$MRCACHED" "${user_flag[@]}" -l 127.0.0.1 -p "$port" -m "$m" -t "$THREADS" -o memory_layout=slab) ;;
            mrcached:*) cmd=("$MRCACHED" "${user_flag[@]}" -l 127.0.0.1 -p "$port" -m "$m" -t "$THREADS" -o memory_layout=slab --slab-policy "${s#mrcached:}") ;;
            mrcached-log) cmd=("$MRCACHED" "${user_flag[@]}" -l 127.0.0.1 -p "$port" -m "$m" -t "$THREADS" -o memory_layout=log) ;;
            *) echo "unknown server $s (memcached, mrcached, mrcached-slab, mrcached:POLICY or mrcached-log)" >&2; return 1 ;;
        esac
        "${cmd[@]}" > "$base.server.log" 2>&1 &
        pid=$!
        # The port was free when probed; the server's own pid in its stats proves it is ours.
        if wait_port "$port" 2>/dev/null && [ "$(server_stats "$port" | awk '$1 == "pid" {print $2}')" = "$pid" ]; then
            break
        fi
        kill "$pid" 2>/dev/null || true
        wait "$pid" 2>/dev/null || true
        pid=""
    done
    [ -n "$pid" ] || { echo "$s -m $m did not start (see $base.server.log)" >&2; return 1; }
    local cap=()
    [ -n "$REQUESTS" ] && cap=(--requests "$REQUESTS")
    if ! "$MRCACHE" bench --server "127.0.0.1:$port" --connections "$CONNECTIONS" --pipeline "$PIPELINE" \
        --popularity "trace:$TRACES_DIR/$t" --once "${cap[@]}" --get-ratio 1 --lookaside \
        --key-size 16 --value-size etc --seed 1 --duration 600m --warmup 0s --timeout 5s --json -q \
        > "$base.json.tmp" 2> "$base.bench.err"; then
        kill "$pid"; wait "$pid" 2>/dev/null || true
        echo "bench failed on $s -m $m $t (see $base.bench.err)" >&2
        return 1
    fi
    server_stats "$port" > "$base.stats.tmp"
    kill "$pid"
    wait "$pid" 2>/dev/null || true
    mv "$base.json.tmp" "$base.json"
    mv "$base.stats.tmp" "$base.stats"
}

# The simulator's run of what server $3 does: memcached's accounting and no moves for memcached;
# mrcached's compact accounting and the log layout for mrcached and mrcached-log, slab and lama-mr for
# mrcached-slab, slab and POLICY for mrcached:POLICY; with the server's profiler memory
# (--mrc-memory-share 0.01, the simulator's default being 10%).
run_sim() {
    local t=$1 m=$2 s=$3 name out policy=(--layout log) accounting=compact
    name=$(basename "$t" | cut -d. -f1)
    out="$OUT/$name-$m-${s//:/-}.sim.json"
    [ -s "$out" ] && return 0
    case "$s" in
        memcached) policy=(--layout slab --policy memcached) accounting=memcached ;;
        mrcached-slab) policy=(--layout slab --policy lama-mr) ;;
        mrcached:*) policy=(--layout slab --policy "${s#mrcached:}") ;;
    esac
    "$MRCACHE" sim --trace "$TRACES_DIR/$t" --memory "${m}MiB" --value-size etc --seed 1 --key-size 16 \
        --override-sizes --item-accounting "$accounting" "${policy[@]}" --mrc-memory-share 0.01 --json \
        > "$out.tmp" 2> "$out.err"
    mv "$out.tmp" "$out"
}
run_one() { if [ "$1" = live ]; then run_live "${@:2}"; else run_sim "${@:2}"; fi; }
export -f run_live run_sim run_one
export OUT TRACES_DIR MRCACHE MRCACHED REQUESTS CONNECTIONS PIPELINE THREADS
xargs -P "$JOBS" -L 1 bash -c 'run_one "$@"' _ < "$jobs_file"

echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), load $(cut -d' ' -f1-3 /proc/loadavg)"
echo "memcached: $(memcached -V); -t $THREADS; bench: $CONNECTIONS connection(s), pipeline $PIPELINE, ${REQUESTS:-one pass of each trace}"
python3 - "$OUT" "$jobs_file" "$SERVERS" <<'PY'
import json, os, sys
out, jobs, servers = sys.argv[1], sys.argv[2], sys.argv[3].split()
cells = {}
for line in open(jobs):
    kind, t, m, s = line.split()
    name = os.path.basename(t).split('.')[0]
    base = f"{out}/{name}-{m}-{s.replace(':', '-')}"
    key = (name, m)
    if kind == "live":
        stats = dict(l.split() for l in open(base + ".stats") if len(l.split()) == 2)
        bench = json.load(open(base + ".json"))
        hits, misses = int(stats["get_hits"]), int(stats["get_misses"])
        moves = {k[len("slab_policy_moves_"):]: int(v) for k, v in stats.items()
                 if k.startswith("slab_policy_moves_")}
        cells.setdefault(key, {})[s] = {
            "miss": misses / max(hits + misses, 1), "gets": hits + misses,
            "moved": int(stats.get("slabs_moved", 0)), "rules": moves,
            "policy_moved": int(stats.get("slab_policy_pages_moved", 0)),
            "errors": sum(bench["errors"][k] for k in bench["errors"] if isinstance(bench["errors"][k], int)),
            "ops": bench["throughput_ops"]}
    else:
        r = json.load(open(base + ".sim.json"))
        cells.setdefault(key, {})["sim " + s] = r["miss_ratio"]
rel = lambda a, b: "-" if b == 0 else f"{a / b - 1:+.1%}"
live = servers
has_sim = any(k.startswith("sim ") for c in cells.values() for k in c)
label = {"memcached": "memcached 1.6.18", "mrcached": "mrcached (default: log, density)",
         "mrcached-slab": "mrcached, slab + lama-mr", "mrcached-log": "mrcached, log layout"}
head = ["trace", "-m", "GETs"]
for s in live:
    head.append(label.get(s, s.replace("mrcached:", "mrcached ")))
    if has_sim:
        head.append("sim")
slab = "mrcached-slab" in live
head += ["mrcached/memcached"] + (["mrcached-slab/memcached", "mrcached-slab pages moved: policy (rules) / all"] if slab else [])
print("| " + " | ".join(head) + " |")
print("|" + "---|" * len(head))
for (name, m), c in cells.items():
    row = [name, m, str(c[live[0]]["gets"])]
    for s in live:
        row.append(f"{c[s]['miss']:.4f}")
        if has_sim:
            row.append(f"{c['sim ' + s]:.4f}" if "sim " + s in c else "-")
    d = c.get("mrcached")
    row.append(rel(d["miss"], c["memcached"]["miss"]) if d and "memcached" in c else "-")
    if slab:
        d = c["mrcached-slab"]
        row.append(rel(d["miss"], c["memcached"]["miss"]) if "memcached" in c else "-")
        rules = ", ".join(f"{k} {v}" for k, v in sorted(d["rules"].items()) if v)
        row.append(f"{d['policy_moved']}" + (f" ({rules})" if rules else "") + f" / {d['moved']}")
    print("| " + " | ".join(row) + " |")
errs = [(k, s, c[s]["errors"]) for k, c in cells.items() for s in live if c[s]["errors"]]
for k, s, e in errs:
    print(f"warning: {k[0]} -m {k[1]} {s}: {e} bench errors", file=sys.stderr)
print()
print("replay rate, ops/s: " + ", ".join(f"{k[0]} -m {k[1]} {s} {c[s]['ops']:.0f}" for k, c in cells.items() for s in live))
PY
