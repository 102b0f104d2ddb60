#!/usr/bin/env python3
"""Write the seed corpora of the fuzz targets under fuzz/corpus/<target>/.

    python3 fuzz/make_corpus.py            # (re)write the seeds, keep other files
    python3 fuzz/make_corpus.py --check    # exit 1 if a seed would change

Seeds come from three places:

* hand-made requests: every text, meta and binary command (every opcode,
  quiet variants, SASL), valid and broken, and hostile binary header
  lengths, among them the 124-byte SET header that once stopped the server;
* memcached's own test suite: the request strings its t/*.t files send
  (`print $sock "..."`, and the keys of `mem_get_is`), read from the Debian
  source that scripts/test unpacks under tests/.work/src/memcached-*/t/
  (skipped with a note when absent; the requests are extracted, the files
  are not copied);
* the differential test's generator (tests/differential/diff.py): its
  seeded random streams of valid and invalid text commands.

Each target's input format is described in its fuzz_targets/*.rs; most
start with one byte that picks a mode (limits, SASL state, cipher suite,
...), which the seeds vary. Seed file names say where a seed came from; the
fuzzer adds its own (hash-named) files when the corpus is grown with
`scripts/fuzz --grow`. Seeds are small: the whole corpus stays well under
2 MB.
"""

import glob
import hashlib
import os
import random
import re
import struct
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
CORPUS = os.path.join(HERE, "corpus")


# ---------------------------------------------------------------- text/meta

TEXT_HAND = [
    b"get foo\r\n", b"gets foo bar baz\r\n", b"bget foo\r\n", b"get " + b"k" * 250 + b"\r\n",
    b"get " + b"k" * 251 + b"\r\n", b"gat 100 foo bar\r\n", b"gats -1 foo\r\n", b"gat 10\r\n",
    b"set foo 0 0 6\r\nfooval\r\n", b"set foo 5 100 3 noreply\r\nabc\r\n", b"add foo 0 0 1\r\nx\r\n",
    b"replace foo 4294967297 -1 2\r\nhi\r\n", b"append foo 0 0 3\r\nend\r\n",
    b"prepend foo 0 0 5\r\nstart\r\n", b"cas foo 0 0 6 12345\r\nbarval\r\n",
    b"cas foo 0 0 6 12345 noreply\r\nbarval\r\n", b"set foo 0 0 5\r\n0123456789\r\n",
    b"set foo 0 0 -1\r\n", b"set foo 0 0 2147483646\r\n", b"set foo 0 0 10 noreply\r\n0123",
    b"set a\rb 0 0 3\r\nabc\r\n", b"set foo\x00bar 0 0 1\r\nx\r\n",
    b"delete foo\r\n", b"delete foo 0\r\n", b"delete foo noreply\r\n", b"delete foo 5\r\n",
    b"incr n 1\r\n", b"decr n 18446744073709551615 noreply\r\n", b"incr n -1\r\n", b"incr n abc noreply\r\n",
    b"touch foo 100\r\n", b"touch foo x noreply\r\n", b"flush_all\r\n", b"flush_all 10 noreply\r\n",
    b"flush_all noreply 5\r\n", b"version\r\n", b"verbosity 1\r\n", b"verbosity noreply\r\n", b"quit\r\n",
    b"stats\r\n", b"stats  slabs \r\n", b"stats detail dump\r\n", b"stats items\r\n", b"shutdown\r\n",
    b"shutdown graceful\r\n", b"shutdown now\r\n", b"cache_memlimit 100\r\n", b"cache_memlimit x\r\n",
    b"debugtime 100\r\n", b"slabs reassign 1 2\r\n", b"slabs automove 1\r\n", b"lru tune 1 2 3\r\n",
    b"lru_crawler metadump all\r\n", b"watch fetchers mutations\r\n", b"extstore compact 1\r\n",
    b"refresh_certs noreply\r\n", b"boguscommand slkdsldkfjsd\r\n", b"GET / HTTP/1.1\r\nHost: x\r\n\r\n",
    b"\r\n", b" \n", b"get " + b" ".join(b"k%d" % i for i in range(40)) + b"\r\n",
    b"set k 0 0 1\r\na\r\nget k\r\ndelete k\r\nget k\r\n",
    b"get foo", b"x" * 3000, b"get " + b"y" * 3000,
]

