#!/usr/bin/env bash
# Builds and runs mrcached with its built-in defaults. With no arguments it
# listens on 127.0.0.1:11211 (memcached's port, loopback only); any arguments
# are memcached-style flags passed through, e.g. `scripts/run-server.sh -p 22122 -m 1024`.
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=scripts/lib/toolchain.sh
. scripts/lib/toolchain.sh
ensure_rust
if [ $# -eq 0 ]; then
    set -- -l 127.0.0.1 -p 11211
fi
# As root, mrcached (like memcached) needs -u; this script keeps root unless -u is given.
if [ "$(id -u)" -eq 0 ] && ! printf '%s\n' "$@" | grep -qE '^(-u|--user)'; then
    set -- -u root "$@"
fi
exec cargo run --release --quiet --bin mrcached -- "$@"
