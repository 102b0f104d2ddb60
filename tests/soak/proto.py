"""Wire clients for the soak: text, meta and binary protocol, over plain TCP
or TLS, with raw sockets (nothing between the bytes and the checker).

Every call returns what the server said in a small normal form; anything the
protocol does not allow is raised as ProtocolError (a violation), a broken
connection as ConnLost (the caller decides whether a restart explains it).
"""

import socket
import ssl
import struct
import time

TIMEOUT = 30.0  # a reply slower than this is a hang: the server must answer


class ConnLost(Exception):
    pass


TOO_MANY = b"ERROR Too many open connections"


class Timeout(ConnLost):
    pass


class ProtocolError(Exception):
    pass


_tls_ctx = None


def tls_context():
    global _tls_ctx
    if _tls_ctx is None:
        c = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
        c.check_hostname = False
        c.verify_mode = ssl.CERT_NONE
        _tls_ctx = c
    return _tls_ctx


class Conn:
    """One connection: `tls` picks the listener; the first bytes sent fix the
    protocol (the server's -B auto), so callers keep text and binary apart."""

    def __init__(self, ports, tls, counter=None, timeout=TIMEOUT):
        self.tls = tls
        port = ports["tls"] if tls else ports["plain"]
        self.counter = counter
        try:
            s = socket.create_connection(("127.0.0.1", port), timeout=timeout)
            s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            if tls:
                s = tls_context().wrap_socket(s)
        except socket.timeout as e:
            raise Timeout("connect: %s" % e)
        except (OSError, ssl.SSLError) as e:
            raise ConnLost("connect: %s" % e)
        self.sock = s
        self.opened = time.monotonic()
        try:
            self.lport = s.getsockname()[1]
        except OSError:
            self.lport = 0
        self.buf = bytearray()
        self.pos = 0
        if counter is not None:
            counter(+1, tls)

    def close(self):
        if self.sock is not None:
            try:
                self.sock.close()
            except OSError:
                pass
            self.sock = None
            if self.counter is not None:
                self.counter(-1, self.tls)

    def abort(self):
        """Close with a reset where possible (a killed client)."""
        if self.sock is not None:
            try:
                raw = self.sock
                raw.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            except OSError:
                pass
        self.close()

    def send(self, data):
        try:
            self.sock.sendall(data)
        except socket.timeout as e:
            raise Timeout("send: %s" % e)
        except (OSError, ssl.SSLError, AttributeError) as e:
            raise ConnLost("send: %s" % e)

    def _recv(self, n):
        """Up to n bytes, at least one: a timeout, an error or the end of the
        stream raise Timeout or ConnLost."""
        try:
            d = self.sock.recv(n)
        except socket.timeout as e:
            raise Timeout("recv: %s" % e)
        except (OSError, ssl.SSLError, AttributeError) as e:
            raise ConnLost("recv: %s" % e)
        if not d:
            raise ConnLost("recv: connection closed by server")
        return d

    def _fill(self):
        d = self._recv(262144)
        if self.pos > 0 and self.pos == len(self.buf):
            self.buf = bytearray(d)
            self.pos = 0
        else:
            if self.pos > 1 << 20:
                del self.buf[: self.pos]
                self.pos = 0
            self.buf += d

    def readline(self, limit=65536):
        while True:
            i = self.buf.find(b"\r\n", self.pos)
            if i >= 0:
                line = bytes(self.buf[self.pos:i])
                self.pos = i + 2
                if line == TOO_MANY:
                    raise ConnLost("rejected: " + line.decode())
                return line
            if len(self.buf) - self.pos > limit:
                raise ProtocolError("reply line over %d bytes: %r" % (limit, bytes(self.buf[self.pos:self.pos + 100])))
            self._fill()

    def read_exact(self, n):
        if len(self.buf) - self.pos >= n:
            d = bytes(self.buf[self.pos:self.pos + n])
            self.pos += n
            return d
        out = bytearray(self.buf[self.pos:])
        self.buf = bytearray()
        self.pos = 0
        need = n - len(out)
        while need > 0:
            d = self._recv(min(need, 1 << 20))
            out += d
            need -= len(d)
        return bytes(out)

    def read_data(self, n):
        d = self.read_exact(n + 2)
        if d[-2:] != b"\r\n":
            raise ProtocolError("data block of %d bytes not followed by CRLF: %r" % (n, d[-10:]))
        return d[:-2]


