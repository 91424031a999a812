# Loopback port helpers shared by the benchmark scripts (sourced, not run).

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

# Prints "CPU_SECONDS COMMANDS" for the server process $2 listening on 127.0.0.1:$1: its utime + stime
# from /proc and the gets + sets it has served (`stats` cmd_get + cmd_set, the same for memcached and
# mrcached). The difference of two readings gives the server's CPU time per request over that interval.
server_cpu_and_commands() {
    /usr/bin/python3 - "$1" "$2" <<'PY'
import os, socket, sys
port, pid = int(sys.argv[1]), sys.argv[2]
with open(f"/proc/{pid}/stat") as f:
    fields = f.read().rsplit(")", 1)[1].split()
ticks = int(fields[11]) + int(fields[12])  # utime, stime (fields 14 and 15 of stat(5))
s = socket.create_connection(("127.0.0.1", port), timeout=5)
s.sendall(b"stats\r\n")
buf = b""
while not buf.endswith(b"END\r\n"):
    chunk = s.recv(65536)
    if not chunk:
        break
    buf += chunk
stats = dict(line.split()[1:3] for line in buf.decode().splitlines() if line.startswith("STAT "))
print(ticks / os.sysconf("SC_CLK_TCK"), int(stats["cmd_get"]) + int(stats["cmd_set"]))
PY
}