META_HAND = [
    b"mn\r\n", b"mn junk\r\n", b"mg foo v\r\n", b"mg foo s v t f c k O123 q\r\n", b"mg foo\r\n",
    b"mg Zm9v b v k\r\n", b"mg foo N30 T60 R30 v c\r\n", b"mg foo u h l\r\n", b"mg foo v v\r\n",
    b"mg foo " + b" ".join(bytes([c]) for c in b"stcfvhlkOqu") + b"\r\n",
    b"mg foo " + b"O" + b"x" * 40 + b"\r\n", b"mg foo Z\r\n", b"mg " + b"k" * 251 + b" v\r\n",
    b"ms foo 2\r\nhi\r\n", b"ms foo 2 T90 F5 C12345 MS I q O9 k b\r\nhi\r\n", b"ms Zm9v 3 b\r\nabc\r\n",
    b"ms foo 3 ME\r\nabc\r\n", b"ms foo 3 MA\r\nabc\r\n", b"ms foo 3 MP\r\nabc\r\n", b"ms foo 3 MR\r\nabc\r\n",
    b"ms foo 3 MX\r\nabc\r\n", b"ms foo 3 E777\r\nabc\r\n", b"ms foo 2\r\nhiXY", b"ms foo\r\n", b"ms foo -1\r\n",
    b"ms foo 5 q\r\nab",
    b"md foo\r\n", b"md foo q I T30 C5 O1 k\r\n", b"md foo x\r\n",
    b"ma n\r\n", b"ma n N0 J13 D2 MI v t c\r\n", b"ma n MD q\r\n", b"ma n M+\r\n", b"ma n M-\r\n", b"ma n MZ\r\n",
    b"ma n Dabc\r\n", b"ma n J-1\r\n",
    b"me foo\r\n", b"me Zm9v b\r\n", b"me\r\n", b"me !!!! b\r\n",
    b"mg foo v\r\nmg bar v\r\nmn\r\n",
]


def perl_unescape(s):
    """A Perl double-quoted string's escapes (\\r \\n \\t \\0 \\" \\\\ \\xHH)."""
    out = bytearray()
    i = 0
    while i < len(s):
        c = s[i]
        if c == "\\" and i + 1 < len(s):
            n = s[i + 1]
            if n == "x" and re.match(r"[0-9a-fA-F]{2}", s[i + 2:i + 4]):
                out.append(int(s[i + 2:i + 4], 16))
                i += 4
                continue
            out.extend({"r": b"\r", "n": b"\n", "t": b"\t", "0": b"\0"}.get(n, n.encode("latin-1")))
            i += 2
            continue
        out.extend(c.encode("utf-8"))
        i += 1
    return bytes(out)


def memcached_t_requests():
    """Request strings memcached's test suite sends. Perl variables are
    replaced by plausible values (a key, a number, a short value)."""
    src = sorted(glob.glob(os.path.join(ROOT, "tests", ".work", "src", "memcached-*", "t")))
    if not src:
        print("note: memcached's t/ not unpacked (scripts/test installs it): no seeds from it", file=sys.stderr)
        return {}
    found = {}
    for path in sorted(glob.glob(os.path.join(src[-1], "*.t"))):
        name = os.path.basename(path)[:-2]
        text = open(path, encoding="utf-8", errors="replace").read()
        reqs = []
        for lit in re.findall(r'print\s+\$\w+\s+"((?:[^"\\]|\\.)*)"', text):
            reqs.append(lit)
        for key in re.findall(r'mem_get_is\(\s*\$\w+\s*,\s*"((?:[^"\\]|\\.)*)"', text):
            reqs.append("get " + key + "\\r\\n")
        out = []
        for lit in reqs:
            lit = re.sub(r"\$\{?\w+\}?(\[\d+\])?", "7", lit)  # variables: a number works as key and length
            b = perl_unescape(lit)
            if b and b not in out:
                out.append(b)
        if out:
            found[name] = out
    return found


def differential_streams():
    """Streams from the differential test's generator (CAS placeholders
    become a number)."""
    sys.path.insert(0, os.path.join(ROOT, "tests", "differential"))
    try:
        import diff  # noqa: E402
    except Exception as e:  # pragma: no cover
        print(f"note: tests/differential/diff.py not importable ({e}): no seeds from it", file=sys.stderr)
        return []
    streams = []
    for seed in range(1, 41):
        batches = diff.Gen(seed).stream(12)
        data = b"".join(p if isinstance(p, bytes) else b"12345" for batch in batches for cmd in batch for p in cmd)
        streams.append(data)
    return streams


