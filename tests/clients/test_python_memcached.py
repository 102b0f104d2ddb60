"""python-memcached (pure-Python, text protocol) against the server under test."""

import time

import memcache
import pytest

from conftest import TRICKY_VALUES


@pytest.fixture
def mc(server):
    c = memcache.Client([f"127.0.0.1:{server.port}"], cache_cas=True, socket_timeout=10,
                        dead_retry=0)
    yield c
    c.disconnect_all()


def test_set_get(mc, key):
    assert mc.set(key(), b"hello")
    assert mc.get(key()) == b"hello"
    assert mc.get(key("missing")) is None
    assert mc.set(key(), "text ü")  # str: stored utf-8 with a flag, read back as str
    assert mc.get(key()) == "text ü"
    assert mc.set(key("int"), 42)
    assert mc.get(key("int")) == 42
    assert mc.set(key("obj"), {"a": [1, 2]})  # pickled
    assert mc.get(key("obj")) == {"a": [1, 2]}


def test_add_replace_append_prepend(mc, key):
    assert mc.add(key(), b"1")
    assert not mc.add(key(), b"2")
    assert mc.replace(key(), b"3")
    assert not mc.replace(key("nope"), b"3")
    assert mc.append(key(), b"45")
    assert mc.prepend(key(), b"12")
    assert mc.get(key()) == b"12345"


def test_multi_get(mc, key):
    keys = [key(str(i)) for i in range(100)]
    assert mc.set_multi({k: str(i).encode() * (i + 1) for i, k in enumerate(keys)}) == []
    got = mc.get_multi(keys + [key("absent1"), key("absent2")])
    assert got == {k: str(i).encode() * (i + 1) for i, k in enumerate(keys)}


def test_cas(mc, key):
    assert mc.gets(key()) is None
    assert mc.set(key(), b"v1")
    assert mc.gets(key()) == b"v1"
    cas = mc.cas_ids[key().encode()]
    assert cas > 0
    assert mc.cas(key(), b"v2") is True
    assert mc.get(key()) == b"v2"
    # the client still holds the old unique: conflict
    mc.cas_ids[key().encode()] = cas
    assert mc.cas(key(), b"v3") is False
    assert mc.get(key()) == b"v2"
    assert mc.gets(key()) == b"v2"
    assert mc.cas_ids[key().encode()] != cas
    other = memcache.Client([f"127.0.0.1:{mc.servers[0].port}"])
    assert other.set(key(), b"other")
    other.disconnect_all()
    assert mc.cas(key(), b"v4") is False
    assert mc.get(key()) == b"other"


def test_incr_decr(mc, key):
    assert mc.incr(key(), 1) is None
    assert mc.set(key(), b"10")
    assert mc.incr(key(), 5) == 15
    assert mc.decr(key(), 3) == 12
    assert mc.decr(key(), 100) == 0
    assert mc.set(key(), b"18446744073709551615")
    assert mc.incr(key(), 1) == 0
    assert mc.incr(key(), 41) == 41


def test_delete(mc, key):
    assert mc.set(key(), b"x")
    assert mc.delete(key()) == 1
    assert mc.get(key()) is None
    assert mc.delete(key()) == 0  # NOT_FOUND


def test_touch(mc, key):
    assert mc.touch(key("missing"), 10) == 0
    assert mc.set(key(), b"x", time=100)
    assert mc.set(key("keep"), b"y", time=1)
    assert mc.touch(key(), 1) == 1
    assert mc.touch(key("keep"), 100) == 1
    time.sleep(2.5)
    assert mc.get(key()) is None
    assert mc.get(key("keep")) == b"y"


@pytest.mark.parametrize("size", [500 * 1024, 1024 * 1024 - 100])
def test_large_values(mc, key, size):
    value = bytes((i * 7 + 3) % 256 for i in range(size))
    assert mc.set(key(), value)
    assert mc.get(key()) == value
    assert mc.get_multi([key(), key("x")]) == {key(): value}


def test_binary_safe_values(mc, key):
    for i, v in enumerate(TRICKY_VALUES):
        assert mc.set(key(str(i)), v)
    for i, v in enumerate(TRICKY_VALUES):
        assert mc.get(key(str(i))) == v
    assert mc.get_multi([key(str(i)) for i in range(len(TRICKY_VALUES))]) == \
        {key(str(i)): v for i, v in enumerate(TRICKY_VALUES)}
    for b in range(256):
        assert mc.set(key("b"), bytes([b]))
        assert mc.get(key("b")) == bytes([b])


def test_noreply_pipeline(mc, key):
    n = 500
    for i in range(n):
        assert mc.set(key(str(i)), f"v{i}".encode(), noreply=True)
    mc.incr(key("ctr"), 1, noreply=True)
    mc.delete(key(str(n - 1)), noreply=True)
    got = mc.get_multi([key(str(i)) for i in range(n)])
    assert got == {key(str(i)): f"v{i}".encode() for i in range(n - 1)}
    assert mc.get(key("ctr")) is None
