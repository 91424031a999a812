#!/usr/bin/env python3
"""Prints docs/results.md §16's tables from what scripts/dynacache-compare.sh wrote into OUT_DIR (and, given
a second argument, draws the ETC sweep into that SVG file).

Dynacache's Table 1 columns, per workload or tenant: the default allocation's hit ratio, Dynacache's,
the reduction in misses, the memory the default allocation needs for Dynacache's hit ratio (ETC only,
interpolated on memcached's sweep to 1 GiB), and the miss entropy (bits, of memcached's run)."""
import glob
import json
import os
import sys

out = sys.argv[1] if len(sys.argv) > 1 else "target/dynacache"
RESULTS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "docs", "results.md")


def published(section, key_cols):
    """Rows of the first table under `## section` in docs/results.md, as {key: {column: cell}}: the
    deterministic simulator results of lama-mr and the upper bound, where this run did not repeat them."""
    text = open(RESULTS).read()
    start = text.index("## " + section)
    lines = text[start:].splitlines()
    rows, head = {}, None
    for line in lines[1:]:
        if line.startswith("## "):
            break
        if not line.startswith("|"):
            if head and rows:
                break
            continue
        cells = [c.strip().strip("*") for c in line.strip("|").split("|")]
        if head is None:
            head = cells
        elif not set(line) <= set("|-: "):
            rows[tuple(cells[i] for i in key_cols)] = dict(zip(head, cells))
    return rows


def pct(x):
    return f"{x:+.1%}" if abs(x) >= 0.0005 else "0.0%"


def rel(a, b):
    return "-" if b == 0 else pct(a / b - 1)


def etc():
    path = f"{out}/etc.jsonl"
    if not os.path.exists(path) or os.path.getsize(path) == 0:
        return
    points = [p for line in open(path) for p in json.loads(line)]
    large = f"{out}/etc-memcached-large.jsonl"
    if os.path.exists(large) and os.path.getsize(large) > 0:
        points += [p for line in open(large) for p in json.loads(line)]
    by = {}
    for p in points:
        by.setdefault(p["memory_bytes"] >> 20, {})[p["policy"].split(":")[0]] = p
    sec7 = published("7. Slab policies on ETC", [0])
    for m, r in by.items():
        row = sec7.get((str(m),))
        for policy, column in (("lama-mr", "lama-mr"), ("upper-bound", "upper-bound")):
            if policy not in r and row:
                r[policy] = {"steady_state_miss_ratio": float(row[column]), "page_moves": "§7"}
    memc = sorted((m, r["memcached"]["steady_state_miss_ratio"]) for m, r in by.items() if "memcached" in r)

    def memory_for(ratio):
        """The least memory (MiB) at which memcached's steady state reaches `ratio`, interpolated."""
        for (m0, r0), (m1, r1) in zip(memc, memc[1:]):
            if r1 <= ratio <= r0:
                return m0 + (m1 - m0) * (r0 - ratio) / (r0 - r1) if r0 != r1 else m0
        return None

    if len(sys.argv) > 2:
        svg(sys.argv[2], {p: [(m, by[m][p]["steady_state_miss_ratio"]) for m in sorted(by)
                              if p in by[m] and "dynacache" in by[m]]
                          for p in ("memcached", "lama-mr", "dynacache", "upper-bound")})
    print("ETC, uniform popularity, 1/4 scale: steady-state miss ratio\n")
    print("| MiB | memcached | lama-mr | dynacache | upper-bound | dynacache vs memcached | dynacache vs lama-mr "
          "| share of the potential | memory memcached needs for it | moves (lama / dyna) | miss entropy (memcached) |")
    print("|---:|" + "---:|" * 10)
    for m in sorted(by):
        r = by[m]
        if "dynacache" not in r:
            continue
        s = {k: v["steady_state_miss_ratio"] for k, v in r.items()}
        pot = s["memcached"] - s["upper-bound"]
        share = f"{(s['memcached'] - s['dynacache']) / pot:.1%}" if pot > 1e-4 else "-"
        need = memory_for(s["dynacache"])
        need = f"{need:.0f} MiB ({need / m - 1:+.0%})" if need else "> 1024 MiB"
        print(f"| {m} | {s['memcached']:.4f} | {s['lama-mr']:.4f} | {s['dynacache']:.4f} | {s['upper-bound']:.4f} "
              f"| {pct(s['dynacache'] / s['memcached'] - 1)} | {pct(s['dynacache'] / s['lama-mr'] - 1)} | {share} | {need} "
              f"| {r['lama-mr']['page_moves']} / {r['dynacache']['page_moves']} "
              f"| {entropy(r['memcached'])} |")
    print()


