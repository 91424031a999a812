#!/usr/bin/env bash
# Memory under abuse (issue 19): five abusive client patterns against mrcached (release build) and
# memcached 1.6.18 side by side, one Markdown table row each (docs/results.md §18).
#
#   scripts/abuse.sh [-n]
#
# -n skips the release build. The patterns, their counts and what is measured are described in
# scripts/abuse.py; every server runs on 127.0.0.1 with `-m 64 -t 4` and is stopped after its row.
# MRCACHED_EXTRA_ARGS is appended to mrcached's command line: `MRCACHED_EXTRA_ARGS="-o io=uring"
# scripts/abuse.sh` measures the io_uring network path.
set -euo pipefail
cd "$(dirname "$0")/.."

build=1
while getopts "n" opt; do
    case "$opt" in
        n) build=0 ;;
        *) echo "usage: $0 [-n]" >&2; exit 64 ;;
    esac
done

memcached=${MEMCACHED_BIN:-/usr/bin/memcached}
[ -x "$memcached" ] || { echo "memcached not installed (apt-get install memcached)" >&2; exit 1; }
target=${CARGO_TARGET_DIR:-target}
[ "$build" -eq 1 ] && cargo build --release -q -p mrcache-server
# 500 stalled uploads need 500 client sockets here and as many in the server.
ulimit -n 4096 2>/dev/null || true
/usr/bin/python3 scripts/abuse.py "${MRCACHED_BIN:-$target/release/mrcached}" "$memcached"
