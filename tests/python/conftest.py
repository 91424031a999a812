"""Fixtures for the pymemcache end-to-end suite.

The `server` fixture starts the server binary once per test module on a free
127.0.0.1 port and stops it when the module is done:

- `mrcached` (env `MRCACHED_BIN`, default `target/release/mrcached`) is started
  with `-p 0` and announces its port on stdout as `listening on 127.0.0.1:PORT`;
  that line is the readiness signal. `MRCACHED_EXTRA_ARGS` (whitespace-separated)
  is appended to its command line, so the suite can run under another
  configuration (a memory layout, an I/O path).
- If `MRCACHED_BIN` names a `memcached` binary, the suite runs against it
  instead (to validate the suite): a free port is picked by binding
  127.0.0.1:0, and readiness is a connect-retry loop with a deadline.

Every wait has a deadline; the process is always terminated and reaped.
"""

import os
import pathlib
import selectors
import socket
import subprocess
import threading
import time

import pytest
from pymemcache.client.base import Client

REPO_ROOT = pathlib.Path(__file__).resolve().parents[2]
STARTUP_TIMEOUT_S = 20.0
CLIENT_TIMEOUT_S = 10.0


def _server_binary():
    path = os.environ.get("MRCACHED_BIN", str(REPO_ROOT / "target" / "release" / "mrcached"))
    if not os.path.isfile(path):
        pytest.fail(f"server binary {path} not found; build it with `cargo build --release` or set MRCACHED_BIN")
    return path


def _free_port():
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _drain(pipe):
    """Keeps reading a pipe so the server never blocks on a full one."""
    for _ in iter(lambda: pipe.read(4096), b""):
        pass


def _start_mrcached(path, args=()):
    proc = subprocess.Popen(
        # mrcached, like memcached, refuses to run as root without -u.
        [path, "-U", "0", "-l", "127.0.0.1", "-p", "0", *(["-u", "root"] if os.geteuid() == 0 else []), *args,
         *os.environ.get("MRCACHED_EXTRA_ARGS", "").split()],
        stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + STARTUP_TIMEOUT_S
    selector = selectors.DefaultSelector()
    selector.register(proc.stdout, selectors.EVENT_READ)
    line = b""
    try:
        while not line.endswith(b"\n"):
            left = deadline - time.monotonic()
            if left <= 0 or not selector.select(timeout=left):
                raise RuntimeError(f"{path} did not print 'listening on ADDR' within {STARTUP_TIMEOUT_S}s")
            chunk = os.read(proc.stdout.fileno(), 1)
            if not chunk:
                raise RuntimeError(f"{path} exited (status {proc.poll()}) before announcing its port")
            line += chunk
    except Exception:
        _stop(proc)
        raise
    finally:
        selector.close()
    text = line.decode().strip()
    if not text.startswith("listening on "):
        _stop(proc)
        raise RuntimeError(f"unexpected first line from {path}: {text!r}")
    host, port = text[len("listening on "):].rsplit(":", 1)
    threading.Thread(target=_drain, args=(proc.stdout,), daemon=True).start()
    return proc, (host, int(port))


def _accepting(port):
    """Whether a server accepts on 127.0.0.1:`port`. A probe whose kernel-picked source port is the
    target port connects to itself (TCP simultaneous open) before the server listens, and then holds
    the port the server is about to bind: that is not the server."""
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=1) as probe:
            return probe.getsockname() != probe.getpeername()
    except OSError:
        return False


def _start_memcached(path):
    for _ in range(5):
        port = _free_port()
        args = [path, "-U", "0", "-l", "127.0.0.1", "-p", str(port)]
        if os.geteuid() == 0:
            args += ["-u", "root"]  # memcached refuses to run as root otherwise
        proc = subprocess.Popen(args, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + STARTUP_TIMEOUT_S
        delay = 0.002
        while proc.poll() is None and time.monotonic() < deadline:
            if _accepting(port):
                return proc, ("127.0.0.1", port)
            time.sleep(delay)  # bounded backoff of a connect-retry loop
            delay = min(delay * 2, 0.1)
        _stop(proc)
    raise RuntimeError(f"{path} did not start after 5 attempts")


def _stop(proc):
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=5)
    if proc.stdout:
        proc.stdout.close()


@pytest.fixture(scope="module")
def server():
    """(host, port) of a server running for the whole test module."""
    path = _server_binary()
    if os.path.basename(path).startswith("memcached"):
        proc, addr = _start_memcached(path)
    else:
        proc, addr = _start_mrcached(path)
    try:
        yield addr
    finally:
        _stop(proc)


def start_mrcached_with(args):
    """Starts mrcached with extra `args` (before MRCACHED_EXTRA_ARGS); returns (proc, (host, port)).
    The caller stops it with `stop(proc)`. Fails (never skips) when the binary is missing; a suite
    validated against memcached (MRCACHED_BIN=memcached) skips such tests with the reason."""
    path = _server_binary()
    if os.path.basename(path).startswith("memcached"):
        pytest.skip("needs mrcached's own flags (" + " ".join(args) + "); MRCACHED_BIN is memcached")
    return _start_mrcached(path, args)


def stop(proc):
    _stop(proc)


@pytest.fixture
def client(server):
    """A pymemcache client on a flushed server; replies are awaited by default."""
    c = Client(server, connect_timeout=CLIENT_TIMEOUT_S, timeout=CLIENT_TIMEOUT_S, default_noreply=False)
    c.flush_all(noreply=False)
    yield c
    c.close()
