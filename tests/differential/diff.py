#!/usr/bin/env python3
"""Differential test: the same random text-protocol streams to memcached and larder.

Starts memcached 1.6.18 (the reference, /usr/bin/memcached) and larder side by side
with the same flags (-m 64 -U 0 -t 1), sends both the same seeded random stream of
valid and invalid text-protocol commands, and compares the replies after
normalising what legitimately differs:

  * CAS uniques: each distinct value is replaced by the order of its first
    appearance on that side (so "the same item version" stays comparable);
  * "VERSION x.y.z" becomes "VERSION x";
  * "STAT name value" becomes "STAT name *" (names still compared);
    larder's own "STAT larder_*" extension lines are dropped.

Left out on purpose (see tests/README.md for the list of memcached's own
non-deterministic or buggy corners kept out of the streams): lengths memcached
misreads (4294967296 wraps to 0 in 1.6.18), lines over 2048 bytes other than
get (memcached closes the connection or not depending on how the bytes arrive),
meta commands (this is the text-protocol test), quit, and anything
clock-dependent.

Left out because memcached changed the reply after 1.6.18 and larder follows
the newer release (docs/differences.md, "On purpose"; tests/reference-1638
and the Rust tests check the newer replies): memcached 1.6.40's request
parser answers differently every line the generator used to send that
misses a required token (`get`, `gat 0`, `incr k0`, `set k0 0 0`, ...),
carries tokens a command does not read (`decr n0 1 2 3`, a storage line
with many tokens, `delete k0 5`), is shorter than 4 bytes with its line end
(`\r\n`, a one-letter word, the `\n` a 3-byte bad terminator leaves), starts
with a space, or is a storage line refused after its length was read (bad
key, flags, exptime or CAS unique: 1.6.40 swallows the data block where
1.6.18 read it as commands). See NEWER_PARSER.

Framing. Commands go in small batches (1-5 commands, pipelined in one write),
each followed by a fence, `version\\r\\n`. A side's reply to a batch is complete
when it ends with that server's own VERSION line. When a command swallows the
fence (a short data block eats it as data), the side goes quiet without the
fence reply; after QUIET seconds another fence is sent (and recorded in the
reply as "<refence>", so both sides must do the same).

Timing. Nothing in a stream depends on the clock: exptimes are 0, negative,
far in the future (relative up to 30 days, or absolute), or in the distant
past; flush_all has no delay (a delayed flush_all also resurrects earlier
flushed items in memcached, see FLUSH_DELAYS).

Run by hand:
    python3 tests/differential/diff.py --seed 7 --count 3000
    python3 tests/differential/diff.py --seeds 1-20 --count 2000 --keep-going
    python3 tests/differential/diff.py --replay tests/.work/differential/seed-7.json
A failing stream is saved to tests/.work/differential/seed-N.json (replayable
with --replay) and seed-N.larder.bin (the exact bytes sent to larder: replay
with `nc 127.0.0.1 PORT < seed-N.larder.bin`).
"""

import argparse
import json
import os
import random
import select
import socket
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "lib"))
import larder_servers  # noqa: E402

SERVER_ARGS = ["-m", "64", "-t", "1"]  # plus -p PORT -U 0 -l 127.0.0.1 [-u root]
# memcached's background LRU threads briefly hold references to items, and
# incr/decr rewrites a value in place (space-padded to the old length) only
# when nobody else holds one, so without these the reference itself is not
# deterministic. Both servers get them: they also decide which lines `stats`
# lists, and larder honours that.
LRU_THREADS_OFF = ["-o", "no_lru_crawler,no_lru_maintainer"]
QUIET = 0.5           # seconds of silence before re-sending the fence
MAX_REFENCE = 3       # then the side is declared hung
ITEM_MAX = 1024 * 1024
OUT_DIR = os.path.join(os.path.dirname(HERE), ".work", "differential")
FENCE = b"version\r\n"
META = (b"mg", b"ms", b"md", b"ma", b"mn", b"me")
# flush_all delays used. A delayed flush_all is deterministic only with a delay
# far in the future, and then memcached forgets an earlier immediate flush
# (items it had not yet reaped come back), a quirk larder need not copy.
FLUSH_DELAYS = []
# Command names memcached 1.6.40+ and 1.6.18 read differently when a random
# word happens to spell one without its arguments (see the module docs).
NEWER_PARSER = (b"get", b"gets", b"gat", b"gats", b"bget", b"set", b"add", b"replace", b"append",
                b"prepend", b"cas", b"incr", b"decr", b"touch", b"delete", b"verbosity")

