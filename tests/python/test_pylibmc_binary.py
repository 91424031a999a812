"""pylibmc (libmemcached) in binary mode against mrcached: every storage,
retrieval, arithmetic, CAS, touch and multi-key call goes over the binary
protocol (`binary=True`), against the module's `server` fixture (`-B auto`, so
the first byte 0x80 negotiates binary). Then SASL: a server started with
`-S -B auto --config tenants.toml` (tenants with passwords and reserved memory)
where a binary client logs in with username/password (libmemcached's SASL
PLAIN) and becomes that tenant, exactly as a text client that authenticates
with the same password (memcached's `-Y` auth exchange); and `-S -Y users`
(binary only, as memcached's `-S`).

Needs Debian's python3-pylibmc (scripts/test.sh installs it); a missing module
fails the import, it is never skipped.
"""

import socket
import time

import pylibmc
import pytest

from conftest import start_mrcached_with, stop

TIMEOUT_MS = 10_000


def binary_client(addr, **kwargs):
    host, port = addr
    return pylibmc.Client(
        [f"{host}:{port}"],
        binary=True,
        behaviors={"cas": True, "connect_timeout": TIMEOUT_MS, "receive_timeout": TIMEOUT_MS * 1000,
                   "send_timeout": TIMEOUT_MS * 1000},
        **kwargs,
    )


@pytest.fixture
def mc(server):
    c = binary_client(server)
    c.flush_all()
    yield c
    c.disconnect_all()


def test_set_get_add_replace_delete(mc):
    assert mc.set("k", b"v1")
    assert mc.get("k") == b"v1"
    assert mc.get("missing") is None
    assert not mc.add("k", b"other")
    assert mc.add("new", b"n")
    assert mc.get("new") == b"n"
    assert mc.replace("k", b"v2")
    # Over the binary protocol a refused replace is memcached's "Not found" status, which
    # libmemcached reports as an error (in text mode it is NOT_STORED and False).
    with pytest.raises(pylibmc.NotFound):
        mc.replace("nope", b"x")
    assert mc.get("k") == b"v2"
    assert mc.delete("k")
    assert not mc.delete("k")
    assert mc.get("k") is None


def test_values_of_every_kind_keep_their_flags(mc):
    # pylibmc encodes the Python type in the item's flags; they must come back.
    for key, value in [("s", "text"), ("b", b"\x00\x01\xff"), ("i", 42), ("big", b"x" * 500_000),
                       ("obj", {"a": [1, 2, 3]})]:
        assert mc.set(key, value)
        assert mc.get(key) == value


def test_incr_decr(mc):
    assert mc.set("n", "10")
    assert mc.incr("n") == 11
    assert mc.incr("n", 5) == 16
    assert mc.decr("n", 20) == 0
    assert mc.decr("n") == 0
    with pytest.raises(pylibmc.NotFound):
        mc.incr("absent")
    mc.set("text", "abc")
    with pytest.raises(pylibmc.Error):
        mc.incr("text")


def test_cas(mc):
    assert mc.set("c", b"one")
    value, cas = mc.gets("c")
    assert value == b"one" and cas
    assert mc.cas("c", b"two", cas)
    assert mc.get("c") == b"two"
    # The old token no longer matches.
    assert not mc.cas("c", b"three", cas)
    assert mc.get("c") == b"two"


def test_append_prepend(mc):
    assert mc.set("a", b"mid")
    assert mc.append("a", b"-end")
    assert mc.prepend("a", b"start-")
    assert mc.get("a") == b"start-mid-end"
    assert not mc.append("absent", b"x")


def test_touch_and_expiry(mc):
    assert mc.set("t", b"v", time=1)
    assert mc.touch("t", 100)
    assert not mc.touch("absent", 100)
    # Past the original one-second expiry the touched item is still there.
    time.sleep(2.1)
    assert mc.get("t") == b"v"
    assert mc.set("gone", b"v", time=1)
    time.sleep(2.1)
    assert mc.get("gone") is None