# ---------------------------------------------------------------- binary

def pkt(op, key=b"", extras=b"", value=b"", opaque=0x1234, cas=0, body=None, keylen=None, extlen=None, magic=0x80):
    body = len(extras) + len(key) + len(value) if body is None else body
    keylen = len(key) if keylen is None else keylen
    extlen = len(extras) if extlen is None else extlen
    return struct.pack(">BBHBBHIIQ", magic, op, keylen, extlen, 0, 0, body, opaque, cas) + extras + key + value


def store_x(flags=5, exp=0):
    return struct.pack(">II", flags, exp)


def arith_x(delta=1, initial=10, exp=0):
    return struct.pack(">QQI", delta, initial, exp)


BINARY_HAND = {
    "get": pkt(0x00, b"foo"), "getq": pkt(0x09, b"foo"), "getk": pkt(0x0c, b"foo"), "getkq": pkt(0x0d, b"foo"),
    "set": pkt(0x01, b"foo", store_x(), b"value"), "setq": pkt(0x11, b"foo", store_x(7, 100), b"v"),
    "set-cas": pkt(0x01, b"foo", store_x(), b"value", cas=99),
    "add": pkt(0x02, b"foo", store_x(), b"v"), "addq": pkt(0x12, b"foo", store_x(), b"v"),
    "replace": pkt(0x03, b"foo", store_x(), b"v"), "replaceq": pkt(0x13, b"foo", store_x(), b"v"),
    "delete": pkt(0x04, b"foo"), "deleteq": pkt(0x14, b"foo", cas=5),
    "incr": pkt(0x05, b"n", arith_x()), "incrq": pkt(0x15, b"n", arith_x(exp=0xffffffff)),
    "decr": pkt(0x06, b"n", arith_x(3)), "decrq": pkt(0x16, b"n", arith_x()),
    "quit": pkt(0x07), "quitq": pkt(0x17), "flush": pkt(0x08), "flush-delay": pkt(0x08, extras=struct.pack(">I", 10)),
    "flushq": pkt(0x18), "noop": pkt(0x0a), "version": pkt(0x0b),
    "append": pkt(0x0e, b"foo", b"", b"tail"), "appendq": pkt(0x19, b"foo", b"", b"t"),
    "prepend": pkt(0x0f, b"foo", b"", b"head"), "prependq": pkt(0x1a, b"foo", b"", b"h"),
    "stat": pkt(0x10), "stat-items": pkt(0x10, b"items"), "stat-detail-dump": pkt(0x10, b"detail dump"),
    "stat-long-body": pkt(0x10, b"items", body=5 + 24) + pkt(0x0a),
    "touch": pkt(0x1c, b"foo", struct.pack(">I", 10)), "gat": pkt(0x1d, b"foo", struct.pack(">I", 10)),
    "gatq": pkt(0x1e, b"foo", struct.pack(">I", 10)), "gatk": pkt(0x23, b"foo", struct.pack(">I", 10)),
    "gatkq": pkt(0x24, b"foo", struct.pack(">I", 10)),
    "sasl-list": pkt(0x20), "sasl-auth-plain": pkt(0x21, b"PLAIN", value=b"\0fuzzuser\0fuzz pass"),
    "sasl-auth-cram": pkt(0x21, b"CRAM-MD5"), "sasl-step": pkt(0x22, b"CRAM-MD5", value=b"fuzzuser 0123456789abcdef"),
    "sasl-long-mech": pkt(0x21, b"M" * 33, value=b"x"), "range-op": pkt(0x30, b"foo"), "unknown-op": pkt(0x99, b"k", value=b"zz"),
    "pipeline": pkt(0x01, b"a", store_x(), b"1") + pkt(0x09, b"a") + pkt(0x09, b"b") + pkt(0x0a),
    # Hostile lengths.
    "key-too-long": pkt(0x00, b"k" * 251),
    "body-shorter-than-key": pkt(0x00, b"foo", body=1),
    "bad-extras": pkt(0x01, b"foo", b"\0\0\0", b"v"),
    "bad-magic": pkt(0x00, b"foo", magic=0x81),
    "huge-body-set": pkt(0x01, b"foo", store_x(), b"", body=0x7fffffff),
    "huge-body-unknown": pkt(0x55, b"", b"", b"", body=0xffffffff),
    "header-only-keylen-max": pkt(0x01, keylen=0xffff, extlen=0xff, body=0xffffffff),
    "sasl-huge-data": pkt(0x21, b"PLAIN", body=5 + (1 << 20)),
    "set-value-pending": pkt(0x01, b"foo", store_x(), b"", body=8 + 3 + 70000) + b"partial",
}

