"""A soak worker process: writer threads that own keys, reader threads that
check every reply against the writers' histories (model.py).

Keys are named ck/<process>/<writer>/<kind><n>; kinds:

    p  plain values, 1 byte - 60 KiB, some right around the segment size
    t  values with a TTL of 2-10 s (set, touch, gat)
    a  append chains (segments of 40-200 bytes, up to 30)
    n  counters (incr/decr)
    s  stale-while-revalidate keys (meta: ms, md I, mg N30; W/X/Z flags)
    m  64 KiB - 2 MiB values (one writer per process)
    h  8-16 MiB values (one writer in process 0, in bursts)

Each request goes over text, meta or binary, plain TCP or TLS, chosen at
random per request. Results go to a pickle file the controller reads.
"""

import os
import pickle
import sys
import random
import threading
import time
import traceback
from collections import Counter
from functools import lru_cache

import events as ev
import model
import proto
from model import INF, CLOCK_SLACK
from proto import ConnLost, ProtocolError, Timeout
from values import append_value, describe, flags_of, make_value, seg_len

MAX_VIOLATION_SAMPLES = 40


class Stop(Exception):
    pass


class Ctx:
    def __init__(self, cfg, events, counters):
        self.cfg = cfg
        self.proc = cfg["proc"]
        self.ports = cfg["ports"]
        self.deadline = cfg["deadline"]
        self.start = cfg["start"]
        self.hard_deadline = cfg["deadline"] + cfg.get("audit_allowance", 90)
        self.seg = cfg["segment_size"]
        self.events = events
        self.counters = counters
        self.lock = threading.Lock()
        self.requests = Counter()
        self.counts = Counter()
        self.violations = Counter()
        self.samples = []
        self.misses = []
        self.disconnects = []
        self.unreachable = []
        self.w_seen = {}
        self._ev_cache = (0.0, [], [])
        self.keys = []

    def violation(self, kind, msg):
        with self.lock:
            self.violations[kind] += 1
            if sum(1 for s in self.samples if s[0] == kind) < MAX_VIOLATION_SAMPLES:
                self.samples.append((kind, time.monotonic(), msg))

    def count(self, what, n=1):
        with self.lock:
            self.counts[what] += n

    def merge_requests(self, c):
        with self.lock:
            self.requests.update(c)

    def ev_snapshot(self):
        """(flushes, lives) at most 0.2 s old."""
        t, fl, lives = self._ev_cache
        now = time.monotonic()
        if now - t > 0.2:
            rows = self.events.all()
            fl = [r for r in rows if int(r[0]) == ev.FLUSH]
            lives = [r for r in rows if int(r[0]) == ev.LIFE]
            self._ev_cache = (now, fl, lives)
        return fl, lives


@lru_cache(maxsize=4096)
def _small_value(key, ver, length):
    return make_value(key, ver, length)


def value_of(key, ver, length):
    if length <= 8192:
        return _small_value(key, ver, length)
    return make_value(key, ver, length)


@lru_cache(maxsize=2048)
def _append_value(key, base, n):
    return append_value(key, base, n)


def state_matches(key, state, value, flags):
    kind = state[0]
    if kind in ("v", "x"):
        _, ver, length = state
        if len(value) != length or (flags is not None and flags != flags_of(key, ver)):
            return False
        return value == value_of(key, ver, length)
    if kind == "a":
        _, base, n = state
        if flags is not None and flags != flags_of(key, base):
            return False
        return value == _append_value(key, base, n)
    if kind == "n":
        _, num, base = state
        if flags is not None and flags != flags_of(key, base):
            return False
        # memcached pads a shrinking decr in place with spaces
        return value.rstrip(b" ") == b"%d" % num
    return False


def describe_state(s):
    if s is None:
        return "absent"
    return "%s%s" % (s[0], s[1:])


