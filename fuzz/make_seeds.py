#!/usr/bin/env python3
"""Builds the seed corpora of the fuzz targets meta, config and reply from real inputs.

- meta:  every case of crates/server/tests/conformance/04-meta.txt (what it sends), one file per case,
         and the parse target's meta seeds;
- reply: the replies the conformance cases expect from memcached 1.6.18 (holes filled with plausible
         values), one file per case whose reply is made of the lines the load generator reads;
- config: the tenant files of the README, the config module's documentation and its tests, each
         optionally followed by a NUL and a -Y auth file (the target's input format).

Run from the repository root: `python3 fuzz/make_seeds.py`. It only adds files (named by case), so a
minimised corpus merged into fuzz/seeds/<target> stays.
"""

import hashlib
import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CASES = os.path.join(ROOT, "crates/server/tests/conformance")


def expand(text):
    """The case-file escapes of crates/server/tests/conformance/script.rs."""
    out = bytearray()
    i = 0
    while i < len(text):
        c = text[i]
        if c != "\\":
            out += c.encode()
            i += 1
            continue
        n = text[i + 1]
        if n in "rnt0s\\":
            out += {"r": b"\r", "n": b"\n", "t": b"\t", "0": b"\0", "s": b" ", "\\": b"\\"}[n]
            i += 2
        elif n == "x":
            out.append(int(text[i + 2:i + 4], 16))
            i += 4
        elif n == "{":
            end = text.index("}", i)
            body = text[i + 2:end]
            i = end + 1
            m = re.match(r"^(\d+)\*(.*)$", body)
            if m:
                out += expand(m.group(2)) * min(int(m.group(1)), 300)
            elif body.startswith("$"):
                out += b"1"
            elif body.startswith("n"):
                out += b"7"
            # `\{*}` and `\{stats}` (any bytes, any STAT lines) are left empty.
        else:
            out += n.encode()
            i += 2
    return bytes(out)


def cases(path):
    name, send, expect = None, bytearray(), bytearray()
    with open(path, encoding="utf-8") as f:
        for line in f:
            line = line.rstrip("\n")
            if line.startswith("=== "):
                if name:
                    yield name, bytes(send), bytes(expect)
                name, send, expect = line[4:], bytearray(), bytearray()
            elif line.startswith(">> "):
                send += expand(line[3:])
            elif line.startswith("> "):
                send += expand(line[2:]) + b"\r\n"
            elif line.startswith("<< "):
                expect += expand(line[3:])
            elif line.startswith("< "):
                expect += expand(line[2:]) + b"\r\n"
    if name:
        yield name, bytes(send), bytes(expect)


def slug(name):
    s = re.sub(r"[^A-Za-z0-9]+", "_", name).strip("_").lower()
    return s[:60] or hashlib.sha1(name.encode()).hexdigest()[:12]


def write(target, name, data):
    d = os.path.join(ROOT, "fuzz/seeds", target)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, name), "wb") as f:
        f.write(data)


REPLY_LINE = re.compile(
    rb"^(END|STORED|NOT_STORED|EXISTS|NOT_FOUND|ERROR|CLIENT_ERROR.*|SERVER_ERROR.*|VALUE .*)$"
)


def reply_only(expect):
    """Whether every line of a reply is one the load generator reads (data blocks follow VALUE)."""
    lines = expect.split(b"\r\n")[:-1]
    i = 0
    while i < len(lines):
        if not REPLY_LINE.match(lines[i]):
            return False
        if lines[i].startswith(b"VALUE "):
            i += 1
        i += 1
    return bool(lines)


def main():
    n_meta = n_reply = 0
    for file in sorted(os.listdir(CASES)):
        if not file.endswith(".txt"):
            continue
        for name, send, expect in cases(os.path.join(CASES, file)):
            if file.startswith("04-meta") and send:
                write("meta", slug(name), send)
                n_meta += 1
            if expect and reply_only(expect):
                write("reply", file[:2] + "_" + slug(name), expect)
                n_reply += 1

    # The parse target's meta seeds, too.
    for name in ("meta_get", "meta_set", "meta_other"):
        with open(os.path.join(ROOT, "fuzz/seeds", name), "rb") as f:
            write("meta", "parse_" + name, f.read())

    configs = {
        "readme_full": 'tenant_policy = "mpart"\n\n[[tenant]]\nname = "shop"\npassword = "s3cret"\n'
        'prefix = "shop:"\nport = 11311\nreserved = "64MiB"\nmax = "1GiB"\ntarget_hit_ratio = 0.95\n'
        "weight = 2.0\n",
        "tests_full": '[[tenant]]\nname = "shop"\npassword = "pw"\nprefix = "shop:"\nport = 11311\n'
        'reserved = "64MiB"\nmax = 1073741824\ntarget_hit_ratio = 0.95\nweight = 2.5\n'
        '[[tenant]]\nname = "default"\nreserved = "8m"\n',
        "memshare": 'tenant_policy = "memshare:credit=131072,shadow=1048576,tax=0.5,seed=7"\n'
        '[[tenant]]\nname = "a"\nreserved = 1024\n',
        "lama_qos": 'tenant_policy = "lama-qos:margin=0.05,interval=1000"\n[[tenant]]\nname = "alice"\n'
        'reserved = "2MiB"\ntarget_hit_ratio = 0.9\n\n[[tenant]]\nname = "carol"\nport = 11400\n',
        "static": 'tenant_policy = "static:interval=10"\n[[tenant]]\nname = "p1"\nprefix = "p1:"\n'
        '[[tenant]]\nname = "p2"\nprefix = "p2:"\n[[tenant]]\nname = "q"\nport = 11500\n',
        "pooled_mpart": 'tenant_policy = "mpart:interval=2000000,max_change=0.3,step=1"\n'
        '[[tenant]]\nname = "a"\nmax = "1k"\nreserved = "512"\nweight = 1e-3\n',
        "auth_merge": '[[tenant]]\nname = "alice"\nreserved = 1024\n\0alice:pw1\nbob:pw2\r\n\ncarol:p:w\n',
        "auth_only": "\0alice:alice_pw\nbob:bob_pw\n",
        "bad_size": '[[tenant]]\nname = "a"\nreserved = "12 parsecs"\n',
        "bad_overlap": '[[tenant]]\nname = "a"\nprefix = "ab"\n[[tenant]]\nname = "b"\nprefix = "abc"\n',
        "bad_default": '[[tenant]]\nname = "default"\npassword = "x"\n',
        "bad_key": '[[tenant]]\nname = "a"\npasword = "x"\n',
        "bad_policy": 'tenant_policy = "mpart:step=0"\n',
        "isolation": '[[tenant]]\nname = "busy"\nprefix = "b:"\nadmin = true\nrate_limit = 5000\n'
        'ranking = "slru"\n[[tenant]]\nname = "calm"\nrate_limit = 2.5\nrate_burst = 500\nranking = "lfu"\n',
        "escapes": '[[tenant]]\nname = "e"\nprefix = "\\u00e9t\\u00e9:"\npassword = \'lit"eral\'\n',
    }
    for name, text in configs.items():
        write("config", name, text.encode())
    print(f"meta {n_meta}, reply {n_reply}, config {len(configs)}", file=sys.stderr)


main()