# ----------------------------------------------------------------------------
# stream generation
# ----------------------------------------------------------------------------


class Gen:
    """Seeded generator of command batches. A command is a list of parts: bytes,
    or ["cas", key, mode] resolved per side at send time from the CAS uniques
    that side has shown for key."""

    def __init__(self, seed):
        self.r = random.Random(seed)
        r = self.r
        self.keys = [f"k{i}".encode() for i in range(10)] + [b"n0", b"n1", b"n2"]
        self.keys += [b"key:with:colons", "ключ".encode(), b"ctl\x01key", b"K" * 250,
                      bytes(r.randrange(33, 127) for _ in range(40))]
        self.long_key = b"L" * 251

    # ---- pieces ----
    def key(self):
        r = self.r
        x = r.random()
        if x < 0.80:
            return r.choice(self.keys[:13])
        if x < 0.97:
            return r.choice(self.keys)
        return self.long_key

    def value(self):
        r = self.r
        x = r.random()
        if x < 0.25:
            return str(r.choice([0, 1, 9, 10, 99, 12345, 2**32, 2**63, 2**64 - 1, 2**64 - 2,
                                 r.randrange(0, 2**64)])).encode()
        if x < 0.30:
            return r.choice([b"", b" 12", b"12 ", b"-5", b"0x10", b"1e3", b"007",
                             b"123456789012345678901", b"18446744073709551616"])
        if x < 0.55:
            return bytes(r.randrange(97, 123) for _ in range(r.randrange(1, 30)))
        if x < 0.65:
            return self.safe(r.choice([b"\r\n", b"a\r\nb", b"\r\nEND\r\n", b"VALUE k0 0 1\r\nx\r\nEND",
                             b"line1\nline2\r", b"\x00\x00", b"  spaces  "]))
        if x < 0.85:
            v = bytes(r.randrange(256) for _ in range(r.randrange(1, 300)))
        elif x < 0.97:
            v = bytes(r.randrange(256) for _ in range(r.randrange(300, 5000)))
        elif x < 0.985:
            n = r.choice([500 * 1024, ITEM_MAX - 100, ITEM_MAX - 300])
            v = r.randbytes(n)
        else:
            v = r.randbytes(ITEM_MAX + r.randrange(1, 200000))  # too large: swallowed
        return self.safe(v)

    @staticmethod
    def safe(v):
        if b"VERSION" in v:  # would look like the fence reply
            v = v.replace(b"VERSION", b"version")
        if len(v) > 2 and b"-" in v:
            # memcached's safe_strtoull checks a value >= 2**63 for a minus sign
            # with strchr(), which runs past the value through slab memory up to
            # a NUL byte: a '-' in a neighbouring item turns incr/decr into
            # "non-numeric". Keep '-' out of the stored data ("-5" and such stay).
            v = v.replace(b"-", b"_")
        if v and not v.strip(b" \t\n\v\f\r"):
            # incr/decr on an all-whitespace value makes memcached's strtoull run
            # past the value into stale slab memory: not deterministic
            v += b"x"
        return v

    def flags(self):
        r = self.r
        x = r.random()
        if x < 0.6:
            return b"0"
        if x < 0.9:
            return str(r.randrange(0, 2**32)).encode()
        return r.choice([b"4294967295", b"4294967296", b"-1", b"abc", b"1.5", b"00012"])

    def exptime(self, strict=False):
        """An exptime token. `strict`: for gat/gats and touch, whose exptime
        memcached 1.6.40 and 1.6.45 read strictly (and larder with them), so
        a number beyond an int32_t is refused where 1.6.18 truncated it:
        only numbers both readings agree on (docs/differences.md)."""
        r = self.r
        x = r.random()
        if x < 0.6:
            return b"0"
        if x < 0.8:
            return str(r.randrange(1000, 30 * 86400)).encode()
        if x < 0.87:
            return r.choice([b"-1", b"-1000"])  # already expired
        if x < 0.92:
            return r.choice([b"1000000000", b"946684800"])  # absolute, in the past
        if x < 0.96:
            # absolute, year 2100 (or 2038 when strict: 4102444800 is beyond
            # an int32_t, which 1.6.40+ refuses where 1.6.18 truncated it)
            return b"2145916800" if strict else b"4102444800"
        # (strict: no empty exptime, which leaves `gat` or `touch` a token
        # short, read differently by 1.6.40: see NEWER_PARSER)
        return r.choice([b"abc", b"1.5"] + ([] if strict else [b"", b"99999999999"]))

    def nr(self, p=0.2):
        return b" noreply" if self.r.random() < p else b""

    def eol(self):
        return b"\n" if self.r.random() < 0.05 else b"\r\n"

    def readable(self, key, flags, exptime):
        """A storage line's key, flags and exptime as memcached reads them
        (1.6.40 swallows the data block of a line refused on one of them,
        1.6.18 read it as commands: see NEWER_PARSER): anything else becomes
        k0, 0, 0."""
        if len(key) > 250:
            key = b"k0"
        if not flags.isdigit():
            flags = b"0"
        if not exptime.lstrip(b"-").isdigit() or exptime.count(b"-") > 1 or abs(int(exptime)) >= 2**31:
            exptime = b"0"
        return key, flags, exptime

    def fit(self, val, key, flags, exptime):
        """memcached rejects a storage line with a bad key, flags or exptime without
        reading its data block, which is then parsed as commands: keep such values
        short (lines over 2048 bytes close the connection, timing-dependently)."""
        if key == self.long_key or not flags.isdigit() or int(flags) >= 2**32 or \
                not exptime.lstrip(b"-").isdigit() or int(exptime) >= 2**31:
            return val[:self.r.randrange(0, 100)]
        return val

    # ---- commands ----
    def storage(self):
        r = self.r
        cmd = r.choice([b"set", b"set", b"set", b"add", b"replace", b"append", b"prepend"])
        key, val, flags, exptime = self.key(), self.value(), self.flags(), self.exptime()
        key, flags, exptime = self.readable(key, flags, exptime)
        val = self.fit(val, key, flags, exptime)
        line = b" ".join([cmd, key, flags, exptime, str(len(val)).encode()])
        return [line + self.nr() + self.eol() + val + b"\r\n"]

    def cas(self):
        r = self.r
        key, val, flags, exptime = r.choice(self.keys[:13]), self.value(), self.flags(), self.exptime()
        key, flags, exptime = self.readable(key, flags, exptime)
        val = self.fit(val, key, flags, exptime)
        mode = r.choice(["latest", "latest", "latest", "stale", "bogus"])
        head = b" ".join([b"cas", key, flags, exptime, str(len(val)).encode()]) + b" "
        tail = self.nr(0.1) + b"\r\n" + val + b"\r\n"
        # (no unreadable unique: 1.6.40 swallows the block, see NEWER_PARSER)
        return [head, ["cas", key.decode("latin-1"), mode], tail]

    def retrieval(self):
        r = self.r
        cmd = r.choice([b"get", b"get", b"gets", b"gets", b"gat", b"gats"])
        n = r.choice([1, 1, 1, 2, 3, 5, 10, 30]) if r.random() < 0.97 else 100
        keys = [self.key() if r.random() < 0.98 else self.long_key for _ in range(n)]
        sep = b" " if r.random() < 0.95 else b"  "
        if cmd in (b"gat", b"gats"):
            if self.no_long_key_gat:
                keys = [k if len(k) <= 250 else b"k0" for k in keys]
            return [cmd + b" " + self.exptime(strict=True) + b" " + sep.join(keys) + self.eol()]
        return [cmd + b" " + sep.join(keys) + self.eol()]

    def arith(self):
        r = self.r
        cmd = r.choice([b"incr", b"decr"])
        key = r.choice(self.keys[10:13] + self.keys[:3]) if r.random() < 0.97 else self.long_key
        x = r.random()
        if x < 0.7:
            d = str(r.choice([0, 1, 1, 2, 7, 100, 2**32, 2**63, 2**64 - 1])).encode()
        else:
            # (no empty delta: `incr k0 ` misses a token, see NEWER_PARSER)
            d = r.choice([b"18446744073709551616", b"-1", b"abc", b"1.5", b"99999999999999999999999"])
        return [b" ".join([cmd, key, d]) + self.nr(0.1) + b"\r\n"]

    def touch(self):
        return [b"touch " + self.key() + b" " + self.exptime(strict=True) + self.nr(0.1) + b"\r\n"]

    def delete(self):
        r = self.r
        x = r.random()
        extra = b""
        if x < 0.1:
            extra = b" 0"
        elif x < 0.15:
            extra = r.choice([b" 5", b" abc", b" 0 noreply", b" noreply extra"])
        key = self.key()
        tail = extra + self.nr(0.15)
        if tail not in (b"", b" 0", b" noreply", b" 0 noreply"):
            # Only the forms every version accepts: 1.6.40 ignores what
            # follows the key, 1.6.18 refuses it (see NEWER_PARSER).
            tail = b" noreply" if tail.endswith(b" noreply") else b""
        return [b"delete " + key + tail + b"\r\n"]

    def misc(self):
        r = self.r
        choices = [b"flush_all\r\n", b"flush_all 0\r\n", b"flush_all noreply\r\n",
                   b"flush_all abc\r\n", b"flush_all 0 noreply\r\n",
                   b"verbosity 1\r\n", b"verbosity 0\r\n", b"verbosity 1 noreply\r\n",
                   b"verbosity abc\r\n", b"version\r\n", b"version extra\r\n"]
        choices += [b"flush_all %d\r\n" % d for d in FLUSH_DELAYS]
        if not self.no_stats:
            choices += [b"stats\r\n", b"stats \r\n"]
        return [r.choice(choices)]

    def bogus(self):
        """Odd lines memcached 1.6.18 and 1.6.40+ answer alike (those they
        answer differently are left out: see NEWER_PARSER)."""
        r = self.r
        x = r.random()
        if x < 0.15:
            return [r.choice([b"   \r\n", b"    \n", b"\x00\x00\r\n"])]
        if x < 0.3:
            return [r.choice([b"GET k0\r\n", b"Set k0 0 0 1\r\nxy\r\n", b"gett k0\r\n", b"quitx\r\n",
                              b"get k0 \r\n", b"xy\r\n", b"stats\tx\r\n", b"\tget k0\r\n",
                              b"get\tk0\r\n", b"flush_all noreply 5\r\n", b"verbosity x\r\n"])]
        if x < 0.5:
            word = bytes(r.randrange(97, 123) for _ in range(r.randrange(2, 12)))
            if word in META or word in NEWER_PARSER or \
                    word in (b"me", b"mn", b"quit", b"shutdown", b"watch", b"lru_crawler"):
                word = b"x" + word  # meta commands, and ones that end the connection, are out of scope
            args = b" ".join(bytes(r.randrange(33, 127) for _ in range(r.randrange(1, 8)))
                             for _ in range(r.randrange(0, 4)))
            return [word + (b" " + args if args else b"") + b"\r\n"]
        if x < 0.7:
            return [b" ".join([b"get"] + [b"k%d" % (i % 10) for i in range(r.randrange(20, 40))]) + b"\r\n"]
        if x < 0.8:
            junk = bytes(r.choice([r.randrange(1, 10), r.randrange(14, 32), r.randrange(33, 127)])
                         for _ in range(r.randrange(2, 1500)))
            return [junk + b"\r\n"]
        # storage lines with a bad length (refused before the data block,
        # which these lines do not send)
        return [r.choice([b"set k1 0 0 -1\r\n", b"set k1 0 0 abc\r\n",
                          b"set k1 0 0 2147483648\r\n",
                          b"set k1 0 0 01\r\nx\r\n", b"set k1 0 0 +1\r\nx\r\n"])]

    def bad_chunk(self):
        r = self.r
        key = r.choice(self.keys[:13])
        val = bytes(r.randrange(97, 123) for _ in range(r.randrange(1, 20)))
        cmd = r.choice([b"set", b"add", b"append", b"prepend", b"replace"])
        x = r.random()
        if x < 0.4:  # longer than declared
            # the block's terminator eats two of these, the rest is parsed as
            # a command next: never meta, never under 4 bytes (NEWER_PARSER)
            extra = bytes(r.randrange(65, 91) for _ in range(r.randrange(4, 8)))
            return [b"%s %s 0 0 %d%s\r\n%s%s\r\n" % (cmd, key, len(val), self.nr(0.3), val, extra)]
        if x < 0.7:  # right length, wrong terminator
            # never shorter: no fence eaten; never longer: the `\n` left is a
            # line 1.6.40 reads differently (NEWER_PARSER)
            term = r.choice([b"XY", b"\n\n", b"\r\r", b"\n\r"])
            return [b"%s %s 0 0 %d%s\r\n%s%s" % (cmd, key, len(val), self.nr(0.3), val, term)]
        # shorter than declared, "\r\n" too early, then filler up to the declared size
        # (so the fence that follows is never eaten as data)
        short = r.randrange(1, 6)
        return [b"%s %s 0 0 %d%s\r\n%s\r\n%s" % (cmd, key, len(val) + short, self.nr(0.3), val,
                                                   b"z" * short)]

    def command(self):
        r = self.r
        x = r.random()
        for w, f in ((0.30, self.storage), (0.06, self.cas), (0.20, self.retrieval),
                     (0.10, self.arith), (0.04, self.touch), (0.06, self.delete),
                     (0.03, self.misc), (0.07, self.bogus), (0.04, self.bad_chunk)):
            if x < w:
                return f()
            x -= w
        return self.retrieval()

    def drops_pipeline(self, cmd):
        """A get/gets/gat/gats with a key over 250 bytes: memcached 1.6.18 answers
        CLIENT_ERROR and also throws away the replies of the commands before it
        that it had not written yet (conn_release_items in process_get_command),
        so what survives depends on how the bytes arrived. Such a command only
        ever starts a batch; larder need not copy the bug."""
        head = cmd[0] if isinstance(cmd[0], bytes) else b""
        return head.split(b" ", 1)[0] in (b"get", b"gets", b"gat", b"gats") and \
            any(len(t) > 250 for t in head.split())

    def stream(self, count, no_stats=False, no_long_key_gat=False, no_delete_extra=False):
        self.no_stats = no_stats
        self.no_long_key_gat = no_long_key_gat
        self.no_delete_extra = no_delete_extra
        batches, n = [], 0
        while n < count:
            k = min(count - n, self.r.choice([1, 1, 1, 2, 3, 5]))
            batch = []
            for _ in range(k):
                cmd = self.command()
                if batch and self.drops_pipeline(cmd):
                    batches.append(batch)
                    batch = []
                batch.append(cmd)
            batches.append(batch)
            n += k
        return batches