def svg(path, series):
    """Miss ratio against memory, one line per policy, as a small standalone SVG."""
    w, h, l, b, r, t = 640, 400, 60, 50, 130, 20
    xs = [x for pts in series.values() for x, _ in pts]
    x0, x1 = min(xs), max(xs)
    px = lambda x: l + (x - x0) / (x1 - x0) * (w - l - r)
    py = lambda y: t + (1 - y) * (h - t - b)
    colours = {"memcached": "#d62728", "lama-mr": "#1f77b4", "dynacache": "#2ca02c", "upper-bound": "#7f7f7f"}
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" font-family="sans-serif" font-size="12">',
           f'<rect width="{w}" height="{h}" fill="white"/>',
           f'<text x="{w / 2}" y="14" text-anchor="middle">ETC (uniform, 1/4 scale): steady-state miss ratio</text>']
    for i in range(6):
        y = i / 5
        out.append(f'<line x1="{l}" x2="{w - r}" y1="{py(y):.1f}" y2="{py(y):.1f}" stroke="#ddd"/>')
        out.append(f'<text x="{l - 6}" y="{py(y) + 4:.1f}" text-anchor="end">{y:.1f}</text>')
    for x in sorted(set(xs)):
        out.append(f'<text x="{px(x):.1f}" y="{h - b + 16}" text-anchor="middle">{x}</text>')
    out.append(f'<text x="{(l + w - r) / 2}" y="{h - 10}" text-anchor="middle">memory (MiB)</text>')
    for k, (name, pts) in enumerate(series.items()):
        c = colours.get(name, "black")
        dash = ' stroke-dasharray="5,4"' if name == "upper-bound" else ""
        d = " ".join(f"{px(x):.1f},{py(y):.1f}" for x, y in pts)
        out.append(f'<polyline points="{d}" fill="none" stroke="{c}" stroke-width="2"{dash}/>')
        out.append(f'<line x1="{w - r + 10}" x2="{w - r + 30}" y1="{t + 20 + 18 * k}" y2="{t + 20 + 18 * k}" '
                   f'stroke="{c}" stroke-width="2"{dash}/>')
        out.append(f'<text x="{w - r + 36}" y="{t + 24 + 18 * k}">{name}</text>')
    out.append("</svg>")
    with open(path, "w") as f:
        f.write("\n".join(out) + "\n")


def entropy(report):
    """A report's miss entropy, `-` where the binary that wrote it did not report one."""
    e = report.get("miss_entropy")
    return "-" if e is None else f"{e:.2f}"