class Checker:
    """Judging replies against a key's history; shared by all threads."""

    def __init__(self, ctx):
        self.ctx = ctx

    def hit(self, k, value, flags, t0, t1, via, exclude=None, xflag=None, wflag=False):
        ctx = self.ctx
        ctx.count("checked_hits")
        cands = k.candidates(t0, t1, exclude)
        matched = [(s, o) for s, o in cands if s is not None and state_matches(k.name, s, value, flags)]
        if not matched:
            ctx.violation("wrong_value", "%s %s over [%.3f, %.3f] s: got %s, flags %s; allowed: %s" % (
                via, k.name.decode(), t0 - ctx.start, t1 - ctx.start, describe(value), flags,
                ", ".join("%s(%s)" % (describe_state(s), o.status if o else "-") for s, o in cands)))
            return None
        ops = [o for _, o in matched if o is not None]
        flushes, lives = ctx.ev_snapshot()
        # a value written before a flush that finished before the read began
        if ops and all(o.ack is not None and o.status == "acked" for o in ops):
            last_ack = max(o.ack for o in ops)
            for f in flushes:
                if f[1] > last_ack and f[2] < t0:
                    ctx.violation("flushed_value", "%s %s: %s written (acked %.3f) before flush_all sent %.3f acked %.3f, read at %.3f" % (
                        via, k.name.decode(), describe_state(matched[0][0]), last_ack - ctx.start, f[1] - ctx.start,
                        f[2] - ctx.start, t0 - ctx.start))
                    break
        # a value served after it must have expired (grace may keep it a while)
        exp_ub = max((o.exp_ub for o in ops), default=INF)
        if exp_ub < INF and t0 > exp_ub + 1.0:
            grace = 0.0
            for life in lives:
                if life[1] <= t1:
                    grace = life[3]
            if t0 > exp_ub + 1.0 + (grace + 2.0 if grace else 0.0) and via not in ("gat",):
                ctx.violation("expired_value", "%s %s: %s must have expired by %.3f, read at %.3f (grace %gs)" % (
                    via, k.name.decode(), describe_state(matched[0][0]), exp_ub - ctx.start, t0 - ctx.start, grace))
        # stale-while-revalidate: X exactly on invalidated values
        if xflag is not None:
            kinds = {s[0] for s, _ in matched}
            if xflag and kinds == {"v"}:
                ctx.violation("swr_flags", "%s %s: X (stale) on a value never invalidated: %s" % (via, k.name.decode(), describe_state(matched[0][0])))
            if not xflag and kinds == {"x"}:
                ctx.violation("swr_flags", "%s %s: invalidated value served without X: %s" % (via, k.name.decode(), describe_state(matched[0][0])))
            if wflag and kinds == {"x"} and len({id(o) for o in ops}) == 1:
                # exactly one W per invalidation
                epoch = ops[0]
                if epoch.status == "acked" and epoch.ack is not None and epoch.ack <= t0:
                    with ctx.lock:
                        prev = ctx.w_seen.get(id(epoch))
                        if prev is None:
                            if len(ctx.w_seen) > 20000:
                                # invalidations older than any read still running
                                ctx.w_seen = {i: v for i, v in ctx.w_seen.items() if v[1] > t0 - 120}
                            ctx.w_seen[id(epoch)] = (epoch, t0)
                    if prev is not None:
                        ctx.violation("swr_flags", "%s %s: a second W for one invalidation (first at %.3f, again at %.3f)" % (via, k.name.decode(), prev[1] - ctx.start, t0 - ctx.start))
        return matched

    def miss(self, k, t0, t1, via, exclude=None):
        ctx = self.ctx
        ctx.count("checked_misses")
        cands = k.candidates(t0, t1, exclude)
        absent = [o for s, o in cands if s is None]
        if absent:
            o = absent[0]
            if o is None:
                why = "never_written"
            elif o.status == "failed":
                why = "failed_write"
            else:
                why = "deleted"
            ctx.count("miss:" + why)
            return
        with ctx.lock:
            ctx.misses.append(model.miss_record(k.name, cands, t0, t1, via))

    def present(self, k, t0, t1, via, exclude=None):
        """The server said the key exists (add NOT_STORED)."""
        cands = k.candidates(t0, t1, exclude)
        if all(s is None for s, _ in cands):
            self.ctx.violation("resurrected", "%s %s over [%.3f, %.3f] s: the server says it exists; allowed only: absent" % (
                via, k.name.decode(), t0 - self.ctx.start, t1 - self.ctx.start))


class Client:
    """A thread's connections: (family, tls) -> Conn, family text|bin."""

    def __init__(self, ctx):
        self.ctx = ctx
        self.conns = {}

    def get(self, family, tls):
        c = self.conns.get((family, tls))
        if c is None:
            c = self.connect(tls)
            self.conns[(family, tls)] = c
        return c

    def connect(self, tls):
        ctx = self.ctx
        first_fail = None
        while True:
            try:
                c = proto.Conn(ctx.ports, tls, ctx.counters)
                if first_fail is not None:
                    with ctx.lock:
                        ctx.unreachable.append((first_fail, time.monotonic(), last))
                return c
            except ConnLost as e:
                last = str(e)
                if first_fail is None:
                    first_fail = time.monotonic()
                if time.monotonic() > ctx.hard_deadline or ctx.events.abort.value:
                    raise Stop()
                time.sleep(0.05)

    def drop(self, family, tls, err=None, via=""):
        c = self.conns.pop((family, tls), None)
        lport = 0
        opened = time.monotonic()
        if c is not None:
            lport = c.lport
            opened = c.opened
            c.close()
        if err is not None:
            t = time.monotonic()
            where = "%s%s connection (local port %d)%s" % ("TLS " if tls else "", family, lport, (", " + via) if via else "")
            if isinstance(err, Timeout):
                self.ctx.violation("hang", "no reply within %gs on a %s: %s" % (proto.TIMEOUT, where, err))
            elif isinstance(err, ProtocolError):
                self.ctx.violation("protocol", "%s: %s" % (where, err))
            else:
                with self.ctx.lock:
                    self.ctx.disconnects.append((t, "%s: %s" % (where, err), lport, opened))

    def close(self):
        for c in self.conns.values():
            c.close()
        self.conns.clear()


def pick_proto(rng):
    r = rng.random()
    fam = "text" if r < 0.45 else ("meta" if r < 0.75 else "bin")
    return fam, rng.random() < 0.25


def conn_family(fam):
    return "bin" if fam == "bin" else "text"


