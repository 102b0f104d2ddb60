"""What each node reports and does stays right behind twemproxy: `stats` counters and
memcached's `stats detail dump` of the three nodes add up to the traffic sent through the
proxy (larder and memcached alike), and larder's own features work per node in a cluster:
grace mode serves an expired hot key stale to every proxied getter but one, and
`stats prefixes` summed over the nodes matches what was written."""

import os
import sys
import threading

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import cluster  # noqa: E402
from cluster import Text, get_many, set_cmd, set_many  # noqa: E402



def item_bytes(key, vlen, flags=0):
    """What larder charges for an item (crates/larder-store/src/item.rs): 8 header bytes,
    the value length in 1-4 bytes, 4 bytes of client flags unless they are 0, key, value."""
    width = next(w for w in (1, 2, 3, 4) if vlen < 1 << (8 * w))
    return 8 + width + (4 if flags else 0) + len(key) + vlen


def start(kind, args):
    cluster.require(cluster.NUTCRACKER_BIN, "nutcracker (twemproxy)")
    cluster.require_kind(kind)
    nodes = cluster.Nodes.start(kind, args=args)
    try:
        return nodes, cluster.Twemproxy(nodes).start()
    except BaseException:
        nodes.stop()
        raise


@pytest.fixture
def detail_cluster(kind):
    """Three nodes with per-prefix detail on (-D :) behind nutcracker."""
    nodes, proxy = start(kind, ["-D", ":"])
    yield nodes, proxy
    proxy.stop()
    nodes.stop()


def traffic(proxy):
    """Send a known mix through the proxy; return what each node's stats must add up to."""
    users = [f"user:{i}" for i in range(600)]
    pages = [f"page:{i}" for i in range(400)]
    assert set_many(proxy.port, ((k, b"u" * 50) for k in users)) == [b"STORED"] * 600
    assert set_many(proxy.port, ((k, b"p" * 500) for k in pages)) == [b"STORED"] * 400
    got = get_many(proxy.port, users + [f"user:absent{i}" for i in range(70)])
    assert len(got) == 600
    assert len(get_many(proxy.port, pages[:100])) == 100
    with Text(proxy.port) as c:
        c.send(b"".join(b"delete %s\r\n" % k.encode() for k in pages[:150] + ["page:absent"]))
        assert [c.line() for _ in range(151)] == [b"DELETED"] * 150 + [b"NOT_FOUND"]
        c.send(b"".join(set_cmd(f"cnt:{i}", b"10") + b"incr cnt:%d 5\r\n" % i for i in range(30)))
        assert [c.line() for _ in range(60)] == [b"STORED", b"15"] * 30
    return {
        "cmd_set": 600 + 400 + 30, "get_hits": 700, "get_misses": 70, "cmd_get": 770,
        "delete_hits": 150, "delete_misses": 1, "incr_hits": 30, "incr_misses": 0,
        "curr_items": 600 + 400 - 150 + 30, "total_items": 600 + 400 + 30,
    }, {
        # memcached's detail dump: get counts keys read, hit the hits, del the deletes
        "user": {"get": 670, "hit": 600, "set": 600, "del": 0},
        "page": {"get": 100, "hit": 100, "set": 400, "del": 151},
        "cnt": {"get": 0, "hit": 0, "set": 30, "del": 0},
    }


def detail_dump(node):
    out = {}
    with Text(node.port) as c:
        c.send(b"stats detail dump\r\n")
        for _ in range(1000):
            line = c.line()
            if line == b"END":
                return out
            f = line.decode().split()
            assert f[0] == "PREFIX" and len(f) == 10, line
            out[f[1]] = {f[i]: int(f[i + 1]) for i in range(2, 10, 2)}
    raise AssertionError("stats detail dump did not end")


def test_node_stats_add_up_to_proxied_traffic(detail_cluster):
    nodes, proxy = detail_cluster
    totals, prefixes = traffic(proxy)
    per_node = [n.stats() for n in nodes]
    summed = {k: sum(int(s[k]) for s in per_node) for k in totals}
    assert summed == totals
    assert all(int(s["curr_items"]) > 0 for s in per_node), "a node got no traffic"
    dumps = [detail_dump(n) for n in nodes]
    merged = {}
    for d in dumps:
        for p, row in d.items():
            m = merged.setdefault(p, dict.fromkeys(row, 0))
            for k, v in row.items():
                m[k] += v
    assert merged == prefixes