# ----------------------------------------------------------------------------
# execution
# ----------------------------------------------------------------------------


class Side:
    """One server and one connection to it, plus what this side has shown."""

    def __init__(self, name, server):
        self.name = name
        self.server = server
        self.cas_seen = {}     # key -> [cas values in order seen]
        self.cas_label = {}    # cas value -> label
        self.sent = bytearray()  # everything sent, for the .bin reproduction file
        self.sock = None
        self.fence_reply = None

    def connect(self):
        if self.sock:
            self.sock.close()
        self.sock = socket.create_connection(("127.0.0.1", self.server.port), timeout=10)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.sock.sendall(FENCE)
        self.sent += FENCE
        line = b""
        while not line.endswith(b"\r\n"):
            chunk = self.sock.recv(4096)
            if not chunk:
                raise RuntimeError(f"{self.name}: connection closed before VERSION")
            line += chunk
        if not line.startswith(b"VERSION "):
            raise RuntimeError(f"{self.name}: bad reply to version: {line!r}")
        self.fence_reply = line
        self.sock.setblocking(False)

    def resolve(self, part):
        if isinstance(part, bytes):
            return part
        _, key, mode = part
        seen = self.cas_seen.get(key.encode("latin-1"), [])
        if mode == "latest" and seen:
            return seen[-1]
        if mode == "stale" and len(seen) > 1 and seen[0] != seen[-1]:
            return seen[0]
        return b"999999999999"  # never issued by either server in a short run

    def send(self, payload):
        self.sent += payload
        view = memoryview(payload)
        while view:
            try:
                n = self.sock.send(view)
                view = view[n:]
            except BlockingIOError:
                select.select([], [self.sock], [], 1.0)
            except OSError:
                return False  # peer closed; the reply records it
        return True

    def poll_chunk(self, timeout=0.05):
        """What the server sent within `timeout`: bytes, b"" once it closed,
        None if it sent nothing."""
        rd, _, _ = select.select([self.sock], [], [], timeout)
        if not rd:
            return None
        try:
            return self.sock.recv(1 << 20)
        except (ConnectionResetError, BlockingIOError):
            return b""

    def read_reply(self):
        """Read until the reply ends with this server's VERSION line."""
        buf = bytearray()
        refences = 0
        last = time.monotonic()
        while True:
            if buf.endswith(self.fence_reply):
                return bytes(buf)
            chunk = self.poll_chunk()
            if chunk == b"":
                return bytes(buf) + b"<closed>"
            if chunk:
                buf += chunk
                last = time.monotonic()
            elif time.monotonic() - last > QUIET:
                if refences >= MAX_REFENCE:
                    return bytes(buf) + b"<hung>"
                refences += 1
                buf += b"<refence>"
                self.send(FENCE)
                last = time.monotonic()

    def normalise(self, raw):
        """Reply bytes -> list of comparable tokens; records CAS uniques seen."""
        out, i = [], 0
        while i < len(raw):
            if raw.startswith(b"<", i):
                j = raw.find(b">", i)
                if j > 0 and raw[i:j + 1] in (b"<refence>", b"<closed>", b"<hung>"):
                    out.append(raw[i:j + 1])
                    i = j + 1
                    continue
            j = raw.find(b"\n", i)
            if j < 0:
                out.append(raw[i:])
                break
            line = raw[i:j + 1]
            i = j + 1
            if line.startswith(b"VALUE "):
                parts = line[:-2].split(b" ") if line.endswith(b"\r\n") else None
                if parts and len(parts) in (4, 5) and parts[3].isdigit():
                    n = int(parts[3])
                    data = raw[i:i + n + 2]
                    i += n + 2
                    if len(parts) == 5:
                        cas = parts[4]
                        seen = self.cas_seen.setdefault(parts[1], [])
                        if not seen or seen[-1] != cas:
                            seen.append(cas)
                        parts[4] = b"cas#%d" % self.cas_label.setdefault(cas, len(self.cas_label))
                    out.append(b" ".join(parts) + b"\r\n")
                    out.append(data)
                    continue
            if line.startswith(b"VERSION "):
                line = b"VERSION x\r\n"
            elif line.startswith(b"STAT "):
                p = line.split(b" ")
                if len(p) > 1 and p[1].startswith(b"larder_"):
                    continue  # larder's own figures, listed after memcached's (docs/observability.md)
                if len(p) > 1 and p[1] in FOLLOWS_1638:
                    continue  # where larder follows memcached 1.6.38 (docs/differences.md)
                line = b"STAT " + (p[1] if len(p) > 1 else b"") + b" *\r\n"
            out.append(line)
        return out


