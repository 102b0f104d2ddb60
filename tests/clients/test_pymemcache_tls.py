"""pymemcache over TLS (`tls_context`) against larder -Z and memcached 1.6.18 -Z
with the same certificates and settings; the same operations, the same replies.

The certificates are a throwaway CA made here with the openssl command
(scripts/test installs it): a server certificate for 127.0.0.1 and a client
certificate for the verify-mode tests.
"""

import os
import shutil
import socket
import ssl
import subprocess
import tempfile
import time

import pytest
from pymemcache.client.base import Client

import larder_servers
from conftest import ALL_BYTES, TRICKY_VALUES


def _openssl(cwd, *args):
    subprocess.run(["openssl", *args], cwd=cwd, check=True, capture_output=True)


@pytest.fixture(scope="module")
def pki():
    d = tempfile.mkdtemp(prefix="larder-pymemcache-tls-")
    _openssl(d, "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", "ca.key", "-out", "ca.crt",
             "-days", "3650", "-subj", "/CN=test CA")
    for name, ext in (("server", "subjectAltName=IP:127.0.0.1,DNS:localhost\n"),
                      ("client", "extendedKeyUsage=clientAuth\n")):
        _openssl(d, "req", "-newkey", "rsa:2048", "-nodes", "-keyout", f"{name}.key", "-out", f"{name}.csr",
                 "-subj", f"/CN={name}")
        with open(os.path.join(d, f"{name}.ext"), "w") as f:
            f.write(ext)
        _openssl(d, "x509", "-req", "-in", f"{name}.csr", "-CA", "ca.crt", "-CAkey", "ca.key",
                 "-CAcreateserial", "-out", f"{name}.crt", "-days", "3650", "-extfile", f"{name}.ext")
    yield {n: os.path.join(d, n) for n in ("ca.crt", "server.crt", "server.key", "client.crt", "client.key")}
    shutil.rmtree(d, ignore_errors=True)


def client_context(pki, cert=True):
    ctx = ssl.create_default_context(cafile=pki["ca.crt"])
    if cert:
        ctx.load_cert_chain(pki["client.crt"], pki["client.key"])
    return ctx


class TlsServer(larder_servers.Server):
    """A server started with -Z; ready once it answers `version` over TLS."""

    def __init__(self, binary, pki, extra=(), name=None):
        args = ["-Z", "-o", f"ssl_chain_cert={pki['server.crt']}", "-o", f"ssl_key={pki['server.key']}", *extra]
        super().__init__(binary, args=args, name=name)
        self.ctx = client_context(pki)

    def _wait_ready(self):
        deadline = time.monotonic() + self.start_timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                return False
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=1.0) as raw:
                    with self.ctx.wrap_socket(raw, server_hostname="127.0.0.1") as s:
                        s.sendall(b"version\r\n")
                        if s.recv(100).startswith(b"VERSION "):
                            return True
            except OSError:
                pass
            time.sleep(0.05)
        return False


SERVERS = {"larder": larder_servers.larder_bin, "memcached": lambda: larder_servers.MEMCACHED_BIN}


def _start(name, pki, extra=()):
    srv = TlsServer(SERVERS[name](), pki, extra=extra, name=f"{name}-tls")
    srv.start()
    return srv


@pytest.fixture(scope="module", params=["larder", "memcached"])
def tls_server(request, pki):
    srv = _start(request.param, pki)
    try:
        yield srv
        assert srv.alive(), srv.log_text()
    finally:
        srv.stop()


@pytest.fixture
def mc(tls_server, pki):
    c = Client(("127.0.0.1", tls_server.port), tls_context=client_context(pki),
               connect_timeout=5, timeout=10, default_noreply=False)
    yield c
    c.close()


def test_set_get_over_tls(mc, key):
    assert mc.set(key(), b"hello") is True
    assert mc.get(key()) == b"hello"
    assert mc.get(key("missing")) is None
    assert mc.raw_command(f"get {key()}".encode(), b"END\r\n") == f"VALUE {key()} 0 5\r\nhello\r\n".encode()


