#!/usr/bin/env python3
"""Memory under abuse: issue 19's five measurements, mrcached and memcached side by side (docs/results.md §18).

Run through scripts/abuse.sh, which builds the release mrcached. Usage:

    abuse.py MRCACHED_BIN MEMCACHED_BIN

Each measurement starts a fresh server of each kind on 127.0.0.1 (a free port), drives one abusive client
pattern on loopback, reads the server's VmRSS from /proc/PID/status (and `stats` where named), stops the
server, and prints one Markdown table row:

1. one `get` line naming a 1,000,000-byte value 1,000 times, not read for 3 s: peak RSS; then the whole
   reply is read and its length checked;
2. 50 connections each send 100 x `get big` (the same value) and never read: RSS after 3 s;
3. 500 connections each send `set pN 0 0 1048000` and 1,040,000 bytes of it, then stall: RSS after 3 s;
4. `-m 64 -I 32m`, one value in every class (10 B to 30 MB, 1.25 apart): `total_malloced` and RSS;
5. a 5 KB `gat 0 key00001 ... key00600` line sent in one write: answered or closed.

All servers run with `-m 64 -t 4` (memcached's defaults otherwise); `MRCACHED_EXTRA_ARGS` (whitespace-separated,
as in the test harnesses) is appended to every mrcached command line, e.g. `-o io=uring` to measure the
io_uring network path. Loads are bounded in count; every wait has a deadline.
"""

import os
import socket
import subprocess
import sys
import time

MIB = 1024 * 1024
BIG = 1_000_000


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


