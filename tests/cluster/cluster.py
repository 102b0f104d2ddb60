"""Three-node clusters for the cluster suite: larder or memcached nodes, optionally
behind twemproxy (nutcracker), and a small raw text-protocol client.

Also used by scripts/bench-cluster. Everything listens on 127.0.0.1 on free ports, runs in its own process group and is
stopped by the fixtures in conftest.py (and by larder_servers' atexit hook). Every wait
here has a deadline; no loop is unbounded.
"""

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "lib"))
import larder_servers  # noqa: E402

KINDS = ("larder", "memcached")
NUTCRACKER_BIN = os.environ.get("NUTCRACKER_BIN") or shutil.which("nutcracker") or "/usr/sbin/nutcracker"

# The twemproxy pool the tests run, as operators configure it for memcached.
# Servers are named (node1..node3): ketama hashes the names, so a key lands on the same
# node whatever the ports, and larder and memcached clusters can be compared key by key.
POOL = {
    "hash": "fnv1a_64",
    "distribution": "ketama",
    "timeout": 2000,             # ms to wait for a server's reply
    "auto_eject_hosts": "true",
    "server_failure_limit": 2,   # consecutive failures before a node is ejected
    "server_retry_timeout": 1500,  # ms before an ejected node is tried again
    "preconnect": "true",
}


def require(path, what):
    """Fail under CI (which installs everything) when a dependency is missing; skip elsewhere."""
    if os.path.isfile(path) and os.access(path, os.X_OK):
        return
    import pytest  # here, so that scripts/bench-cluster can use this module without pytest
    msg = f"{what} not found at {path} (scripts/test installs it: apt-get install nutcracker memcached)"
    if os.environ.get("CI") == "true":
        pytest.fail(msg)
    pytest.skip(msg)


def node_binary(kind):
    if kind == "memcached-1.6.38":  # trixie's, from its chroot (tests/lib/memcached_1638.py)
        import memcached_1638
        return memcached_1638.binary()
    return larder_servers.larder_bin() if kind == "larder" else larder_servers.MEMCACHED_BIN


def require_kind(kind):
    require(node_binary(kind), kind)


class Text:
    """A blocking text-protocol connection with a deadline on every read."""

    def __init__(self, port, timeout=10.0):
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=timeout)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.timeout = timeout
        self.buf = b""

    def close(self):
        self.sock.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def send(self, data):
        self.sock.sendall(data)

    def _fill(self, deadline):
        left = deadline - time.monotonic()
        if left <= 0:
            raise TimeoutError(f"no complete reply within {self.timeout}s; have {self.buf[:200]!r}")
        self.sock.settimeout(left)
        d = self.sock.recv(1 << 20)
        if not d:
            raise ConnectionError(f"connection closed; have {self.buf[:200]!r}")
        self.buf += d

    def line(self, deadline=None):
        deadline = deadline or time.monotonic() + self.timeout
        while b"\r\n" not in self.buf:
            self._fill(deadline)
        line, self.buf = self.buf.split(b"\r\n", 1)
        return line

    def exact(self, n, deadline=None):
        deadline = deadline or time.monotonic() + self.timeout
        while len(self.buf) < n:
            self._fill(deadline)
        out, self.buf = self.buf[:n], self.buf[n:]
        return out

    def values(self):
        """Read a get/gets reply: {key: (flags, value, cas or None)} and the key order."""
        deadline = time.monotonic() + self.timeout
        out, order = {}, []
        while True:
            line = self.line(deadline)
            if line == b"END":
                return out, order
            parts = line.split(b" ")
            if parts[0] != b"VALUE":
                raise AssertionError(f"unexpected line in a get reply: {line!r}")
            key, flags, n = parts[1].decode(), int(parts[2]), int(parts[3])
            cas = int(parts[4]) if len(parts) > 4 else None
            data = self.exact(n + 2, deadline)
            assert data[-2:] == b"\r\n", f"value of {key} not followed by CRLF"
            assert key not in out, f"{key} twice in one reply"
            out[key] = (flags, data[:-2], cas)
            order.append(key)

    def cmd(self, data):
        """Send one non-get command, return its one-line reply."""
        self.send(data)
        return self.line()

    def get(self, *keys):
        self.send(b"get " + " ".join(keys).encode() + b"\r\n")
        return {k: v[1] for k, v in self.values()[0].items()}

    def gets(self, *keys):
        self.send(b"gets " + " ".join(keys).encode() + b"\r\n")
        return {k: (v[1], v[2]) for k, v in self.values()[0].items()}

    def stats(self, *args):
        self.send(b" ".join([b"stats"] + [a.encode() for a in args]) + b"\r\n")
        out = {}
        deadline = time.monotonic() + self.timeout
        while True:
            line = self.line(deadline)
            if line == b"END":
                return out
            parts = line.decode().split(" ", 2)
            assert parts[0] == "STAT", f"unexpected stats line {line!r}"
            out[parts[1]] = parts[2] if len(parts) > 2 else ""


