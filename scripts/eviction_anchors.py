#!/usr/bin/env python3
"""Eviction anchors: libCacheSim's fixed algorithms against `mrcache sim` at equal object capacity.

Run it through scripts/eviction-anchors.sh, which makes the virtualenv (libcachesim from PyPI) and explains
the object-capacity mapping in its header; the same text is in `MAPPING` below and in the report.

  eviction_anchors.py run OUT_DIR        every shared key trace at 1/5/10/25% of its distinct objects
  eviction_anchors.py fixture OUT_JSON   the test fixture: a short trace, S3-FIFO and LRU (and the rest)
  eviction_anchors.py report OUT_DIR     rewrite anchors.md and anchors.csv from anchors.json

Environment: MRCACHE (binary), TRACES_DIR, WORK (converted traces), LOG_SEGMENTS (log budget in
segments, default 32), SHARES ("1 5 10 25"), TRACES (names under TRACES_DIR), CLOCKS ("default exact").
"""

import argparse
import csv
import datetime
import gzip
import json
import lzma
import math
import os
import platform
import subprocess
import sys
import time

import numpy as np
import libcachesim as lcs

MIB = 1 << 20
KEY_SIZE = 16  # `mrcache sim --key-size`: every trace key is printed as at most 16 hex digits and padded to 16
# memcached 1.6's accounting of an item (`mrcache sim --item-accounting memcached`, --memcached-defaults):
# 48-byte header + 8-byte CAS + key + 1 (NUL) + 2 (CRLF) + value; flags 0 add no suffix.
SLAB_ITEM_OVERHEAD = 48 + 8 + 1 + 2
SLAB_GROWTH_FACTOR = 1.25  # -f
SLAB_MIN_CHUNK = 48 + 48   # header + -n 48: class 1 is 96 bytes
# The log's record: 4-byte prefix + 28-byte item header + key + value, padded to 8 bytes.
LOG_RECORD_OVERHEAD = 4 + 28
# Mean live items of a log whose budget is P segments of c records each, in units of c below P (see MAPPING).
LOG_MEAN_DEFICIT = 17 / 32
SLAB_MAX_MEMORY = 512 * MIB
DEFAULT_CLOCK_RPS = 100_000  # `mrcache sim`'s default --requests-per-second

TRACES = {
    # name: (path under TRACES_DIR, format, requests, distinct) as README.md gives them
    "cache2k-orm-busy": ("kv/cache2k-orm-busy.trace.xz", "u32be", 5_000_000, 76_349),
    "cache2k-orm-night": ("kv/cache2k-orm-night.trace.xz", "u32be", 5_000_000, 86_466),
    "cache2k-web07": ("kv/cache2k-web07.trace.xz", "u32be", 76_118, 20_484),
    "cache2k-web12": ("kv/cache2k-web12.trace.xz", "u32be", 95_607, 13_756),
    "corda_vaultservice": ("kv/corda_vaultservice.trace.gz", "u64be", 135_702, 90_468),
    "cloudPhysicsIO": ("block/cloudPhysicsIO.oracleGeneral.bin", "oracle", 113_872, 48_974),
    "arc-OLTP": ("block/arc-OLTP.lis.zst", "arc", 914_145, 186_880),
}
REFERENCE = {  # reference/*.lru-mrc.csv file names
    "cache2k-orm-busy": "cache2k-orm-busy", "cache2k-orm-night": "cache2k-orm-night",
    "cache2k-web07": "cache2k-web07", "cache2k-web12": "cache2k-web12",
    "corda_vaultservice": "corda-vaultservice", "cloudPhysicsIO": "cloudPhysicsIO", "arc-OLTP": "arc-OLTP",
}

# (column, libcachesim class, constructor parameters: the library's defaults, written out)
ALGORITHMS = [
    ("LRU", "LRU", {}),
    ("FIFO", "FIFO", {}),
    ("SIEVE", "Sieve", {}),
    ("S3-FIFO", "S3FIFO", {"small_size_ratio": 0.1, "ghost_size_ratio": 0.9, "move_to_main_threshold": 2}),
    ("W-TinyLFU", "WTinyLFU", {"main_cache": "SLRU", "window_size": 0.01}),
    ("2Q", "TwoQ", {"a_in_size_ratio": 0.25, "a_out_size_ratio": 0.5}),
    ("ARC", "ARC", {}),
    ("LIRS", "LIRS", {}),
    ("LHD", "LHD", {}),
    ("Belady", "Belady", {}),
]
FIXED = [a[0] for a in ALGORITHMS if a[0] != "Belady"]  # "best fixed algorithm": every one but the clairvoyant
# The log's rankings; `R+p` is ranking R with a tenth of the segments for keys on probation
# (`--log-probation 0.1`, S3-FIFO's small queue).
RANKINGS = ["lru", "lfu", "slru", "density", "clock", "clock+p"]

