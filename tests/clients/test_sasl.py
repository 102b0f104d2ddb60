"""SASL (-S) with real clients, each test run against larder and against
memcached 1.6.18 started the same way: the same Cyrus configuration
(SASL_CONF_PATH pointing at a memcached.conf with `mech_list: plain cram-md5`
and a `sasldb_path`) and the same sasldb, made with `saslpasswd2 -a memcached`.

Clients: python-binary-memcached (bmemcached, SASL PLAIN) and php-memcached
(`setSaslAuthData`, binary protocol), plus raw binary packets for what the
clients do not expose (CRAM-MD5, the exact bytes of refusals, what an
unauthenticated connection can reach). Where the two servers must agree, the
test compares their replies byte for byte; where larder must behave a known
way, it asserts that too, so a test cannot pass by both being wrong the same
way unnoticed.
"""

import hashlib
import hmac
import json
import os
import shutil
import socket
import struct
import subprocess

import bmemcached
import pytest

import larder_servers

USER, PASSWORD = "sasluser", "s3cret pass"
SASLPASSWD2 = shutil.which("saslpasswd2") or "/usr/sbin/saslpasswd2"
PHP = shutil.which("php") or "/usr/bin/php"

AUTH_ERROR, AUTH_CONTINUE = 0x20, 0x21


@pytest.fixture(scope="module")
def sasl_conf(tmp_path_factory):
    """A Cyrus config directory as an operator sets it up for memcached."""
    if not os.access(SASLPASSWD2, os.X_OK):
        pytest.fail("saslpasswd2 missing (Debian sasl2-bin; scripts/test installs it)")
    d = tmp_path_factory.mktemp("sasl")
    db = d / "sasldb"
    (d / "memcached.conf").write_text(f"mech_list: plain cram-md5\nsasldb_path: {db}\n")
    subprocess.run([SASLPASSWD2, "-f", str(db), "-a", "memcached", "-c", "-p", USER],
                   input=PASSWORD.encode(), check=True)
    os.chmod(db, 0o644)
    return d


@pytest.fixture(scope="module", params=["larder", "memcached"])
def sasl_server(request, sasl_conf):
    binary = larder_servers.larder_bin() if request.param == "larder" else larder_servers.MEMCACHED_BIN
    srv = larder_servers.Server(binary, args=["-S"], name=f"{request.param}-sasl",
                                env={"SASL_CONF_PATH": str(sasl_conf)})
    srv.start()
    try:
        yield srv
        assert srv.alive(), f"{srv.name} died:\n{srv.log_text()}"
    finally:
        srv.stop()


@pytest.fixture(scope="module")
def both(sasl_conf):
    """larder and memcached side by side, for byte-for-byte comparisons."""
    servers = []
    for name, binary in (("larder", larder_servers.larder_bin()), ("memcached", larder_servers.MEMCACHED_BIN)):
        srv = larder_servers.Server(binary, args=["-S"], name=f"{name}-sasl-cmp",
                                    env={"SASL_CONF_PATH": str(sasl_conf)})
        servers.append(srv.start())
    try:
        yield servers
    finally:
        for s in servers:
            s.stop()


# ---------------------------------------------------------------- raw binary

def packet(op, key=b"", value=b"", extras=b"", opaque=0, cas=0):
    body = len(extras) + len(key) + len(value)
    return struct.pack(">BBHBBHIIQ", 0x80, op, len(key), len(extras), 0, 0, body, opaque, cas) + extras + key + value


class Raw:
    def __init__(self, port):
        self.s = socket.create_connection(("127.0.0.1", port), timeout=5)

    def send(self, data):
        self.s.sendall(data)

    def read_exact(self, n):
        buf = b""
        while len(buf) < n:
            chunk = self.s.recv(n - len(buf))
            if not chunk:
                raise EOFError(f"closed after {len(buf)} of {n} bytes")
            buf += chunk
        return buf

    def reply(self):
        """(raw bytes, opcode, status, value) of one response."""
        head = self.read_exact(24)
        _, op, keylen, extlen, _, status, body, _, _ = struct.unpack(">BBHBBHIIQ", head)
        rest = self.read_exact(body)
        return head + rest, op, status, rest[extlen + keylen:]

    def closed(self):
        """True when the server closed the connection (EOF, nothing more sent)."""
        self.s.settimeout(3)
        try:
            return self.s.recv(1) == b""
        except ConnectionResetError:
            return True

    def call(self, *args, **kw):
        self.send(packet(*args, **kw))
        return self.reply()

    def plain(self, user=USER, password=PASSWORD):
        return self.call(0x21, b"PLAIN", b"\0" + user.encode() + b"\0" + password.encode(), opaque=3)

    def close(self):
        self.s.close()


def authed_bm(port):
    return bmemcached.Client([f"127.0.0.1:{port}"], USER, PASSWORD)


# ---------------------------------------------------------------- bmemcached

