"""larder as a node behind twemproxy (nutcracker 0.5.0): three nodes, ketama/fnv1a_64,
auto_eject_hosts, checked through the proxy. Every test runs against three larders and
against three memcached 1.6.18 nodes (the `kind` parameter): the proxy must not be able
to tell them apart."""

import os
import sys
import threading
import time

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import cluster  # noqa: E402
from cluster import Text, get_many, set_cmd, set_many, wait_for  # noqa: E402

N = 10_000


def keys(n, prefix="k"):
    return [f"{prefix}:{i:06d}" for i in range(n)]


def value(k, size=None):
    v = (k.encode() + b"|") * 4
    if size is not None:
        v = (v * (size // len(v) + 1))[:size]
    return v


def test_ten_thousand_keys_spread_over_three_nodes(px):
    """set/get/incr/cas/delete of 10,000 keys through the proxy; every node holds a share
    and the nodes' curr_items add up to what was written."""
    nodes, proxy = px
    ks = keys(N)
    assert set_many(proxy.port, ((k, value(k)) for k in ks)) == [b"STORED"] * N
    per_node = nodes.curr_items()
    assert sum(per_node) == N, per_node
    # ketama with 160 points per node: no node gets a tiny or a huge share
    assert all(0.15 * N < c < 0.55 * N for c in per_node), per_node
    got = get_many(proxy.port, ks)
    assert len(got) == N and all(got[k] == value(k) for k in ks)
    where = nodes.placement(ks)
    assert [list(where.values()).count(i) for i in range(3)] == per_node

    counters = ks[:1000]
    with Text(proxy.port) as c:
        # incr: pipelined, one number per key
        c.send(b"".join(set_cmd(k, b"%d" % i) for i, k in enumerate(counters)))
        assert [c.line() for _ in counters] == [b"STORED"] * len(counters)
        c.send(b"".join(b"incr %s 7\r\n" % k.encode() for k in counters))
        assert [c.line() for _ in counters] == [b"%d" % (i + 7) for i in range(len(counters))]
        c.send(b"".join(b"decr %s 3\r\n" % k.encode() for k in counters))
        assert [c.line() for _ in counters] == [b"%d" % (i + 4) for i in range(len(counters))]
        assert c.cmd(b"incr k:absent 1\r\n") == b"NOT_FOUND"
        # cas: gets through the proxy, then a good and a stale cas per key
        cas_keys = ks[1000:1300]
        got = {}
        for i in range(0, len(cas_keys), 100):
            got.update(c.gets(*cas_keys[i:i + 100]))
        assert set(got) == set(cas_keys)
        c.send(b"".join(b"cas %s 0 0 3 %d\r\nnew\r\n" % (k.encode(), got[k][1]) for k in cas_keys))
        assert [c.line() for _ in cas_keys] == [b"STORED"] * len(cas_keys)
        c.send(b"".join(b"cas %s 0 0 3 %d\r\nold\r\n" % (k.encode(), got[k][1]) for k in cas_keys))
        assert [c.line() for _ in cas_keys] == [b"EXISTS"] * len(cas_keys)
        assert c.cmd(b"cas k:absent 0 0 1 1\r\nx\r\n") == b"NOT_FOUND"
        assert c.get(*cas_keys[:50]) == {k: b"new" for k in cas_keys[:50]}
        # delete
        gone = ks[2000:3000]
        c.send(b"".join(b"delete %s\r\n" % k.encode() for k in gone))
        assert [c.line() for _ in gone] == [b"DELETED"] * len(gone)
        assert c.cmd(b"delete %s\r\n" % gone[0].encode()) == b"NOT_FOUND"
        assert c.get(*gone[:100]) == {}
    assert sum(nodes.curr_items()) == N - len(gone)
    # each node lost exactly the deleted keys it held
    lost = [sum(1 for k in gone if where[k] == i) for i in range(3)]
    assert nodes.curr_items() == [per_node[i] - lost[i] for i in range(3)]


def test_multi_get_split_across_nodes(px):
    """One get of many keys is split by the proxy over the three nodes and merged into
    one reply: every hit once, misses absent, one END; gets carries each node's CAS."""
    nodes, proxy = px
    ks = keys(1000, "m")
    assert set_many(proxy.port, ((k, value(k)) for k in ks)) == [b"STORED"] * len(ks)
    where = nodes.placement(ks)
    with Text(proxy.port) as c:
        one_each = [next(k for k in ks if where[k] == i) for i in (2, 0, 1)]
        # 1000 keys: the request and the reply span many mbufs
        # (with fnv1a_64, neighbouring keys such as m:000000..m:000099 tend to share a node)
        for sample in (one_each, ks[::10], ks):
            assert len({where[k] for k in sample}) == 3  # really spread over all nodes
            want = sample + [f"m:absent{i}" for i in range(5)]
            c.send(b"get " + " ".join(want).encode() + b"\r\n")
            got, order = c.values()
            assert {k: v[1] for k, v in got.items()} == {k: value(k) for k in sample}
            # the proxy answers in the order of the request
            assert order == sample
        direct = {}
        for node in nodes:
            with Text(node.port) as d:
                direct.update(d.gets(*[k for k in ks[::10] if where[k] == node.index]))
        assert c.gets(*ks[::10]) == direct
    assert c.buf == b""


def test_pipelined_mixed_requests(px):
    """Hundreds of mixed commands in one write: replies come back complete and in order."""
    nodes, proxy = px
    ks = keys(300, "p")
    req, want = [], []
    for i, k in enumerate(ks):
        req.append(set_cmd(k, b"%d" % i))
        want.append(b"STORED")
    for i, k in enumerate(ks):
        if i % 3 == 0:
            req.append(b"incr %s 1\r\n" % k.encode())
            want.append(b"%d" % (i + 1))
        elif i % 3 == 1:
            req.append(b"delete %s\r\n" % k.encode())
            want.append(b"DELETED")
        else:
            req.append(b"get %s %s\r\n" % (k.encode(), ks[i - 1].encode()))
            want += [b"VALUE %s 0 %d" % (k.encode(), len(b"%d" % i)), b"%d" % i, b"END"]
    req.append(b"add %s 0 0 1\r\nx\r\n" % ks[0].encode())
    want.append(b"NOT_STORED")
    req.append(b"touch %s 100\r\n" % ks[2].encode())
    want.append(b"TOUCHED")
    with Text(proxy.port) as c:
        c.send(b"".join(req))
        got = [c.line() for _ in want]
        assert got == want
        assert c.cmd(b"version\r\n").startswith(b"VERSION ")
    assert sum(nodes.curr_items()) == 200


def test_noreply_through_the_proxy(px):
    """noreply storage, incr and delete: nothing comes back for them, and the next reply
    on the connection is the next command's."""
    nodes, proxy = px
    with Text(proxy.port) as c:
        c.send(b"".join(b"set nr:%d 0 0 1 noreply\r\n%d\r\n" % (i, i % 10) for i in range(200)))
        c.send(b"".join(b"incr nr:%d 1 noreply\r\ndelete nr:%d noreply\r\n" % (i, i + 100)
                        for i in range(100)))
        assert c.cmd(set_cmd("nr:last", b"x")) == b"STORED"
        got = c.get(*[f"nr:{i}" for i in range(200)])
        assert got == {f"nr:{i}": b"%d" % (i % 10 + 1) for i in range(100)}
    assert sum(nodes.curr_items()) == 101


# nutcracker reads a value in mbufs (16 KiB by default, -m 512..16 MiB) and has no limit of
# its own on a value's length (a 32-bit count): the nodes' -I (8m here) is the limit.
LARGE = [16 * 1024 - 1, 16 * 1024, 16 * 1024 + 1, 100_000, 1_000_000, 4 * 2**20, 8 * 2**20 - 4096]


def test_large_values(px):
    nodes, proxy = px
    with Text(proxy.port, timeout=30) as c:
        for size in LARGE:
            k = f"big:{size}"
            assert c.cmd(set_cmd(k, value(k, size))) == b"STORED", size
        assert c.get(*[f"big:{s}" for s in LARGE]) == {f"big:{s}": value(f"big:{s}", s) for s in LARGE}
    assert sum(nodes.curr_items()) == len(LARGE)


def test_small_mbufs(px):
    """nutcracker -m 512, its smallest mbuf: keys, values and a multi-get reply cross mbuf
    boundaries hundreds of times."""
    nodes, _ = px
    proxy = cluster.Twemproxy(nodes, mbuf=512).start()
    try:
        sizes = [511, 512, 513, 4096, 100_000, 1_000_000]
        with Text(proxy.port, timeout=30) as c:
            for size in sizes:
                k = f"small-mbuf:{size}"
                assert c.cmd(set_cmd(k, value(k, size))) == b"STORED"
            assert c.get(*[f"small-mbuf:{s}" for s in sizes]) == \
                {f"small-mbuf:{s}": value(f"small-mbuf:{s}", s) for s in sizes}
        ks = [f"small-mbuf:{i:04d}:" + "k" * 200 for i in range(500)]  # 500 keys of ~215 bytes
        assert set_many(proxy.port, ((k, value(k)) for k in ks)) == [b"STORED"] * len(ks)
        got = get_many(proxy.port, ks, per_get=500)
        assert len(got) == len(ks) and all(got[k] == value(k) for k in ks)
    finally:
        proxy.stop()




def socket_buffers_max():
    total = 0
    for name in ("tcp_wmem", "tcp_rmem"):
        with open(f"/proc/sys/net/ipv4/{name}") as f:
            total += int(f.read().split()[2])
    return total


def test_value_over_item_size_limit(px, kind):
    """A set over the nodes' -I: the node's own error comes back through the proxy, the data
    is swallowed, and neither that connection nor the node suffers for it."""
    nodes, proxy = px
    # far over -I (8m), and more than the kernel's socket buffers can take in at once
    # (tcp_wmem + tcp_rmem maxima), so the proxy is still sending the data when the node
    # reads the command line: the outcome does not depend on timing
    too_big = max(48 * 2**20, socket_buffers_max() + 8 * 2**20)
    with Text(proxy.port, timeout=30) as c:
        # twice: as many as server_failure_limit, so a proxy counting failures would eject
        for _ in range(cluster.POOL["server_failure_limit"]):
            assert c.cmd(set_cmd("big:toobig", b"x" * too_big)) == b"SERVER_ERROR object too large for cache"
        assert c.get("big:toobig") == {}
        assert c.cmd(set_cmd("big:after", b"ok")) == b"STORED"
        assert c.get("big:after") == {"big:after": b"ok"}
    assert sum(nodes.curr_items()) == 1
    time.sleep(0.3)  # nutcracker's stats are aggregated every 100 ms (-i 100)
    pool = proxy.stats()["cluster"]
    assert pool["server_ejects"] == 0 and all(pool[f"node{i}"]["server_err"] == 0 for i in (1, 2, 3)), pool


@pytest.mark.parametrize("cmd", ["set", "add", "replace", "append", "prepend", "cas"])
def test_node_answers_too_large_after_its_data(px, kind, cmd):
    """The cause of the above, on one node without the proxy: a storage command over -I
    must be answered after its data block has been read (memcached 1.6.18), never before."""
    nodes, _ = px
    n = 9 * 2**20
    with Text(nodes[0].port) as c:
        c.send(b"%s big:early 0 0 %d%s\r\n" % (cmd.encode(), n, b" 1" if cmd == "cas" else b""))
        c.sock.settimeout(0.3)
        try:
            early = c.sock.recv(1000)
        except TimeoutError:
            early = b""
        assert early == b"", f"answered before the data block: {early!r}"
        c.send(b"x" * n + b"\r\n")
        assert c.line() == b"SERVER_ERROR object too large for cache"
        assert c.cmd(b"version\r\n").startswith(b"VERSION ")


def test_key_placement_same_as_memcached():
    """The same keys through twemproxy land on the same named node whether the nodes are
    larder or memcached (ketama hashes the names node1..3, not the ports)."""
    maps = {}
    ks = keys(2000, "same")
    for kind in cluster.KINDS:
        cluster.require_kind(kind)
        nodes = cluster.Nodes.start(kind)
        proxy = None
        try:
            proxy = cluster.Twemproxy(nodes).start()
            assert set_many(proxy.port, ((k, b"v") for k in ks)) == [b"STORED"] * len(ks)
            maps[kind] = nodes.placement(ks)
        finally:
            if proxy:
                proxy.stop()
            nodes.stop()
    assert maps["larder"] == maps["memcached"]


class Bystander(threading.Thread):
    """Reads `keys` in a loop through the proxy until told to stop (at most 60 s or 200,000
    requests); collects every request that did not return the key's value."""

    def __init__(self, port, keys):
        super().__init__(daemon=True)
        self.port, self.keys = port, keys
        self.stop = threading.Event()
        self.done, self.bad = 0, []

    def run(self):
        deadline = time.monotonic() + 60
        try:
            with Text(self.port) as c:
                while not self.stop.is_set() and time.monotonic() < deadline and self.done < 200_000:
                    k = self.keys[self.done % len(self.keys)]
                    got = c.get(k)
                    if got != {k: value(k)}:
                        self.bad.append((k, got))
                    self.done += 1
        except Exception as e:  # noqa: BLE001 - reported by finish()
            self.bad.append(("connection", repr(e)))

    def finish(self):
        self.stop.set()
        self.join(15)
        assert not self.is_alive()
        return self.done, self.bad


def test_node_killed_is_ejected_then_readded(kind):
    """A node killed mid-run: after server_failure_limit failures the proxy ejects it, its
    keys miss (they now hash to the survivors) while the other nodes' keys keep hitting;
    restarted on its port, it is re-added after server_retry_timeout and gets its keys."""
    cluster.require(cluster.NUTCRACKER_BIN, "nutcracker (twemproxy)")
    nodes = cluster.Nodes.start(kind)
    proxy = None
    try:
        # 3 s out of the pool: room for the checks below on a busy CI machine
        proxy = cluster.Twemproxy(nodes, pool={"server_retry_timeout": 3000}).start()
        ks = keys(3000, "ej")
        assert set_many(proxy.port, ((k, value(k)) for k in ks)) == [b"STORED"] * len(ks)
        where = nodes.placement(ks)
        victim = nodes[1]
        theirs = [k for k in ks if where[k] == victim.index]
        ours = [k for k in ks if where[k] != victim.index]
        assert theirs and ours

        # Traffic for the survivors' keys runs on its own connection from before the kill
        # until the node is back: not one of those requests may miss or fail.
        bystander = Bystander(proxy.port, ours)
        bystander.start()
        victim.kill()
        # Requests for the dead node's keys fail (SERVER_ERROR) until it is ejected;
        # the survivors' keys hit throughout.
        errors = 0
        deadline = time.monotonic() + 10
        ejected = False
        with Text(proxy.port) as c:
            while time.monotonic() < deadline and not ejected:
                reply = c.cmd(b"get %s\r\n" % theirs[0].encode())
                if reply.startswith(b"SERVER_ERROR"):
                    errors += 1
                elif reply == b"END":
                    ejected = True
                else:
                    raise AssertionError(f"unexpected reply {reply!r} for a key of the dead node")
                assert c.get(ours[errors % len(ours)]) == {ours[errors % len(ours)]: value(ours[errors % len(ours)])}
        assert ejected, "the dead node was never ejected"
        assert 1 <= errors <= cluster.POOL["server_failure_limit"], errors
        wait_for(lambda: proxy.stats()["cluster"]["server_ejects"] >= 1, 2, "nutcracker's server_ejects")

        # ejected: the dead node's keys miss, every other key still hits (consistent hashing)
        assert get_many(proxy.port, theirs) == {}
        got = get_many(proxy.port, ours)
        assert len(got) == len(ours) and all(got[k] == value(k) for k in ours)
        # writes for its keys go to the survivors meanwhile
        assert set_many(proxy.port, ((k, b"interim") for k in theirs)) == [b"STORED"] * len(theirs)
        assert sum(n.stat("curr_items") for n in nodes if n is not victim) == len(ks)

        victim.restart()
        # once server_retry_timeout has passed the proxy routes the node's keys to it again:
        # it is empty, so they miss; then they are written to it
        probe = theirs[0]
        wait_for(lambda: get_many(proxy.port, [probe]) == {}, 10, "the restarted node to be re-added")
        assert get_many(proxy.port, theirs) == {}
        got = get_many(proxy.port, ours)
        assert len(got) == len(ours) and all(got[k] == value(k) for k in ours)
        assert set_many(proxy.port, ((k, value(k)) for k in theirs)) == [b"STORED"] * len(theirs)
        assert victim.stat("curr_items") == len(theirs)
        got = get_many(proxy.port, ks)
        assert len(got) == len(ks) and all(got[k] == value(k) for k in ks)
        done, bad = bystander.finish()
        assert done > 100 and bad == [], (done, bad[:5])
    finally:
        if proxy:
            proxy.stop()
        nodes.stop()