MAPPING = """\
Object capacity N = floor(share x distinct objects of the trace). libCacheSim runs with unit object sizes and
cache_size = N. `mrcache sim` replays the original trace file with one fixed value size for every key
(`--value-size V --override-sizes`, keys padded to 16 bytes), the lookaside pattern (a GET miss is followed by
a SET), and a memory size chosen so that the engine holds N items:

* Slab layout (`--policy memcached`). Every item has the same size, so all live in one slab class, whose
  LRU is the cache: exactly LRU with capacity P x c, P = pages of `-m` (floor(memory / page)), c = chunks per
  page = floor(page / chunk). An item is accounted as memcached does: 59 + 16 (key) + V bytes. We pick a
  divisor P >= 2 of N (P >= 2 because `-I` may be at most half of `-m`), c = N / P, a chunk S of the
  default `-f 1.25` ladder with c x S >= 1 MiB, and set `-I` (= page size, as the page is max(1 MiB, -I))
  to c x S, V = S - 75 (the item fills its chunk), memory = P x page. Then the capacity is exactly N;
  c = 1 and c = 2 use the whole-page and half-page classes of a 1 MiB page. Where N has no divisor that
  keeps memory under 512 MiB (N prime), the nearest capacity that has one is used and its error is given
  (`capacity_error`). The replay checks it: its final item count equals the capacity, and its miss
  ratio equals libCacheSim's LRU at that capacity.
* Log layout (`--layout log --ranking R`). Items are records of 32 + 16 + V bytes padded to 8 in
  segments of one page; the budget is P = floor(memory / page) segments, and the cleaner keeps one more
  segment beside the budget (its copy buffer, `clean_segments - 1`). With V chosen so that a record is
  R = page / c bytes exactly (`-I` = c x R >= 1 MiB, R a multiple of 8), each segment holds exactly c items.
  In steady state the cleaner frees a segment whenever the head fills: it takes the two oldest
  segments (2c items), keeps the c highest ranked and evicts c, and its evictions are paced to the last
  sixteenth of the new head's filling. So live items rise from (P - 1)c to (P - 1/16)c and fall back
  every c insertions, a mean of (P - 17/32)c. We set the *mean* to N: P near LOG_SEGMENTS (32: a
  32 MiB server with 1 MiB segments) and c chosen to minimise |(P - 17/32)c - N|; the error of the mean is
  `capacity_error` (a few items), and the instantaneous count swings by +-0.47c around it, +-1.5% of N at
  P = 32. Exact equality is impossible in the log: the count is never constant. The budget P itself matters
  a little: with 16, 32, 64 or 128 segments (c scaled to keep the capacity) the best ranking's miss ratio
  moved by 0.2% on web07 at 10%, 3% on web12 at 5% (0.3756..0.3871) and 0.1% on cloudPhysicsIO at 10%
  (default clock); read gaps of a few percent in one cell with that in mind.
* Clock. `mrcache sim` advances its logical clock one second per 100,000 requests by default; items'
  access times have one-second resolution, as in memcached and the server. The log's `lru` and `slru`
  rankings compare access times, so on a trace shorter than a few seconds they cannot tell recency
  apart (ties fall back to log order). The `exact` clock rows rerun the log with
  `--requests-per-second 1` (one logical second per request: exact recency); the slab layout's LRU
  list is exact under either clock.
"""


# ---------------------------------------------------------------------------------------------- traces

def load_keys(path, fmt, limit=None):
    """The trace's keys as uint64, in order (block runs of ARC .lis expanded, as `mrcache sim` does)."""
    if fmt == "u32be":
        data = lzma.open(path).read() if path.endswith(".xz") else open(path, "rb").read()
        keys = np.frombuffer(data, dtype=">u4").astype(np.uint64)
    elif fmt == "u64be":
        data = gzip.open(path).read() if path.endswith(".gz") else open(path, "rb").read()
        keys = np.frombuffer(data, dtype=">u8").astype(np.uint64)
    elif fmt == "oracle":
        rec = np.fromfile(path, dtype=np.dtype([("t", "<u4"), ("id", "<u8"), ("sz", "<u4"), ("nx", "<i8")]))
        keys = rec["id"].astype(np.uint64)
    elif fmt == "arc":
        text = subprocess.run(["zstd", "-dc", path], check=True, capture_output=True).stdout
        starts, counts = [], []
        for line in text.split(b"\n"):
            f = line.split()
            if len(f) >= 2:
                starts.append(int(f[0]))
                counts.append(int(f[1]))
        starts = np.array(starts, dtype=np.uint64)
        counts = np.array(counts, dtype=np.int64)
        first = np.repeat(starts, counts)
        offset = np.arange(counts.sum(), dtype=np.int64) - np.repeat(np.cumsum(counts) - counts, counts)
        keys = first + offset.astype(np.uint64)
    else:
        raise ValueError(fmt)
    return keys[:limit] if limit else keys


def write_oracle(keys, out_path, sizes=None):
    """libCacheSim's oracleGeneral: u32 time, u64 id, u32 size (1, or `sizes`), i64 next access index (-1:
    none). Ids are dense (1..distinct), so every trace is the same kind of key stream to every algorithm."""
    n = len(keys)
    _, ids = np.unique(keys, return_inverse=True)
    ids = ids.astype(np.uint64) + 1
    order = np.argsort(ids, kind="stable")
    sk = ids[order]
    nxt = np.full(n, -1, dtype=np.int64)
    same = sk[1:] == sk[:-1]
    nxt[order[:-1][same]] = order[1:][same]
    rec = np.zeros(n, dtype=np.dtype([("t", "<u4"), ("id", "<u8"), ("sz", "<u4"), ("nx", "<i8")]))
    rec["t"] = np.arange(n, dtype=np.uint64).astype(np.uint32)
    rec["id"] = ids
    rec["sz"] = 1 if sizes is None else sizes
    rec["nx"] = nxt
    tmp = out_path + ".tmp"
    rec.tofile(tmp)
    os.replace(tmp, out_path)


def prepare(name, traces_dir, work, limit=None):
    path, fmt, req_doc, distinct_doc = TRACES[name]
    full = os.path.join(traces_dir, path)
    keys = load_keys(full, fmt, limit)
    requests, distinct = len(keys), len(np.unique(keys))
    if limit is None and (requests, distinct) != (req_doc, distinct_doc):
        sys.exit(f"{name}: read {requests} requests / {distinct} keys, README says {req_doc} / {distinct_doc}")
    os.makedirs(work, exist_ok=True)
    oracle = os.path.join(work, f"{name}{'-' + str(limit) if limit else ''}.oracleGeneral.bin")
    if not (os.path.exists(oracle) and os.path.getsize(oracle) == 24 * requests):
        write_oracle(keys, oracle)
    return {"name": name, "path": full, "requests": requests, "distinct": distinct, "oracle": oracle}


# ------------------------------------------------------------------------------------------ libCacheSim

def run_lcs(oracle, algo_class, params, size, max_req=-1):
    reader = lcs.TraceReader(oracle, lcs.TraceType.ORACLE_GENERAL_TRACE)
    cache = getattr(lcs, algo_class)(size, **params)
    t = time.process_time()
    miss_ratio, _ = cache.process_trace(reader, 0, max_req)
    return float(miss_ratio), time.process_time() - t


