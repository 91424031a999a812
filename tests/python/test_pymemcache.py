"""pymemcache end-to-end tests: every command pymemcache offers, run against the
server started by the `server` fixture (see conftest.py).

pymemcache 3.5 (Debian 12) has no gat/gats or verbosity call and cannot parse
the reply of `stats reset`; those are sent through a raw socket so that the
suite still covers them.
"""

import pickle
import socket

import pytest
from pymemcache.client.base import Client
from pymemcache.exceptions import (
    MemcacheClientError,
    MemcacheError,
    MemcacheIllegalInputError,
    MemcacheServerError,
)

# The largest value memcached 1.6.18 stores at the default -I 1m, for a key of
# n bytes and flags 0: 1 MiB - 48 (header) - 8 (CAS) - (n + 1) - 2 (CRLF).
def max_value_len(key):
    return 1048576 - 48 - 8 - (len(key) + 1) - 2


def raw(server, request, terminator=b"\r\n"):
    """Sends raw bytes on a fresh connection and reads until `terminator`."""
    with socket.create_connection(server, timeout=10) as s:
        s.sendall(request)
        reply = b""
        while not reply.endswith(terminator):
            chunk = s.recv(65536)
            if not chunk:
                break
            reply += chunk
        return reply


# --- storage -----------------------------------------------------------------

def test_set_and_get(client):
    assert client.set("k", b"hello") is True
    assert client.get("k") == b"hello"


def test_get_missing_returns_default(client):
    assert client.get("missing") is None
    assert client.get("missing", default=b"d") == b"d"


def test_set_overwrites(client):
    client.set("k", b"one")
    client.set("k", b"two")
    assert client.get("k") == b"two"


def test_set_noreply(client):
    assert client.set("k", b"v", noreply=True) is True
    assert client.get("k") == b"v"


def test_set_with_expire_zero_and_negative(client):
    client.set("forever", b"v", expire=0)
    assert client.get("forever") == b"v"
    client.set("gone", b"v", expire=-1)
    assert client.get("gone") is None


def test_set_many_and_get_many(client):
    values = {f"key{i}": f"value{i}".encode() for i in range(50)}
    assert client.set_many(values) == []
    assert client.get_many(list(values) + ["missing"]) == values


def test_set_many_noreply(client):
    assert client.set_many({"a": b"1", "b": b"2"}, noreply=True) == []
    assert client.get_many(["a", "b"]) == {"a": b"1", "b": b"2"}


def test_add(client):
    assert client.add("k", b"first") is True
    assert client.add("k", b"second") is False
    assert client.get("k") == b"first"


def test_add_noreply(client):
    assert client.add("k", b"v", noreply=True) is True
    assert client.add("k", b"w", noreply=True) is True  # noreply cannot tell
    assert client.get("k") == b"v"


def test_replace(client):
    assert client.replace("k", b"v") is False
    assert client.get("k") is None
    client.set("k", b"old")
    assert client.replace("k", b"new") is True
    assert client.get("k") == b"new"


def test_replace_noreply(client):
    client.set("k", b"old")
    client.replace("k", b"new", noreply=True)
    assert client.get("k") == b"new"


def test_append_and_prepend(client):
    assert client.append("k", b"x") is False
    assert client.prepend("k", b"x") is False
    client.set("k", b"mid")
    assert client.append("k", b"-end") is True
    assert client.prepend("k", b"start-") is True
    assert client.get("k") == b"start-mid-end"


def test_append_prepend_noreply(client):
    client.set("k", b"b")
    client.append("k", b"c", noreply=True)
    client.prepend("k", b"a", noreply=True)
    assert client.get("k") == b"abc"


def test_gets_and_cas(client):
    client.set("k", b"v1")
    value, token = client.gets("k")
    assert value == b"v1"
    assert token is not None
    assert client.cas("k", b"v2", token) is True
    assert client.cas("k", b"v3", token) is False  # EXISTS: token is stale
    assert client.get("k") == b"v2"


def test_gets_missing(client):
    assert client.gets("missing") == (None, None)


def test_cas_on_missing_key(client):
    assert client.cas("missing", b"v", b"1") is None  # NOT_FOUND


def test_cas_noreply(client):
    client.set("k", b"v1")
    _, token = client.gets("k")
    client.cas("k", b"v2", token, noreply=True)
    assert client.get("k") == b"v2"