# The request that stopped the server (fixed in 6ccdcbb): a binary SET
# header claiming keylen 65535, extlen 255 and a 200,000-byte body,
# followed by 100 bytes: 124 bytes in all.
CRASH_124 = pkt(0x01, keylen=0xffff, extlen=0xff, body=200000, opaque=0, cas=0) + b"A" * 100
CRASH_README = """\
crash-124-binary-set-header
    The 124-byte request that stopped the whole server before 6ccdcbb: a
    binary SET (opcode 0x01) header claiming keylen 65535, extlen 255 and a
    200,000-byte body, followed by 100 bytes. The parser waits for the
    extras and key (as memcached does); the server took that wait for a
    large value and received it at an offset the header named, past the
    buffer. binary::waiting_shape now gives no shape for a header that is
    still arriving; the fuzz invariant "a landing shape lies in the bytes
    received" (larder_proto::invariants) would catch a return of the bug.
    The seed file is this request after one mode byte (0x00: no SASL,
    default limits); -sasl-unauth and -sasl-auth are the same request
    under -S.
"""


# ---------------------------------------------------------------- snapshot

def crc32c(data, crc=0):
    crc ^= 0xFFFFFFFF
    for b in data:
        crc ^= b
        for _ in range(8):
            crc = (crc >> 1) ^ 0x82F63B78 if crc & 1 else crc >> 1
    return crc ^ 0xFFFFFFFF


def snapshot(records, version=2):
    """A snapshot file in the format of larder-store's snapshot.rs."""
    h = bytearray(72)
    h[0:8] = b"LARDSNAP"
    struct.pack_into("<II", h, 8, version, 72)
    h[16:20] = b"seed"
    struct.pack_into("<qQIIQ", h, 36, 1_700_000_000, 64 << 20, 1 << 20, len(records), 1024)
    struct.pack_into("<I", h, 68, crc32c(bytes(h[:68])))
    out = bytearray(h)
    payload = bytearray()
    max_cas = 0
    for key, bits, flags, exp, cas, value in records:
        payload += struct.pack("<BBIqQI", len(key), bits, flags, exp, cas, len(value)) + key + value
        max_cas = max(max_cas, cas)
    seq = 0

    def block(kind, count, body):
        nonlocal seq
        bh = struct.pack("<IIII", kind, seq, len(body), count)
        seq += 1
        return bh + body + struct.pack("<I", crc32c(bh + body))
    blocks = 0
    if records:
        out += block(1, len(records), bytes(payload))
        blocks = 1
    end = struct.pack("<QQQQ", len(records), blocks, max_cas, len(payload) if records else 0)
    out += block(2, 0, end)
    return bytes(out)


# ---------------------------------------------------------------- TLS

def tls_script(suite, ops):
    return bytes([suite]) + b"".join(ops)


def sealed(plain, typ_sel=0, pad=0, tamper=False, flip=0):
    how = (pad << 2) | typ_sel
    return bytes([3 if tamper else 0]) + struct.pack(">H", len(plain)) + bytes([how]) + plain + struct.pack(">H", flip)


def raw(rec):
    return bytes([1]) + struct.pack(">H", len(rec)) + rec


def cut(plain, at):
    return bytes([2, len(plain)]) + plain + struct.pack(">H", at)


# ---------------------------------------------------------------- snapshot builder scripts

def snap_script(mode, items, edits):
    """snapshot_load's built mode: `items` as (key, size byte, flags, how),
    `edits` as (op, pos, arg[, u32])."""
    out = bytearray([mode, len(items)])
    for key, size, flags, how in items:
        out += bytes([len(key) - 1]) + key + bytes([size])
        if size & 1:
            out += struct.pack("<I", flags)
        out += bytes([how])
        if how & 4:
            out += struct.pack("<I", 4242)
    out += bytes([len(edits)])
    for e in edits:
        op, pos, arg = e[:3]
        out += bytes([op]) + struct.pack("<I", pos) + bytes([arg])
        if op % 7 in (5, 6):
            out += struct.pack("<I", e[3] if len(e) > 3 else 0xFFFFFFFF)
    return bytes(out)