def reference_check(trace, traces_dir):
    """libCacheSim's LRU against the exact LRU curve of reference/ at the listed size nearest 10%: proves
    that the trace was read as the reference's author read it."""
    ref = os.path.join(traces_dir, "reference", REFERENCE[trace["name"]] + ".lru-mrc.csv")
    rows = []
    for line in open(ref):
        if line.startswith("# byte-level") or line.startswith("cache_size_bytes"):
            break  # cloudPhysicsIO's file goes on with a byte-level curve
        if line[:1].isdigit():
            rows.append(line.strip().split(",")[:2])
    size, expect = min(((int(a), float(b)) for a, b in rows), key=lambda r: abs(r[0] - trace["distinct"] / 10))
    got, _ = run_lcs(trace["oracle"], "LRU", {}, size)
    if abs(got - expect) > 5.1e-7:
        sys.exit(f"{trace['name']}: libCacheSim LRU at {size} objects is {got:.6f}, reference says {expect:.6f}")
    return {"size": size, "reference": expect, "libcachesim_lru": round(got, 6)}


# ---------------------------------------------------------------------------------- capacity mapping

def slab_ladder(page, f=SLAB_GROWTH_FACTOR):
    """Chunk sizes of the slab classes for a page size, as crates/engine/src/geometry.rs computes them."""
    chunk_max = page // 2
    out, size = [], SLAB_MIN_CHUNK
    while len(out) < 62 and size < chunk_max / f:  # MAX_SLAB_CLASSES - 2 = 62
        if size % 8:
            size += 8 - size % 8
        out.append(size)
        size = int(size * f)
    return out + [chunk_max, page]


def slab_for(c):
    """(page, chunk) whose class holds exactly c chunks a page, the page at least 1 MiB; None if none."""
    if c <= 2:
        page = MIB
        return page, page // c
    for s in slab_ladder(1 << 40)[:-2]:  # the ladder below any cut-off: 96, 120, 152, ...
        if c * s >= MIB:
            page = c * s
            ladder = slab_ladder(page)
            if s in ladder and page // s == c:
                return page, s
    return None


