#!/usr/bin/env python3
"""Tables for docs/results.md §12 from scripts/tenant-experiments.sh's JSON lines.

    scripts/tenant-summary.py DIR [COMPULSORY_MISS_RATIO]

COMPULSORY_MISS_RATIO: the miss ratio of the same workload in unbounded memory (first accesses), to
report capacity misses; 0 if not given.
"""
import json
import sys
from pathlib import Path


def runs(path):
    return [json.loads(line) for line in open(path)]


def name(r):
    return r["tenant_policy"].split(":")[0] + (
        "" if "interval" not in r["tenant_policy"] else ""
    )


def half(r):
    w = r["windows"]
    h = w[len(w) // 2 :]
    return sum(x["misses"] for x in h) / sum(x["gets"] for x in h)


def min_over_reserve(r):
    """Lowest pages - reserved of any tenant in the second half (memory full)."""
    w = r["windows"]
    worst = None
    reserved = {t["tenant"]: t["reserved_pages"] or 0 for t in r["tenants"]}
    for x in w[len(w) // 2 :]:
        for t in x["tenants"]:
            if t["pages"] is None:
                continue
            d = t["pages"] - reserved.get(t["tenant"], 0)
            worst = d if worst is None else min(worst, d)
    return worst


def mpart_six(d, compulsory):
    print("| initial allocation | arbiter | miss ratio | capacity misses | 2nd half | mpart vs memshare | min pages over reserve |")
    print("|---|---|---:|---:|---:|---:|---:|")
    for alloc in ["wss90", "unique75", "equal"]:
        rs = runs(d / f"mpart-six-{alloc}.jsonl")
        by = {name(r): r for r in rs}
        for r in rs:
            n = name(r)
            cmp = ""
            if n == "mpart":
                m, s = r["miss_ratio"], by["memshare"]["miss_ratio"]
                cmp = f"{(1 - m / s) * 100:.1f}% fewer ({(1 - (m - compulsory) / (s - compulsory)) * 100:.1f}% of capacity)"
            print(
                f"| {alloc} | {n} | {r['miss_ratio']:.4f} | {r['miss_ratio'] - compulsory:.4f} | {half(r):.4f} | {cmp} | {min_over_reserve(r)} |"
            )


def noisy(d):
    rs = runs(d / "noisy-neighbour.jsonl")
    print("| arbiter | miss ratio | 2nd half | noisy tenant pages (reserve) by window after it enters | six applications' 2nd-half miss ratio |")
    print("|---|---:|---:|---|---:|")
    for r in rs:
        w = r["windows"]
        enter = next(i for i, x in enumerate(w) if any(t["tenant"] == 6 and t["gets"] for t in x["tenants"]))
        pages = []
        for x in w[enter : enter + 6] + w[-1:]:
            t = [t for t in x["tenants"] if t["tenant"] == 6]
            pages.append(str(t[0]["pages"]) if t and t[0]["pages"] is not None else "-")
        reserve = next((t["reserved_pages"] for t in r["tenants"] if t["tenant"] == 6), None)
        h = w[len(w) // 2 :]
        six = [t for x in h for t in x["tenants"] if t["tenant"] < 6]
        six_mr = sum(t["misses"] for t in six) / max(1, sum(t["gets"] for t in six))
        print(f"| {name(r)} | {r['miss_ratio']:.4f} | {half(r):.4f} | {', '.join(pages[:-1])} ... {pages[-1]} ({reserve}) | {six_mr:.4f} |")


def qos(d):
    rs = runs(d / "qos.jsonl")
    print("| arbiter | APP1 phase 1 | phase 2 | phase 3 | APP1 worst window after round 1 (phase 1/2/3) | APP2 phase 1/2/3 |")
    print("|---|---:|---:|---:|---|---|")
    for r in rs:
        w = r["windows"]
        n = len(w)
        cells, worst, app2 = [], [], []
        for a, b in [(0, n // 3), (n // 3, 2 * n // 3), (2 * n // 3, n)]:
            ws = w[max(a, 1) : b]
            t0 = [x["tenants"][0] for x in ws]
            t1 = [x["tenants"][1] for x in ws]
            hr = lambda ts: 1 - sum(t["misses"] for t in ts) / max(1, sum(t["gets"] for t in ts))
            cells.append(f"{hr(t0):.3f}")
            worst.append(f"{min(1 - t['miss_ratio'] for t in t0):.3f}")
            app2.append(f"{hr(t1):.3f}")
        print(f"| {r['tenant_policy']} | {' | '.join(cells)} | {' / '.join(worst)} | {' / '.join(app2)} |")


if __name__ == "__main__":
    d = Path(sys.argv[1])
    c = float(sys.argv[2]) if len(sys.argv) > 2 else 0.0
    for f, title in [(mpart_six, "mpart-six"), (noisy, "noisy"), (qos, "qos")]:
        print(f"\n### {title}\n")
        try:
            f(d, c) if f is mpart_six else f(d)
        except FileNotFoundError as e:
            print(f"(missing: {e.filename})")