def test_bmemcached_plain_works(sasl_server, key):
    c = authed_bm(sasl_server.port)
    try:
        k = key()
        assert c.set(k, "value") is True
        assert c.get(k) == "value"
        assert c.set(key("n"), 5) is True
        assert c.incr(key("n"), 3) == 8
        assert c.delete(k) is True
        assert c.get(k) is None
        stats = c.stats()[f"127.0.0.1:{sasl_server.port}"]
        assert int(stats["auth_cmds"]) >= 1
    finally:
        c.disconnect_all()


@pytest.mark.parametrize("user,password", [(USER, "wrong"), ("nobody", PASSWORD), (USER, "")])
def test_bmemcached_wrong_credentials_refused(sasl_server, key, user, password):
    good = authed_bm(sasl_server.port)
    bad = bmemcached.Client([f"127.0.0.1:{sasl_server.port}"], user, password)
    try:
        k = key()
        assert good.set(k, "kept") is True
        with pytest.raises(bmemcached.exceptions.MemcachedException) as e:
            bad.set(k, "overwritten")
        assert e.value.code == AUTH_ERROR
        assert b"Auth failure." in str(e.value).encode() or "Auth failure." in str(e.value)
        assert good.get(k) == "kept"
    finally:
        good.disconnect_all()
        bad.disconnect_all()


# ---------------------------------------------------------------- php-memcached

PHP_SCRIPT = r"""
$m = new Memcached();
$m->setOption(Memcached::OPT_BINARY_PROTOCOL, true);
$m->addServer('127.0.0.1', (int)$argv[1]);
$m->setSaslAuthData($argv[2], $argv[3]);
$r = [];
$r['set'] = $m->set($argv[4], 'php value');
$r['set_code'] = $m->getResultCode();
$r['get'] = $m->get($argv[4]);
$r['get_code'] = $m->getResultCode();
$r['msg'] = $m->getResultMessage();
echo json_encode($r);
"""


def run_php(port, user, password, k):
    out = subprocess.run([PHP, "-d", "memcached.use_sasl=1", "-r", PHP_SCRIPT, "--", str(port), user, password, k],
                         capture_output=True, timeout=30)
    assert out.returncode == 0, out.stderr.decode()
    return json.loads(out.stdout)


def test_php_memcached_sasl(sasl_server, key):
    k = key()
    r = run_php(sasl_server.port, USER, PASSWORD, k)
    assert (r["set"], r["set_code"], r["get"], r["get_code"]) == (True, 0, "php value", 0), r
    c = authed_bm(sasl_server.port)
    try:
        assert c.get(k) == "php value"
    finally:
        c.disconnect_all()


def test_php_memcached_wrong_password_same_as_memcached(both, key):
    results = [run_php(s.port, USER, "wrong", key()) for s in both]
    larder, memcached = results
    assert larder["set"] is False and larder["get"] is False
    assert larder["set_code"] == 41  # libmemcached's MEMCACHED_AUTH_FAILURE: the server said AUTH_ERROR
    # libmemcached's verdict (its result code and message) is the same for both servers
    assert (larder["set_code"], larder["get_code"], larder["msg"]) == \
        (memcached["set_code"], memcached["get_code"], memcached["msg"]), results


# ---------------------------------------------------------------- raw protocol, compared

def test_mechanisms_and_plain_same_bytes(both):
    replies = []
    for s in both:
        c = Raw(s.port)
        mechs = c.call(0x20, opaque=1)
        bad = c.plain(password="nope")
        good = c.plain()
        # the mechanism name may not exceed 32 bytes: EINVAL, connection kept
        long_mech = c.call(0x21, b"X" * 40, b"\0a\0b", opaque=4)
        version = c.call(0x0b, opaque=5)
        replies.append([r[0] for r in (mechs, bad, good, long_mech, version)])
        assert sorted(mechs[3].split()) == [b"CRAM-MD5", b"PLAIN"]
        assert (bad[2], bad[3]) == (AUTH_ERROR, b"Auth failure.")
        assert (good[2], good[3]) == (0, b"Authenticated")
        assert long_mech[2] == 0x04
        c.close()
    assert replies[0] == replies[1]


def cram_md5(c, password=PASSWORD):
    raw, _, status, challenge = c.call(0x21, b"CRAM-MD5", opaque=7)
    assert status == AUTH_CONTINUE and challenge, raw
    digest = hmac.new(password.encode(), challenge, hashlib.md5).hexdigest()
    return c.call(0x22, b"CRAM-MD5", f"{USER} {digest}".encode(), opaque=8)


def test_cram_md5(both):
    for s in both:
        c = Raw(s.port)
        _, op, status, value = cram_md5(c)
        assert (op, status, value) == (0x22, 0, b"Authenticated"), s.name
        # now it may store
        _, _, status, _ = c.call(0x01, b"cram", b"v", extras=struct.pack(">II", 0, 0))
        assert status == 0
        c.close()
        c = Raw(s.port)
        _, _, status, value = cram_md5(c, password="wrong")
        assert (status, value) == (AUTH_ERROR, b"Auth failure."), s.name
        c.close()