class Writer(threading.Thread):
    def __init__(self, ctx, wid, keys, rng, lock):
        super().__init__(daemon=True, name="writer-%d-%d" % (ctx.proc, wid))
        self.ctx = ctx
        self.wid = wid
        self.keys = keys
        self.rng = rng
        self.lock = lock
        self.cl = Client(ctx)
        self.chk = Checker(ctx)
        self.requests = Counter()
        self.ver = 0
        self.burst = None

    def next_ver(self):
        self.ver += 1
        return self.ver

    def length_for(self, k):
        rng = self.rng
        kind = k.kind
        if kind == "p":
            r = rng.random()
            if r < 0.5:
                return rng.randint(1, 100)
            if r < 0.8:
                return rng.randint(100, 1000)
            if r < 0.95:
                return rng.randint(1000, 8000)
            if r < 0.98:
                return max(1, self.ctx.seg + rng.randint(-300, 300))
            return rng.randint(8000, 60000)
        if kind == "t":
            return rng.randint(1, 2000)
        if kind == "s":
            return rng.randint(10, 3000)
        if kind == "m":
            r = rng.random()
            if r < 0.1:
                return rng.choice([1 << 20, (1 << 20) + 1, (1 << 20) - 1, 2 << 20, 65536, 65537])
            return int(2 ** rng.uniform(16, 21))
        if kind == "h":
            return rng.randint(8 << 20, 16 << 20)
        raise ValueError(kind)

    # -- plumbing

    def run(self):
        ctx = self.ctx
        try:
            for k in self.keys:
                if time.monotonic() > ctx.deadline:
                    break
                if k.kind == "h":
                    continue
                self.write_abs(k)
            while time.monotonic() < ctx.deadline and not ctx.events.abort.value:
                k = self.rng.choice(self.keys)
                self.step(k)
        except Stop:
            pass
        except Exception:
            ctx.violation("soak_bug", "writer %s: %s" % (self.name, traceback.format_exc()))
        finally:
            self.cl.close()
            ctx.merge_requests(self.requests)

    def send(self, fam, tls, fn):
        """Run fn(conn) -> reply; ('lost', err) if the connection broke."""
        c = self.cl.get(conn_family(fam), tls)
        try:
            return fn(c)
        except (ConnLost, ProtocolError) as e:
            self.cl.drop(conn_family(fam), tls, e, "writer %s" % fam)
            return ("lost", e)

    def req(self, fam, tls, what):
        self.requests["%s%s.%s" % ("tls:" if tls else "", fam, what)] += 1

    def step(self, k):
        rng = self.rng
        kind = k.kind
        if not k.certain:
            return self.write_abs(k)
        if kind == "h":
            return self.huge_step(k)
        r = rng.random()
        if rng.random() < 0.003 and kind in ("p", "m"):
            return self.truncated_write(k)
        if kind == "p" or kind == "m":
            if k.believed is None:
                return self.add(k) if r < 0.7 else self.write_abs(k)
            if r < 0.55:
                return self.write_abs(k)
            if r < 0.8:
                return self.cas(k)
            if r < 0.9:
                return self.delete(k)
            return self.self_read(k)
        if kind == "t":
            if k.believed is None or r < 0.45:
                return self.write_abs(k)
            if r < 0.7:
                return self.touch(k)
            if r < 0.9:
                return self.gat(k)
            return self.delete(k)
        if kind == "a":
            if k.believed is None or k.believed[0] != "a" or k.believed[2] >= 30 or r < 0.1:
                return self.write_abs(k)
            return self.append(k)
        if kind == "n":
            if k.believed is None or k.believed[0] != "n" or r < 0.05:
                return self.write_abs(k)
            return self.arith(k)
        if kind == "s":
            return self.swr_step(k)

    # -- absolute writes

    def write_abs(self, k, fam=None, tls=None, cmd="set"):
        rng = self.rng
        ctx = self.ctx
        if fam is None:
            fam, tls = pick_proto(rng)
        if k.kind == "s":
            fam = "meta"
        ver = self.next_ver()
        name = k.name
        if k.kind == "a":
            data = _append_value(name, ver, 1)
            flags = flags_of(name, ver)
            state = ("a", ver, 1)
        elif k.kind == "n":
            num = ver * 1000
            data = b"%d" % num
            flags = flags_of(name, ver)
            state = ("n", num, ver)
        else:
            length = self.length_for(k)
            data = value_of(name, ver, length)
            flags = flags_of(name, ver)
            state = ("v", ver, length)
        ttl = rng.randint(2, 10) if k.kind == "t" else 0
        sent = time.monotonic()
        exp = (sent + ttl - CLOCK_SLACK, INF) if ttl else (INF, INF)
        if cmd == "add":
            what = "add"
        else:
            what = "set"
        op = k.begin(state, sent, exp, what)
        self.req(fam, tls, what)
        if fam == "text":
            r = self.send(fam, tls, lambda c: proto.text_store(c, what.encode(), name, flags, ttl, data))
        elif fam == "meta":
            mode = b"E" if what == "add" else None
            r = self.send(fam, tls, lambda c: proto.meta_set(c, name, data, flags, ttl, mode=mode))
        else:
            bop = proto.OP_ADD if what == "add" else proto.OP_SET
            r = self.send(fam, tls, lambda c: proto.bin_store(c, bop, name, flags, ttl, data))
        ack = time.monotonic()
        if isinstance(r, tuple):
            k.end(op, "uncertain", ack)
            return
        if r == "stored":
            if ttl:
                op.exp_ub = ack + ttl + CLOCK_SLACK
            k.end(op, "acked", ack)
        elif r == "oom":
            ctx.count("store_refused_oom")
            k.end(op, "failed", ack)
        elif r == "not_stored" and what == "add":
            k.end(op, "noop", ack)
            self.chk.present(k, sent, ack, "%s add" % fam, exclude=op)
        else:
            k.end(op, "noop", ack)
            ctx.violation("unexpected_reply", "%s %s %s: %s" % (fam, what, name.decode(), r))

    def add(self, k):
        return self.write_abs(k, cmd="add")

    def truncated_write(self, k):
        """A client killed halfway through sending a value: the version it
        carried must never be seen (it is recorded nowhere as written)."""
        ctx = self.ctx
        ver = self.next_ver()
        length = self.length_for(k)
        data = value_of(k.name, ver, length)
        fam, tls = pick_proto(self.rng)
        cut = self.rng.randint(0, max(0, length - 1))
        if fam == "bin":
            req = proto.bin_req(proto.OP_SET, k.name, proto.struct.pack(">II", flags_of(k.name, ver), 0), data)
            head = len(req) - length
        elif fam == "meta":
            req = b"ms %s %d F%d T0\r\n%s\r\n" % (k.name, length, flags_of(k.name, ver), data)
            head = req.index(b"\r\n") + 2
        else:
            req = b"set %s %d 0 %d\r\n%s\r\n" % (k.name, flags_of(k.name, ver), length, data)
            head = req.index(b"\r\n") + 2
        try:
            c = proto.Conn(ctx.ports, tls, ctx.counters)
        except ConnLost:
            return
        try:
            c.send(req[:head + cut])
            time.sleep(self.rng.random() * 0.01)
        except ConnLost:
            pass
        c.abort()
        ctx.count("fault:truncated_write")

    # -- read-modify-write and friends

    def observe_read(self, fam, tls, k, via, exclude=None, cas=False, touch=None):
        """One read by the writer itself; returns (hit, flags, value, cas)."""
        name = k.name
        t0 = time.monotonic()
        self.req(fam, tls, via)
        if fam == "text":
            if touch is not None:
                r = self.send(fam, tls, lambda c: proto.text_get(c, [name], b"gats" if cas else b"gat", exp=touch))
            else:
                r = self.send(fam, tls, lambda c: proto.text_get(c, [name], b"gets" if cas else b"get"))
            t1 = time.monotonic()
            if isinstance(r, tuple):
                return ("lost", t0, t1)
            if r == "oom":
                return ("oom", t0, t1)
            if name in r:
                f, v, cs = r[name]
                return ("hit", f, v, cs, t0, t1)
            return ("miss", t0, t1)
        if fam == "meta":
            fl = b"v f c" + (b" T%d" % touch if touch is not None else b"")
            r = self.send(fam, tls, lambda c: proto.meta_get(c, name, fl))
            t1 = time.monotonic()
            if r[0] == "lost":
                return ("lost", t0, t1)
            if r[0] == "oom":
                return ("oom", t0, t1)
            if r[0] == "miss":
                return ("miss", t0, t1)
            f = r[2]
            return ("hit", int(f.get(b"f", b"0")), r[1], int(f.get(b"c", b"0")), t0, t1)
        op = proto.OP_GAT if touch is not None else proto.OP_GET
        r = self.send(fam, tls, lambda c: proto.bin_get(c, name, op, touch))
        t1 = time.monotonic()
        if r[0] == "lost":
            return ("lost", t0, t1)
        if r[0] in ("oom", "miss"):
            return (r[0], t0, t1)
        return ("hit", r[1], r[2], r[3], t0, t1)

    def self_read(self, k):
        fam, tls = pick_proto(self.rng)
        r = self.observe_read(fam, tls, k, "get")
        if r[0] == "hit":
            self.chk.hit(k, r[2], r[1], r[4], r[5], "%s get" % fam)
        elif r[0] == "miss":
            self.chk.miss(k, r[1], r[2], "%s get" % fam)

    def cas(self, k):
        ctx = self.ctx
        fam, tls = pick_proto(self.rng)
        r = self.observe_read(fam, tls, k, "gets", cas=True)
        if r[0] == "miss":
            self.chk.miss(k, r[1], r[2], "%s gets" % fam)
            return
        if r[0] != "hit":
            return
        _, flags, value, casid, t0, t1 = r
        m = self.chk.hit(k, value, flags, t0, t1, "%s gets" % fam)
        if not m or m[0][0] != k.believed:
            return self.write_abs(k)
        name = k.name
        ver = self.next_ver()
        length = self.length_for(k)
        data = value_of(name, ver, length)
        nflags = flags_of(name, ver)
        sent = time.monotonic()
        op = k.begin(("v", ver, length), sent, (INF, INF), "cas")
        self.req(fam, tls, "cas")
        if fam == "text":
            rr = self.send(fam, tls, lambda c: proto.text_store(c, b"cas", name, nflags, 0, data, cas=casid))
        elif fam == "meta":
            rr = self.send(fam, tls, lambda c: proto.meta_set(c, name, data, nflags, 0, cas=casid))
        else:
            rr = self.send(fam, tls, lambda c: proto.bin_store(c, proto.OP_SET, name, nflags, 0, data, cas=casid))
        ack = time.monotonic()
        if isinstance(rr, tuple):
            k.end(op, "uncertain", ack)
        elif rr == "stored":
            k.end(op, "acked", ack)
        elif rr == "oom":
            ctx.count("store_refused_oom")
            k.end(op, "failed", ack)
        elif rr == "not_found":
            k.end(op, "noop", ack)
            self.chk.miss(k, t0, ack, "%s cas NOT_FOUND" % fam, exclude=op)
        elif rr == "exists":
            k.end(op, "noop", ack)
            ctx.violation("cas_exists", "%s cas %s: EXISTS, but only this writer writes it and its gets (cas %d) showed its last version %s" % (
                fam, name.decode(), casid, describe_state(k.believed)))
        else:
            k.end(op, "noop", ack)
            ctx.violation("unexpected_reply", "%s cas %s: %s" % (fam, name.decode(), rr))

    def delete(self, k):
        fam, tls = pick_proto(self.rng)
        if k.kind == "s":
            fam = "meta"
        name = k.name
        sent = time.monotonic()
        op = k.begin(None, sent, (INF, INF), "delete")
        self.req(fam, tls, "delete")
        if fam == "text":
            r = self.send(fam, tls, lambda c: proto.text_simple(c, b"delete " + name, (b"DELETED", b"NOT_FOUND")))
            r = {b"DELETED": "deleted", b"NOT_FOUND": "not_found"}.get(r, r)
        elif fam == "meta":
            r = self.send(fam, tls, lambda c: proto.meta_delete(c, name))
        else:
            r = self.send(fam, tls, lambda c: proto.bin_delete(c, name))
        ack = time.monotonic()
        if isinstance(r, tuple):
            k.end(op, "uncertain", ack)
            return
        k.end(op, "acked", ack)
        if r == "not_found":
            self.chk.miss(k, sent, ack, "%s delete NOT_FOUND" % fam, exclude=op)
        elif r != "deleted":
            self.ctx.violation("unexpected_reply", "%s delete %s: %s" % (fam, name.decode(), r))

    def touch(self, k):
        fam, tls = pick_proto(self.rng)
        name = k.name
        ttl = self.rng.randint(2, 10)
        sent = time.monotonic()
        op = k.begin(k.believed, sent, (sent + ttl - CLOCK_SLACK, INF), "touch")
        self.req(fam, tls, "touch")
        if fam == "text":
            r = self.send(fam, tls, lambda c: proto.text_simple(c, b"touch %s %d" % (name, ttl), (b"TOUCHED", b"NOT_FOUND")))
            r = {b"TOUCHED": "touched", b"NOT_FOUND": "not_found"}.get(r, r)
        elif fam == "meta":
            r = self.send(fam, tls, lambda c: proto.meta_get(c, name, b"T%d" % ttl))
            if not (isinstance(r, tuple) and r[0] == "lost"):
                r = {"hit": "touched", "miss": "not_found"}.get(r[0], r)
        else:
            r = self.send(fam, tls, lambda c: proto.bin_touch(c, name, ttl))
        ack = time.monotonic()
        if isinstance(r, tuple):
            k.end(op, "uncertain", ack)
        elif r == "touched":
            op.exp_ub = ack + ttl + CLOCK_SLACK
            k.end(op, "acked", ack)
        elif r == "not_found":
            k.end(op, "noop", ack)
            self.chk.miss(k, sent, ack, "%s touch NOT_FOUND" % fam, exclude=op)
        else:
            k.end(op, "noop", ack)
            self.ctx.violation("unexpected_reply", "%s touch %s: %r" % (fam, name.decode(), r))

    def gat(self, k):
        fam, tls = pick_proto(self.rng)
        ttl = self.rng.randint(2, 10)
        sent = time.monotonic()
        op = k.begin(k.believed, sent, (sent + ttl - CLOCK_SLACK, INF), "gat")
        r = self.observe_read(fam, tls, k, "gat", touch=ttl)
        ack = time.monotonic()
        if r[0] == "hit":
            m = self.chk.hit(k, r[2], r[1], sent, ack, "gat", exclude=op)
            if m:
                op.state = m[0][0]
            op.exp_ub = ack + ttl + CLOCK_SLACK
            k.end(op, "acked" if m else "uncertain", ack)
        elif r[0] == "miss":
            k.end(op, "noop", ack)
            self.chk.miss(k, sent, ack, "%s gat" % fam, exclude=op)
        else:
            k.end(op, "uncertain", ack)

    def append(self, k):
        fam, tls = pick_proto(self.rng)
        name = k.name
        _, base, n = k.believed
        seg = make_value(name, (base << 16) | n, seg_len(name, base, n))
        sent = time.monotonic()
        op = k.begin(("a", base, n + 1), sent, k.exp, "append")
        self.req(fam, tls, "append")
        if fam == "text":
            r = self.send(fam, tls, lambda c: proto.text_store(c, b"append", name, 0, 0, seg))
        elif fam == "meta":
            r = self.send(fam, tls, lambda c: proto.meta_set(c, name, seg, 0, 0, mode=b"A"))
        else:
            r = self.send(fam, tls, lambda c: proto.bin_store(c, proto.OP_APPEND, name, 0, 0, seg))
        ack = time.monotonic()
        if isinstance(r, tuple):
            k.end(op, "uncertain", ack)
        elif r == "stored":
            k.end(op, "acked", ack)
        elif r == "oom":
            self.ctx.count("store_refused_oom")
            k.end(op, "failed", ack)
        elif r in ("not_stored", "not_found"):
            k.end(op, "noop", ack)
            self.chk.miss(k, sent, ack, "%s append NOT_STORED" % fam, exclude=op)
        else:
            k.end(op, "noop", ack)
            self.ctx.violation("unexpected_reply", "%s append %s: %s" % (fam, name.decode(), r))

    def arith(self, k):
        fam, tls = pick_proto(self.rng)
        name = k.name
        _, num, base = k.believed
        d = self.rng.randint(1, 1000)
        decr = self.rng.random() < 0.3
        expect = max(0, num - d) if decr else num + d
        sent = time.monotonic()
        op = k.begin(("n", expect, base), sent, k.exp, "decr" if decr else "incr")
        self.req(fam, tls, "decr" if decr else "incr")
        if fam == "text":
            r = self.send(fam, tls, lambda c: proto.text_arith(c, b"decr" if decr else b"incr", name, d))
        elif fam == "meta":
            r = self.send(fam, tls, lambda c: proto.meta_arith(c, name, d, decr))
        else:
            r = self.send(fam, tls, lambda c: proto.bin_arith(c, name, d, decr))
        ack = time.monotonic()
        if isinstance(r, tuple):
            k.end(op, "uncertain", ack)
        elif r is None:
            k.end(op, "noop", ack)
            self.chk.miss(k, sent, ack, "%s %s NOT_FOUND" % (fam, "decr" if decr else "incr"), exclude=op)
        elif r == "oom":
            self.ctx.count("store_refused_oom")
            k.end(op, "failed", ack)
        else:
            if r != expect:
                # what could it have been applied to?
                cands = k.candidates(sent, ack, op)
                ok = any(s is not None and s[0] == "n" and (max(0, s[1] - d) if decr else s[1] + d) == r for s, _ in cands)
                if not ok:
                    self.ctx.violation("wrong_value", "%s %s %s by %d: got %d, expected %d (from %d)" % (
                        fam, "decr" if decr else "incr", name.decode(), d, r, expect, num))
                op.state = ("n", r, base)
            k.end(op, "acked", ack)

    # -- stale-while-revalidate

    def swr_step(self, k):
        """Owner of a stale-while-revalidate key: write, invalidate with
        `md k I T30`, then take the recompute token with `mg k v c N30` and
        write the fresh value (or just write it when a reader holds W)."""
        ctx = self.ctx
        tls = self.rng.random() < 0.25
        name = k.name
        b = k.believed
        if b is None or b[0] == "v" and self.rng.random() < 0.5:
            if b is None or self.rng.random() < 0.3:
                return self.write_abs(k)
            # invalidate
            sent = time.monotonic()
            op = k.begin(("x", b[1], b[2]), sent, (sent + 30 - CLOCK_SLACK, INF), "md I")
            op.since = k.abs_since
            self.req("meta", tls, "md_invalidate")
            r = self.send("meta", tls, lambda c: proto.meta_delete(c, name, b" I T30"))
            ack = time.monotonic()
            if isinstance(r, tuple):
                k.end(op, "uncertain", ack)
            elif r == "deleted":
                op.exp_ub = ack + 30 + CLOCK_SLACK
                k.end(op, "acked", ack)
            elif r == "not_found":
                k.end(op, "noop", ack)
                self.chk.miss(k, sent, ack, "md I NOT_FOUND", exclude=op)
            else:
                k.end(op, "noop", ack)
                ctx.violation("unexpected_reply", "md %s I: %s" % (name.decode(), r))
            return
        if b[0] == "x":
            t0 = time.monotonic()
            self.req("meta", tls, "mg_N")
            r = self.send("meta", tls, lambda c: proto.meta_get(c, name, b"s v f c t N30"))
            t1 = time.monotonic()
            if r[0] == "hit":
                f = r[2]
                if r[1] == b"":
                    self.chk.miss(k, t0, t1, "mg N30 (vivified)")
                else:
                    self.chk.hit(k, r[1], int(f.get(b"f", b"0")), t0, t1, "mg N30", xflag=b"X" in f, wflag=b"W" in f)
                    ctx.count("swr_owner_" + ("won" if b"W" in f else "lost" if b"Z" in f else "plain"))
            elif r[0] == "miss":
                ctx.violation("protocol", "mg %s N30 answered EN (vivify must not miss)" % name.decode())
            return self.write_abs(k, "meta", tls)
        return self.write_abs(k)

    # -- 8-16 MiB values, in bursts

    def huge_step(self, k):
        ctx = self.ctx
        now = time.monotonic()
        # bursts: write the huge keys for ~6 s out of every ~25 s, then delete them
        phase = (now - ctx.cfg["start"]) % 25.0
        if phase < 6.0:
            self.write_abs(k)
        elif k.believed is not None or not k.certain:
            self.delete(k)
        else:
            time.sleep(0.2)
            self.self_read(k)


