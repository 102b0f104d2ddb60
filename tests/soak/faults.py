"""Faults that go through the network: hostile requests, connection floods,
slow readers, killed clients. (Signals, flush_all, cache_memlimit and warm
restarts are run by the controller, soak.py.)"""

import os
import socket
import struct
import subprocess
import sys
import time

import proto
from proto import ConnLost, ProtocolError
from values import parse_header, self_consistent

HERE = os.path.dirname(os.path.abspath(__file__))

# the header that crashed the server: a SET whose key (65535) and extras
# (255) are longer than any request allows, with a 200,000-byte body
LANDING = struct.pack(">BBHBBHIIQ", 0x80, 0x01, 65535, 255, 0, 0, 200000, 0, 0) + b"\0" * 100

FORBIDDEN = (b"ck/", b"flush", b"shutdown", b"memlimit", b"watch", b"verbosity", b"lru", b"slabs",
             b"refresh", b"debugtime", b"quit")


def _ok(payload):
    low = payload.lower()
    if any(f in low for f in FORBIDDEN):
        return False
    # no binary FLUSH/FLUSHQ (0x08/0x18) or QUIT anywhere a request could start
    for op in (0x08, 0x18):
        if bytes([0x80, op]) in payload:
            return False
    return True


def _bin(op, key=b"", extras=b"", value=b"", cas=0):
    return proto.bin_req(op, key, extras, value, cas)


def templates(rng):
    k = b"fz/%d" % rng.randint(0, 99)
    k2 = b"fz/%d" % rng.randint(0, 99)
    v = bytes(rng.randint(97, 122) for _ in range(rng.choice([0, 1, 5, 100, 3000])))
    n = len(v)
    return [
        b"set %s 0 0 %d\r\n%s\r\n" % (k, n, v),
        b"add %s 5 10 %d noreply\r\n%s\r\n" % (k, n, v),
        b"append %s 0 0 %d\r\n%s\r\n" % (k, n, v),
        b"cas %s 0 0 %d 12345\r\n%s\r\n" % (k, n, v),
        b"get %s %s %s\r\n" % (k, k2, k),
        b"gets %s\r\n" % k,
        b"gat 100 %s %s\r\n" % (k, k2),
        b"incr %s 5\r\ndecr %s 3\r\n" % (k, k),
        b"touch %s 10\r\ndelete %s\r\n" % (k, k),
        b"mg %s v f c t s k O123 q\r\nmn\r\n" % k,
        b"mg %s v c N30 R10 T30\r\n" % k,
        b"ms %s %d T0 F5 MA I C99\r\n%s\r\n" % (k, n, v),
        b"ms %s S%d T0 b\r\n%s\r\n" % (k, n, v),
        b"md %s I T30 q\r\nmn\r\n" % k,
        b"ma %s N30 J10 D5 v MD\r\n" % k,
        b"me %s\r\n" % k,
        b"stats\r\nstats settings\r\nstats items\r\nstats slabs\r\nstats conns\r\nstats larder\r\n",
        b"stats detail dump\r\nstats prefixes\r\nversion\r\n",
        _bin(proto.OP_SET, k, struct.pack(">II", 1, 0), v),
        _bin(proto.OP_GET, k),
        _bin(proto.OP_GETKQ, k) + _bin(proto.OP_GETK, k2) + _bin(proto.OP_NOOP),
        _bin(proto.OP_INCR, k, struct.pack(">QQI", 1, 5, 0)),
        _bin(proto.OP_APPEND, k, b"", v),
        _bin(proto.OP_TOUCH, k, struct.pack(">I", 10)),
        _bin(proto.OP_GAT, k, struct.pack(">I", 10)),
        _bin(proto.OP_DELETE, k),
        _bin(0x10, b"stats"),
        _bin(0x21, b"PLAIN", b"", b"\0u\0p"),
    ]


EXTREMES = [b"-1", b"0", b"4294967295", b"4294967296", b"18446744073709551615", b"18446744073709551616",
            b"99999999999999999999", b"2147483648", b"-2147483649", b"1048577", b"33554433", b"+5", b" "]


