"""TLS behaviour since 1.6.18, larder against memcached 1.6.38 over real TLS connections.

The table cases (cases.py) compare bytes on a plain listener of a -Z server; these need TLS
connections: memcached 1.6.30's per-listener prefixes (`-l mtls:` requires a client
certificate, `-l btls:` asks for none) and its `ssl_proto_errors` counter (a fatal TLS error
on an established connection). Each check runs the same clients against both servers, each
started with memcached t/'s certificates:

    -Z -o ssl_chain_cert=t/server_crt.pem -o ssl_key=t/server_key.pem [-o ssl_ca_cert=t/cacert.pem]
    -l notls:127.0.0.1:P -l 127.0.0.1:T,mtls:127.0.0.1:M,btls:127.0.0.1:B

and asserts the two agree; for a failed handshake, which of memcached's two counters moves
depends on its threads' timing, so there memcached must count each failure once and larder
where memcached mostly does, always. SIGHUP's certificate reload is newer than 1.6.38 (1.6.40): tested
against larder alone in crates/larder-server/tests/tls.rs.
"""

import os
import select
import socket
import ssl
import sys
import time

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "lib"))
import larder_servers  # noqa: E402
import memcached_1638  # noqa: E402

TIMEOUT = 5.0


def _servers():
    why = memcached_1638.available()
    if why:
        pytest.fail(why)  # scripts/test installs it: never a skip
    return [("memcached-1.6.38", memcached_1638.binary()), ("larder", larder_servers.larder_bin())]


class Tls:
    """One -Z server with a plain listener (the harness's port) and three TLS ones."""

    def __init__(self, name, binary, extra=(), ca=False):
        self.ports = [larder_servers.free_port() for _ in range(3)]
        t, m, b = self.ports
        args = ["-m", "64", "-t", "1"] + memcached_1638.tls_args(binary, ca=ca) + list(extra)
        args += ["-l", f"127.0.0.1:{t},mtls:127.0.0.1:{m},btls:127.0.0.1:{b}"]
        self.server = memcached_1638.PlainProbeServer(binary, args, name=name)
        self.binary = binary

    def __enter__(self):
        self.server.start()
        return self

    def __exit__(self, *exc):
        self.server.stop()

    def stats(self):
        with socket.create_connection(("127.0.0.1", self.server.port), timeout=TIMEOUT) as s:
            s.sendall(b"stats\r\n")
            buf = b""
            while not buf.endswith(b"END\r\n"):
                chunk = s.recv(65536)
                assert chunk, "connection closed during stats"
                buf += chunk
        out = {}
        for line in buf.split(b"\r\n"):
            parts = line.split(b" ")
            if len(parts) == 3 and parts[0] == b"STAT":
                out[parts[1].decode()] = parts[2].decode()
        return out

    def counters(self):
        st = self.stats()
        return int(st["ssl_handshake_errors"]), int(st.get("ssl_proto_errors", -1))


def client_context(cert=False):
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    ctx.minimum_version = ssl.TLSVersion.TLSv1_3
    if cert:
        ctx.load_cert_chain(memcached_1638.t_file("client_crt.pem"), memcached_1638.t_file("client_key.pem"))
    return ctx


def served(port, cert=False):
    """Whether a TLS 1.3 client (with t/'s client certificate or none) is answered `version`.
    TLS 1.3 reports a refused client certificate on the first read, not at connect."""
    try:
        raw = socket.create_connection(("127.0.0.1", port), timeout=TIMEOUT)
        with client_context(cert).wrap_socket(raw) as s:
            s.sendall(b"version\r\n")
            return s.recv(100).startswith(b"VERSION ")
    except (ssl.SSLError, OSError):
        return False


def read_raw_until_closed(sock):
    """Everything the server sends on the raw socket until it closes (or TIMEOUT)."""
    got = b""
    deadline = time.monotonic() + TIMEOUT
    while time.monotonic() < deadline:
        r, _, _ = select.select([sock], [], [], 0.1)
        if r:
            try:
                chunk = os.read(sock.fileno(), 65536)
            except OSError:
                break
            if not chunk:
                break
            got += chunk
    return got


def forged_record_counts(port):
    """Establish TLS 1.3, then write an application-data record that does not open (a bad
    MAC) straight onto the socket: the server must end the connection."""
    raw = socket.create_connection(("127.0.0.1", port), timeout=TIMEOUT)
    s = client_context().wrap_socket(raw)
    try:
        s.sendall(b"version\r\n")
        assert s.recv(100).startswith(b"VERSION ")
        os.write(s.fileno(), bytes([23, 3, 3, 0, 40]) + b"A" * 40)
        read_raw_until_closed(s)
    finally:
        s.close()


def both(check):
    """check(name, binary) for each server: {name: result}."""
    return {name: check(name, binary) for name, binary in _servers()}


