"""Many servers: three servers (the binary the `server` fixture runs, see conftest.py) combined by
consistent hashing, the two ways operators do it, each killed down to two while keys keep flowing:

- behind twemproxy (Debian's `nutcracker`) with ketama distribution, auto_eject_hosts and
  server_failure_limit 1, driven by pymemcache's `Client` through the proxy;
- by the client itself, pymemcache's `HashClient` (rendezvous hashing), which marks a node dead on
  its first connection failure (retry_attempts=0) and hashes its keys to the others.

Each test checks that the keys spread over all three nodes (each key on exactly one), that after one
node is killed every key can be written and read again, and that keys on the surviving nodes were not
moved (still hits). All addresses are 127.0.0.1 on free ports; every wait is a bounded poll loop.
nutcracker missing is a failure, not a skip: scripts/test.sh installs it.
"""

import os
import shutil
import subprocess
import time

import pytest
from pymemcache.client.base import Client
from pymemcache.client.hash import HashClient
from pymemcache.exceptions import MemcacheError

from conftest import (
    CLIENT_TIMEOUT_S,
    STARTUP_TIMEOUT_S,
    _accepting,
    _free_port,
    _server_binary,
    _start_memcached,
    _start_mrcached,
    _stop,
)

NODES = 3
KEYS = [f"cluster:{i}" for i in range(300)]
# How long service may take to recover once a node is gone (ejection is on the first failure).
RECOVERY_TIMEOUT_S = 20.0
POLL_INTERVAL_S = 0.05
# nutcracker: eject a node after one failed request, and try it again only after the test is over.
NUTCRACKER_CONFIG = """\
mrcache:
  listen: 127.0.0.1:{port}
  hash: fnv1a_64
  distribution: ketama
  timeout: 1000
  auto_eject_hosts: true
  server_failure_limit: 1
  server_retry_timeout: 600000
  servers:
{servers}
"""


def _value(key):
    return f"value of {key}".encode()


def _nutcracker_binary():
    path = os.environ.get("NUTCRACKER_BIN") or shutil.which("nutcracker") or "/usr/sbin/nutcracker"
    if not os.path.isfile(path):
        pytest.fail(
            f"nutcracker (twemproxy) not found at {path}: this test needs it; install Debian's "
            "`nutcracker` package (scripts/test.sh does) or set NUTCRACKER_BIN"
        )
    return path


@pytest.fixture
def nodes():
    """Three servers: a list of [proc, (host, port)], stopped at the end."""
    path = _server_binary()
    start = _start_memcached if os.path.basename(path).startswith("memcached") else _start_mrcached
    started = []
    try:
        for _ in range(NODES):
            proc, addr = start(path)
            started.append([proc, addr])
        yield started
    finally:
        for proc, _ in started:
            _stop(proc)