def test_gets_many(client):
    client.set("a", b"1")
    client.set("b", b"2")
    result = client.gets_many(["a", "b", "missing"])
    assert set(result) == {"a", "b"}
    assert result["a"][0] == b"1" and result["b"][0] == b"2"
    assert result["a"][1] != result["b"][1]


def test_cas_token_changes_on_every_write(client):
    client.set("k", b"1")
    _, first = client.gets("k")
    client.set("k", b"1")
    _, second = client.gets("k")
    assert first != second


# --- values --------------------------------------------------------------------

def test_binary_safe_values(client):
    value = bytes(range(256)) + b"\r\nEND\r\n\x00VALUE k 0 1\r\n"
    client.set("bin", value)
    assert client.get("bin") == value


def test_empty_value(client):
    client.set("empty", b"")
    assert client.get("empty") == b""


def test_flags_round_trip_with_serde(server):
    class PickleSerde:
        def serialize(self, key, value):
            if isinstance(value, bytes):
                return value, 0
            return pickle.dumps(value), 0xFFFFFFFF

        def deserialize(self, key, value, flags):
            return value if flags == 0 else pickle.loads(value)

    c = Client(server, serde=PickleSerde(), default_noreply=False, timeout=10)
    try:
        obj = {"list": [1, 2, 3], "text": "ünïcode value"}
        c.set("obj", obj)
        assert c.get("obj") == obj
        c.set("raw", b"bytes")
        assert c.get("raw") == b"bytes"
    finally:
        c.close()


def test_value_of_maximum_size(client):
    key = "big"
    value = b"v" * max_value_len(key)
    assert client.set(key, value) is True
    assert client.get(key) == value


def test_value_one_byte_too_large(client):
    key = "big"
    client.set(key, b"old")
    with pytest.raises(MemcacheServerError, match="object too large for cache"):
        client.set(key, b"v" * (max_value_len(key) + 1))
    # The connection stays usable and the old item is gone, as in memcached.
    assert client.get(key) is None


def test_value_far_too_large(client):
    with pytest.raises(MemcacheServerError, match="object too large"):
        client.set("huge", b"v" * (2 * 1024 * 1024))
    assert client.set("after", b"ok") is True


def test_many_large_values(client):
    values = {f"large{i}": bytes([i]) * 500_000 for i in range(8)}
    client.set_many(values)
    assert client.get_many(list(values)) == values


# --- keys ----------------------------------------------------------------------

def test_key_of_250_bytes(client):
    key = "k" * 250
    client.set(key, b"v")
    assert client.get(key) == b"v"


def test_key_of_251_bytes_is_refused_by_the_client(client):
    with pytest.raises(MemcacheIllegalInputError):
        client.set("k" * 251, b"v")


def test_key_with_space_is_refused_by_the_client(client):
    with pytest.raises(MemcacheIllegalInputError):
        client.get("a b")


def test_unicode_key_is_refused_by_default(client):
    with pytest.raises(MemcacheIllegalInputError):
        client.set("ключ", b"v")


def test_unicode_key_allowed_as_utf8_bytes(server):
    c = Client(server, allow_unicode_keys=True, encoding="utf-8", default_noreply=False, timeout=10)
    try:
        c.set("ключ", b"v")
        assert c.get("ключ") == b"v"
    finally:
        c.close()


def test_key_prefix(server):
    c = Client(server, key_prefix=b"app1:", default_noreply=False, timeout=10)
    plain = Client(server, default_noreply=False, timeout=10)
    try:
        c.set("k", b"v")
        assert plain.get("app1:k") == b"v"
    finally:
        c.close()
        plain.close()


# --- delete ------------------------------------------------------------------

def test_delete(client):
    client.set("k", b"v")
    assert client.delete("k") is True
    assert client.delete("k") is False
    assert client.get("k") is None


def test_delete_noreply(client):
    client.set("k", b"v")
    assert client.delete("k", noreply=True) is True
    assert client.get("k") is None


def test_delete_many(client):
    client.set_many({"a": b"1", "b": b"2"})
    assert client.delete_many(["a", "b", "missing"]) is True
    assert client.get_many(["a", "b"]) == {}


# --- incr / decr ---------------------------------------------------------------

def test_incr_decr(client):
    assert client.incr("n", 1) is None
    client.set("n", b"10")
    assert client.incr("n", 5) == 15
    assert client.decr("n", 3) == 12
    assert client.decr("n", 100) == 0


def test_decr_shrinks_in_place(client):
    client.set("n", b"10")
    assert client.decr("n", 1) == 9
    assert client.get("n") == b"9 "