def mutate(rng, data):
    d = bytearray(data)
    for _ in range(rng.randint(1, 4)):
        if not d:
            d += bytes(rng.randrange(256) for _ in range(8))
        m = rng.randrange(8)
        i = rng.randrange(len(d))
        if m == 0:
            d[i] ^= 1 << rng.randrange(8)
        elif m == 1:
            d[i] = rng.randrange(256)
        elif m == 2:
            d[i:i] = bytes(rng.randrange(256) for _ in range(rng.randint(1, 16)))
        elif m == 3:
            del d[i:i + rng.randint(1, 16)]
        elif m == 4:
            j = rng.randrange(len(d))
            d[i:i] = d[j:j + rng.randint(1, 64)]
        elif m == 5:
            # a number somewhere becomes an extreme one
            toks = bytes(d).split(b" ")
            idx = [t for t, s in enumerate(toks) if s.strip(b"\r\n").lstrip(b"-").isdigit()]
            if idx:
                t = rng.choice(idx)
                tail = b"\r\n" if toks[t].endswith(b"\r\n") else b""
                toks[t] = rng.choice(EXTREMES) + tail
                d = bytearray(b" ".join(toks))
        elif m == 6 and len(d) >= 24 and d[0] == 0x80:
            # binary length fields
            f = rng.choice([(2, ">H", [0, 1, 250, 251, 65535]), (4, ">B", [0, 4, 8, 20, 255]),
                            (8, ">I", [0, 1, 23, 24, 65536, 200000, 1 << 20, 0x7FFFFFFF, 0xFFFFFFFF])])
            struct.pack_into(f[1], d, f[0], rng.choice(f[2]))
        else:
            del d[i:]
    return bytes(d)


def hostile_payloads(rng, n):
    out = [("binary_landing_header", LANDING)]
    while len(out) < n:
        r = rng.random()
        if r < 0.25:
            op = rng.choice([0x00, 0x01, 0x02, 0x03, 0x05, 0x0E, 0x0F, 0x11, 0x19, 0x1C, 0x1D, 0x21, 0x22, 0x30, 0x3F, 0xFF])
            klen = rng.choice([0, 1, 250, 251, 4096, 65535])
            elen = rng.choice([0, 4, 8, 20, 255])
            blen = rng.choice([0, max(0, klen + elen - 1), klen + elen, klen + elen + 1, 65536, 200000,
                               1 << 20, (1 << 20) + 7, 0x7FFFFFFF, 0xFFFFFFFF])
            tail = b"\0" * rng.choice([0, 10, 100, 300, 70000])
            p = struct.pack(">BBHBBHIIQ", 0x80, op, klen, elen, rng.choice([0, 1]), 0, blen, 7, 0) + tail
            out.append(("binary_header", p))
        elif r < 0.85:
            t = rng.choice(templates(rng))
            out.append(("mutated", mutate(rng, t)))
        elif r < 0.9:
            out.append(("long_line", rng.choice([b"get ", b"set ", b"mg ", b"", b"gat 1 "]) + b"x" * rng.choice([2049, 4096, 65537, 300000])))
        elif r < 0.95:
            out.append(("bad_length", rng.choice([
                b"set fz/l 0 0 4294967296\r\nabc\r\n", b"set fz/l 0 0 -1\r\n", b"ms fz/l 99999999999 T0\r\n",
                b"set fz/l 0 0 33554433\r\n" + b"x" * 1000, b"append fz/l 0 0 18446744073709551615\r\n",
                b"get " + b" ".join(b"fz/%d" % i for i in range(3000)) + b"\r\n",
                b"get " + b"k" * 251 + b"\r\n", b"mg " + b"k" * 300 + b" v\r\n",
                b"ms fz/b 10 b\r\n0123456789\r\n", b"mg !!!! b v\r\n",
                b"incr fz/n 18446744073709551616\r\n", b"touch fz/n 99999999999999999999\r\n",
            ])))
        else:
            out.append(("garbage", bytes(rng.randrange(256) for _ in range(rng.randint(1, 600)))))
    return [(c, p) for c, p in out if _ok(p)]


def plan_hostile(rng, payload):
    """How a payload is sent: (then: zero bytes sent 0.2 s later, as the
    rest of a promised binary body; reset: close with RST)."""
    then = rng.choice([1000, 200000, 1 << 20]) if payload[:1] == b"\x80" and rng.random() < 0.3 else 0
    return then, rng.random() < 0.5