def _start_nutcracker(nodes, workdir):
    """nutcracker in front of `nodes`, on a free port: (proc, (host, port), log path)."""
    binary = _nutcracker_binary()
    servers = "\n".join(f"   - {host}:{port}:1 node{i}" for i, (_, (host, port)) in enumerate(nodes))
    log = workdir / "nutcracker.log"
    for _ in range(5):
        port = _free_port()
        conf = workdir / "nutcracker.yml"
        conf.write_text(NUTCRACKER_CONFIG.format(port=port, servers=servers))
        args = [binary, "-c", str(conf), "-o", str(log), "-a", "127.0.0.1", "-s", str(_free_port())]
        check = subprocess.run(args + ["-t"], capture_output=True, timeout=STARTUP_TIMEOUT_S)
        assert check.returncode == 0, f"nutcracker rejects the configuration: {check.stderr!r}"
        proc = subprocess.Popen(args, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + STARTUP_TIMEOUT_S
        while proc.poll() is None and time.monotonic() < deadline:
            if _accepting(port):
                return proc, ("127.0.0.1", port), log
            time.sleep(POLL_INTERVAL_S)  # bounded connect-retry loop
        _stop(proc)
    log_text = log.read_text() if log.exists() else ""
    pytest.fail(f"nutcracker did not start after 5 attempts; its log:\n{log_text}")


def _direct_client(addr):
    return Client(addr, connect_timeout=CLIENT_TIMEOUT_S, timeout=CLIENT_TIMEOUT_S, default_noreply=False)


def _where(nodes, keys):
    """{key: node index} for every key some node holds, asking each node directly; asserts no key is
    on two nodes."""
    placed = {}
    for i, (proc, addr) in enumerate(nodes):
        if proc.poll() is not None:
            continue
        c = _direct_client(addr)
        try:
            for key in c.get_many(keys):
                assert key not in placed, f"{key} is on node {placed[key]} and node {i}"
                placed[key] = i
        finally:
            c.close()
    return placed


def _kill(nodes, index):
    proc = nodes[index][0]
    proc.kill()
    proc.wait(timeout=10)


def _until_served(keys, attempt):
    """Polls `attempt(key)` (True: set and read back) over `keys` until one whole pass succeeds, within
    RECOVERY_TIMEOUT_S."""
    deadline = time.monotonic() + RECOVERY_TIMEOUT_S
    errors = []
    while True:
        failed = None
        for key in keys:
            try:
                if not attempt(key):
                    failed = f"{key}: not read back"
            except (MemcacheError, OSError) as e:
                failed = f"{key}: {e!r}"
            if failed:
                errors.append(failed)
                break
        if failed is None:
            return
        assert time.monotonic() < deadline, (
            f"service did not continue within {RECOVERY_TIMEOUT_S}s of the kill; last errors: {errors[-5:]}"
        )
        time.sleep(POLL_INTERVAL_S)


def _check_spread(nodes):
    placed = _where(nodes, KEYS)
    assert sorted(placed) == sorted(KEYS), "every key is on exactly one node"
    per_node = [sum(1 for n in placed.values() if n == i) for i in range(NODES)]
    assert all(n > 0 for n in per_node), f"keys per node: {per_node}"
    return placed


def _check_recovered(nodes, placed, victim, get, set_and_get):
    """After `victim` is killed: its keys are served by the others, the others' keys are still hits."""
    moved = [k for k in KEYS if placed[k] == victim]
    stayed = [k for k in KEYS if placed[k] != victim]
    _until_served(moved, set_and_get)
    for key in stayed:
        assert get(key) == _value(key), f"{key} lived on a surviving node and should still hit"
    replaced = _where(nodes, moved)
    assert sorted(replaced) == sorted(moved), "the dead node's keys now live on the survivors"
    assert victim not in replaced.values()


def test_nutcracker_ketama_spreads_keys_and_survives_a_dead_node(nodes, tmp_path):
    proc, proxy, log = _start_nutcracker(nodes, tmp_path)
    try:
        client = _direct_client(proxy)
        for key in KEYS:
            assert client.set(key, _value(key)) is True
        for key in KEYS:
            assert client.get(key) == _value(key)
        placed = _check_spread(nodes)

        victim = max(range(NODES), key=lambda i: sum(1 for n in placed.values() if n == i))
        _kill(nodes, victim)

        def set_and_get(key):
            # A fresh connection each try: the proxy may close one on a failed request.
            c = _direct_client(proxy)
            try:
                return c.set(key, _value(key)) is True and c.get(key) == _value(key)
            finally:
                c.close()

        client.close()
        # pymemcache connects on first use: after recovery, so a connection the proxy closed on a
        # failed request cannot fail the checks of the survivors' keys.
        after = _direct_client(proxy)
        _check_recovered(nodes, placed, victim, after.get, set_and_get)
        after.close()
    finally:
        _stop(proc)
        if os.environ.get("MRCACHE_SHOW_NUTCRACKER_LOG") and log.exists():
            print(log.read_text())


def test_hash_client_spreads_keys_and_survives_a_dead_node(nodes):
    client = HashClient(
        [addr for _, addr in nodes],
        connect_timeout=CLIENT_TIMEOUT_S,
        timeout=CLIENT_TIMEOUT_S,
        default_noreply=False,
        retry_attempts=0,  # a node whose connection fails is dead at once ...
        dead_timeout=600,  # ... and stays dead for the rest of the test
        ignore_exc=True,  # a request to it answers like a miss instead of raising
    )
    try:
        for key in KEYS:
            assert client.set(key, _value(key)) is True
        for key in KEYS:
            assert client.get(key) == _value(key)
        placed = _check_spread(nodes)

        victim = 0
        _kill(nodes, victim)

        def set_and_get(key):
            return client.set(key, _value(key)) is True and client.get(key) == _value(key)

        _check_recovered(nodes, placed, victim, client.get, set_and_get)
    finally:
        client.close()