def test_incr_wraps_at_2_64(client):
    client.set("n", str(2**64 - 1).encode())
    assert client.incr("n", 2) == 1


def test_incr_non_numeric_value(client):
    client.set("s", b"abc")
    with pytest.raises(MemcacheClientError, match="non-numeric"):
        client.incr("s", 1)


def test_incr_decr_noreply(client):
    client.set("n", b"5")
    assert client.incr("n", 2, noreply=True) is None
    assert client.decr("n", 1, noreply=True) is None
    assert client.get("n") == b"6"


# --- touch / gat -----------------------------------------------------------------

def test_touch(client):
    assert client.touch("missing", 100) is False
    client.set("k", b"v")
    assert client.touch("k", 100) is True
    assert client.get("k") == b"v"


def test_touch_to_expire(client):
    client.set("k", b"v")
    assert client.touch("k", -1) is True
    assert client.get("k") is None


def test_touch_noreply(client):
    client.set("k", b"v")
    assert client.touch("k", 100, noreply=True) is True


def test_gat_and_gats_raw(server, client):
    client.set("g", b"v")
    assert raw(server, b"gat 100 g missing\r\n", b"END\r\n") == b"VALUE g 0 1\r\nv\r\nEND\r\n"
    reply = raw(server, b"gats 100 g\r\n", b"END\r\n")
    assert reply.startswith(b"VALUE g 0 1 ") and reply.endswith(b"\r\nv\r\nEND\r\n")


# --- admin -------------------------------------------------------------------------

def test_flush_all(client):
    client.set("k", b"v")
    assert client.flush_all() is True
    assert client.get("k") is None


def test_flush_all_noreply(client):
    client.set("k", b"v")
    assert client.flush_all(noreply=True) is True
    assert client.get("k") is None


def test_flush_all_delayed(client):
    client.set("k", b"v")
    assert client.flush_all(delay=100) is True
    assert client.get("k") == b"v"
    client.flush_all()


def test_stats(client):
    client.set("k", b"v")
    client.get("k")
    client.get("missing")
    stats = client.stats()
    for name in (b"pid", b"uptime", b"curr_items", b"get_hits", b"get_misses", b"cmd_get", b"cmd_set", b"version"):
        assert name in stats, name
    assert stats[b"get_hits"] >= 1
    assert stats[b"get_misses"] >= 1
    assert stats[b"curr_items"] >= 1


def test_stats_settings(client):
    settings = client.stats("settings")
    assert settings[b"item_size_max"] == 1048576
    assert settings[b"maxconns"] == 1024


def test_stats_items_and_slabs(client):
    client.set("k", b"v")
    assert any(key.startswith(b"items:") for key in client.stats("items"))
    assert b"active_slabs" in client.stats("slabs")


def test_stats_reset(server, client):
    client.get("missing")
    # pymemcache cannot parse the `RESET` reply of `stats reset`; send it raw.
    assert raw(server, b"stats reset\r\n") == b"RESET\r\n"
    assert client.stats()[b"get_misses"] == 0


def test_version(client):
    assert client.version().startswith(b"1.6")


def test_verbosity_raw(server):
    assert raw(server, b"verbosity 1\r\n") == b"OK\r\n"
    assert raw(server, b"verbosity 0 noreply\r\nmn\r\n") == b"MN\r\n"


def test_cache_memlimit(client):
    assert client.cache_memlimit(100) is True
    assert client.cache_memlimit(64) is True


def test_shutdown_is_refused_without_A(server, client):
    with pytest.raises(MemcacheError):
        client.shutdown()
    probe = Client(server, default_noreply=False, timeout=10)
    try:
        assert probe.version().startswith(b"1.6")
    finally:
        probe.close()


def test_quit_closes_and_client_reconnects(client):
    client.set("k", b"v")
    client.quit()
    assert client.get("k") == b"v"


# --- connections -------------------------------------------------------------------

def test_many_clients(server):
    clients = [Client(server, default_noreply=False, timeout=10) for _ in range(50)]
    try:
        for i, c in enumerate(clients):
            c.set(f"conn{i}", str(i).encode())
        for i, c in enumerate(clients):
            assert c.get(f"conn{i}") == str(i).encode()
    finally:
        for c in clients:
            c.close()


def test_pipelined_noreply_then_get(client):
    for i in range(1000):
        client.set(f"p{i}", b"x" * (i % 100), noreply=True)
    result = client.get_many([f"p{i}" for i in range(1000)])
    assert len(result) == 1000
    assert result["p999"] == b"x" * 99
