"""pylibmc (libmemcached, text protocol) against the server under test."""

import time

import pylibmc
import pytest

from conftest import TRICKY_VALUES


def client(server, **behaviors):
    b = {"cas": True, "tcp_nodelay": True}
    b.update(behaviors)
    return pylibmc.Client([f"127.0.0.1:{server.port}"], binary=False, behaviors=b)


@pytest.fixture
def mc(server):
    c = client(server)
    yield c
    c.disconnect_all()


def test_set_get(mc, key):
    assert mc.set(key(), b"hello") is True
    assert mc.get(key()) == b"hello"
    assert mc.get(key("missing")) is None
    assert mc.set(key(), b"world") is True
    assert mc.get(key()) == b"world"


def test_add_replace_append_prepend(mc, key):
    assert mc.add(key(), b"1") is True
    assert mc.add(key(), b"2") is False
    assert mc.replace(key(), b"3") is True
    assert mc.replace(key("nope"), b"3") is False
    assert mc.append(key(), b"45") is True
    assert mc.prepend(key(), b"12") is True
    assert mc.get(key()) == b"12345"


def test_multi_get(mc, key):
    keys = [key(str(i)) for i in range(100)]
    assert mc.set_multi({k: str(i).encode() * (i + 1) for i, k in enumerate(keys)}) == []
    got = mc.get_multi(keys + [key("absent1"), key("absent2")])
    assert got == {k: str(i).encode() * (i + 1) for i, k in enumerate(keys)}


def test_cas(mc, key):
    assert mc.gets(key()) == (None, None)
    assert mc.set(key(), b"v1") is True
    v, cas = mc.gets(key())
    assert v == b"v1"
    assert isinstance(cas, int) and cas > 0
    assert mc.cas(key(), b"v2", cas) is True
    assert mc.get(key()) == b"v2"
    assert mc.cas(key(), b"v3", cas) is False  # stale unique: EXISTS
    assert mc.get(key()) == b"v2"
    v, cas2 = mc.gets(key())
    assert v == b"v2" and cas2 != cas
    assert mc.set(key(), b"other") is True
    assert mc.cas(key(), b"v4", cas2) is False
    assert mc.get(key()) == b"other"


def test_incr_decr(mc, key):
    with pytest.raises(pylibmc.NotFound):
        mc.incr(key(), 1)
    assert mc.set(key(), b"10") is True
    assert mc.incr(key(), 5) == 15
    assert mc.decr(key(), 3) == 12
    assert mc.decr(key(), 100) == 0
    assert mc.set(key(), b"18446744073709551615") is True
    assert mc.incr(key(), 1) == 0
    assert mc.incr(key(), 41) == 41
    assert mc.set(key(), b"abc") is True
    with pytest.raises(pylibmc.Error):
        mc.incr(key(), 1)
    assert mc.get(key()) == b"abc"


def test_delete(mc, key):
    assert mc.set(key(), b"x") is True
    assert mc.delete(key()) is True
    assert mc.get(key()) is None
    assert mc.delete(key()) is False


def test_touch(mc, key):
    assert mc.touch(key("missing"), 10) is False
    assert mc.set(key(), b"x", time=100) is True
    assert mc.set(key("keep"), b"y", time=1) is True
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
    assert mc.get_multi([key(), key("x")]) == {key(): value}


def test_binary_safe_values(mc, key):
    for i, v in enumerate(TRICKY_VALUES):
        assert mc.set(key(str(i)), v) is True
    for i, v in enumerate(TRICKY_VALUES):
        assert mc.get(key(str(i))) == v
    assert mc.get_multi([key(str(i)) for i in range(len(TRICKY_VALUES))]) == \
        {key(str(i)): v for i, v in enumerate(TRICKY_VALUES)}
    for b in range(256):
        assert mc.set(key("b"), bytes([b])) is True
        assert mc.get(key("b")) == bytes([b])


def test_noreply_pipeline(server, mc, key):
    n = 500
    quiet = client(server, _noreply=True)
    for i in range(n):
        quiet.set(key(str(i)), f"v{i}".encode())
    quiet.delete(key(str(n - 1)))
    quiet.disconnect_all()
    deadline = time.monotonic() + 5
    want = {key(str(i)): f"v{i}".encode() for i in range(n - 1)}
    while True:
        got = mc.get_multi([key(str(i)) for i in range(n)])
        if got == want or time.monotonic() > deadline:
            break
        time.sleep(0.05)  # the quiet connection is another socket: let the server catch up
    assert got == want