def test_multi(mc):
    data = {f"m{i}": f"value{i}".encode() for i in range(50)}
    assert mc.set_multi(data) == []
    got = mc.get_multi(list(data) + ["absent1", "absent2"])
    assert got == data
    assert mc.delete_multi(["m0", "m1", "absent1"]) is False  # one key was missing
    assert mc.get_multi(["m0", "m1", "m2"]) == {"m2": b"value2"}


def test_flush_all(mc):
    mc.set_multi({"f1": b"1", "f2": b"2"})
    assert mc.flush_all()
    assert mc.get_multi(["f1", "f2"]) == {}


# --- SASL ----------------------------------------------------------------------

USERS = {"alice": "alice-secret", "bob": "bob-secret"}


@pytest.fixture(scope="module")
def sasl_server(tmp_path_factory):
    config = tmp_path_factory.mktemp("sasl") / "tenants.toml"
    config.write_text("".join(
        f'[[tenant]]\nname = "{u}"\npassword = "{p}"\nreserved = "4MiB"\n' for u, p in USERS.items()))
    proc, addr = start_mrcached_with(["-S", "-B", "auto", "--config", str(config)])
    try:
        yield addr
    finally:
        stop(proc)


@pytest.fixture(scope="module")
def sasl_only_server(tmp_path_factory):
    users = tmp_path_factory.mktemp("sasl-y") / "users"
    users.write_text("".join(f"{u}:{p}\n" for u, p in USERS.items()))
    proc, addr = start_mrcached_with(["-S", "-Y", str(users)])
    try:
        yield addr
    finally:
        stop(proc)


def text_auth_get(addr, user, password, key):
    """A text client that authenticates with memcached's -Y auth, then reads `key`."""
    creds = f"{user} {password}".encode()
    with socket.create_connection(addr, timeout=10) as s:
        s.sendall(b"set auth 0 0 %d\r\n%s\r\nget %s\r\n" % (len(creds), creds, key.encode()))
        reply = b""
        while not reply.endswith(b"END\r\n"):
            chunk = s.recv(65536)
            if not chunk:
                break
            reply += chunk
    assert reply.startswith(b"STORED\r\n"), reply
    return reply[len(b"STORED\r\n"):]


def test_sasl_login_makes_the_client_its_tenant(sasl_server):
    alice = binary_client(sasl_server, username="alice", password=USERS["alice"])
    bob = binary_client(sasl_server, username="bob", password=USERS["bob"])
    assert alice.set("shared-name", b"alice's")
    assert bob.set("shared-name", b"bob's")
    assert alice.get("shared-name") == b"alice's"
    assert bob.get("shared-name") == b"bob's"
    assert alice.set("counter", "1") and alice.incr("counter", 4) == 5
    assert bob.get("counter") is None
    # A text client that authenticates as alice is the same tenant.
    assert text_auth_get(sasl_server, "alice", USERS["alice"], "shared-name") == (
        b"VALUE shared-name 0 7\r\nalice's\r\nEND\r\n"
    )
    # Flushing is per tenant: bob's flush leaves alice's keys.
    assert bob.flush_all()
    assert bob.get("shared-name") is None
    assert alice.get("shared-name") == b"alice's"
    alice.disconnect_all()
    bob.disconnect_all()


def test_sasl_refuses_wrong_and_missing_credentials(sasl_server):
    wrong = binary_client(sasl_server, username="alice", password="wrong")
    with pytest.raises(pylibmc.Error):
        wrong.set("k", b"v")
    anonymous = binary_client(sasl_server)
    with pytest.raises(pylibmc.Error):
        anonymous.set("k", b"v")
    # Nothing was stored by either of them.
    alice = binary_client(sasl_server, username="alice", password=USERS["alice"])
    assert alice.get("k") is None
    alice.disconnect_all()


def test_sasl_alone_is_binary_only_with_y_users(sasl_only_server):
    alice = binary_client(sasl_only_server, username="alice", password=USERS["alice"])
    assert alice.set("k", b"v") and alice.get("k") == b"v"
    alice.disconnect_all()
    # A text client is closed at its first line (as by memcached -S: binary only).
    with socket.create_connection(sasl_only_server, timeout=10) as s:
        s.sendall(b"set auth 0 0 18\r\nalice alice-secret\r\n")
        assert s.recv(100) == b""
