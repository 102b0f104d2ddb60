"""Fixtures for the cluster suite: three nodes of each kind (larder, memcached 1.6.18),
with or without twemproxy in front; all stopped when the test or module ends."""

import os
import sys

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import cluster  # noqa: E402


@pytest.fixture(scope="module", params=cluster.KINDS)
def kind(request):
    cluster.require_kind(request.param)
    return request.param


@pytest.fixture(scope="module")
def proxied(kind):
    """Three nodes of `kind` (-I 8m, for the large values) behind one nutcracker,
    shared by a module's tests; every node is flushed before each test."""
    cluster.require(cluster.NUTCRACKER_BIN, "nutcracker (twemproxy)")
    nodes = cluster.Nodes.start(kind, args=["-m", "64", "-I", "8m"])
    proxy = None
    try:
        proxy = cluster.Twemproxy(nodes).start()
        yield nodes, proxy
        dead = [n.name for n in nodes if not n.alive()]
        assert not dead, f"nodes died during the tests: {dead}"
    finally:
        if proxy:
            proxy.stop()
        nodes.stop()


@pytest.fixture
def px(proxied):
    nodes, proxy = proxied
    nodes.flush()
    # flushed items leave curr_items when reclaimed: memcached's LRU crawler takes ~0.1 s,
    # larder frees them with its once-a-second sweep
    cluster.wait_for(lambda: nodes.curr_items() == [0, 0, 0], 5, "flushed items to be reclaimed")
    return nodes, proxy