def test_step_before_auth_and_reauth_same_as_memcached(both):
    out = []
    for s in both:
        c = Raw(s.port)
        step = c.call(0x22, b"PLAIN", b"\0x\0y", opaque=1)
        good = c.plain()
        # memcached quirk kept: any SASL command makes the connection
        # unauthenticated again, so a list after success locks it out
        mechs = c.call(0x20, opaque=2)
        after = c.call(0x00, b"somekey", opaque=9)
        out.append([r[0] for r in (step, good, mechs, after)])
        assert step[2] == AUTH_ERROR and after[2] == AUTH_ERROR
        assert c.closed()
    assert out[0] == out[1]


# ---------------------------------------------------------------- unauthenticated: nothing

def store_ext():
    return struct.pack(">II", 0, 0)


UNAUTH_REQUESTS = {
    "get": packet(0x00, b"victim"),
    "getk": packet(0x0c, b"victim"),
    "getq": packet(0x09, b"victim"),
    "set": packet(0x01, b"victim", b"evil", store_ext()),
    "setq": packet(0x11, b"victim", b"evil", store_ext()),
    "add": packet(0x02, b"newkey", b"evil", store_ext()),
    "replace": packet(0x03, b"victim", b"evil", store_ext()),
    "append": packet(0x0e, b"victim", b"evil"),
    "prepend": packet(0x0f, b"victim", b"evil"),
    "delete": packet(0x04, b"victim"),
    "incr": packet(0x05, b"counter", extras=struct.pack(">QQI", 1, 0, 0)),
    "decr": packet(0x06, b"counter", extras=struct.pack(">QQI", 1, 0, 0)),
    "touch": packet(0x1c, b"victim", extras=struct.pack(">I", 1)),
    "gat": packet(0x1d, b"victim", extras=struct.pack(">I", 1)),
    "flush": packet(0x08),
    "flushq": packet(0x18),
    "flush_delayed": packet(0x08, extras=struct.pack(">I", 1)),
    "stat": packet(0x10),
    "stat_items": packet(0x10, b"items"),
    "stat_settings": packet(0x10, b"settings"),
    "stat_cachedump": packet(0x10, b"cachedump 1 0"),
    "stat_detail_dump": packet(0x10, b"detail dump"),
    "stat_reset": packet(0x10, b"reset"),
    "noop": packet(0x0a),
    "quit": packet(0x07),
    "unknown_opcode": packet(0x50),
    "long_key": packet(0x00, b"k" * 300),
}


@pytest.mark.parametrize("name", sorted(UNAUTH_REQUESTS))
def test_unauthenticated_reads_writes_flushes_dumps_nothing(both, name):
    """Each request is refused with AUTH_ERROR and the connection closed, with
    the same bytes as memcached; the data an authenticated client wrote is
    untouched."""
    replies = []
    for s in both:
        good = authed_bm(s.port)
        try:
            assert good.set("victim", "original") and good.set("counter", "10")
            c = Raw(s.port)
            c.send(UNAUTH_REQUESTS[name])
            raw, _, status, value = c.reply()
            assert (status, value) == (AUTH_ERROR, b"Auth failure."), (s.name, raw)
            assert c.closed(), s.name
            c.close()
            assert good.get("victim") == "original", s.name
            assert good.get("counter") == "10", s.name
            assert good.get("newkey") is None, s.name
            replies.append(raw)
        finally:
            good.delete("newkey")
            good.disconnect_all()
    assert replies[0] == replies[1]


def test_text_and_meta_unavailable(both):
    """-S forces the binary protocol: text and meta commands are not read at all
    (the first byte is not the binary magic: once a header's 24 bytes are in,
    the connection closes, no reply)."""
    for line in (b"get victim\r\n", b"mg victim v\r\n", b"flush_all\r\n", b"watch\r\n",
                 b"lru_crawler metadump all\r\n", b"stats cachedump 1 0\r\n", b"version\r\n"):
        for s in both:
            c = Raw(s.port)
            c.send(line * 4)
            assert c.closed(), (s.name, line)
            c.close()


def test_sasl_stats_and_settings(both):
    """auth_cmds / auth_errors count as memcached counts them; settings say SASL is on."""
    counts = []
    for s in both:
        base = stats(s.port)
        c2 = Raw(s.port)
        c2.plain(password="bad")
        c2.plain()
        c2.close()
        now = stats(s.port)
        c = Raw(s.port)
        c.plain()
        counts.append((int(now[b"auth_cmds"]) - int(base[b"auth_cmds"]),
                       int(now[b"auth_errors"]) - int(base[b"auth_errors"])))
        c.send(packet(0x10, b"settings"))
        settings = read_stats(c)
        assert settings[b"auth_enabled_sasl"] == b"yes"
        assert settings[b"binding_protocol"] == b"binary"
        c.close()
    # the two attempts plus the stats connection's own authentication
    assert counts[0] == counts[1] == (3, 1)


def stats(port):
    """General stats, read on a new connection (its own authentication counts)."""
    c = Raw(port)
    c.plain()
    c.send(packet(0x10))
    out = read_stats(c)
    c.close()
    return out


def read_stats(c):
    out = {}
    while True:
        raw, _, _, value = c.reply()
        keylen = struct.unpack(">H", raw[2:4])[0]
        if keylen == 0:
            return out
        out[raw[24:24 + keylen]] = value