class Reader(threading.Thread):
    def __init__(self, ctx, rid, rng):
        super().__init__(daemon=True, name="reader-%d-%d" % (ctx.proc, rid))
        self.ctx = ctx
        self.rng = rng
        self.cl = Client(ctx)
        self.chk = Checker(ctx)
        self.requests = Counter()
        self.plain_keys = [k for k in ctx.keys if k.kind != "s"]
        self.swr_keys = [k for k in ctx.keys if k.kind == "s"]
        self.by_name = {k.name: k for k in ctx.keys}

    def req(self, fam, tls, what):
        self.requests["%s%s.%s" % ("tls:" if tls else "", fam, what)] += 1

    def run(self):
        ctx = self.ctx
        try:
            while time.monotonic() < ctx.deadline and not ctx.events.abort.value:
                self.step()
        except Stop:
            pass
        except Exception:
            ctx.violation("soak_bug", "reader %s: %s" % (self.name, traceback.format_exc()))
        finally:
            self.cl.close()
            ctx.merge_requests(self.requests)

    def pick(self, n):
        return [self.rng.choice(self.plain_keys) for _ in range(n)]

    def step(self):
        rng = self.rng
        r = rng.random()
        tls = rng.random() < 0.25
        if r < 0.3:
            n = rng.choice([1, 1, 2, 5, 10, 20, 50, 100]) if rng.random() < 0.5 else rng.randint(1, 100)
            self.text_multi(self.pick(n), tls, b"gets" if rng.random() < 0.3 else b"get")
        elif r < 0.5:
            self.meta_multi(self.pick(rng.randint(1, 20)), tls)
        elif r < 0.65:
            self.bin_multi(self.pick(rng.randint(1, 50)), tls)
        elif r < 0.75:
            self.bin_single(self.pick(1)[0], tls)
        elif r < 0.93:
            self.swr_read(rng.choice(self.swr_keys), tls)
        elif r < 0.995:
            self.meta_single(self.pick(1)[0], tls)
        else:
            self.abandoned_read(tls)

    def _judge(self, keys, got, t0, t1, via, has_flags=True):
        seen = set()
        for k in keys:
            if k.name in seen:
                continue
            seen.add(k.name)
            hit = got.get(k.name)
            if hit is None:
                self.chk.miss(k, t0, t1, via)
            else:
                self.chk.hit(k, hit[1], hit[0] if has_flags else None, t0, t1, via)

    def _ask(self, fam, conn, tls, label, fetch):
        """One timed read: counts a `fam` request labelled `label`, runs
        fetch(the `conn` family's connection); (reply, t0, t1), or None when
        the connection was lost or the reply broke the protocol (the
        connection is dropped, in the caller's name)."""
        t0 = time.monotonic()
        self.req(fam, tls, label)
        try:
            got = fetch(self.cl.get(conn, tls))
        except (ConnLost, ProtocolError) as e:
            self.cl.drop(conn, tls, e, sys._getframe(1).f_code.co_name)
            return None
        return got, t0, time.monotonic()

    def _judge_many(self, keys, asked, via):
        """A multi-key read's reply ({key: (flags, value)} or "oom") judged."""
        if asked is None:
            return
        got, t0, t1 = asked
        if got == "oom":
            self.ctx.count("read_refused_oom")
            return
        self._judge(keys, got, t0, t1, via)

    def text_multi(self, keys, tls, cmd):
        label = "%s[%d]" % (cmd.decode(), 1 if len(keys) == 1 else 100 if len(keys) > 20 else 20)

        def fetch(c):
            got = proto.text_get(c, [k.name for k in keys], cmd)
            return got if got == "oom" else {k: (v[0], v[1]) for k, v in got.items()}
        self._judge_many(keys, self._ask("text", "text", tls, label, fetch), "text " + cmd.decode())

    def meta_multi(self, keys, tls):
        asked = self._ask("meta", "text", tls, "mg_pipeline", lambda c: proto.meta_get_many(c, [k.name for k in keys]))
        self._judge_many(keys, asked, "meta mg pipeline")

    def bin_multi(self, keys, tls):
        asked = self._ask("bin", "bin", tls, "getkq_batch", lambda c: proto.bin_get_many(c, [k.name for k in keys]))
        self._judge_many(keys, asked, "binary getkq")

    def bin_single(self, k, tls):
        op = self.rng.choice([proto.OP_GET, proto.OP_GETK])
        asked = self._ask("bin", "bin", tls, "get" if op == proto.OP_GET else "getk", lambda c: proto.bin_get(c, k.name, op))
        if asked is None:
            return
        r, t0, t1 = asked
        if r[0] == "hit":
            self.chk.hit(k, r[2], r[1], t0, t1, "binary get")
        elif r[0] == "miss":
            self.chk.miss(k, t0, t1, "binary get")
        else:
            self.ctx.count("read_refused_oom")

    def meta_single(self, k, tls):
        asked = self._ask("meta", "text", tls, "mg", lambda c: proto.meta_get(c, k.name, b"s v f c t k"))
        if asked is None:
            return
        r, t0, t1 = asked
        if r[0] == "hit":
            f = r[2]
            if f.get(b"k") != k.name or int(f.get(b"s", b"-1")) != len(r[1]):
                self.ctx.violation("protocol", "mg %s: k/s flags %r do not match (value %d bytes)" % (k.name.decode(), f, len(r[1])))
            self.chk.hit(k, r[1], int(f.get(b"f", b"0")), t0, t1, "meta mg")
        elif r[0] == "miss":
            self.chk.miss(k, t0, t1, "meta mg")
        else:
            self.ctx.count("read_refused_oom")

    def swr_read(self, k, tls):
        asked = self._ask("meta", "text", tls, "mg_N", lambda c: proto.meta_get(c, k.name, b"s v f c t N30"))
        if asked is None:
            return
        r, t0, t1 = asked
        if r[0] == "hit":
            f = r[2]
            if r[1] == b"":
                self.ctx.count("swr_vivified_" + ("W" if b"W" in f else "Z" if b"Z" in f else "none"))
                if b"W" not in f and b"Z" not in f:
                    self.ctx.violation("swr_flags", "mg %s N30: empty (vivified) item without W or Z: %r" % (k.name.decode(), f))
                self.chk.miss(k, t0, t1, "mg N30 (vivified)")
            else:
                self.chk.hit(k, r[1], int(f.get(b"f", b"0")), t0, t1, "mg N30", xflag=b"X" in f, wflag=b"W" in f)
                if b"W" in f:
                    self.ctx.count("swr_reader_won")
        elif r[0] == "miss":
            self.ctx.violation("protocol", "mg %s N30 answered EN (vivify must not miss)" % k.name.decode())
        else:
            self.ctx.count("read_refused_oom")

    def abandoned_read(self, tls):
        """A client that asks for big values and goes away mid-reply."""
        ctx = self.ctx
        big = [k for k in self.plain_keys if k.kind in ("m", "h")]
        if not big:
            return
        keys = [self.rng.choice(big).name for _ in range(self.rng.randint(1, 8))]
        try:
            c = proto.Conn(ctx.ports, tls, ctx.counters)
        except ConnLost:
            return
        try:
            c.send(b"get " + b" ".join(keys) + b"\r\n")
            want = self.rng.randint(1, 3 << 20)
            got = 0
            while got < want:
                d = c.sock.recv(min(65536, want - got))
                if not d:
                    break
                got += len(d)
        except (OSError, ConnLost):
            pass
        c.abort()
        ctx.count("fault:abandoned_read")

    # final pass: every key once, after the traffic stopped
    def audit(self):
        ctx = self.ctx
        keys = [k for k in self.plain_keys]
        for i in range(0, len(keys), 50):
            self.text_multi(keys[i:i + 50], False, b"get")
            ctx.count("audit_reads", len(keys[i:i + 50]))
        for k in self.swr_keys:
            t0 = time.monotonic()
            try:
                r = proto.meta_get(self.cl.get("text", False), k.name, b"s v f c")
            except (ConnLost, ProtocolError) as e:
                self.cl.drop("text", False, e)
                continue
            t1 = time.monotonic()
            ctx.count("audit_reads")
            if r[0] == "hit" and r[1]:
                f = r[2]
                self.chk.hit(k, r[1], int(f.get(b"f", b"0")), t0, t1, "audit mg", xflag=b"X" in f)
            elif r[0] in ("hit", "miss"):
                self.chk.miss(k, t0, t1, "audit mg")


