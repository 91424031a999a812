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