def test_ssl_proto_errors_counts_a_bad_record_as_memcached_does():
    def run(name, binary):
        with Tls(name, binary) as srv:
            t = srv.ports[0]
            first = srv.counters()
            # A clean end with close_notify, and one without: neither counts.
            raw = socket.create_connection(("127.0.0.1", t), timeout=TIMEOUT)
            s = client_context().wrap_socket(raw)
            s.sendall(b"version\r\n")
            s.recv(100)
            s.unwrap().close()
            raw = socket.create_connection(("127.0.0.1", t), timeout=TIMEOUT)
            s = client_context().wrap_socket(raw)
            s.sendall(b"version\r\n")
            s.recv(100)
            s.close()  # no unwrap: no close_notify
            time.sleep(0.3)
            quiet = srv.counters()
            forged_record_counts(t)
            time.sleep(0.3)
            return first, quiet, srv.counters()

    got = both(run)
    assert got["memcached-1.6.38"][0] == (0, 0), got
    assert got["larder"] == got["memcached-1.6.38"], got


def test_mtls_listener_requires_a_client_certificate_as_memcached():
    def run(name, binary):
        with Tls(name, binary, ca=True) as srv:
            t, m, b = srv.ports
            return {"tls none": served(t), "tls cert": served(t, cert=True),
                    "mtls none": served(m), "mtls cert": served(m, cert=True),
                    "btls none": served(b), "btls cert": served(b, cert=True)}

    got = both(run)
    assert got["memcached-1.6.38"]["mtls none"] is False, got
    assert got["memcached-1.6.38"]["mtls cert"] is True, got
    assert got["larder"] == got["memcached-1.6.38"], got


def test_btls_listener_asks_for_nothing_under_verify_mode_2_as_memcached():
    def run(name, binary):
        with Tls(name, binary, extra=("-o", "ssl_verify_mode=2"), ca=True) as srv:
            t, m, b = srv.ports
            return {"tls none": served(t), "tls cert": served(t, cert=True),
                    "mtls none": served(m), "mtls cert": served(m, cert=True),
                    "btls none": served(b), "btls cert": served(b, cert=True)}

    got = both(run)
    assert got["memcached-1.6.38"]["tls none"] is False and got["memcached-1.6.38"]["btls none"] is True, got
    assert got["larder"] == got["memcached-1.6.38"], got


def test_mtls_listener_without_a_ca_serves_nobody_as_memcached():
    def run(name, binary):
        with Tls(name, binary) as srv:
            t, m, b = srv.ports
            return {"tls none": served(t), "mtls none": served(m), "mtls cert": served(m, cert=True),
                    "btls none": served(b)}

    got = both(run)
    assert got["larder"] == got["memcached-1.6.38"], got


def test_a_refused_client_certificate_is_counted_where_memcached_counts_it():
    """Which counter a failed mTLS handshake lands in. memcached: a failure inside the
    SSL_accept it calls at accept time is a handshake error, one that SSL_read meets later a
    protocol error; which one a refused certificate meets depends on whether the client's
    answer arrives before that SSL_accept stops reading, so memcached counts it in either
    (mostly ssl_proto_errors here; 3 of 3 the other way seen under load). Each failure is
    counted once; larder counts it where memcached mostly does, always."""
    def run(name, binary):
        with Tls(name, binary, ca=True) as srv:
            before = srv.counters()
            for _ in range(3):
                assert not served(srv.ports[1])
            time.sleep(0.3)
            after = srv.counters()
            return tuple(a - b for a, b in zip(after, before))

    got = both(run)
    assert sum(got["memcached-1.6.38"]) == 3, got   # once each, in one counter or the other
    assert got["larder"] == (0, 3), got


def test_plain_text_on_a_tls_port_is_counted_as_memcached_counts_it():
    """Not a ClientHello at all: memcached's first SSL_accept mostly refuses it (the bytes are
    there when it accepts), a handshake error, else its SSL_read does, a protocol error
    (seen: 2 and 1); larder refuses it before answering, a handshake error always."""
    def run(name, binary):
        with Tls(name, binary) as srv:
            before = srv.counters()
            for _ in range(3):
                with socket.create_connection(("127.0.0.1", srv.ports[0]), timeout=TIMEOUT) as s:
                    s.sendall(b"get foo\r\n")
                    read_raw_until_closed(s)
            time.sleep(0.3)
            return tuple(a - b for a, b in zip(srv.counters(), before))

    got = both(run)
    assert sum(got["memcached-1.6.38"]) == 3, got   # once each, in one counter or the other
    assert got["larder"] == (3, 0), got


def test_a_client_leaving_mid_handshake_is_counted_as_memcached_counts_it():
    """A ClientHello, the server's flight read, then the client closes: memcached's SSL_read
    meets the end during the handshake, a protocol error; when its accept-time SSL_accept is
    still reading it meets the close there, a handshake error (seen: 1 of 3, and 3 of 3).
    larder counts it as a protocol error always (after its first flight)."""
    def run(name, binary):
        with Tls(name, binary) as srv:
            before = srv.counters()
            for _ in range(3):
                ctx = client_context()
                inc, out = ssl.MemoryBIO(), ssl.MemoryBIO()
                obj = ctx.wrap_bio(inc, out)
                with pytest.raises(ssl.SSLWantReadError):
                    obj.do_handshake()
                with socket.create_connection(("127.0.0.1", srv.ports[0]), timeout=TIMEOUT) as s:
                    s.sendall(out.read())
                    assert s.recv(65536)[:1] == b"\x16", "no ServerHello"
            time.sleep(0.3)
            return tuple(a - b for a, b in zip(srv.counters(), before))

    got = both(run)
    assert sum(got["memcached-1.6.38"]) == 3, got   # once each, in one counter or the other
    assert got["larder"] == (0, 3), got
