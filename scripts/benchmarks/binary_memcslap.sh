#!/usr/bin/env bash
# Binary-protocol sanity under load: memcslap (libmemcached-tools) in binary and in text mode against
# memcached 1.6.18 and mrcached, side by side, on 127.0.0.1 free ports. Prints memcslap's first
# "Time to <op> N keys by T threads" line per run. Bounded: CONCURRENCY threads x EXECUTE operations each.
#   scripts/benchmarks/binary_memcslap.sh [MRCACHED_BIN]
set -euo pipefail
MRCACHED=${1:-target/release/mrcached}
CONCURRENCY=${CONCURRENCY:-4}
EXECUTE=${EXECUTE:-50000}
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
wait_port() { for _ in $(seq 100); do (exec 3<>/dev/tcp/127.0.0.1/"$1") 2>/dev/null && return 0; sleep 0.05; done; return 1; }
run() { # name port mode
    local flag=(); [ "$3" = binary ] && flag=(--binary)
    for test in set get; do
        local took
        took=$(timeout 300 memcslap --servers="127.0.0.1:$2" --test="$test" --concurrency="$CONCURRENCY" \
            --execute-number="$EXECUTE" "${flag[@]}" 2>&1 | grep -E "^Time to [a-z]+ +[0-9]+ keys by" | head -1 || echo "FAILED")
        printf '%-10s %-7s %-4s %s\n' "$1" "$3" "$test" "$took"
    done
}
pm=$(free_port); memcached -u root -U 0 -l 127.0.0.1 -p "$pm" -t 4 -m 256 & mpid=$!
pr=$(free_port); "$MRCACHED" -u root -U 0 -l 127.0.0.1 -p "$pr" -t 4 -m 256 >/dev/null & rpid=$!
trap 'kill $mpid $rpid 2>/dev/null || true' EXIT
wait_port "$pm"; wait_port "$pr"
for mode in binary text; do
    run memcached "$pm" "$mode"
    run mrcached "$pr" "$mode"
done
