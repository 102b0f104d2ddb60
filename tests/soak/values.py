"""Self-describing values for the soak test.

A value is a pure function of (key, version, length): whoever reads it can
say exactly which write produced it, and any torn, shifted or misplaced byte
shows up as a mismatch against the value regenerated from its own header.

Layout of a value of 40 bytes or more:

    <key|version|length|>  then 4096-byte blocks, each an 8-byte block
                           number ("%07x:") and 4088 bytes of a pattern
                           seeded by (key, version); the last block cut
                           at the length.

Shorter values are the first `length` bytes of a hash of (key, version)
(no room for a header: identified by comparing with what each candidate
write would have produced). Client flags are crc32(key, version), so flags
are checked too. Append keys hold a sequence of segments, each a value of
its own (version = (base version << 16) | segment number); counters hold a
decimal number.
"""

import hashlib
import zlib

BLOCK = 4096
HEADER_MIN = 40


def _pattern(key, ver):
    seed = hashlib.blake2b(b"%s#%d" % (key, ver), digest_size=64).digest()
    return (seed * (BLOCK // 64))[: BLOCK - 8]


def flags_of(key, ver):
    return zlib.crc32(b"%s#%d" % (key, ver)) & 0xFFFFFFFF


def make_value(key, ver, length):
    if length < HEADER_MIN:
        h = hashlib.blake2b(b"%s@%d" % (key, ver), digest_size=64).digest()
        return (h * (length // 64 + 1))[:length]
    head = b"<%s|%d|%d|" % (key, ver, length)
    rest = length - len(head)
    if rest < 0:
        return head[:length]
    pat = _pattern(key, ver)
    nblocks = rest // BLOCK + 1
    body = b"".join(b"%07x:" % (i & 0xFFFFFFF) + pat for i in range(nblocks))
    return head + body[:rest]


def parse_header(value):
    """(key, version, length) from a value's header, or None."""
    if not value.startswith(b"<"):
        return None
    end = value.find(b"|", 1)
    if end < 0:
        return None
    try:
        key = value[1:end]
        v2 = value.index(b"|", end + 1)
        v3 = value.index(b"|", v2 + 1)
        return key, int(value[end + 1:v2]), int(value[v2 + 1:v3])
    except ValueError:
        return None


def self_consistent(value):
    """For values read without a model (slow readers): True if the value is
    exactly what its own header describes (or too short to carry one)."""
    if len(value) < HEADER_MIN:
        return True
    h = parse_header(value)
    if h is None:
        # an append key's value is a run of segments
        return segments_consistent(value)
    key, ver, length = h
    if length != len(value):
        return segments_consistent(value)
    return make_value(key, ver, length) == value


def seg_len(key, base, i):
    return 40 + zlib.crc32(b"%s/%d/%d" % (key, base, i)) % 160


def append_value(key, base, n):
    return b"".join(make_value(key, (base << 16) | i, seg_len(key, base, i)) for i in range(n))


def segments_consistent(value):
    pos = 0
    while pos < len(value):
        h = parse_header(value[pos:pos + 300])
        if h is None:
            return False
        key, ver, length = h
        if make_value(key, ver, length) != value[pos:pos + length]:
            return False
        pos += length
    return True


def describe(value, limit=80):
    """A short description of an unexpected value, for reports."""
    h = parse_header(value)
    if h:
        key, ver, length = h
        ok = len(value) == length and make_value(key, ver, length) == value
        return "value of %r version %d length %d (%s; read length %d)" % (
            key.decode("latin-1"), ver >> 16 if ver > 1 << 16 else ver, length,
            "intact" if ok else "TORN/CORRUPT", len(value))
    return "%d bytes %r" % (len(value), value[:limit])
