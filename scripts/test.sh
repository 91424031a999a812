#!/usr/bin/env bash
# The whole mrcache test suite, in the order a reviewer would check it:
#   1. reference tools (apt-get, only what is missing): memcached,
#      libmemcached-tools, python3-pymemcache, python3-pylibmc, python3-pytest, chromium (the
#      dashboard's browser test), prometheus (promtool checks /metrics), dpkg-dev and systemd (the
#      Debian package's test: dpkg-shlibdeps, systemd-analyze verify)
#   2. cargo fmt --check
#   3. cargo clippy --workspace --all-targets -- -D warnings
#   4. cargo build --release --workspace
#   5. cargo test --release --workspace -- --include-ignored   (the tests marked
#      #[ignore = "needs TOOL"], which a bare `cargo test` leaves out, run too: a missing tool fails them)
#   6. pytest tests/python against target/release/mrcached
#   7. (the fuzz corpus replay is a cargo test: mrcache-protocol --test replay)
#   8. the conformance suite, memcapable and pytest again on epoll and under memcached's slab layout
#      (MRCACHED_EXTRA_ARGS="-o io=epoll", "-o memory_layout=slab")
# Every step runs even if an earlier one failed. The last line is the summary
# `N passed, N failed`: the sum of cargo's `test result:` lines and pytest's
# counts, plus one per gate step (tools, fmt, clippy, build). The exit
# status is non-zero if anything failed.
set -uo pipefail
cd "$(dirname "$0")/.."

export CARGO_TERM_COLOR=never
export PYTHONDONTWRITEBYTECODE=1
# Debian's python (with python3-pymemcache), not a pyenv/virtualenv python3.
PYTHON=/usr/bin/python3
TARGET_DIR="${CARGO_TARGET_DIR:-target}"
LOG_DIR="$(mktemp -d)"
trap 'rm -rf "$LOG_DIR"' EXIT

passed=0
failed=0
failed_steps=()

note() { printf '\n==> %s\n' "$*"; }

# Runs a gate step (counted as one test) with its output shown.
gate() {
    local name="$1"
    shift
    note "$name"
    if "$@"; then
        passed=$((passed + 1))
    else
        failed=$((failed + 1))
        failed_steps+=("$name")
    fi
}

# Sums "N passed" and "N failed|error|errors" counts from cargo's
# `test result:` lines, or from pytest's last line; prints "PASSED FAILED".
count_results() {
    awk -v pattern="$2" '$0 ~ pattern {
        for (i = 2; i <= NF; i++) {
            word = $i; gsub(/[;,]/, "", word)
            if (word == "passed") p += $(i - 1)
            if (word == "failed" || word == "error" || word == "errors") f += $(i - 1)
        }
    } END { print p + 0, f + 0 }' "$1"
}