def tenants():
    runs = {}
    for p in ("memcached", "lama-mr", "dynacache"):
        path = f"{out}/mpart-six-{p}.jsonl"
        if os.path.exists(path) and os.path.getsize(path) > 0:
            runs[p] = json.loads(open(path).readline())
    qos = {}
    path = f"{out}/qos-static.jsonl"
    if os.path.exists(path):
        for line in filter(str.strip, open(path)):
            r = json.loads(line)
            qos[r["policy"].split(":")[0]] = r
    for title, rs, names in (
        ("mPart's six applications (1/20 scale, 90% WSS, mpart arbiter)", runs,
         ["etc", "etc.small", "psa", "psa.small", "ycsb", "ycsb.small"]),
        ("LAMA §5.7's pair, 80 MiB each (static)", qos, ["APP1 three-phase", "APP2 ETC"]),
    ):
        if "dynacache" not in rs:
            continue
        print(title + "\n")
        print("| tenant | % of GETs | memcached hit ratio | lama-mr | dynacache | dynacache: fewer misses than memcached "
              "| than lama-mr | miss entropy (memcached) | dynacache moves |")
        print("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
        gets = sum(t["gets"] for t in rs["memcached"]["tenants"])
        rows = [("all", None)] + [(names[i] if i < len(names) else str(i), i)
                                  for i in range(len(rs["memcached"]["tenants"]))]
        for name, i in rows:
            def get(p):
                r = rs[p]
                return r if i is None else r["tenants"][i]
            m, l, d = get("memcached"), get("lama-mr"), get("dynacache")
            share = "100%" if i is None else f"{m['gets'] / gets:.1%}"
            moves = rs["dynacache"]["page_moves"] if i is None else ""
            print(f"| {name} | {share} | {1 - m['miss_ratio']:.4f} | {1 - l['miss_ratio']:.4f} | {1 - d['miss_ratio']:.4f} "
                  f"| {pct(1 - d['miss_ratio'] / m['miss_ratio'])} | {pct(1 - d['miss_ratio'] / l['miss_ratio'])} "
                  f"| {entropy(m)} | {moves} |")
        print()


def traces():
    files = glob.glob(f"{out}/traces/*.json")
    if not files:
        return
    by = {}
    for f in files:
        base = os.path.basename(f)[:-5]
        policy = next((p for p in ("upper-bound", "lama-mr", "dynacache", "dynacache:guard=model", "memcached")
                       if base.endswith("-" + p)), None)
        if policy is None:
            continue
        name, share = base[: -len(policy) - 1].rsplit("-", 1)
        by.setdefault((name, share), {})[policy] = json.load(open(f))
    sec14 = published("14. Slab policies on real traces", [0, 1])
    for (name, share), r in by.items():
        shown = share if any(c.isalpha() for c in share) else share + "%"
        row = sec14.get((name, shown))
        for policy in ("lama-mr", "upper-bound"):
            if policy not in r and row:
                r[policy] = {"miss_ratio": float(row[policy]),
                             "page_moves": row["moves"] if policy == "lama-mr" else 0}
    print("Real traces: whole-run GET miss ratio\n")
    guard = any("dynacache:guard=model" in r for r in by.values())
    print("| trace | share | MiB | memcached | lama-mr | dynacache | upper-bound | dyna vs memcached | dyna vs lama-mr "
          "| moves (lama / dyna) | miss entropy (memcached) |" + (" guard=model | its moves |" if guard else ""))
    print("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|" + ("---:|---:|" if guard else ""))
    order = ["cache2k-orm-busy", "cache2k-orm-night", "cache2k-web07", "cache2k-web12", "corda_vaultservice",
             "arc-OLTP", "cloudPhysicsIO"]
    key = lambda k: (any(c.isalpha() for c in k[1]), order.index(k[0]) if k[0] in order else 99,
                     int("".join(c for c in k[1] if c.isdigit())))
    for (name, share) in sorted(by, key=key):
        r = by[(name, share)]
        if not all(p in r for p in ("memcached", "lama-mr", "dynacache")):
            continue
        s = {p: v["miss_ratio"] for p, v in r.items()}
        ub = f"{s['upper-bound']:.4f}" if "upper-bound" in s else "-"
        shown = share if any(c.isalpha() for c in share) else share + "%"
        print(f"| {name} | {shown} | {r['memcached']['memory_bytes'] / 2**20:.1f} | {s['memcached']:.4f} "
              f"| {s['lama-mr']:.4f} | {s['dynacache']:.4f} | {ub} | {rel(s['dynacache'], s['memcached'])} "
              f"| {rel(s['dynacache'], s['lama-mr'])} | {r['lama-mr']['page_moves']} / {r['dynacache']['page_moves']} "
              f"| {entropy(r['memcached'])} |"
              + (f" {r['dynacache:guard=model']['miss_ratio']:.4f} | {r['dynacache:guard=model']['page_moves']} |"
                 if guard and "dynacache:guard=model" in r else (" - | - |" if guard else "")))
    print()


etc()
tenants()
traces()
