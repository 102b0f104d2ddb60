"""larder nodes behind a consistent-hashing client and no proxy: pylibmc (libmemcached)
with ketama, text and binary protocol, over three nodes; a node fails (remove_failed,
retry_timeout, dead_timeout) and returns. Each test runs with larder and with memcached
1.6.18 nodes, and keys must land on the same nodes as with memcached."""

import os
import sys
import time

import pylibmc
import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import cluster  # noqa: E402
from cluster import wait_for  # noqa: E402

# What an operator sets for a ketama pool that survives a dead node: libmemcached's
# consistent ketama (md5 over "host:port-N" points), a node is removed from the continuum
# after its first failure and tried again after retry_timeout / dead_timeout seconds.
BEHAVIORS = {
    "ketama": True,
    "remove_failed": 1,
    "retry_timeout": 1,
    "dead_timeout": 1,
    "connect_timeout": 1000,       # ms
    "_poll_timeout": 2000,         # ms
    "send_timeout": 2_000_000,     # us
    "receive_timeout": 2_000_000,  # us
    "tcp_nodelay": True,
    "cas": True,
}
PROTOCOLS = {"text": False, "binary": True}


def client(nodes, binary, **behaviors):
    b = dict(BEHAVIORS, **behaviors)
    return pylibmc.Client([f"127.0.0.1:{n.port}" for n in nodes], binary=binary, behaviors=b)


def keys(n, prefix):
    return [f"{prefix}:{i}" for i in range(n)]


@pytest.fixture(params=PROTOCOLS)
def protocol(request):
    return request.param


@pytest.fixture
def nodes(kind):
    ns = cluster.Nodes.start(kind)
    try:
        yield ns
    finally:
        ns.stop()


def test_ketama_spread_and_commands(nodes, protocol):
    mc = client(nodes, PROTOCOLS[protocol])
    ks = keys(3000, "spread")
    assert mc.set_multi({k: k.encode() * 3 for k in ks}) == []
    per_node = nodes.curr_items()
    assert sum(per_node) == len(ks) and all(c > 0.15 * len(ks) for c in per_node), per_node
    assert mc.get_multi(ks) == {k: k.encode() * 3 for k in ks}
    where = nodes.placement(ks)
    assert [list(where.values()).count(i) for i in range(3)] == per_node
    for i, k in enumerate(ks[:60]):  # a few of each command, each routed by the client
        assert mc.set(k, str(i)) is True
        assert mc.incr(k, 5) == i + 5
        v, cas = mc.gets(k)
        assert v == str(i + 5) and cas
        assert mc.cas(k, "new", cas) is True
        assert mc.cas(k, "stale", cas) is False
        assert mc.delete(k) is True
        assert mc.get(k) is None
    assert sum(nodes.curr_items()) == len(ks) - 60
    mc.disconnect_all()


def test_node_fails_and_returns(nodes, protocol):
    """Kill a node: its keys fail once, then (removed from the continuum) miss and are
    written to the survivors, while every other key keeps hitting; restarted, it is taken
    back after dead_timeout and gets its keys again (empty at first)."""
    # 2 s out of the continuum: room for the checks below on a busy CI machine
    mc = client(nodes, PROTOCOLS[protocol], retry_timeout=2, dead_timeout=2)
    ks = keys(3000, "fail")
    assert mc.set_multi({k: k.encode() for k in ks}) == []
    where = nodes.placement(ks)
    victim = nodes[1]
    theirs = [k for k in ks if where[k] == victim.index]
    ours = [k for k in ks if where[k] != victim.index]

    victim.kill()
    # libmemcached: the first request to the dead node fails (None: get swallows the
    # error), the next is told SERVER IS MARKED DEAD; after that the node is out.
    outcomes = []
    for k in theirs[:4]:
        try:
            outcomes.append(mc.get(k))
        except pylibmc.ServerDead:
            outcomes.append("dead")
    assert outcomes == [None, "dead", None, None]
    assert mc.get_multi(theirs) == {}
    assert mc.get_multi(ours) == {k: k.encode() for k in ours}
    assert mc.set_multi({k: b"interim" for k in theirs}) == []
    assert sum(n.stat("curr_items") for n in nodes if n is not victim) == len(ks)
    assert mc.get_multi(theirs) == {k: b"interim" for k in theirs}

    victim.restart()

    def back():
        try:
            return mc.get(theirs[0]) is None  # routed to the restarted, empty node
        except pylibmc.ServerDead:
            return False
    wait_for(back, 10, "the client to take the node back", interval=0.2)
    assert mc.get_multi(theirs) == {}
    assert mc.get_multi(ours) == {k: k.encode() for k in ours}
    assert mc.set_multi({k: k.encode() for k in theirs}) == []
    assert victim.stat("curr_items") == len(theirs)
    assert mc.get_multi(ks) == {k: k.encode() for k in ks}
    mc.disconnect_all()


@pytest.mark.parametrize("proto", PROTOCOLS)
def test_same_placement_as_memcached(proto):
    """The same server list strings (same addresses and ports): every key lands on the same
    node with larder nodes as with memcached nodes."""
    for kind in cluster.KINDS:
        cluster.require_kind(kind)
    ks = keys(2000, "same")
    maps, ports = {}, None
    for kind in ("larder", "memcached"):
        try:
            nodes = cluster.Nodes.start(kind, ports=ports)
        except RuntimeError as e:  # another process took a port in between: rare, say so
            pytest.fail(f"could not restart the cluster on ports {ports}: {e}")
        try:
            ports = [n.port for n in nodes]
            mc = client(nodes, PROTOCOLS[proto])
            assert mc.set_multi({k: b"v" for k in ks}) == []
            maps[kind] = nodes.placement(ks)
            mc.disconnect_all()
        finally:
            nodes.stop()
        time.sleep(0.1)
    assert maps["larder"] == maps["memcached"]
    assert len(set(maps["larder"].values())) == 3