def test_tricky_and_large_values(mc, key):
    for i, v in enumerate(TRICKY_VALUES + [ALL_BYTES * 4000]):   # up to ~1 MB - 1 KB
        assert mc.set(key(str(i)), v) is True
        assert mc.get(key(str(i))) == v


def test_get_many_cas_incr_delete(mc, key):
    keys = [key(str(i)) for i in range(100)]
    assert mc.set_many({k: k.encode() for k in keys}) == []
    assert mc.get_many(keys) == {k: k.encode() for k in keys}
    value, cas = mc.gets(keys[0])
    assert mc.cas(keys[0], b"new", cas) is True
    assert mc.cas(keys[0], b"newer", cas) is False
    assert mc.set(key("n"), b"41") is True
    assert mc.incr(key("n"), 1) == 42
    assert mc.delete(keys[1]) is True
    assert mc.get(keys[1]) is None


def test_tls_stats(mc):
    stats = mc.stats()
    assert stats[b"ssl_handshake_errors"] == 0
    assert b"time_since_server_cert_refresh" in stats
    settings = mc.stats("settings")
    assert settings[b"ssl_enabled"] is True or settings[b"ssl_enabled"] == b"yes"
    assert settings[b"ssl_min_version"] == b"tlsv1.2"


def _outcome(port, ctx):
    """What a client gets: 'served', or the kind of failure."""
    c = Client(("127.0.0.1", port), tls_context=ctx, connect_timeout=5, timeout=5)
    try:
        return "served" if c.version() else "no version"
    except (ssl.SSLError, ConnectionError, OSError):
        return "refused"
    finally:
        c.close()


@pytest.mark.parametrize("mode", ["1", "2"])
def test_client_certificates_as_memcached(pki, mode):
    """ssl_verify_mode with ssl_ca_cert: the same clients served and refused by both."""
    got = {}
    for name in SERVERS:
        srv = _start(name, pki, extra=["-o", f"ssl_verify_mode={mode}", "-o", f"ssl_ca_cert={pki['ca.crt']}"])
        try:
            got[name] = (_outcome(srv.port, client_context(pki, cert=True)),
                         _outcome(srv.port, client_context(pki, cert=False)))
        finally:
            srv.stop()
    assert got["larder"] == got["memcached"], got
    assert got["larder"][0] == "served"
    assert got["larder"][1] == ("served" if mode == "1" else "refused")


def test_same_replies_as_memcached(pki):
    """The same commands over TLS to both servers: the same bytes back (no CAS, no stats)."""
    script = [
        b"set a 1 0 3\r\nabc\r\n", b"get a\r\n", b"append a 0 0 2\r\nde\r\n", b"get a b\r\n",
        b"incr a 1\r\n", b"set n 0 0 1\r\n9\r\n", b"incr n 5\r\n", b"decr n 100\r\n",
        b"touch a 100\r\n", b"delete a\r\n", b"delete a\r\n", b"bogus\r\n",
        b"mn\r\n", b"ms m 2 T0\r\nhi\r\n", b"mg m v\r\n", b"refresh_certs\r\n", b"version\r\n",
    ]
    replies = {}
    for name in SERVERS:
        srv = _start(name, pki)
        try:
            with socket.create_connection(("127.0.0.1", srv.port), timeout=5) as raw:
                with client_context(pki).wrap_socket(raw, server_hostname="127.0.0.1") as s:
                    out = []
                    for cmd in script:
                        s.sendall(cmd)
                        time.sleep(0.02)
                        buf = b""
                        s.settimeout(0.3)
                        try:
                            while True:
                                chunk = s.recv(65536)
                                if not chunk:
                                    break
                                buf += chunk
                        except (socket.timeout, ssl.SSLError):
                            pass
                        out.append(buf)
                    replies[name] = out
        finally:
            srv.stop()
    assert replies["larder"] == replies["memcached"]