def test_prefix_memory_summed_over_nodes():
    """larder's `stats prefixes`: items and bytes per prefix, summed over the three nodes,
    are exactly what was written through the proxy, and each node's rows add up to its `bytes`."""
    nodes, proxy = start("larder", [])
    try:
        written = {}
        with Text(proxy.port) as c:
            for p, n, size, flags in (("user", 500, 40, 0), ("page", 300, 700, 5), ("sess", 200, 3000, 0)):
                ks = [f"{p}:{i}" for i in range(n)]
                c.send(b"".join(set_cmd(k, b"x" * size, flags=flags) for k in ks))
                assert [c.line() for _ in ks] == [b"STORED"] * n
                written[p] = {"items": n,
                              "bytes": sum(item_bytes(k, size, flags) for k in ks)}
            # 100 page items deleted, 50 user items overwritten with a larger value
            c.send(b"".join(b"delete page:%d\r\n" % i for i in range(100)))
            assert [c.line() for _ in range(100)] == [b"DELETED"] * 100
            written["page"]["items"] -= 100
            written["page"]["bytes"] -= sum(item_bytes(f"page:{i}", 700, 5) for i in range(100))
            c.send(b"".join(set_cmd(f"user:{i}", b"y" * 90) for i in range(50)))
            assert [c.line() for _ in range(50)] == [b"STORED"] * 50
            written["user"]["bytes"] += 50 * (90 - 40)
        rows = [n.stats("prefixes") for n in nodes]
        summed = {p: {f: sum(int(r.get(f"prefix:{p}:{f}", 0)) for r in rows) for f in ("items", "bytes")}
                  for p in written}
        assert summed == written
        # each node's prefix bytes are its own items' bytes (`stats` bytes), nothing lost between
        for n, r in zip(nodes, rows):
            assert sum(int(r.get(f"prefix:{p}:bytes", 0)) for p in written) == n.stat("bytes")
    finally:
        proxy.stop()
        nodes.stop()


def test_grace_through_proxy():
    """-o grace on the nodes: a hot key expires; eight clients read it at once through the
    proxy (which funnels them into one connection per node): one misses and refills, seven
    are served the old value; counted by the node that owns the key only."""
    nodes, proxy = start("larder", ["-o", "grace=30s,grace_lease=5s,debugtime"])
    try:
        with Text(proxy.port) as c:
            assert c.cmd(set_cmd("page:home", b"old", exptime=10)) == b"STORED"
            assert c.cmd(set_cmd("page:other", b"x", exptime=10)) == b"STORED"
        owner = nodes[nodes.placement(["page:home"])["page:home"]]
        for n in nodes:  # every node's clock moves past the expiry
            with Text(n.port) as d:
                assert d.cmd(b"debugtime 11\r\n") == b"OK"
        conns = [Text(proxy.port) for _ in range(8)]
        replies = [None] * len(conns)
        go = threading.Barrier(len(conns))

        def read(i):
            go.wait(5)
            replies[i] = conns[i].get("page:home")
        threads = [threading.Thread(target=read, args=(i,)) for i in range(len(conns))]
        for t in threads:
            t.start()
        for t in threads:
            t.join(15)
        assert not any(t.is_alive() for t in threads)
        misses = [i for i, r in enumerate(replies) if r == {}]
        assert len(misses) == 1, replies
        assert all(r == {"page:home": b"old"} for i, r in enumerate(replies) if i != misses[0])
        winner = conns[misses[0]]
        assert winner.cmd(set_cmd("page:home", b"new", exptime=10)) == b"STORED"
        assert all(c.get("page:home") == {"page:home": b"new"} for c in conns)
        stats = [n.stats("larder") for n in nodes]
        for n, s in zip(nodes, stats):
            want = (1, 7) if n is owner else (0, 0)
            assert (int(s["larder_grace_wins"]), int(s["larder_grace_hits"])) == want, (n.name, s)
        # delete through the proxy ends grace: everyone misses
        assert winner.cmd(b"delete page:home\r\n") == b"DELETED"
        assert all(c.get("page:home") == {} for c in conns)
        for c in conns:
            c.close()
    finally:
        proxy.stop()
        nodes.stop()