# STAT names memcached changed after 1.6.18, where larder follows the newer
# release (docs/differences.md): 1.6.34 renamed and moved
# slab_reassign_evictions_nomem to slab_reassign_busy_nomem; 1.6.40 added
# slab_reassign_last_busy_status; stats settings gained proxy_enabled,
# proxy_uring_enabled and client_flags_size. Dropped on both sides
# (tests/reference-1638 checks larder sends them).
FOLLOWS_1638 = {b"slab_reassign_evictions_nomem", b"slab_reassign_busy_nomem", b"slab_reassign_last_busy_status",
                b"proxy_enabled", b"proxy_uring_enabled", b"client_flags_size"}


def short(b, n=300):
    r = repr(bytes(b))
    return r if len(r) <= n else r[:n] + f"...<{len(b)} bytes>"


class Divergence(Exception):
    pass


def mentions(payload, key):
    return any(key in line.split(b" ")[1:] for line in payload.split(b"\n") if line[:1].isalpha())


def run_stream(batches, mc_bin, larder_bin, label, keep_going=False, verbose=False, save=True, trace=None,
               probe=None):
    """Send batches to both servers; return the list of divergence reports."""
    reports = []
    def server_args(binary):
        return SERVER_ARGS + LRU_THREADS_OFF

    with larder_servers.Server(mc_bin, server_args(mc_bin), name="memcached") as mcs, \
            larder_servers.Server(larder_bin, server_args(larder_bin), name="larder") as lds:
        sides = [Side("memcached", mcs), Side("larder", lds)]
        for s in sides:
            s.connect()
        history = []
        refences = 0
        for bi, batch in enumerate(batches):
            replies, tokens, sent = [], [], []
            for s in sides:
                payload = b"".join(s.resolve(p) for cmd in batch for p in cmd)
                if probe:  # look at the key after every batch: the divergence shows where it starts
                    payload += b"get " + probe + b"\r\n"
                payload += FENCE
                sent.append(payload)
                s.send(payload)
            for s in sides:
                raw = s.read_reply()
                replies.append(raw)
                tokens.append(s.normalise(raw))
            if trace and trace in sent[1]:
                print(f"trace batch {bi}: {short(sent[1], 400)}\n    memcached: {short(replies[0], 300)}"
                      f"\n    larder:    {short(replies[1], 300)}")
            history.append((bi, sent, replies))
            history = history[-4:]
            refences += sum(r.count(b"<refence>") for r in replies)
            if tokens[0] != tokens[1]:
                k = next((t for t in range(min(len(tokens[0]), len(tokens[1])))
                          if tokens[0][t] != tokens[1][t]), min(len(tokens[0]), len(tokens[1])))
                lines = [f"DIVERGENCE in {label}, batch {bi} of {len(batches)} (first differing reply token #{k}):"]
                for hbi, hsent, hrep in history:
                    tag = ">>" if hbi == bi else "  "
                    lines.append(f"{tag} batch {hbi} sent (to larder): {short(hsent[1], 600)}")
                    lines.append(f"{tag}    memcached: {short(hrep[0], 600)}")
                    lines.append(f"{tag}    larder:    {short(hrep[1], 600)}")
                a = tokens[0][k] if k < len(tokens[0]) else b"<nothing>"
                b = tokens[1][k] if k < len(tokens[1]) else b"<nothing>"
                lines.append(f"   first difference: memcached {short(a)} vs larder {short(b)}")
                reports.append("\n".join(lines))
                if not keep_going:
                    break
            if not lds.alive():
                reports.append(f"larder died in {label} at batch {bi}:\n{lds.log_text()}")
                break
            if any(r.endswith((b"<closed>", b"<hung>")) for r in replies):
                for s in sides:
                    s.connect()
        if reports and save:
            os.makedirs(OUT_DIR, exist_ok=True)
            base = os.path.join(OUT_DIR, label)
            with open(base + ".json", "w") as f:
                json.dump({"label": label, "batches": encode_batches(batches)}, f)
            with open(base + ".larder.bin", "wb") as f:
                f.write(sides[1].sent)
            reports.append(f"stream saved: {base}.json (--replay), {base}.larder.bin (raw bytes sent to larder)")
        if verbose:
            print(f"{label}: {len(batches)} batches, {sum(len(b) for b in batches)} commands, "
                  f"{refences} refence(s), {len(reports)} divergence report(s)")
    return reports