def send_hostile(ports, payload, then, reset, counters, tls):
    """Send one payload on its own connection, read what comes back for a
    moment, close."""
    try:
        c = proto.Conn(ports, tls, counters, timeout=5.0)
    except ConnLost:
        return "connect_failed"
    try:
        for i in range(0, len(payload), 65536):
            c.sock.sendall(payload[i:i + 65536])
        c.sock.settimeout(0.2)
        try:
            while c.sock.recv(65536):
                pass
        except (OSError, socket.timeout):
            pass
        if then:
            c.sock.settimeout(2.0)
            c.sock.sendall(b"\0" * then)
    except (OSError, ConnLost):
        pass
    if reset:
        c.abort()
    else:
        c.close()
    return "sent"


def flood(ports, n, counters, ntls, over_limit):
    """Open n plain and ntls TLS connections at once, ask each for its
    version, hold them a second, close. Returns counts."""
    socks = []
    res = {"opened": 0, "version": 0, "rejected": 0, "other": 0, "connect_failed": 0}
    try:
        for _ in range(n):
            try:
                s = socket.create_connection(("127.0.0.1", ports["plain"]), timeout=10)
                counters(+1, False)
                socks.append(s)
                res["opened"] += 1
            except OSError:
                res["connect_failed"] += 1
        tls = []
        for _ in range(ntls):
            try:
                tls.append(proto.Conn(ports, True, counters, timeout=10))
            except ConnLost:
                res["connect_failed"] += 1
        for s in socks:
            try:
                s.sendall(b"version\r\n")
            except OSError:
                pass
        for c in tls:
            try:
                c.send(b"version\r\n")
            except ConnLost:
                pass
        for s in socks:
            try:
                d = b""
                while not d.endswith(b"\r\n"):
                    x = s.recv(100)
                    if not x:
                        break
                    d += x
                if d.startswith(b"VERSION "):
                    res["version"] += 1
                elif d.startswith(b"ERROR Too many open connections"):
                    res["rejected"] += 1
                else:
                    res["other"] += 1
            except OSError:
                res["other"] += 1
        for c in tls:
            try:
                if c.readline().startswith(b"VERSION "):
                    res["version"] += 1
                else:
                    res["other"] += 1
            except (ConnLost, ProtocolError):
                res["other"] += 1
        time.sleep(1.0)
    finally:
        for s in socks:
            try:
                s.close()
            except OSError:
                pass
            counters(-1, False)
        for c in tls:
            c.close()
    return res


def slow_reader(ports, keys, hold, tls, counters):
    """A client that asks for many (big) values and reads nothing for
    `hold` seconds, then reads everything: every value must be intact and
    be the key's own. Returns (values checked, list of problems)."""
    try:
        c = proto.Conn(ports, tls, counters, timeout=60.0)
    except ConnLost as e:
        return 0, [], "connect: %s" % e
    problems = []
    checked = 0
    try:
        c.send(b"get " + b" ".join(keys) + b"\r\n")
        time.sleep(hold)
        got = proto.text_get(c, keys)
        if got == "oom":
            return 0, [], "oom"
        for k, (_f, v, _cas) in got.items():
            checked += 1
            h = parse_header(v)
            if h is not None and h[0] != k:
                problems.append("slow reader: %s holds a value of %r" % (k.decode(), h[0]))
            elif not self_consistent(v) and not v.rstrip(b" ").isdigit():
                problems.append("slow reader: %s: torn value (%d bytes, starts %r)" % (k.decode(), len(v), v[:60]))
        return checked, problems, None
    except (ConnLost, ProtocolError) as e:
        return checked, problems, str(e)
    finally:
        c.close()


def run_victim(ports, rng, big_keys):
    mode = rng.choice(["set", "set", "bin", "get", "pipe"])
    tls = rng.random() < 0.3 and mode != "bin"
    port = ports["tls"] if tls else ports["plain"]
    keys = [rng.choice(big_keys).decode() for _ in range(rng.randint(1, 6))] if mode == "get" else []
    p = subprocess.Popen([sys.executable, os.path.join(HERE, "victim.py"), str(port), mode, "1" if tls else "0",
                          str(rng.randrange(1 << 30))] + keys,
                         stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    time.sleep(rng.uniform(0.15, 0.8))
    p.kill()
    p.wait()
    return mode + ("_tls" if tls else "")