def slab_config(n):
    """The slab configuration of capacity nearest n: exact where n has a usable divisor."""
    for delta in sorted(range(-n // 100 - 2, n // 100 + 3), key=lambda d: (abs(d), d)):
        k = n + delta
        if k < 2:
            continue
        for p in range(2, min(k, SLAB_MAX_MEMORY // MIB) + 1):
            if k % p:
                continue
            found = slab_for(k // p)
            if found and p * found[0] <= SLAB_MAX_MEMORY:
                page, chunk = found
                value = chunk - SLAB_ITEM_OVERHEAD - KEY_SIZE
                assert SLAB_ITEM_OVERHEAD + KEY_SIZE + value == chunk
                return {"capacity": k, "pages": p, "per_page": k // p, "chunk": chunk, "page": page,
                        "item_size_max": page, "value_size": value, "memory": p * page}
    raise RuntimeError(f"no slab configuration near {n}")


def log_config(n, segments):
    """The log configuration whose mean live item count is nearest n, with a budget near `segments`."""
    best = None
    lo, hi = max(2, segments - segments // 4), segments + segments // 4
    for p in range(lo, hi + 1):
        for c in {max(2, math.floor(n / (p - LOG_MEAN_DEFICIT))), max(2, math.ceil(n / (p - LOG_MEAN_DEFICIT)))}:
            record = max(-(-MIB // c), LOG_RECORD_OVERHEAD + KEY_SIZE + 8)
            record += -record % 8
            mean = (p - LOG_MEAN_DEFICIT) * c
            # Within 0.05% of N (or half an item), the budget nearest LOG_SEGMENTS; else the nearest mean.
            close = abs(mean - n) <= max(0.5, 0.0005 * n)
            key = (not close, abs(p - segments) if close else 0, abs(mean - n))
            if c * record >= MIB and (best is None or key < best[0]):
                best = (key, p, c, record, mean)
    _, p, c, record, mean = best
    page = c * record
    return {"segments": p, "per_segment": c, "record": record, "page": page, "item_size_max": page,
            "value_size": record - LOG_RECORD_OVERHEAD - KEY_SIZE, "memory": p * page,
            "capacity": round(mean, 2), "capacity_min": (p - 1) * c, "capacity_max": round((p - 1 / 16) * c, 2)}


# ------------------------------------------------------------------------------------------ mrcache sim

def run_mrcache(mrcache, trace, cfg, layout, ranking=None, rps=None, fmt=None):
    # --memcached-defaults: memcached's accounting and the slab layout, as the anchors were recorded.
    cmd = [mrcache, "sim", "--memcached-defaults", "--trace", trace["path"], "--memory", str(cfg["memory"]),
           "--item-size-max", str(cfg["item_size_max"]), "--value-size", str(cfg["value_size"]),
           "--override-sizes", "--key-size", str(KEY_SIZE), "--json", "-q"]
    if fmt:
        cmd += ["--format", fmt]
    if layout == "log":
        base, probation = (ranking[:-2], True) if ranking.endswith("+p") else (ranking, False)
        cmd += ["--layout", "log", "--ranking", base] + (["--log-probation", "0.1"] if probation else [])
    else:
        cmd += ["--policy", "memcached"]
    if rps:
        cmd += ["--requests-per-second", str(rps)]
    t0 = os.times()
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    t1 = os.times()
    r = json.loads(out)
    items = sum(a["items"] for a in r["allocation"])
    return {"miss_ratio": r["miss_ratio"], "misses": r["misses"], "gets": r["gets"], "items_at_end": items,
            "pages_at_end": sum(a["pages"] for a in r["allocation"]), "evictions": r["evictions"],
            "cpu_s": round(t1.children_user + t1.children_system - t0.children_user - t0.children_system, 2),
            "command": " ".join(cmd[1:]).replace(trace["path"], os.path.relpath(trace["path"]))}


# ------------------------------------------------------------------------------------------------ run

def fmt_mr(x):
    return f"{x:.4f}"


def gap(x, best):
    g = (x - best) / best if best > 0 else 0.0
    return 0.0 if abs(g) < 1e-9 else g


def tied(cell):
    """The fixed algorithms that share the best miss ratio of a cell."""
    best = cell["libcachesim"][cell["best_fixed"]]["miss_ratio"]
    return [a for a in FIXED if abs(cell["libcachesim"][a]["miss_ratio"] - best) < 1e-9]


def best_name(cell):
    t = tied(cell)
    return t[0] if len(t) == 1 else f"{t[0]} (+{len(t) - 1} tied)"


def run(args):
    traces_dir, work, mrcache = args.traces_dir, args.work, args.mrcache
    shares = [int(s) for s in os.environ.get("SHARES", "1 5 10 25").split()]
    names = os.environ.get("TRACES", " ".join(TRACES)).split()
    clocks = os.environ.get("CLOCKS", "default exact").split()
    segments = int(os.environ.get("LOG_SEGMENTS", "32"))
    os.makedirs(args.out, exist_ok=True)
    started = time.time()
    version = subprocess.run([mrcache, "--version"], capture_output=True, text=True).stdout.strip()
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True).stdout.strip()
    meta = {"started": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
            "libcachesim": lcs.__version__ if hasattr(lcs, "__version__") else "?", "mrcache": version,
            "git_commit": commit, "python": platform.python_version(), "log_segments": segments,
            "shares_percent": shares, "clocks": clocks,
            "algorithms": {a: {"libcachesim_class": c, "params": p} for a, c, p in ALGORITHMS}}
    cells, checks = [], {}
    for name in names:
        tr = prepare(name, traces_dir, work)
        checks[name] = reference_check(tr, traces_dir)
        print(f"{name}: {tr['requests']} requests, {tr['distinct']} objects; LRU reference check "
              f"{checks[name]}", file=sys.stderr, flush=True)
        for share in shares:
            n = tr["distinct"] * share // 100
            cell = {"trace": name, "share_percent": share, "requests": tr["requests"], "distinct": tr["distinct"],
                    "objects": n, "libcachesim": {}, "mrcache": {}}
            for col, cls, params in ALGORITHMS:
                mr, cpu = run_lcs(tr["oracle"], cls, params, n)
                cell["libcachesim"][col] = {"miss_ratio": mr, "cpu_s": round(cpu, 2)}
            slab = slab_config(n)
            res = run_mrcache(mrcache, tr, slab, "slab")
            lru_at_capacity = cell["libcachesim"]["LRU"]["miss_ratio"] if slab["capacity"] == n else \
                run_lcs(tr["oracle"], "LRU", {}, slab["capacity"])[0]
            if res["items_at_end"] != slab["capacity"] or abs(res["miss_ratio"] - lru_at_capacity) > 1e-9:
                print(f"WARNING {name} {share}%: slab holds {res['items_at_end']} items (capacity "
                      f"{slab['capacity']}), miss ratio {res['miss_ratio']:.6f} vs LRU {lru_at_capacity:.6f}",
                      file=sys.stderr)
            cell["mrcache"]["slab-memcached"] = dict(res, config=slab, capacity_error=(slab["capacity"] - n) / n,
                                                     lru_at_capacity=lru_at_capacity)
            logc = log_config(n, segments)
            for clock in clocks:
                rps = None if clock == "default" else 1
                for ranking in RANKINGS:
                    res = run_mrcache(mrcache, tr, logc, "log", ranking, rps)
                    lo, hi = logc["capacity_min"], math.ceil(logc["capacity_max"]) + 1
                    if not lo - 1 <= res["items_at_end"] <= hi:
                        print(f"WARNING {name} {share}% log-{ranking}: {res['items_at_end']} items at the end, "
                              f"outside {lo}..{hi}", file=sys.stderr)
                    key = f"log-{ranking}" + ("" if clock == "default" else "@exact")
                    cell["mrcache"][key] = dict(res, config=logc, capacity_error=(logc["capacity"] - n) / n)
            fixed = {a: cell["libcachesim"][a]["miss_ratio"] for a in FIXED}
            cell["best_fixed"] = min(fixed, key=fixed.get)
            cells.append(cell)
            print(f"  {share}% ({n} objects): best {cell['best_fixed']} {fixed[cell['best_fixed']]:.4f}, "
                  f"LRU {fixed['LRU']:.4f}, slab {cell['mrcache']['slab-memcached']['miss_ratio']:.4f}, "
                  + ", ".join(f"{k} {v['miss_ratio']:.4f}" for k, v in cell["mrcache"].items() if k.startswith("log")),
                  file=sys.stderr, flush=True)
    meta["elapsed_s"] = round(time.time() - started, 1)
    meta["reference_checks"] = checks
    write_outputs(args.out, meta, cells, clocks)


def summary(cells, suffix):
    """Where the best log ranking stands against the best fixed algorithm (and LRU)."""
    keys = [f"log-{r}{suffix}" for r in RANKINGS]
    rows = []
    for c in cells:
        if keys[0] not in c["mrcache"]:
            return None
        best = c["libcachesim"][c["best_fixed"]]["miss_ratio"]
        log = {k: c["mrcache"][k]["miss_ratio"] for k in keys}
        k = min(log, key=log.get)
        rows.append((c, k, log[k], gap(log[k], best), gap(log[k], c["libcachesim"]["LRU"]["miss_ratio"])))
    at_or_below = sum(1 for r in rows if r[3] <= 0)
    within3 = sum(1 for r in rows if r[3] <= 0.03)
    # Cells where most algorithms tie (corda: every reuse immediate) say nothing about eviction.
    real = [r for r in rows if len(tied(r[0])) < 3]
    worst = max(rows, key=lambda r: r[3])
    best_rank = {}
    for r in rows:
        best_rank[r[1]] = best_rank.get(r[1], 0) + 1
    return {"cells": len(rows), "at_or_below_best": at_or_below, "within_3_percent": within3,
            "untied_cells": len(real), "untied_at_or_below_best": sum(1 for r in real if r[3] <= 0),
            "untied_within_3_percent": sum(1 for r in real if r[3] <= 0.03),
            "worst_gap": worst[3], "worst_cell": f"{worst[0]['trace']} {worst[0]['share_percent']}%",
            "worst_ranking": worst[1], "median_gap": float(np.median([r[3] for r in rows])),
            "mean_gap_vs_lru": float(np.mean([r[4] for r in rows])),
            "best_ranking_counts": best_rank}


def write_outputs(out, meta, cells, clocks):
    cols = [a[0] for a in ALGORITHMS]
    mr_cols = ["slab-memcached"] + [f"log-{r}" for r in RANKINGS]
    exact_cols = [f"log-{r}@exact" for r in RANKINGS] if "exact" in clocks else []
    # CSV: one row per cell and engine.
    with open(os.path.join(out, "anchors.csv"), "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["trace", "share_percent", "requests", "distinct", "objects", "engine", "algorithm",
                    "miss_ratio", "capacity_objects", "capacity_error", "value_size", "item_size_max",
                    "memory_bytes", "pages_or_segments", "items_per_page", "items_at_end", "clock_rps"])
        for c in cells:
            base = [c["trace"], c["share_percent"], c["requests"], c["distinct"], c["objects"]]
            for a in cols:
                w.writerow(base + ["libcachesim", a, f"{c['libcachesim'][a]['miss_ratio']:.6f}", c["objects"], 0,
                                   "", "", "", "", "", "", ""])
            for k, v in c["mrcache"].items():
                cfg = v["config"]
                w.writerow(base + ["mrcache", k, f"{v['miss_ratio']:.6f}", cfg["capacity"],
                                   f"{v['capacity_error']:.6f}", cfg["value_size"], cfg["item_size_max"],
                                   cfg["memory"], cfg.get("pages", cfg.get("segments")),
                                   cfg.get("per_page", cfg.get("per_segment")), v["items_at_end"],
                                   1 if k.endswith("@exact") else DEFAULT_CLOCK_RPS])
    with open(os.path.join(out, "anchors.json"), "w") as f:
        json.dump({"meta": meta, "cells": cells}, f, indent=1)
    s_default = summary(cells, "")
    s_exact = summary(cells, "@exact") if exact_cols else None
    L = []
    L.append("# Eviction anchors: libCacheSim's algorithms and `mrcache sim` at equal object capacity\n")
    L.append(f"Produced by `scripts/eviction-anchors.sh` ({meta['started']}, mrcache at `{meta['git_commit']}`, "
             f"libcachesim {meta['libcachesim']} from PyPI, {meta['elapsed_s']} s on one core). Miss ratio = "
             "misses / requests, every request a GET, a miss inserting the object (lookaside); compulsory misses "
             "included. Cache size = share x the trace's distinct objects, unit object sizes. Whole traces.\n")
    L.append("Columns: libCacheSim 0.3.5 with its default parameters (S3-FIFO small 10%, ghost 90%, "
             "move-to-main threshold 2; W-TinyLFU window 1%, SLRU main; 2Q Ain 25%, Aout 50%). "
             "`best` is the best of the nine fixed algorithms (Belady, clairvoyant, excluded). `slab` is "
             "`mrcache sim --memcached-defaults` (slab layout, policy memcached, memcached's accounting), "
             "`log-*` the log layout with each `--ranking` (memcached's accounting too), "
             "under the simulator's default clock (100,000 requests per logical second); `log vs best` is the "
             "best log ranking's miss ratio relative to `best`. **Bold**: the lowest non-Belady miss ratio in the row. "
             "LHD samples its eviction candidates at random (the binding takes no seed): its column varies by up to "
             "0.2% between runs; every other column, and every mrcache run, is deterministic.\n")
    head = ["trace", "share", "N"] + cols + ["best"] + ["slab"] + [f"log-{r}" for r in RANKINGS] + ["log vs best"]
    L.append("| " + " | ".join(head) + " |")
    L.append("|" + "---|" * 3 + "---:|" * (len(head) - 3))
    for c in cells:
        best = c["libcachesim"][c["best_fixed"]]["miss_ratio"]
        allv = [c["libcachesim"][a]["miss_ratio"] for a in FIXED] + [c["mrcache"][k]["miss_ratio"] for k in mr_cols]
        low = min(allv)
        def cellv(x):
            return f"**{fmt_mr(x)}**" if x <= low + 1e-9 else fmt_mr(x)
        row = [c["trace"], f"{c['share_percent']}%", str(c["objects"])]
        row += [cellv(c["libcachesim"][a]["miss_ratio"]) if a != "Belady" else fmt_mr(c["libcachesim"][a]["miss_ratio"])
                for a in cols]
        row += [best_name(c)]
        row += [cellv(c["mrcache"][k]["miss_ratio"]) for k in mr_cols]
        logbest = min(mr_cols[1:], key=lambda k: c["mrcache"][k]["miss_ratio"])
        row += [f"{100 * gap(c['mrcache'][logbest]['miss_ratio'], best):+.1f}% ({logbest[4:]})"]
        L.append("| " + " | ".join(row) + " |")
    L.append("")
    if exact_cols:
        L.append("## The log rankings under an exact clock\n")
        L.append("The same runs with `--requests-per-second 1` (one logical second per request), so that the "
                 "`lru` and `slru` rankings see exact recency instead of one-second ties. `vs best` as above, "
                 "`vs LRU` against libCacheSim's LRU.\n")
        head = ["trace", "share", "N", "best", "best fixed", "LRU"] + [f"log-{r}" for r in RANKINGS] + ["vs best", "vs LRU"]
        L.append("| " + " | ".join(head) + " |")
        L.append("|" + "---|" * 4 + "---:|" * (len(head) - 4))
        for c in cells:
            best = c["libcachesim"][c["best_fixed"]]["miss_ratio"]
            lru = c["libcachesim"]["LRU"]["miss_ratio"]
            logs = [c["mrcache"][k]["miss_ratio"] for k in exact_cols]
            row = [c["trace"], f"{c['share_percent']}%", str(c["objects"]), best_name(c), fmt_mr(best), fmt_mr(lru)]
            k = RANKINGS[logs.index(min(logs))]
            row += [fmt_mr(x) for x in logs] + [f"{100 * gap(min(logs), best):+.1f}% ({k})", f"{100 * gap(min(logs), lru):+.1f}%"]
            L.append("| " + " | ".join(row) + " |")
        L.append("")
    L.append("## Summary\n")
    for label, s in (("default clock", s_default), ("exact clock", s_exact)):
        if not s:
            continue
        L.append(f"- **mrcache's best log ranking per cell, {label}**: at or below the best fixed algorithm in "
                 f"{s['at_or_below_best']} of {s['cells']} cells, within 3% of it in {s['within_3_percent']} "
                 f"({s['untied_at_or_below_best']} and {s['untied_within_3_percent']} of the {s['untied_cells']} cells "
                 f"where fewer than three algorithms tie for best); "
                 f"median gap {100 * s['median_gap']:+.1f}%, worst gap {100 * s['worst_gap']:+.1f}% "
                 f"({s['worst_cell']}, {s['worst_ranking']}); against LRU {100 * s['mean_gap_vs_lru']:+.1f}% on "
                 f"average. Best ranking per cell: "
                 + ", ".join(f"{k} {v}" for k, v in sorted(s["best_ranking_counts"].items(), key=lambda kv: -kv[1])) + ".")
    counts = {}
    for c in cells:
        counts.setdefault(c["trace"], []).append(f"{best_name(c)} ({c['share_percent']}%)")
    L.append("- **Best fixed algorithm per trace** (by size): "
             + "; ".join(f"{t}: {', '.join(v)}" for t, v in counts.items()) + ".")
    wins = {}
    for c in cells:
        if len(tied(c)) < 3:
            for a in tied(c):
                wins[a] = wins.get(a, 0) + 1
    L.append("- **Cells won** (ties counted for each; cells where three or more tie left out): "
             + ", ".join(f"{k} {v}" for k, v in sorted(wins.items(), key=lambda kv: -kv[1]))
             + f" (of {sum(1 for c in cells if len(tied(c)) < 3)}).")
    fifo_like = sum(1 for c in cells if abs(gap(c["mrcache"]["log-lru"]["miss_ratio"],
                                                c["libcachesim"]["FIFO"]["miss_ratio"])) <= 0.03)
    same = sum(1 for c in cells if c["mrcache"]["log-lfu"]["miss_ratio"] == c["mrcache"]["log-density"]["miss_ratio"])
    L.append(f"- **density = lfu here**: with one value size, `density` ((count + 1) / record bytes) orders items by "
             f"access count as `lfu` does, the access time only breaking ties (and density's rule for items unused "
             f"for eight cleaning cycles); the two miss exactly alike in {same} of {len(cells)} cells under the "
             f"default clock. `lru` under the default clock misses within 3% of libCacheSim's FIFO in "
             f"{fifo_like} of {len(cells)} cells: access times have one-second resolution, and at 100,000 "
             f"requests a logical second these caches turn over within a second, so its ranking sees ties.")
    slab_exact = sum(1 for c in cells if abs(c["mrcache"]["slab-memcached"]["miss_ratio"]
                                             - c["mrcache"]["slab-memcached"]["lru_at_capacity"]) < 1e-9)
    L.append(f"- **Slab layout = LRU**: the slab replay's miss ratio equals libCacheSim's LRU at its capacity in "
             f"{slab_exact} of {len(cells)} cells (capacity differs from N in "
             f"{sum(1 for c in cells if c['mrcache']['slab-memcached']['capacity_error'] != 0)} cells, "
             f"by at most {100 * max(abs(c['mrcache']['slab-memcached']['capacity_error']) for c in cells):.3f}%).")
    L.append(f"- **Trace reading checked**: libCacheSim's LRU reproduces `reference/*.lru-mrc.csv` to 6 decimals on "
             f"every trace ({', '.join(k + ' at ' + str(v['size']) for k, v in meta['reference_checks'].items())}).")
    L.append("")
    L.append("## How N objects become memory in each layout\n")
    L.append(MAPPING)
    L.append("Per cell (CSV `anchors.csv`, JSON `anchors.json` with every command): slab value size, `-I` and "
             "memory; log value size, `-I`, budget segments, items per segment and mean capacity.\n")
    L.append("| trace | share | N | slab V | slab -I | slab pages x items | slab capacity | log V | log -I | "
             "log segments x items | log mean capacity (min..max) |")
    L.append("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for c in cells:
        s = c["mrcache"]["slab-memcached"]["config"]
        g = c["mrcache"]["log-lru"]["config"]
        L.append(f"| {c['trace']} | {c['share_percent']}% | {c['objects']} | {s['value_size']} | {s['item_size_max']} | "
                 f"{s['pages']} x {s['per_page']} | {s['capacity']} | {g['value_size']} | {g['item_size_max']} | "
                 f"{g['segments']} x {g['per_segment']} | {g['capacity']} ({g['capacity_min']}..{g['capacity_max']}) |")
    L.append("")
    L.append("Reproduce: `cargo build --release -p mrcache-cli && scripts/eviction-anchors.sh docs/anchors` "
             "(env `LOG_SEGMENTS`, `SHARES`, `TRACES`, `CLOCKS`, `MRCACHE`, `TRACES_DIR`, `VENV`).\n")
    with open(os.path.join(out, "anchors.md"), "w") as f:
        f.write("\n".join(L))
    print("\n".join(L))


# -------------------------------------------------------------------------------------------- fixture

def fixture(args):
    name, limit = args.trace, args.requests
    tr = prepare(name, args.traces_dir, args.work, limit)
    segments = int(os.environ.get("LOG_SEGMENTS", "32"))
    sizes = []
    for share in args.shares:
        n = tr["distinct"] * share // 100
        algos = {}
        for col, cls, params in ALGORITHMS:
            mr, _ = run_lcs(tr["oracle"], cls, params, n)
            algos[col] = round(mr, 6)
        slab, logc = slab_config(n), log_config(n, segments)
        res = run_mrcache(args.mrcache, tr, slab, "slab")
        observed, commands = {"slab-memcached": res["miss_ratio"]}, {"slab-memcached": "mrcache " + res["command"]}
        for r in RANKINGS:
            res = run_mrcache(args.mrcache, tr, logc, "log", r)
            observed[f"log-{r}"], commands[f"log-{r}"] = res["miss_ratio"], "mrcache " + res["command"]
        sizes.append({
            "share_percent": share, "objects": n,
            "s3fifo_miss_ratio": algos["S3-FIFO"], "lru_miss_ratio": algos["LRU"],
            "libcachesim_miss_ratios": algos,
            "best_fixed": min((a for a in FIXED), key=lambda a: algos[a]),
            "slab": {k: slab[k] for k in ("value_size", "item_size_max", "memory", "capacity", "pages", "per_page")},
            "log": {k: logc[k] for k in ("value_size", "item_size_max", "memory", "capacity", "capacity_min",
                                         "capacity_max", "segments", "per_segment")},
            "mrcache_observed": {k: round(v, 6) for k, v in observed.items()},
            "mrcache_commands": commands,
        })
        print(f"{name}[:{tr['requests']}] {share}% = {n} objects: S3-FIFO {algos['S3-FIFO']:.6f} LRU {algos['LRU']:.6f} "
              f"mrcache {observed}", file=sys.stderr)
    version = subprocess.run([args.mrcache, "--version"], capture_output=True, text=True).stdout.strip()
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True).stdout.strip()
    doc = {
        "description": "libCacheSim miss ratios on a shortened real trace, for the suite's test that the default "
                       "eviction misses no more than S3-FIFO. Unit object sizes; miss ratio = misses / requests "
                       "(every request a GET, a miss inserts the object; compulsory misses included); cache size "
                       "= floor(share x distinct objects of the shortened trace). `slab` and `log` give a "
                       "`mrcache sim` configuration of the same object capacity (fixed value size, key size 16, "
                       "--override-sizes; see scripts/eviction-anchors.sh for the mapping); `mrcache_observed` is "
                       "what mrcache did at `mrcache_commit`, context, not a target. LHD is randomised in "
                       "libCacheSim (varies by ~0.2% between runs); the others are deterministic.",
        "trace": TRACES[name][0], "trace_format": TRACES[name][1], "requests": tr["requests"],
        "whole_trace": limit is None, "distinct_objects": tr["distinct"],
        "key_size": KEY_SIZE,
        "libcachesim": lcs.__version__ if hasattr(lcs, "__version__") else "?",
        "algorithms": {a: {"libcachesim_class": c, "params": p} for a, c, p in ALGORITHMS},
        "command": args.command,
        "mrcache_commit": commit, "mrcache_version": version,
        "sizes": sizes,
    }
    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    with open(args.out, "w") as f:
        json.dump(doc, f, indent=2)
        f.write("\n")


def sized_oracle(args, name, limit=None):
    """Trace `name` (its first `limit` requests) as a libCacheSim oracleGeneral file whose objects have the
    sizes of their log records with the ETC values `mrcache sim` gives them. Returns the keys, the index of
    each distinct key's first request, the distinct objects' bytes and the file."""
    path, fmt = TRACES[name][0], TRACES[name][1]
    full = os.path.join(args.traces_dir, path)
    keys = load_keys(full, fmt, limit)
    os.makedirs(args.work, exist_ok=True)
    sizes_path = os.path.join(args.work, f"{name}-{len(keys)}.sizes")
    if not os.access(args.sized_trace, os.X_OK):
        sys.exit(f"no {args.sized_trace}: cargo build --release -p mrcache-sim --example sized_trace")
    subprocess.run([args.sized_trace, full, sizes_path, str(len(keys))], check=True, capture_output=True)
    sizes = np.fromfile(sizes_path, dtype="<u4")
    if len(sizes) != len(keys):
        sys.exit(f"{name}: {len(sizes)} sizes for {len(keys)} requests")
    _, first = np.unique(keys, return_index=True)
    oracle = sizes_path + ".oracleGeneral.bin"
    write_oracle(keys, oracle, sizes)
    return keys, first, int(sizes[first].sum()), oracle


def sized_table(args):
    """Markdown: libCacheSim at equal bytes (objects the size of their log records) beside `mrcache sim`'s
    default (log), slab + memcached (memcached's accounting) and slab + lama-mr, with the pages each held."""
    engines = [("default (log)", ["--layout", "log", "--item-accounting", "compact"]),
               ("slab + memcached", ["--layout", "slab", "--policy", "memcached", "--item-accounting",
                                     "memcached"]),
               ("slab + lama-mr", ["--layout", "slab", "--policy", "lama-mr", "--item-accounting", "compact",
                                   "--mrc-memory-share", "0.01"])]
    head = ["trace", "memory", "bytes", "LRU", "S3-FIFO", "best fixed", "LHD"] + \
        [f"{e} (pages held)" for e, _ in engines] + ["default / S3-FIFO", "default / best fixed"]
    print("| " + " | ".join(head) + " |")
    print("|" + "---|" * len(head))
    for name in args.traces:
        path = TRACES[name][0]
        _, _, distinct_bytes, oracle = sized_oracle(args, name)
        for m in args.memories:
            memory = distinct_bytes * int(m[:-1]) // 100 if m.endswith("%") else int(m[:-3]) << 20
            algos = {col: run_lcs(oracle, cls, params, memory)[0] for col, cls, params in ALGORITHMS}
            best = min(FIXED, key=lambda a: algos[a])
            row = [name, m, str(memory), f"{algos['LRU']:.4f}", f"{algos['S3-FIFO']:.4f}",
                   f"{algos[best]:.4f} ({best})", f"{algos['LHD']:.4f}"]
            default = None
            for label, flags in engines:
                cmd = [args.mrcache, "sim", "--trace", os.path.join(args.traces_dir, path), "--memory",
                       str(memory), "--value-size", "etc", "--seed", "1", "--key-size", str(KEY_SIZE),
                       "--json", "-q"] + flags
                out = subprocess.run(cmd, capture_output=True, text=True)
                if out.returncode:
                    row.append("refused: " + out.stderr.strip().splitlines()[-1].replace("|", "/"))
                    continue
                r = json.loads(out.stdout)
                pages = sum(a["pages"] for a in r["allocation"])
                row.append(f"{r['miss_ratio']:.4f} ({pages})")
                if label.startswith("default"):
                    default = r["miss_ratio"]
            rel = lambda x: "-" if default is None else f"{default / x - 1:+.1%}"
            row += [rel(algos["S3-FIFO"]), rel(algos[best])]
            print("| " + " | ".join(row) + " |", flush=True)


def sized_fixture(args):
    """libCacheSim at equal bytes: the items a key-only trace gets in `mrcache sim` (16-byte keys, ETC values,
    seed 1), each charged the bytes of its log record, in a cache of `share` of the distinct items' bytes."""
    name, limit = args.trace, args.requests
    path, fmt = TRACES[name][0], TRACES[name][1]
    keys, first, distinct_bytes, oracle = sized_oracle(args, name, limit)
    cells = []
    for share in args.shares:
        memory = distinct_bytes * share // 100
        algos = {col: round(run_lcs(oracle, cls, params, memory)[0], 6) for col, cls, params in ALGORITHMS}
        cells.append({"share_percent": share, "memory_bytes": memory,
                      "s3fifo_miss_ratio": algos["S3-FIFO"], "libcachesim_miss_ratios": algos,
                      "best_fixed": min(FIXED, key=lambda a: algos[a])})
        print(f"{name}[:{len(keys)}] {share}% = {memory} bytes: {algos}", file=sys.stderr)
    doc = {
        "description": "libCacheSim miss ratios at equal bytes on a shortened real trace, for the suite's test "
                       "that the default eviction misses no more than S3-FIFO (crates/sim/tests/"
                       "default_eviction.rs). Each request's object has the size `mrcache sim` gives it "
                       "(16-byte key, ETC value, seed 1), charged the bytes of its log record (a 32-byte "
                       "header and prefix, rounded up to 8: `cargo run --release -p mrcache-sim --example "
                       "sized_trace`), so both caches hold the same items in the same bytes; libCacheSim packs "
                       "them into one byte budget, while mrcache's log also keeps heads and a spare segment in "
                       "it. memory_bytes = share x the distinct objects' bytes. Miss ratio = misses / requests "
                       "(every request a GET, a miss inserts the object). LHD is randomised in libCacheSim.",
        "trace": path, "trace_format": fmt, "requests": int(len(keys)), "whole_trace": limit is None,
        "distinct_objects": int(len(first)), "distinct_bytes": distinct_bytes, "key_size": KEY_SIZE,
        "libcachesim": lcs.__version__ if hasattr(lcs, "__version__") else "?",
        "algorithms": {a: {"libcachesim_class": c, "params": p} for a, c, p in ALGORITHMS},
        "command": args.command,
        "sizes": cells,
    }
    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    with open(args.out, "w") as f:
        json.dump(doc, f, indent=2)
        f.write("\n")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--traces-dir", default=os.environ.get("TRACES_DIR", "../shared/traces"))
    ap.add_argument("--work", default=os.environ.get("WORK", "target/eviction-anchors"))
    ap.add_argument("--mrcache", default=os.environ.get("MRCACHE", "target/release/mrcache"))
    sub = ap.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("run")
    r.add_argument("out", nargs="?", default="docs/anchors")
    rep = sub.add_parser("report", help="rewrite OUT/anchors.md and .csv from OUT/anchors.json")
    rep.add_argument("out", nargs="?", default="docs/anchors")
    f = sub.add_parser("fixture")
    f.add_argument("out", nargs="?", default="crates/sim/tests/fixtures/anchors.json")
    f.add_argument("--trace", default="cache2k-web07", choices=sorted(TRACES))
    f.add_argument("--requests", type=int, default=None, help="the first REQUESTS only (default: whole trace)")
    f.add_argument("--shares", type=lambda s: [int(x) for x in s.split(",")], default=[5, 10])
    f.add_argument("--command", default=" ".join(sys.argv))
    z = sub.add_parser("sized-fixture", help="libCacheSim at equal bytes with mrcache's ETC item sizes")
    z.add_argument("out", nargs="?", default="crates/sim/tests/fixtures/default_eviction.json")
    z.add_argument("--trace", default="arc-OLTP", choices=sorted(TRACES))
    z.add_argument("--requests", type=int, default=None, help="the first REQUESTS only (default: whole trace)")
    z.add_argument("--shares", type=lambda s: [int(x) for x in s.split(",")], default=[50, 75])
    z.add_argument("--sized-trace", default=os.environ.get("SIZED_TRACE", "target/release/examples/sized_trace"))
    z.add_argument("--command", default=" ".join(sys.argv))
    t = sub.add_parser("sized", help="markdown table: libCacheSim at equal bytes beside mrcache sim's layouts")
    t.add_argument("--traces", type=lambda s: s.split(","), default=["cache2k-orm-busy", "cache2k-orm-night", "arc-OLTP"])
    t.add_argument("--memories", type=lambda s: s.split(","), default=["10%", "25%", "50%", "16MiB", "32MiB"])
    t.add_argument("--sized-trace", default=os.environ.get("SIZED_TRACE", "target/release/examples/sized_trace"))
    args = ap.parse_args()
    if args.cmd == "sized":
        sized_table(args)
    elif args.cmd == "run":
        run(args)
    elif args.cmd == "report":
        data = json.load(open(os.path.join(args.out, "anchors.json")))
        write_outputs(args.out, data["meta"], data["cells"], data["meta"]["clocks"])
    elif args.cmd == "sized-fixture":
        sized_fixture(args)
    else:
        fixture(args)


if __name__ == "__main__":
    main()