ensure_reference_tools() {
    local missing=()
    [ -x /usr/bin/memcached ] || missing+=(memcached)
    [ -x /usr/bin/memccapable ] || missing+=(libmemcached-tools)
    "$PYTHON" -c 'import pymemcache' 2>/dev/null || missing+=(python3-pymemcache)
    "$PYTHON" -c 'import pytest' 2>/dev/null || missing+=(python3-pytest)
    # tests/python/test_pylibmc_binary.py: libmemcached in binary mode, with SASL.
    "$PYTHON" -c 'import pylibmc' 2>/dev/null || missing+=(python3-pylibmc)
    # Figures (mrcache mrc/sim --plot) measure and draw text with this font.
    [ -f /usr/share/fonts/truetype/dejavu/DejaVuSans.ttf ] || missing+=(fonts-dejavu-core)
    # The admin dashboard's test loads the page in a real browser; /metrics is checked by promtool.
    command -v chromium >/dev/null 2>&1 || missing+=(chromium)
    command -v promtool >/dev/null 2>&1 || missing+=(prometheus)
    # tests/python/test_cluster.py runs three servers behind twemproxy.
    command -v nutcracker >/dev/null || [ -x /usr/sbin/nutcracker ] || missing+=(nutcracker)
    # tests/package_deb.rs builds the Debian package (dpkg-shlibdeps) and verifies its systemd unit.
    command -v dpkg-shlibdeps >/dev/null || missing+=(dpkg-dev)
    command -v systemd-analyze >/dev/null || missing+=(systemd)
    [ ${#missing[@]} -eq 0 ] && { echo "all present"; return 0; }
    echo "installing: ${missing[*]}"
    local sudo=()
    [ "$(id -u)" -eq 0 ] || sudo=(sudo -n)
    export DEBIAN_FRONTEND=noninteractive
    "${sudo[@]}" apt-get update -qq &&
        "${sudo[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}"
}

# shellcheck source=scripts/lib/toolchain.sh
. scripts/lib/toolchain.sh
gate "Rust toolchain (rustup where cargo is missing)" ensure_rust
gate "reference tools (memcached, memccapable, pymemcache, pylibmc, pytest, chromium, promtool)" ensure_reference_tools
# The tests that need these tools are #[ignore = "needs TOOL"], so that a bare `cargo test` passes without
# them; every cargo test step here passes --include-ignored, so they run, and a missing tool fails them.
INCLUDE_IGNORED=(-- --include-ignored)

gate "cargo fmt --check" cargo fmt --all --check
gate "cargo clippy" cargo clippy --workspace --all-targets -- -D warnings
gate "cargo build --release" cargo build --release --workspace

# Runs a command whose output counts passed/failed tests (cargo's `test result:` lines, or pytest's last
# line), adds them to the totals, and records the step as failed when the command failed without a
# failed count (a test binary that did not compile or crashed, a timeout).
#   counted_step NAME LOG PATTERN COMMAND...   (PATTERN: the awk regex of the summary lines)
counted_step() {
    local name="$1" log="$LOG_DIR/$2" pattern="$3"
    shift 3
    note "$name"
    "$@" 2>&1 | tee "$log"
    local status=${PIPESTATUS[0]}
    local p f
    if [ "$pattern" = pytest ]; then
        tail -n 1 "$log" >"$log.summary"
        read -r p f < <(count_results "$log.summary" ' in [0-9.]+s')
    else
        read -r p f < <(count_results "$log" "$pattern")
    fi
    passed=$((passed + p))
    failed=$((failed + f))
    if [ "$status" -ne 0 ] && [ "$f" -eq 0 ]; then
        failed=$((failed + 1))
    fi
    [ "$status" -eq 0 ] || failed_steps+=("$name")
}

MRCACHED_RELEASE="${MRCACHED_BIN:-$TARGET_DIR/release/mrcached}"
pytest_run() {
    MRCACHED_BIN="$MRCACHED_RELEASE" timeout 900 "$PYTHON" -m pytest -q -p no:cacheprovider "$@"
}

counted_step "cargo test --release --workspace" cargo-test.log '^test result:' \
    cargo test --release --workspace "${INCLUDE_IGNORED[@]}"
counted_step "pytest tests/python" pytest.log pytest pytest_run tests/python

# ---- the other network I/O path and memory layout ---------------------------------------------------
# Everything above ran on the defaults (-o io=auto: io_uring where the kernel runs it, else epoll;
# -o memory_layout=log). The conformance suite, memcapable and the Python tests run again on epoll and
# on memcached's slab layout:
# MRCACHED_EXTRA_ARGS is appended to every mrcached the Rust and Python harnesses start.
# Both also rerun the abusive-client memory bounds (tests/hardening.rs), the connection churn
# (tests/churn.rs: abortive closes mid-value leave no connection or descriptor behind) and the concurrent
# clients' lost-update check (tests/concurrency.rs): each must hold whatever the layout and on both I/O
# paths.
for extra in "-o io=epoll" "-o memory_layout=slab"; do
    tag="${extra#-o }"
    tests=(--test conformance --test memcapable --test hardening --test churn --test concurrency)
    export MRCACHED_EXTRA_ARGS="$extra"
    counted_step "${tests[*]//--test /} ($extra)" "cargo-$tag.log" '^test result:' \
        cargo test --release -p mrcache-server "${tests[@]}" "${INCLUDE_IGNORED[@]}"
    counted_step "pytest tests/python ($extra)" "pytest-$tag.log" pytest pytest_run tests/python
    unset MRCACHED_EXTRA_ARGS
done

# ---- fuzzing ----------------------------------------------------------------
# The fuzz corpus replay (fuzz/seeds and, when present, fuzz/corpus/parse through the parser's contract
# check, on stable) is the test `mrcache-protocol --test replay`, run by `cargo test` above; the targets
# meta, config and reply replay fuzz/seeds/<target> through their checks (fuzz/checks/) in the tests
# replay_meta and replay_auth (protocol), replay_config (server) and replay_reply (loadgen). Fuzzing needs
# nightly: see fuzz/README.md and docs/fuzzing.md.
# -----------------------------------------------------------------------------

echo
if [ ${#failed_steps[@]} -gt 0 ]; then
    echo "failed steps: ${failed_steps[*]}"
fi
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ] && [ ${#failed_steps[@]} -eq 0 ]
