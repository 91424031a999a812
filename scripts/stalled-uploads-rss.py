#!/usr/bin/env python3
"""Where a server's memory goes under stalled uploads (docs/results.md §4.1): scripts/abuse.py's third pattern
against one mrcached, with the growth broken down by memory mapping.

    scripts/stalled-uploads-rss.py [-n COUNT] MRCACHED [ARG...]

Starts MRCACHED -m 64 -t 4 -c 1024 ARG... (and MRCACHED_EXTRA_ARGS, as abuse.py does) on 127.0.0.1 (a free port), opens COUNT connections (default 500)
that each send `set pN 0 0 1048000` and 1,040,000 bytes of it, then stall; samples VmRSS for 3 s; prints
the RSS growth (peak, and after the 3 s), the mappings whose resident size grew by more than 512 KiB
(glibc's per-thread malloc arenas are the 64 MiB-aligned ones; larger single allocations are anonymous
mappings of their own), and the partial-value budget's figures from `stats`. The server is stopped at the
end. Run it with `ulimit -n 4096`: COUNT sockets here and as many in the server.
"""

import argparse
import re
import time

from abuse import Server, call


def mappings(pid):
    """{address range: (size KiB, name, resident KiB)} from /proc/PID/smaps."""
    out, cur = {}, None
    with open(f"/proc/{pid}/smaps") as f:
        for line in f:
            if re.match(r"^[0-9a-f]+-[0-9a-f]+ ", line):
                parts = line.split()
                lo, hi = (int(x, 16) for x in parts[0].split("-"))
                cur = parts[0]
                out[cur] = [(hi - lo) // 1024, parts[5] if len(parts) > 5 else "[anonymous]", 0]
            elif line.startswith("Rss:") and cur:
                out[cur][2] = int(line.split()[1])
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("-n", type=int, default=500, help="stalled uploads (default 500)")
    ap.add_argument("mrcached")
    ap.add_argument("args", nargs=argparse.REMAINDER)
    a = ap.parse_args()
    server = Server("mrcached", a.mrcached, ["-m", "64", "-t", "4", "-c", "1024"] + a.args)
    held = []
    try:
        pid = server.proc.pid
        base, before = server.rss_kb(), mappings(pid)
        body = b"x" * 1_040_000
        for i in range(a.n):
            c = server.connect()
            c.sendall(b"set p%d 0 0 1048000\r\n" % i)
            c.sendall(body)
            held.append(c)
        peak = server.peak_rss_kb(3)
        now = server.rss_kb()
        print(f"{' '.join(a.args) or '(defaults)'}: {a.n} stalled uploads, RSS {base / 1024:.1f} MiB at start, "
              f"peak +{(peak - base) / 1024:.1f} MiB, +{(now - base) / 1024:.1f} MiB after 3 s")
        grown = []
        for rng, (size, name, rss) in mappings(pid).items():
            d = rss - before.get(rng, (0, "", 0))[2]
            if d > 512:
                grown.append((d, size, name, rng))
        for d, size, name, rng in sorted(grown, reverse=True):
            print(f"  +{d / 1024:6.1f} MiB resident in a {size / 1024:6.1f} MiB mapping {name} {rng}")
        c = server.connect()
        buf = call(c, b"stats\r\n", b"END\r\n")
        c.close()
        for line in buf.decode().splitlines():
            if line.startswith(("STAT partial_value", "STAT store_no_memory")):
                print("  " + line)
    finally:
        for c in held:
            c.close()
        server.stop()


if __name__ == "__main__":
    main()