def encode_batches(batches):
    def enc(p):
        return {"b": p.decode("latin-1")} if isinstance(p, bytes) else {"cas": p[1:]}
    return [[[enc(p) for p in cmd] for cmd in batch] for batch in batches]


def decode_batches(data):
    def dec(p):
        return p["b"].encode("latin-1") if "b" in p else ["cas"] + p["cas"]
    return [[[dec(p) for p in cmd] for cmd in batch] for batch in data]


def parse_seeds(spec):
    seeds = []
    for part in spec.split(","):
        if "-" in part:
            a, b = part.split("-")
            seeds += range(int(a), int(b) + 1)
        else:
            seeds.append(int(part))
    return seeds


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seed", type=int, help="one seed")
    ap.add_argument("--seeds", help="several seeds: 1-10 or 1,5,9")
    ap.add_argument("--count", type=int, default=3000, help="commands per stream (default 3000)")
    ap.add_argument("--replay", help="replay a saved stream (.json)")
    ap.add_argument("--larder", default=larder_servers.larder_bin(), help="larder binary ($LARDER_BIN)")
    ap.add_argument("--memcached", default=larder_servers.MEMCACHED_BIN, help="reference binary")
    ap.add_argument("--keep-going", action="store_true", help="report every divergence, not just the first")
    ap.add_argument("--no-stats", action="store_true", help="never send stats")
    ap.add_argument("--no-long-key-gat", action="store_true",
                    help="no key over 250 bytes in gat/gats (memcached touches the keys before it)")
    ap.add_argument("--no-delete-extra", action="store_true",
                    help="no delete with tokens after the key but `0`/`noreply`")
    ap.add_argument("--print", action="store_true", help="print the stream instead of running it")
    ap.add_argument("--trace", help="print every batch that names this key, with both replies")
    ap.add_argument("--probe", help="send `get KEY` after every batch (finds where a key's state diverges)")
    args = ap.parse_args(argv)

    if args.replay:
        with open(args.replay) as f:
            data = json.load(f)
        jobs = [(data["label"] + "-replay", decode_batches(data["batches"]))]
    else:
        seeds = parse_seeds(args.seeds) if args.seeds else [args.seed if args.seed is not None else 1]
        jobs = [(f"seed-{s}", Gen(s).stream(args.count, args.no_stats, args.no_long_key_gat,
                                                    args.no_delete_extra)) for s in seeds]
    if args.print:
        for label, batches in jobs:
            for batch in batches:
                for cmd in batch:
                    print(short(b"".join(p if isinstance(p, bytes) else b"<cas>" for p in cmd), 200))
        return 0
    failed = 0
    for label, batches in jobs:
        t0 = time.monotonic()
        reports = run_stream(batches, args.memcached, args.larder, label, keep_going=args.keep_going,
                             trace=args.trace.encode() if args.trace else None,
                             probe=args.probe.encode() if args.probe else None)
        status = "FAIL" if reports else "ok"
        print(f"{label}: {sum(len(b) for b in batches)} commands, {status} ({time.monotonic() - t0:.1f}s)")
        for r in reports:
            print(r)
        failed += bool(reports)
    print(f"{len(jobs) - failed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