# ---------------------------------------------------------------- text

OOM_GET = b"SERVER_ERROR out of memory writing get response"


def _store_reply(line):
    if line == b"STORED":
        return "stored"
    if line == b"NOT_STORED":
        return "not_stored"
    if line == b"EXISTS":
        return "exists"
    if line == b"NOT_FOUND":
        return "not_found"
    if line.startswith(b"SERVER_ERROR out of memory") or line.startswith(b"SERVER_ERROR object too large"):
        return "oom"
    raise ProtocolError("store reply %r" % line)


def text_store(c, cmd, key, flags, exp, data, cas=None):
    if cas is None:
        c.send(b"%s %s %d %d %d\r\n%s\r\n" % (cmd, key, flags, exp, len(data), data))
    else:
        c.send(b"cas %s %d %d %d %d\r\n%s\r\n" % (key, flags, exp, len(data), cas, data))
    return _store_reply(c.readline())


def text_get(c, keys, cmd=b"get", exp=None):
    """{key: (flags, value, cas)} of the hits; 'oom' instead if the server ran
    out of buffer budget (memcached's SERVER_ERROR). Checks keys are ones
    asked for, in order, each once."""
    if exp is None:
        c.send(cmd + b" " + b" ".join(keys) + b"\r\n")
    else:
        c.send(b"%s %d %s\r\n" % (cmd, exp, b" ".join(keys)))
    out = {}
    idx = 0
    while True:
        line = c.readline()
        if line == b"END":
            return out
        if line.startswith(OOM_GET):
            return "oom"
        parts = line.split(b" ")
        if parts[0] != b"VALUE" or len(parts) not in (4, 5):
            raise ProtocolError("get reply line %r" % line[:200])
        k = parts[1]
        try:
            flags = int(parts[2])
            n = int(parts[3])
            cas = int(parts[4]) if len(parts) == 5 else None
        except ValueError:
            raise ProtocolError("get reply line %r" % line[:200])
        while idx < len(keys) and keys[idx] != k:
            idx += 1
        if idx == len(keys):
            raise ProtocolError("get reply for key %r not asked for or out of order (asked %d keys)" % (k, len(keys)))
        idx += 1
        out[k] = (flags, c.read_data(n), cas)


def text_simple(c, line, expect):
    c.send(line + b"\r\n")
    r = c.readline()
    if r not in expect:
        raise ProtocolError("reply to %r: %r" % (line[:60], r[:200]))
    return r


def text_arith(c, cmd, key, delta):
    c.send(b"%s %s %d\r\n" % (cmd, key, delta))
    r = c.readline()
    if r == b"NOT_FOUND":
        return None
    if r.isdigit():
        return int(r)
    if r.startswith(b"SERVER_ERROR out of memory"):
        return "oom"
    raise ProtocolError("reply to %s: %r" % (cmd.decode(), r[:200]))


# ---------------------------------------------------------------- meta

def _meta_flags(parts):
    f = {}
    for p in parts:
        if p:
            f[p[:1]] = p[1:]
    return f


def meta_get(c, key, flags=b"v f c t"):
    """(status, value, {flag: token}) with status 'hit' or 'miss' or 'oom'."""
    c.send(b"mg %s %s\r\n" % (key, flags))
    return _meta_get_reply(c)


def _meta_get_reply(c):
    line = c.readline()
    if line == b"EN" or line.startswith(b"EN "):
        return "miss", None, {}
    parts = line.split(b" ")
    if parts[0] == b"VA":
        try:
            n = int(parts[1])
        except (IndexError, ValueError):
            raise ProtocolError("mg reply %r" % line[:200])
        return "hit", c.read_data(n), _meta_flags(parts[2:])
    if parts[0] == b"HD":
        return "hit", None, _meta_flags(parts[1:])
    if line.startswith(OOM_GET) or line.startswith(b"SERVER_ERROR out of memory"):
        return "oom", None, {}
    raise ProtocolError("mg reply %r" % line[:200])