# ---------------------------------------------------------------- track

TRACK_ARGS = [
    b"stream", b"stream bcast", b"stream bcast user: item:", b"stream  bcast   a b c ",
    b"stream bcast " + b" ".join(b"p%d" % i for i in range(16)),
    b"stream bcast " + b" ".join(b"p%d" % i for i in range(17)),
    b"stream bcast " + b"k" * 250, b"stream bcast " + b"k" * 251, b"stream x",
    b"attach 7", b"attach 7 noloop", b"attach 18446744073709551615", b"attach 18446744073709551616",
    b"attach -1", b"attach +1", b"attach 7 loop", b"attach 7 noloop x", b"attach", b"detach", b"detach x",
    b"", b"\tstream", b"stream\r", b"attach 0x10", b"STREAM",
]

TRACK_STREAM_INPUT = [
    b"mn\r\n", b"mn\n", b"mn\r\nmn\r\nquit\r\n", b"quit\n", b"m", b"mn", b"mn\r", b"get k\r\n",
    b"mn\r\n" + b"x" * 2049, b"x" * 2048, b"MN\r\n", b"mn \r\n", b"\r\n",
]


# ---------------------------------------------------------------- all

def seeds():
    c = {t: {} for t in ["text_parse", "meta_parse", "binary_parse", "udp_frame", "tls_record_open",
                         "snapshot_load", "authfile", "sasl_step", "track_parse"]}

    def add(target, name, data):
        c[target][name + "-" + hashlib.sha1(data).hexdigest()[:10]] = data

    for i, r in enumerate(TEXT_HAND):
        add("text_parse", f"hand-{i:02d}", b"\x00" + r)
        if i % 3 == 0:
            add("text_parse", f"hand-tiny-limits-{i:02d}", b"\x01" + r)
    for i, r in enumerate(META_HAND):
        add("meta_parse", f"hand-{i:02d}", b"\x07" + r)
        add("text_parse", f"hand-meta-{i:02d}", b"\x00" + r)
    for name, reqs in memcached_t_requests().items():
        text = [r for r in reqs if not re.match(rb"m[gsdane]( |\r|\n)", r)]
        meta = [r for r in reqs if re.match(rb"m[gsdane]( |\r|\n)", r)]
        # One seed per test file: its requests pipelined (bounded), and a
        # few single requests.
        if text:
            add("text_parse", f"t-{name}", b"\x00" + b"".join(text)[:4096])
            for j, r in enumerate(text[:4]):
                add("text_parse", f"t-{name}-{j}", b"\x00" + r[:4096])
        if meta:
            add("meta_parse", f"t-{name}", b"\x07" + b"".join(meta)[:4096])
            for j, r in enumerate(meta[:12]):
                add("meta_parse", f"t-{name}-{j}", b"\x07" + r[:4096])
    for i, s in enumerate(differential_streams()):
        add("text_parse", f"differential-{i + 1:02d}", b"\x00" + s[:8192])

    for name, p in BINARY_HAND.items():
        add("binary_parse", f"hand-{name}", b"\x00" + p)
        if name.startswith("sasl") or name in ("version", "get", "set"):
            add("binary_parse", f"hand-{name}-sasl-unauth", b"\x01" + p)
            add("binary_parse", f"hand-{name}-sasl-auth", b"\x02" + p)
    add("binary_parse", "hand-set-tiny-limits", b"\x04" + BINARY_HAND["set"])
    c["binary_parse"]["crash-124-binary-set-header"] = b"\x00" + CRASH_124
    c["binary_parse"]["crash-124-binary-set-header-sasl-unauth"] = b"\x01" + CRASH_124
    c["binary_parse"]["crash-124-binary-set-header-sasl-auth"] = b"\x02" + CRASH_124

    udp = lambda rid, payload, seq=0, total=1: struct.pack(">HHHH", rid, seq, total, 0) + payload
    add("udp_frame", "text-get", udp(1, b"get foo\r\n"))
    add("udp_frame", "text-set-get", udp(2, b"set foo 0 0 3\r\nbar\r\nget foo\r\n"))
    add("udp_frame", "text-mget", udp(3, b"get " + b" ".join(b"k%d" % i for i in range(50)) + b"\r\n"))
    add("udp_frame", "meta", udp(4, b"ms foo 2 T0\r\nhi\r\nmg foo v k\r\nmn\r\n"))
    add("udp_frame", "binary-get", udp(5, BINARY_HAND["get"]))
    add("udp_frame", "binary-pipeline", udp(6, BINARY_HAND["pipeline"]))
    add("udp_frame", "binary-crash-124", udp(7, CRASH_124))
    add("udp_frame", "multi-datagram", udp(8, b"get foo\r\n", 0, 2))
    add("udp_frame", "short", b"\x00\x01\x00\x00\x00")
    add("udp_frame", "empty-payload", udp(9, b""))

    for suite in range(6):
        add("tls_record_open", f"suite{suite}-sealed", tls_script(suite, [sealed(b"get foo\r\n"), sealed(b"set k 0 0 1\r\nx\r\n", 1)]))
        add("tls_record_open", f"suite{suite}-padded", tls_script(suite, [sealed(b"hello", 2, pad=7), sealed(b"", 0, pad=3)]))
        add("tls_record_open", f"suite{suite}-tampered", tls_script(suite, [sealed(b"get foo\r\n", tamper=True, flip=17), sealed(b"ok")]))
        add("tls_record_open", f"suite{suite}-raw", tls_script(suite, [raw(b"\x17\x03\x03\x00\x20" + b"\x00" * 32), raw(b"\x17\x03\x01\x00\x01x"), raw(b"\x17\x03\x03\x48\x01")]))
        add("tls_record_open", f"suite{suite}-cut", tls_script(suite, [cut(b"get foo\r\n", 10), cut(b"x" * 40, 200), cut(b"", 3)]))
        add("tls_record_open", f"suite{suite}-large", tls_script(suite, [sealed(bytes(range(256)) * 64)]))

    recs = [(b"foo", 0, 0, 0, 1 << 24, b"fooval"), (b"bar", 2 | (3 << 4), 7, 1_700_000_500, 2 << 24, b"b" * 300),
            (b"Zm9v", 1, 0, 0, 3 << 24, b"binary key"), (b"old", 0, 0, 1_699_999_000, 4 << 24, b"expired")]
    add("snapshot_load", "raw-valid", b"\x00" + snapshot(recs))
    add("snapshot_load", "raw-valid-v1", b"\x00" + snapshot([r[:1] + (r[1] & 15,) + r[2:] for r in recs], version=1))
    add("snapshot_load", "raw-empty", b"\x00" + snapshot([]))
    add("snapshot_load", "raw-future", b"\x00" + snapshot(recs, version=3))
    add("snapshot_load", "raw-truncated", b"\x00" + snapshot(recs)[:-7])
    add("snapshot_load", "raw-foreign", b"\x00" + b"NOTASNAPSHOT" + b"\0" * 60)
    items = [(b"alpha", 12, 0, 0), (b"beta", 0xC1, 0xdeadbeef, 2), (b"gamma", 5, 9, 1 | 4 | 16), (b"delta", 0xE2, 0, 8)]
    add("snapshot_load", "built-intact", snap_script(1, items, []))
    add("snapshot_load", "built-flip", snap_script(1, items, [(1, 100, 3)]))
    add("snapshot_load", "built-truncate", snap_script(1, items, [(2, 150, 0)]))
    add("snapshot_load", "built-resealed-keylen", snap_script(2, items, [(0, 72 + 16, 0)]))
    add("snapshot_load", "built-resealed-vlen", snap_script(2, items, [(5, 72 + 16 + 22, 0, 0xFFFFFF00)]))
    add("snapshot_load", "built-resealed-count", snap_script(6, items, [(5, 72 + 12, 0, 9)]))
    add("snapshot_load", "built-resealed-hints", snap_script(6, items, [(6, 56, 40, 0xFFFFFFFF), (6, 60, 32, 0xFFFFFFFF)]))
    add("snapshot_load", "built-resealed-exp", snap_script(6, items, [(6, 72 + 16 + 6, 31, 0x7FFFFFFF)]))
    add("snapshot_load", "built-resealed-bits", snap_script(6, items, [(0, 72 + 16 + 1, 0xFF)]))
    add("snapshot_load", "built-resealed-version", snap_script(6, items, [(0, 8, 1)]))
    add("snapshot_load", "built-empty", snap_script(3, [], []))
    # Bit 3 of the mode byte: load into a small store (one shard, 2 MiB, -I 4 KiB).
    add("snapshot_load", "raw-valid-small-store", b"\x08" + snapshot(recs))
    add("snapshot_load", "built-intact-small-store", snap_script(9, items, []))
    add("snapshot_load", "built-resealed-hints-small-store", snap_script(14, items, [(6, 60, 30, 0xFFFFFFFF)]))

    for name, f in [("simple", b"foo:bar\n"), ("two", b"foo:bar\nbaaaz:quux\n"), ("crlf", b"user:pass\r\nother:x\r\n"),
                    ("no-newline", b"foo:bar"), ("malformed", b"foo\n"), ("empty-line", b"a:b\n\nc:d\n"),
                    ("nul", b"a:b\0c:d\n"), ("nine", b"".join(b"u%d:p%d\n" % (i, i) for i in range(9))),
                    ("long-line", b"u:" + b"p" * 300 + b"\nv:w\n"), ("colon-pass", b"u:p:q\n")]:
        add("authfile", f"raw-{name}", b"\x00" + f)
    add("authfile", "entries", b"\x01" + b"foo:bar\nbaaaz:quux\n:empty\nx:")

    auth = BINARY_HAND["sasl-auth-plain"]
    add("sasl_step", "list", BINARY_HAND["sasl-list"])
    add("sasl_step", "plain-ok-then-get", auth + BINARY_HAND["get"] + BINARY_HAND["set"])
    add("sasl_step", "plain-wrong", pkt(0x21, b"PLAIN", value=b"\0fuzzuser\0wrong"))
    add("sasl_step", "plain-authzid", pkt(0x21, b"PLAIN", value=b"fuzzuser\0fuzzuser\0fuzz pass"))
    add("sasl_step", "cram-then-step", BINARY_HAND["sasl-auth-cram"] + BINARY_HAND["sasl-step"])
    add("sasl_step", "step-first", BINARY_HAND["sasl-step"])
    add("sasl_step", "unknown-mech", pkt(0x21, b"GSSAPI", value=b"x") + pkt(0x21, b"P\0LAIN", value=b"\0a\0b"))
    add("sasl_step", "long-mech", BINARY_HAND["sasl-long-mech"] + BINARY_HAND["version"])
    add("sasl_step", "get-unauthenticated", BINARY_HAND["get"])
    add("sasl_step", "auth-twice", auth + auth + BINARY_HAND["sasl-list"] + BINARY_HAND["get"])
    # track_parse: byte 0 even, the arguments of a `track` line (2: also fed
    # to the grammar directly); odd, a stream connection's input.
    for i, args in enumerate(TRACK_ARGS):
        add("track_parse", f"args-{i:02d}", b"\x00" + args)
        add("track_parse", f"args-direct-{i:02d}", b"\x02" + args)
    for i, inp in enumerate(TRACK_STREAM_INPUT):
        add("track_parse", f"stream-{i:02d}", b"\x01" + inp)
    return c


def main():
    check = "--check" in sys.argv
    changed = 0
    for target, files in seeds().items():
        d = os.path.join(CORPUS, target)
        os.makedirs(d, exist_ok=True)
        for name, data in files.items():
            path = os.path.join(d, name)
            if os.path.exists(path) and open(path, "rb").read() == data:
                continue
            changed += 1
            if not check:
                with open(path, "wb") as f:
                    f.write(data)
    readme = os.path.join(CORPUS, "binary_parse", "README")
    if not (os.path.exists(readme) and open(readme).read() == CRASH_README):
        changed += 1
        if not check:
            with open(readme, "w") as f:
                f.write(CRASH_README)
    if check and changed:
        print(f"{changed} seed file(s) would change: run python3 fuzz/make_corpus.py", file=sys.stderr)
        sys.exit(1)
    total = sum(os.path.getsize(p) for p in glob.glob(os.path.join(CORPUS, "*", "*")))
    print(f"{'checked' if check else 'wrote'} seeds; corpus now {total} bytes")


if __name__ == "__main__":
    main()