def set_cmd(key, value, flags=0, exptime=0):
    return b"set %s %d %d %d\r\n%s\r\n" % (key.encode(), flags, exptime, len(value), value)


def set_many(port, items, batch=500):
    """Pipelined sets through one connection, `batch` per write; returns the replies."""
    replies = []
    items = list(items)
    with Text(port) as c:
        for i in range(0, len(items), batch):
            chunk = items[i:i + batch]
            c.send(b"".join(set_cmd(k, v) for k, v in chunk))
            replies += [c.line() for _ in chunk]
    return replies


def get_many(port, keys, per_get=100):
    """Multi-gets of `per_get` keys through one connection: {key: value} of the hits."""
    out = {}
    keys = list(keys)
    with Text(port) as c:
        for i in range(0, len(keys), per_get):
            out.update(c.get(*keys[i:i + per_get]))
    return out


class Node(larder_servers.Server):
    """One cluster node; `restart()` brings it back on the port it had (empty)."""

    def __init__(self, kind, args=(), index=0):
        super().__init__(node_binary(kind), args=args, name=f"{kind}-node{index + 1}")
        self.kind = kind
        self.index = index
        self.fixed_port = None

    def kill(self):
        """SIGKILL: a crash, no goodbye to the proxy or the clients."""
        os.killpg(self.proc.pid, signal.SIGKILL)
        self.proc.wait(5)
        self.fixed_port = self.port
        larder_servers._live.discard(self)
        if self.log_path and os.path.exists(self.log_path):
            os.unlink(self.log_path)

    def restart(self):
        self.start(port=self.fixed_port or self.port)

    def stats(self, *args):
        with Text(self.port) as c:
            return c.stats(*args)

    def stat(self, name, *args):
        return int(self.stats(*args)[name])


class Nodes(list):
    """Three nodes of one kind."""

    @classmethod
    def start(cls, kind, args=(), count=3, ports=None):
        nodes = cls()
        try:
            for i in range(count):
                n = Node(kind, args=args, index=i)
                n.start(port=ports[i] if ports else None)
                nodes.append(n)
        except BaseException:
            nodes.stop()
            raise
        return nodes

    def stop(self):
        for n in self:  # all at once: each takes up to a second to exit
            if n.alive():
                try:
                    os.killpg(n.proc.pid, signal.SIGTERM)
                except ProcessLookupError:
                    pass
        for n in self:
            n.stop()

    def flush(self):
        for n in self:
            with Text(n.port) as c:
                assert c.cmd(b"flush_all\r\n") == b"OK"

    def curr_items(self):
        return [n.stat("curr_items") for n in self]

    def placement(self, keys, per_get=100):
        """Which node holds each key, read from the nodes directly: {key: node index}.
        A key found on two nodes or on none fails the test."""
        where = {}
        for n in self:
            for k in get_many(n.port, keys, per_get):
                assert k not in where, f"{k} on node{where[k] + 1} and node{n.index + 1}"
                where[k] = n.index
        missing = [k for k in keys if k not in where]
        assert not missing, f"{len(missing)} keys on no node, e.g. {missing[:3]}"
        return where


