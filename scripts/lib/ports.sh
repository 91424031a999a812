# Helpers shared by the benchmark scripts (sourced, not run): loopback ports, where servers and load run,
# and what a server has done (its stats and CPU time).

# Sets server_cpu and client_cpu, command prefixes that put servers on core 0 and the load generator on
# core 1 where there are two cores (empty otherwise), and user_flag, the `-u root` memcached needs when
# run as root.
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

# Waits up to 10 s for a server to accept on 127.0.0.1:$1; fails with a message otherwise.
wait_port() {
    for _ in $(seq 1 200); do
        (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null && return 0
        sleep 0.05
    done
    echo "server on port $1 did not start" >&2
    return 1
}

# Prints the `stats` of the server on 127.0.0.1:$1 as "NAME VALUE" lines (memcached and mrcached alike).
server_stats() {
    /usr/bin/python3 - "$1" <<'PY'
import socket, sys
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=5)
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

# Prints "CPU_SECONDS COMMANDS" for the server process $2 listening on 127.0.0.1:$1: its utime + stime
# from /proc (fields 14 and 15 of stat(5), in clock ticks) and the gets + sets it has served (cmd_get +
# cmd_set). The difference of two readings gives the server's CPU time per request over that interval.
server_cpu_and_commands() {
    local ticks commands
    ticks=$(awk '{print $14 + $15}' "/proc/$2/stat")
    commands=$(server_stats "$1" | awk '$1 == "cmd_get" || $1 == "cmd_set" {n += $2} END {print n + 0}')
    echo "$(awk -v t="$ticks" -v hz="$(getconf CLK_TCK)" 'BEGIN {print t / hz}') $commands"
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