def meta_get_many(c, keys, flags=b"v f k q"):
    """Pipelined `mg key v f k q` for each key then `mn`: {key: (flags, value)}."""
    c.send(b"".join(b"mg %s %s\r\n" % (k, flags) for k in keys) + b"mn\r\n")
    out = {}
    idx = 0
    oom = False
    while True:
        line = c.readline()
        if line == b"MN":
            return "oom" if oom else out
        parts = line.split(b" ")
        if parts[0] == b"VA":
            n = int(parts[1])
            f = _meta_flags(parts[2:])
            data = c.read_data(n)
            k = f.get(b"k")
            while idx < len(keys) and keys[idx] != k:
                idx += 1
            if idx == len(keys):
                raise ProtocolError("mg reply for key %r not asked for or out of order" % k)
            idx += 1
            out[k] = (int(f.get(b"f", b"0")), data)
        elif line.startswith(b"SERVER_ERROR out of memory"):
            oom = True
        else:
            raise ProtocolError("pipelined mg reply %r" % line[:200])


def meta_set(c, key, data, flags, ttl, mode=None, cas=None, extra=b""):
    m = b" M" + mode if mode else b""
    cs = b" C%d" % cas if cas is not None else b""
    c.send(b"ms %s %d F%d T%d%s%s%s\r\n%s\r\n" % (key, len(data), flags, ttl, m, cs, extra, data))
    line = c.readline()
    r = {b"HD": "stored", b"NS": "not_stored", b"EX": "exists", b"NF": "not_found"}.get(line.split(b" ")[0])
    if r:
        return r
    if line.startswith(b"SERVER_ERROR out of memory") or line.startswith(b"SERVER_ERROR object too large"):
        return "oom"
    raise ProtocolError("ms reply %r" % line[:200])


def meta_delete(c, key, extra=b""):
    c.send(b"md %s%s\r\n" % (key, extra))
    line = c.readline()
    r = {b"HD": "deleted", b"NF": "not_found", b"EX": "exists"}.get(line.split(b" ")[0])
    if r:
        return r
    raise ProtocolError("md reply %r" % line[:200])


def meta_arith(c, key, delta, decr=False):
    c.send(b"ma %s v D%d%s\r\n" % (key, delta, b" MD" if decr else b""))
    line = c.readline()
    if line == b"NF":
        return None
    parts = line.split(b" ")
    if parts[0] == b"VA":
        d = c.read_data(int(parts[1]))
        if not d.isdigit():
            raise ProtocolError("ma value %r" % d)
        return int(d)
    if line.startswith(b"SERVER_ERROR out of memory"):
        return "oom"
    raise ProtocolError("ma reply %r" % line[:200])


# ---------------------------------------------------------------- binary

REQ = struct.Struct(">BBHBBHIIQ")
OP_GET, OP_SET, OP_ADD, OP_REPLACE, OP_DELETE, OP_INCR, OP_DECR = 0x00, 0x01, 0x02, 0x03, 0x04, 0x05, 0x06
OP_FLUSH, OP_NOOP, OP_VERSION, OP_GETK, OP_GETKQ, OP_APPEND = 0x08, 0x0A, 0x0B, 0x0C, 0x0D, 0x0E
OP_TOUCH, OP_GAT = 0x1C, 0x1D

ST_OK, ST_NOT_FOUND, ST_EXISTS, ST_TOO_LARGE, ST_EINVAL, ST_NOT_STORED, ST_NON_NUMERIC = 0, 1, 2, 3, 4, 5, 6
ST_ENOMEM = 0x82


def bin_req(op, key=b"", extras=b"", value=b"", cas=0, opaque=0):
    return REQ.pack(0x80, op, len(key), len(extras), 0, 0, len(key) + len(extras) + len(value), opaque, cas) + extras + key + value


def _same_op(got, sent):
    if got != sent:
        raise ProtocolError("binary reply opcode 0x%x to a request 0x%x" % (got, sent))


def bin_read(c):
    """(opcode, status, extras, key, value, cas, opaque)"""
    h = c.read_exact(24)
    if h.startswith(TOO_MANY[:24]):
        raise ConnLost("rejected: " + TOO_MANY.decode())
    magic, op, klen, elen, _dt, status, blen, opaque, cas = REQ.unpack(h)
    if magic != 0x81 or klen + elen > blen:
        raise ProtocolError("binary reply header %r" % h)
    body = c.read_exact(blen) if blen else b""
    return op, status, body[:elen], body[elen:elen + klen], body[elen + klen:], cas, opaque


def _bin_store_status(st, value):
    if st == ST_OK:
        return "stored"
    if st == ST_NOT_STORED:
        return "not_stored"
    if st == ST_EXISTS:
        return "exists"
    if st == ST_NOT_FOUND:
        return "not_found"
    if st in (ST_ENOMEM, ST_TOO_LARGE):
        return "oom"
    raise ProtocolError("binary store status 0x%x %r" % (st, value[:100]))


