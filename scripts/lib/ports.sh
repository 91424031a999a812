# Helpers shared by the benchmark scripts (sourced, not run): loopback ports, where servers and load run,
# and what a server has done (its stats and CPU time).

# Sets server_cpu and client_cpu, command prefixes that put servers on core 0 and the load generator on
# core 1 where there are two cores (empty otherwise), and user_flag, the `-u root` memcached and
# mrcached need when run as root.
bench_placement() {
    server_cpu=() client_cpu=() user_flag=()
    if [ "$(nproc)" -ge 2 ] && command -v taskset >/dev/null; then
        server_cpu=(taskset -c 0) client_cpu=(taskset -c 1)
    fi
    [ "$(id -u)" -eq 0 ] && user_flag=(-u root)
    return 0
}

# A TCP port on 127.0.0.1 that is free now (the kernel's pick; a server started next normally gets it).
free_port() { /usr/bin/python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

# Waits up to 10 s for a server to accept on 127.0.0.1:$1; fails with a message otherwise. A probe that
# the kernel gave the target port as its own source port connects to itself (TCP simultaneous open)
# before the server listens, and would then hold the port: it does not count (as in the test harnesses).
wait_port() {
    /usr/bin/python3 - "$1" <<'PY' || { echo "server on port $1 did not start" >&2; return 1; }
import socket, sys, time
port = int(sys.argv[1])
deadline = time.monotonic() + 10
while time.monotonic() < deadline:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=1) as probe:
            if probe.getsockname() != probe.getpeername():
                sys.exit(0)
    except OSError:
        pass
    time.sleep(0.05)
sys.exit(1)
PY
}

# Prints the `stats` of the server on 127.0.0.1:$1 as "NAME VALUE" lines (memcached and mrcached alike);
# over TLS when $2 names the CA file (PEM) that signed the server's certificate.
server_stats() {
    /usr/bin/python3 - "$1" "${2:-}" <<'PY'
import socket, ssl, sys
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=5)
if sys.argv[2]:
    s = ssl.create_default_context(cafile=sys.argv[2]).wrap_socket(s, server_hostname="127.0.0.1")
s.sendall(b"stats\r\n")
buf = b""
while not buf.endswith(b"END\r\n"):
    chunk = s.recv(65536)
    if not chunk:
        break
    buf += chunk
for line in buf.decode().splitlines():
    parts = line.split()
    if len(parts) == 3 and parts[0] == "STAT":
        print(parts[1], parts[2])
PY
}

# Prints "USER_SECONDS SYSTEM_SECONDS COMMANDS" for the server process $2 whose stats answer on
# 127.0.0.1:$1: its utime and stime from /proc (fields 14 and 15 of stat(5), in clock ticks) and the
# gets + sets it has served (memcached's and mrcached's cmd_get + cmd_set; Segcache's admin port
# counts them as get + set). $3, if given, is the CA file of a TLS server (see server_stats).
server_times_and_commands() {
    local commands
    commands=$(server_stats "$1" "${3:-}" |
        awk '$1 == "cmd_get" || $1 == "cmd_set" || $1 == "get" || $1 == "set" {n += $2} END {print n + 0}')
    awk -v hz="$(getconf CLK_TCK)" -v n="$commands" '{printf "%.6f %.6f %d\n", $14 / hz, $15 / hz, n}' \
        "/proc/$2/stat"
}

# Prints "CPU_SECONDS COMMANDS" for the server process $2 listening on 127.0.0.1:$1: utime + stime and
# its gets + sets (see server_times_and_commands). The difference of two readings gives the server's
# CPU time per request over that interval. $3: a TLS server's CA file, as for server_stats.
server_cpu_and_commands() {
    server_times_and_commands "$@" | awk '{printf "%.6f %d\n", $1 + $2, $3}'
}

# The load of the §4 comparisons (scripts/io-paths.sh, scripts/io-cpu-split.sh): 50 connections, 90/10
# get/set over 100k keys of 32 bytes with 200-byte values, one load thread, JSON output.
io_load=(--threads 1 --connections 50 --keys 100000 --key-size 32 --value-size 200 --get-ratio 0.9 --json)

# Preloads io_load's keys into each server on 127.0.0.1:PORT given, from the load generator's core.
preload_io_load() {
    for port in "$@"; do
        "${client_cpu[@]}" target/release/mrcache bench --server "127.0.0.1:$port" "${io_load[@]}" \
            --preload --rate 1000 --warmup 0s --duration 1s > /dev/null 2>&1
    done
}

# Prints the server's CPU microseconds per request between two `server_cpu_and_commands` readings.
cpu_us_per_request() {
    echo "$1 $2" | awk '{printf "%.2f\n", ($3 - $1) * 1e6 / ($4 - $2 > 0 ? $4 - $2 : 1)}'
}

# The servers a script starts: it appends each one's pid (`pids+=($!)`). `stop_servers` kills them all and
# waits for them to go, for an EXIT trap or between a script's phases.
pids=()
stop_servers() {
    for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
    for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
    pids=()
}