class Server:
    def __init__(self, kind, binary, args):
        self.kind = kind
        port = free_port()
        cmd = [binary, "-U", "0", "-l", "127.0.0.1", "-p", str(port)] + args
        if os.geteuid() == 0:  # both refuse to run as root without -u
            cmd += ["-u", "root"]
        if kind == "mrcached":
            cmd += os.environ.get("MRCACHED_EXTRA_ARGS", "").split()
        self.proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        self.port = port
        deadline = time.time() + 20
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                if time.time() > deadline or self.proc.poll() is not None:
                    raise RuntimeError(f"{kind} did not start")
                time.sleep(0.05)

    def connect(self):
        c = socket.create_connection(("127.0.0.1", self.port), timeout=60)
        c.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        return c

    def rss_kb(self):
        with open(f"/proc/{self.proc.pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
        return 0

    def peak_rss_kb(self, seconds):
        peak = self.rss_kb()
        deadline = time.time() + seconds
        while time.time() < deadline:
            time.sleep(0.05)
            peak = max(peak, self.rss_kb())
        return peak

    def alive(self):
        return self.proc.poll() is None

    def stop(self):
        self.proc.kill()
        self.proc.wait()


def read_until(c, end, limit=None):
    got = bytearray()
    while not got.endswith(end):
        chunk = c.recv(1 << 20)
        if not chunk:
            raise RuntimeError(f"closed after {len(got)} bytes")
        got += chunk
    return bytes(got)


def call(c, request, end=b"\r\n"):
    c.sendall(request)
    return read_until(c, end)


def set_value(c, key, length):
    reply = call(c, b"set %s 0 0 %d\r\n" % (key, length) + b"v" * length + b"\r\n")
    return reply == b"STORED\r\n"


def stat(c, name, group=b""):
    for line in call(c, b"stats" + group + b"\r\n", b"END\r\n").decode().splitlines():
        parts = line.split()
        if len(parts) == 3 and parts[1] == name:
            return int(parts[2])
    return None


def mb(kb):
    return f"{kb / 1024:,.0f} MB"


def one_get_line(kind, binary):
    s = Server(kind, binary, ["-m", "64", "-t", "4"])
    try:
        c = s.connect()
        set_value(c, b"big", BIG)
        base = s.rss_kb()
        c.sendall(b"get" + b" big" * 1000 + b"\r\n")
        peak = s.peak_rss_kb(3)
        block = len(b"VALUE big 0 1000000\r\n") + BIG + 2
        expected = 1000 * block + 5
        got = 0
        while got < expected:
            chunk = c.recv(1 << 20)
            if not chunk:
                break
            got += len(chunk)
        ok = "reply complete" if got == expected else f"reply {got} of {expected} bytes"
        return f"{mb(peak)} (+{mb(peak - base)}), {ok}"
    finally:
        s.stop()


def held_peak(s, base, count, send):
    """Opens `count` connections, runs `send(connection, i)` on each and holds them all (unread) while the
    RSS peak is sampled for 3 s; reports it over `base`, and whether a fresh connection is still answered."""
    held = []
    for i in range(count):
        h = s.connect()
        send(h, i)
        held.append(h)
    peak = s.peak_rss_kb(3)
    answers = call(s.connect(), b"version\r\n").startswith(b"VERSION")
    for h in held:
        h.close()
    return f"{mb(peak)} (+{mb(peak - base)}){'' if answers else ', no answer'}"


def never_read(kind, binary):
    s = Server(kind, binary, ["-m", "64", "-t", "4"])
    try:
        c = s.connect()
        set_value(c, b"big", BIG)
        return held_peak(s, s.rss_kb(), 50, lambda h, _: h.sendall(b"get big\r\n" * 100))
    finally:
        s.stop()


def stalled_uploads(kind, binary):
    s = Server(kind, binary, ["-m", "64", "-t", "4", "-c", "1024"])
    try:
        base = s.rss_kb()
        body = b"x" * 1_040_000

        def upload(c, i):
            c.sendall(b"set p%d 0 0 1048000\r\n" % i)
            c.sendall(body)

        return held_peak(s, base, 500, upload)
    finally:
        s.stop()


def large_item_size(kind, binary):
    s = Server(kind, binary, ["-m", "64", "-I", "32m", "-t", "4"])
    try:
        c = s.connect()
        length, stored, tried = 10, 0, 0
        while length < 30 * MIB:
            stored += set_value(c, b"k%d" % tried, length)
            tried += 1
            length = length * 5 // 4 + 1
        malloced = stat(c, "total_malloced", b" slabs")
        return f"{malloced / MIB:,.0f} MB malloced, {mb(s.rss_kb())} RSS ({stored}/{tried} stored)"
    finally:
        s.stop()


def long_gat_line(kind, binary):
    s = Server(kind, binary, ["-m", "64", "-t", "4"])
    try:
        c = s.connect()
        set_value(c, b"key00001", 3)
        line = b"gat 0" + b"".join(b" key%05d" % k for k in range(1, 601)) + b"\r\n"
        c.sendall(line)
        try:
            reply = read_until(c, b"END\r\n")
            return f"answered ({len(line):,} B line, {len(reply)} B reply)"
        except (RuntimeError, OSError):
            return f"closed ({len(line):,} B line)"
    finally:
        s.stop()


def main():
    mrcached, memcached = sys.argv[1], sys.argv[2]
    rows = [
        ("`get big` x 1,000 in one line, not read for 3 s: peak RSS", one_get_line),
        ("50 connections x 100 `get big`, never read: RSS", never_read),
        ("500 stalled `set` of 1,048,000 B (1,040,000 sent): RSS", stalled_uploads),
        ("`-m 64 -I 32m`, a value in every class", large_item_size),
        ("5.4 KB `gat 0 key00001 … key00600` in one write", long_gat_line),
    ]
    extra = os.environ.get("MRCACHED_EXTRA_ARGS", "").strip()
    print(f"| pattern (`-m 64 -t 4`) | mrcached{f' `{extra}`' if extra else ''} | memcached 1.6.18 |")
    print("|---|---|---|")
    for name, measure in rows:
        cells = []
        for kind, binary in (("mrcached", mrcached), ("memcached", memcached)):
            try:
                cells.append(measure(kind, binary))
            except Exception as e:  # a server that dies under the load is a result, not a crash
                cells.append(f"failed: {e}")
        print(f"| {name} | {cells[0]} | {cells[1]} |", flush=True)


if __name__ == "__main__":
    main()
