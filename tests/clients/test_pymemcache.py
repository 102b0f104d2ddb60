"""pymemcache (pure-Python, text protocol) against the server under test."""

import time

import pytest
from pymemcache.client.base import Client

from conftest import ALL_BYTES, TRICKY_VALUES


@pytest.fixture
def mc(server):
    c = Client(("127.0.0.1", server.port), connect_timeout=5, timeout=10, default_noreply=False)
    yield c
    c.close()


def test_set_get(mc, key):
    assert mc.set(key(), b"hello") is True
    assert mc.get(key()) == b"hello"
    assert mc.get(key("missing")) is None
    assert mc.set(key(), b"world", flags=0xDEADBEEF) is True
    assert mc.get(key()) == b"world"
    # flags come back untouched (raw_command returns the reply up to, not including, END)
    assert mc.raw_command(f"get {key()}".encode(), b"END\r\n") == \
        f"VALUE {key()} {0xDEADBEEF} 5\r\nworld\r\n".encode()


def test_add_replace_append_prepend(mc, key):
    assert mc.add(key(), b"1") is True
    assert mc.add(key(), b"2") is False
    assert mc.replace(key(), b"3") is True
    assert mc.replace(key("nope"), b"3") is False
    assert mc.append(key(), b"45") is True
    assert mc.prepend(key(), b"12") is True
    assert mc.get(key()) == b"12345"
    assert mc.append(key("nope"), b"x") is False
    assert mc.get(key("nope")) is None


def test_multi_get(mc, key):
    keys = [key(str(i)) for i in range(100)]
    for i, k in enumerate(keys):
        assert mc.set(k, str(i).encode() * (i + 1)) is True
    got = mc.get_many(keys + [key("absent1"), key("absent2")])
    assert got == {k: str(i).encode() * (i + 1) for i, k in enumerate(keys)}


def test_cas(mc, key):
    assert mc.gets(key()) == (None, None)
    assert mc.set(key(), b"v1") is True
    v, cas = mc.gets(key())
    assert v == b"v1"
    assert cas is not None and int(cas) > 0
    assert mc.cas(key(), b"v2", cas) is True
    assert mc.get(key()) == b"v2"
    # the old cas unique is stale now: conflict
    assert mc.cas(key(), b"v3", cas) is False
    assert mc.get(key()) == b"v2"
    v, cas2 = mc.gets(key())
    assert v == b"v2" and cas2 != cas
    # another writer in between: conflict
    assert mc.set(key(), b"other") is True
    assert mc.cas(key(), b"v4", cas2) is False
    assert mc.get(key()) == b"other"
    # cas on a missing key: NOT_FOUND -> None
    assert mc.cas(key("missing"), b"x", cas2) is None


def test_incr_decr(mc, key):
    assert mc.incr(key(), 1) is None
    assert mc.set(key(), b"10") is True
    assert mc.incr(key(), 5) == 15
    assert mc.decr(key(), 3) == 12
    assert mc.decr(key(), 100) == 0  # decr floors at 0
    assert mc.set(key(), b"18446744073709551615") is True
    assert mc.incr(key(), 1) == 0  # 64-bit wrap
    # memcached rewrites a shorter result in place, padded with spaces to the old length
    assert mc.get(key()) == b"0" + b" " * 19
    assert mc.incr(key(), 7) == 7
    assert mc.set(key(), b"abc") is True
    with pytest.raises(Exception) as e:
        mc.incr(key(), 1)
    assert "cannot increment or decrement non-numeric value" in str(e.value)


def test_delete(mc, key):
    assert mc.set(key(), b"x") is True
    assert mc.delete(key()) is True
    assert mc.get(key()) is None
    assert mc.delete(key()) is False


def test_touch(mc, key):
    assert mc.touch(key("missing"), 10) is False
    assert mc.set(key(), b"x", expire=100) is True
    assert mc.set(key("keep"), b"y", expire=1) is True
    assert mc.touch(key(), 1) is True
    assert mc.touch(key("keep"), 100) is True
    time.sleep(2.5)
    assert mc.get(key()) is None
    assert mc.get(key("keep")) == b"y"


@pytest.mark.parametrize("size", [500 * 1024, 1024 * 1024 - 100])
def test_large_values(mc, key, size):
    value = bytes((i * 7 + 3) % 256 for i in range(size))
    assert mc.set(key(), value) is True
    assert mc.get(key()) == value
    assert mc.get_many([key(), key("x")]) == {key(): value}


def test_too_large_value_rejected(mc, key):
    with pytest.raises(Exception) as e:
        mc.set(key(), b"x" * (2 * 1024 * 1024))
    assert "object too large for cache" in str(e.value)
    assert mc.get(key()) is None
    assert mc.set(key(), b"after") is True  # connection still in sync
    assert mc.get(key()) == b"after"


def test_binary_safe_values(mc, key):
    for i, v in enumerate(TRICKY_VALUES):
        assert mc.set(key(str(i)), v) is True
    for i, v in enumerate(TRICKY_VALUES):
        assert mc.get(key(str(i))) == v
    assert mc.get_many([key(str(i)) for i in range(len(TRICKY_VALUES))]) == \
        {key(str(i)): v for i, v in enumerate(TRICKY_VALUES)}
    for b in range(256):
        assert mc.set(key("b"), bytes([b])) is True
        assert mc.get(key("b")) == bytes([b])
    assert mc.get(key("0")) == b""
    assert len(ALL_BYTES) == 256


def test_noreply_pipeline(mc, key):
    n = 500
    for i in range(n):
        assert mc.set(key(str(i)), f"v{i}".encode(), noreply=True) is True
    mc.incr(key("ctr"), 1, noreply=True)  # missing: silent
    mc.add(key("0"), b"dup", noreply=True)  # NOT_STORED: silent
    mc.delete(key(str(n - 1)), noreply=True)
    # a reply now must belong to this get, not to any of the silent commands above
    got = mc.get_many([key(str(i)) for i in range(n)])
    assert got == {key(str(i)): f"v{i}".encode() for i in range(n - 1)}
    assert mc.get(key("ctr")) is None