class Twemproxy:
    """nutcracker with one pool in front of `nodes`; stats on their own loopback port."""

    def __init__(self, nodes, pool=None, mbuf=None):
        self.nodes = nodes
        self.pool = dict(POOL, **(pool or {}))
        self.mbuf = mbuf
        self.proc = None
        self.dir = tempfile.mkdtemp(prefix="larder-twemproxy-")
        self.port = self.stats_port = None

    def config(self):
        lines = ["cluster:", f"  listen: 127.0.0.1:{self.port}"]
        lines += [f"  {k}: {v}" for k, v in self.pool.items()]
        lines.append("  servers:")
        lines += [f"   - 127.0.0.1:{n.port}:1 node{n.index + 1}" for n in self.nodes]
        return "\n".join(lines) + "\n"

    def start(self):
        require(NUTCRACKER_BIN, "nutcracker (twemproxy)")
        last = ""
        for _ in range(5):  # ports picked free may be taken before nutcracker binds them
            self.port, self.stats_port = larder_servers.free_port(), larder_servers.free_port()
            conf = os.path.join(self.dir, "nutcracker.yml")
            with open(conf, "w") as f:
                f.write(self.config())
            cmd = [NUTCRACKER_BIN, "-c", conf, "-s", str(self.stats_port), "-a", "127.0.0.1",
                   "-i", "100", "-o", os.path.join(self.dir, "nutcracker.log"),
                   "-p", os.path.join(self.dir, "nutcracker.pid"), "-v", os.environ.get("NUTCRACKER_VERBOSITY", "5")]
            if self.mbuf:
                cmd += ["-m", str(self.mbuf)]
            self.proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                         stderr=subprocess.STDOUT, start_new_session=True)
            larder_servers._live.add(self)  # stopped at exit or SIGTERM like the nodes
            if self._wait_ready():
                return self
            last = self.log_text()
            self._kill()
        raise RuntimeError(f"nutcracker did not start:\n{last}")

    def _wait_ready(self):
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                return False
            try:
                with Text(self.port, timeout=2) as c:
                    if c.cmd(b"version\r\n").startswith(b"VERSION "):
                        return True
            except OSError:
                pass
            time.sleep(0.05)
        return False

    def log_text(self):
        try:
            with open(os.path.join(self.dir, "nutcracker.log"), "rb") as f:
                return f.read()[-4000:].decode("utf-8", "replace")
        except OSError:
            return ""

    def stats(self):
        """nutcracker's JSON stats (aggregated every 100 ms)."""
        with socket.create_connection(("127.0.0.1", self.stats_port), timeout=5) as s:
            s.settimeout(5)
            data = b""
            deadline = time.monotonic() + 5
            while time.monotonic() < deadline:
                d = s.recv(1 << 16)
                if not d:
                    break
                data += d
        return json.loads(data)

    def _kill(self):
        if self.proc and self.proc.poll() is None:
            try:
                os.killpg(self.proc.pid, signal.SIGTERM)
                self.proc.wait(5)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait(5)
            except ProcessLookupError:
                pass

    def stop(self):
        self._kill()
        larder_servers._live.discard(self)
        shutil.rmtree(self.dir, ignore_errors=True)


def wait_for(cond, timeout, what, interval=0.05):
    """Poll `cond()` until it is truthy or `timeout` seconds pass (then fail naming `what`)."""
    deadline = time.monotonic() + timeout
    last = None
    while time.monotonic() < deadline:
        last = cond()
        if last:
            return last
        time.sleep(interval)
    raise AssertionError(f"timed out after {timeout}s waiting for {what} (last: {last!r})")
