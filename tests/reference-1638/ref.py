#!/usr/bin/env python3
"""Table-driven differential test: larder against memcached 1.6.38 (Debian trixie).

Each case in cases.py is a short script of requests. The same bytes go to a
fresh larder and a fresh memcached 1.6.38 (same flags: -m 64 -t 1, plus the
case's own), and the replies are compared after normalising what may differ:

  * everything tests/differential/diff.py's Side.normalise masks (CAS numbers in
    VALUE lines by order of first appearance, VERSION, STAT values, larder_* stats);
  * meta CAS tokens (`c<n>` in HD/VA/EN/NS/EX/NF lines, `cas=<n>` in me and metadump
    lines) mapped through the same per-server CAS labels;
  * times: `la=`, watch's `ts=`, `gid=` and `cfd=`, and `exp=` reduced to its sign
    (`exp=-1` kept: "no expiry" is part of the answer);
  * lines of a case step marked `sort` compared as a set (dump order is hash order).

A case marked `tls` starts both servers with -Z and memcached t/'s certificate, its
connections on a plain `notls:` listener (memcached_1638.PlainProbeServer).

A step is (conn, bytes) or (conn, bytes, "quiet"). Ordinary steps end with a
`version` fence on that connection (diff.py's framing); a "quiet" step sends no
fence and reads until the server is silent for QUIET seconds: used for dumps and
for a connection in watch mode, which answer no further commands.

    python3 tests/reference-1638/ref.py                 # every case, one line each
    python3 tests/reference-1638/ref.py -k mgdump -v    # matching cases, both replies
    python3 tests/reference-1638/ref.py --gaps FILE     # write the differences to FILE
    python3 tests/reference-1638/ref.py --self          # memcached 1.6.38 against itself
"""

import argparse
import os
import re
import signal
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
TESTS = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(TESTS, "lib"))
sys.path.insert(0, os.path.join(TESTS, "differential"))
sys.path.insert(0, HERE)
import diff  # noqa: E402  (Side: connection, fence framing, VALUE/CAS/STAT normalisation)
import larder_servers  # noqa: E402
import memcached_1638  # noqa: E402
from cases import CASES  # noqa: E402

BASE_ARGS = ["-m", "64", "-t", "1"]
QUIET = 0.4          # seconds of silence that end a "quiet" step
QUIET_MAX = 5.0      # a quiet step never reads longer than this

META_HEAD = (b"HD", b"VA", b"EN", b"NS", b"EX", b"NF", b"MN")
RE_META_CAS = re.compile(rb"(?<= )c(\d+)(?= |\r\n)")
RE_KV_CAS = re.compile(rb"\bcas=(\d+)")
RE_TIME = re.compile(rb"\b(la|ts|gid|time|cfd)=[0-9.]+")
RE_EXP = re.compile(rb"\bexp=(-?\d+)")


class Labels(dict):
    """CAS labels of one server. A CAS value the case itself chose (an `E<n>` flag) stays
    itself, so that `E` is checked for its value, not only for giving the item some CAS:
    its label is the value plus LITERAL (Side.normalise formats labels with %d)."""

    LITERAL = 10 ** 30

    def __init__(self, literal):
        super().__init__()
        self.literal = literal

    def setdefault(self, cas, default=None):
        if cas in self.literal:
            return self.LITERAL + int(cas)
        return super().setdefault(cas, len(self))


class Conn(diff.Side):
    """One connection to one server; the server's connections share CAS labels."""

    def __init__(self, name, server, labels, seen):
        super().__init__(name, server)
        self.cas_label = labels
        self.cas_seen = seen

    def quiet_read(self):
        buf = bytearray()
        start = last = time.monotonic()
        while time.monotonic() - last < QUIET and time.monotonic() - start < QUIET_MAX:
            chunk = self.poll_chunk()
            if chunk == b"":
                return bytes(buf) + b"<closed>"
            if chunk:
                buf += chunk
                last = time.monotonic()
        return bytes(buf)

    def label(self, cas):
        return b"#%d" % self.cas_label.setdefault(cas)

    def tokens(self, raw, keep_stats=()):
        out = []
        for t in self.normalise(raw):
            if t[:2] in META_HEAD:
                t = RE_META_CAS.sub(lambda m: b"c" + self.label(m.group(1)), t)
            t = RE_KV_CAS.sub(lambda m: b"cas=" + self.label(m.group(1)), t)
            t = RE_TIME.sub(lambda m: m.group(1) + b"=*", t)
            t = RE_EXP.sub(lambda m: b"exp=" + (m.group(1) if m.group(1) == b"-1" else
                                                b"-" if m.group(1).startswith(b"-") else b"+"), t)
            if t.startswith(b"STAT ") and keep_stats:
                name = t.split(b" ")[1]
                if name.decode() in keep_stats:
                    t = re.search(rb"STAT " + re.escape(name) + rb" [^\r\n]*\r\n", raw).group(0)
            out.append(t)
        return out


# STAT lines memcached added after 1.6.38, which larder sends (docs/differences.md): each is
# required in a `stats` listing (one that has the line named first) and cut before comparing.
NEWER_STATS = [(b"STAT slab_reassign_busy_nomem ", rb"STAT slab_reassign_last_busy_status none\r\n")]  # 1.6.40


def newer_stats_as_1638(raw):
    """larder's `stats` reply without the STAT lines 1.6.38 lacks; a marker where one is missing."""
    for listing, line in NEWER_STATS:
        if listing in raw:
            raw, n = re.subn(line, b"", raw, count=1)
            if n == 0:
                raw += b"<missing " + line.replace(b"\\r\\n", b"") + b">"
    return raw