def build_keys(ctx, nwriters):
    p = ctx.proc
    per = {"p": 150, "t": 50, "a": 20, "n": 20, "s": 10}
    groups = []
    for w in range(nwriters):
        lock = threading.Lock()
        ks = []
        for kind, n in per.items():
            for i in range(n):
                ks.append(model.Key(b"ck/%d/%d/%s%d" % (p, w, kind.encode(), i), kind, lock))
        groups.append((lock, ks))
    lock = threading.Lock()
    groups.append((lock, [model.Key(b"ck/%d/m/m%d" % (p, i), "m", lock) for i in range(8)]))
    if p == 0:
        lock = threading.Lock()
        groups.append((lock, [model.Key(b"ck/0/h/h%d" % i, "h", lock) for i in range(3)]))
    return groups


def shipper(ctx, queue, stop):
    """Hand the misses to the controller as they come (it judges them once
    the evictions watch has caught up), so no process hoards them."""
    while True:
        last = stop.wait(2.0)
        with ctx.lock:
            batch, ctx.misses = ctx.misses, []
        if batch:
            queue.put(batch)
        if last:
            return


def main(cfg, events, counters, queue):
    # the controller's handlers must not run here; die with the controller
    import signal
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        import ctypes
        PR_SET_PDEATHSIG = 1
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    except (OSError, AttributeError):
        pass
    if os.getppid() != cfg["controller"]:
        os._exit(1)
    ctx = Ctx(cfg, events, counters)
    seed = cfg["seed"] * 1000 + cfg["proc"]
    groups = build_keys(ctx, cfg["writers"])
    ctx.keys = [k for _, ks in groups for k in ks]
    writers = [Writer(ctx, i, ks, random.Random(seed * 100 + i), lock) for i, (lock, ks) in enumerate(groups)]
    readers = [Reader(ctx, i, random.Random(seed * 100 + 50 + i)) for i in range(cfg["readers"])]
    stop = threading.Event()
    ship = threading.Thread(target=shipper, args=(ctx, queue, stop), daemon=True)
    ship.start()
    for t in writers + readers:
        t.start()
    for t in writers + readers:
        t.join(max(1.0, ctx.hard_deadline - time.monotonic()))
    # every key once more, now that nothing writes
    try:
        a = Reader(ctx, 99, random.Random(seed))
        a.audit()
        a.cl.close()
        ctx.merge_requests(a.requests)
    except Stop:
        pass
    except Exception:
        ctx.violation("soak_bug", "audit: %s" % traceback.format_exc())
    stop.set()
    ship.join()
    stuck = [t.name for t in writers + readers if t.is_alive()]
    if stuck:
        ctx.violation("hang", "threads still running after the deadline: %s" % ", ".join(stuck))
    out = {
        "proc": ctx.proc,
        "requests": dict(ctx.requests),
        "counts": dict(ctx.counts),
        "violations": dict(ctx.violations),
        "samples": ctx.samples,
        "disconnects": ctx.disconnects,
        "unreachable": ctx.unreachable,
        "keys": len(ctx.keys),
    }
    tmp = cfg["result"] + ".tmp"
    with open(tmp, "wb") as f:
        pickle.dump(out, f)
    os.rename(tmp, cfg["result"])
    queue.close()
    queue.join_thread()
    os._exit(0)