def bin_store(c, op, key, flags, exp, data, cas=0):
    extras = struct.pack(">II", flags, exp) if op in (OP_SET, OP_ADD, OP_REPLACE) else b""
    c.send(bin_req(op, key, extras, data, cas))
    rop, st, _e, _k, v, _cas, _o = bin_read(c)
    if rop != op:
        raise ProtocolError("binary reply opcode 0x%x to 0x%x" % (rop, op))
    return _bin_store_status(st, v)


def bin_get(c, key, op=OP_GET, exp=None):
    """('hit', flags, value, cas) / ('miss',) / ('oom',)"""
    extras = struct.pack(">I", exp) if exp is not None else b""
    c.send(bin_req(op, key, extras))
    rop, st, e, k, v, cas, _o = bin_read(c)
    _same_op(rop, op)
    if st == ST_OK and op == OP_GETK and k != key:
        raise ProtocolError("GETK of %r answered with key %r" % (key, k))
    if st == ST_OK:
        if len(e) != 4:
            raise ProtocolError("binary get reply extras %r" % e)
        return "hit", struct.unpack(">I", e)[0], v, cas
    if st == ST_NOT_FOUND:
        return ("miss",)
    if st == ST_ENOMEM:
        return ("oom",)
    raise ProtocolError("binary get status 0x%x %r" % (st, v[:100]))


def bin_get_many(c, keys):
    """GETKQ for each key then NOOP: {key: (flags, value)} or 'oom'."""
    c.send(b"".join(bin_req(OP_GETKQ, k, opaque=i) for i, k in enumerate(keys)) + bin_req(OP_NOOP, opaque=0xFFFFFFFF))
    out = {}
    last = -1
    oom = False
    while True:
        op, st, e, k, v, _cas, opaque = bin_read(c)
        if op == OP_NOOP:
            if opaque != 0xFFFFFFFF:
                raise ProtocolError("NOOP reply with opaque %d" % opaque)
            return "oom" if oom else out
        if op != OP_GETKQ:
            raise ProtocolError("binary reply opcode 0x%x in a GETKQ batch" % op)
        if st == ST_ENOMEM:
            oom = True
            continue
        if st != ST_OK:
            raise ProtocolError("GETKQ status 0x%x" % st)
        if opaque >= len(keys) or keys[opaque] != k or opaque <= last:
            raise ProtocolError("GETKQ reply key %r opaque %d does not match the request" % (k, opaque))
        last = opaque
        out[k] = (struct.unpack(">I", e)[0], v)


def _bin_found(c, op, key, extras, done, what):
    """A binary request whose reply is only a status: `done` (OK) or
    "not_found"; any other status breaks the protocol."""
    c.send(bin_req(op, key, extras))
    rop, st, *_ = bin_read(c)
    _same_op(rop, op)
    if st == ST_OK:
        return done
    if st == ST_NOT_FOUND:
        return "not_found"
    raise ProtocolError("binary %s status 0x%x" % (what, st))


def bin_delete(c, key):
    return _bin_found(c, OP_DELETE, key, b"", "deleted", "delete")


def bin_arith(c, key, delta, decr=False):
    op = OP_DECR if decr else OP_INCR
    c.send(bin_req(op, key, struct.pack(">QQI", delta, 0, 0xFFFFFFFF)))
    rop, st, _e, _k, v, _cas, _o = bin_read(c)
    _same_op(rop, op)
    if st == ST_OK:
        if len(v) != 8:
            raise ProtocolError("binary incr value %r" % v)
        return struct.unpack(">Q", v)[0]
    if st == ST_NOT_FOUND:
        return None
    if st == ST_ENOMEM:
        return "oom"
    raise ProtocolError("binary incr status 0x%x %r" % (st, v[:100]))


def bin_touch(c, key, exp):
    return _bin_found(c, OP_TOUCH, key, struct.pack(">I", exp), "touched", "touch")


def wait_version(ports, timeout):
    """True once the server answers `version` on the plain port."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            with socket.create_connection(("127.0.0.1", ports["plain"]), timeout=1.0) as s:
                s.settimeout(2.0)
                s.sendall(b"version\r\n")
                if s.recv(100).startswith(b"VERSION "):
                    return True
        except OSError:
            pass
        time.sleep(0.05)
    return False