def as_1638(case, raw):
    """A quiet reply of larder's in the form 1.6.38 sends, where the case says larder follows a
    newer memcached (`newer_prefix`, `newer_dump_lines`). larder must send the newer form: where
    it does not, a marker is left in the reply and the comparison fails."""
    if case.newer_prefix:
        mn = b"MN\r\n" if raw.startswith(b"MN\r\n") else b""  # `mn` then a dump: the dump's reply follows
        body = raw[len(mn):]
        raw = mn + (body[len(case.newer_prefix):] if body.startswith(case.newer_prefix) else
                    b"<missing " + case.newer_prefix + b">" + body)
    if case.newer_dump_lines:
        lines = raw.split(b"\n")
        for i, line in enumerate(lines):
            if line.startswith(b"key="):
                lines[i] = line[:-1] if line.endswith(b" ") else line + b"<missing trailing space>"
        raw = b"\n".join(lines)
    return raw


def run_side(binary, case, name, newer=False):
    """Run a case's steps against one fresh server: [tokens per step], [raw per step].
    `newer`: the server follows the newer memcached of `case.newer_prefix` (larder)."""
    if case.tls:
        server = memcached_1638.PlainProbeServer(binary, BASE_ARGS + memcached_1638.tls_args(binary) + list(case.args),
                                                 name=name)
    else:
        server = larder_servers.Server(binary, BASE_ARGS + list(case.args), name=name)
    with server:
        labels = Labels(set(re.findall(rb"(?<= )E(\d+)", b"".join(st[1] for st in case.steps))))
        seen = {}
        conns = {}
        toks, raws = [], []
        for step in case.steps:
            cid, payload = step[0], step[1]
            quiet = len(step) > 2 and step[2] == "quiet"
            if cid not in conns:
                conns[cid] = Conn(name, server, labels, seen)
                conns[cid].connect()
            c = conns[cid]
            if case.pause_before and payload in case.pause_before:
                time.sleep(case.pause_before[payload])
            if quiet:
                if payload:
                    c.send(payload)
                raw = c.quiet_read()
                if newer:
                    raw = as_1638(case, raw)
            else:
                c.send(payload + diff.FENCE)
                raw = c.read_reply()
                if newer:
                    raw = newer_stats_as_1638(raw)
            t = c.tokens(raw, case.keep_stats)
            if case.grep is not None:
                t = [x for x in t if re.search(case.grep, x) or x == b"VERSION x\r\n"]
            if len(step) > 2 and step[2] == "quiet" and case.sort:
                t = sorted(t)
            toks.append(t)
            raws.append(raw)
        for c in conns.values():
            c.sock.close()
        # a graceful stop takes memcached ~1 s; the case is over, nothing to keep
        if server.alive():
            os.killpg(server.proc.pid, signal.SIGKILL)
            server.proc.wait(5)
        return toks, raws


def compare(case, ref_bin, larder_bin):
    """None when the replies agree, else (memcached raw, larder raw, first differing step)."""
    mt, mr = run_side(ref_bin, case, "memcached-1.6.38")
    lt, lr = run_side(larder_bin, case, "larder", newer=larder_bin != ref_bin)
    for i, (a, b) in enumerate(zip(mt, lt)):
        if a != b:
            return mr, lr, i
    return None


def show(raws):
    return " | ".join(repr(r)[2:-1] for r in raws)


def report(case, res):
    mr, lr, i = res
    step = case.steps[i][1]
    return (f"{case.name}: differs at step {i} ({step!r})\n"
            f"    sent:      {show(s[1] for s in case.steps)}\n"
            f"    memcached: {show(mr)}\n"
            f"    larder:    {show(lr)}")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("-k", help="only cases whose name contains this")
    ap.add_argument("-v", action="store_true", help="print both replies of every case")
    ap.add_argument("--larder", default=larder_servers.larder_bin())
    ap.add_argument("--self", action="store_true", help="compare memcached 1.6.38 with itself")
    ap.add_argument("--gaps", help="write every difference (case, bytes) as Markdown to this file")
    args = ap.parse_args(argv)
    ref = memcached_1638.binary()
    other = ref if args.self else args.larder
    cases = [c for c in CASES if not args.k or args.k in c.name]
    diffs = []
    for c in cases:
        res = compare(c, ref, other)
        status = "same" if res is None else "DIFF"
        mark = f"  [xfail: {c.xfail}]" if c.xfail else ""
        print(f"{status:4} {c.name}{mark}")
        if res and (args.v or args.gaps):
            diffs.append((c, res))
        if args.v and res:
            print(report(c, res))
    print(f"{len(cases)} cases, {len(diffs) if args.gaps or args.v else '?'} differ")
    if args.gaps:
        with open(args.gaps, "w") as f:
            f.write("# larder vs memcached 1.6.38: differing cases\n\n"
                    "Written by `python3 tests/reference-1638/ref.py --gaps FILE`. Bytes are shown as\n"
                    "Python escapes, one ` | ` per step.\n\n")
            for c, (mr, lr, i) in diffs:
                f.write(f"## {c.name}\n\n{c.xfail or '(not marked xfail)'}\n\n")
                f.write(f"- sent: `{show(s[1] for s in c.steps)}`\n")
                f.write(f"- first differing step: {i}\n")
                f.write(f"- memcached 1.6.38: `{show(mr)}`\n- larder: `{show(lr)}`\n\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
