#!/usr/bin/env python3
"""Record meta protocol replies from a real memcached 1.6.18 and write them
as Rust test data (crates/larder-proto/src/meta_vectors.rs).

    python3 record.py [--memcached /usr/bin/memcached] [--out PATH]

Each case: setup requests (replies ignored), then one request line (plus
data block) whose reply is recorded (up to the reply of a marker `mg`). Around the request
the script asks `me <key>` (which does not touch the item) for the state
memcached had: before (exp, la, cas, fetch) and after (cas, exp), and reads
the value and client flags after with `mg <key> v f u`. The Rust test
feeds those fields to larder's encoders and compares bytes.

Annotations only a scenario knows: `st` is the outcome the server decides
(HD NS EX NF EN VA, or NONNUM for a non-numeric `ma`), `z` a win token had
been sent before, `x` the item is stale, `w` this request wins, `kb` the
stored key is binary. A wrong annotation makes the Rust test fail, never
the recording. Re-run if a recording crossed a second boundary (a `t` or
`l` differing by one from `me`); the script checks and retries.
"""
import argparse, os, re, socket, subprocess, sys, time

LONG_O = b"O" + b"x" * 32          # 33 bytes: too long
OK_O = b"O" + b"y" * 31            # 32 bytes: longest accepted
MANY = b" ".join(b"%c" % c for c in b"stcfvhklOquPL") # 13 flags

def C(name, req, key=None, setup=(), st=None, z=False, x=False, w=False, kb=False):
    return dict(name=name, req=req, key=key, setup=list(setup), st=st, z=z, x=x, w=w, kb=kb)

CASES = [
    # --- mg hits: return flags in request order, then Z X W.
    C("mg_all_flags", b"mg g1 s v t c f l h O99 k\r\n", b"g1", [b"ms g1 5 F42 T300\r\nhello\r\n"], st="VA"),
    C("mg_all_flags_reversed", b"mg g2 k O99 h l f c t v s\r\n", b"g2", [b"ms g2 5 F42 T300\r\nhello\r\n"], st="VA"),
    C("mg_hd", b"mg g3 c f\r\n", b"g3", [b"ms g3 2 F4294967295\r\nhi\r\n"], st="HD"),
    C("mg_hd_no_flags", b"mg g4\r\n", b"g4", [b"ms g4 2\r\nhi\r\n"], st="HD"),
    C("mg_hit_q", b"mg g5 v q k\r\n", b"g5", [b"ms g5 2\r\nhi\r\n"], st="VA"),
    C("mg_fetched", b"mg g6 h l t v\r\n", b"g6", [b"ms g6 2 T100\r\nhi\r\n", b"mg g6 v\r\n"], st="VA"),
    C("mg_t_then_T", b"mg g7 t T100\r\n", b"g7", [b"ms g7 2 T300\r\nhi\r\n"], st="HD"),
    C("mg_T_then_t", b"mg g8 T100 t\r\n", b"g8", [b"ms g8 2 T300\r\nhi\r\n"], st="HD"),
    C("mg_T0_then_t", b"mg g9 T0 t c\r\n", b"g9", [b"ms g9 2 T300\r\nhi\r\n"], st="HD"),
    C("mg_u_and_unused_flags", b"mg g10 u v F7 C5 MZ J1 D2 P L I\r\n", b"g10", [b"ms g10 1\r\nx\r\n"], st="VA"),
    C("mg_empty_value", b"mg g11 v s\r\n", b"g11", [b"ms g11 0\r\n\r\n"], st="VA"),
    C("mg_opaque_32", b"mg g12 " + OK_O + b" v\r\n", b"g12", [b"ms g12 1\r\nx\r\n"], st="VA"),
    C("mg_many_flags", b"mg g13 " + MANY + b" R30 T0 N5\r\n", b"g13", [b"ms g13 1\r\nx\r\n"], st="VA"),
    # --- mg misses.
    C("mg_miss", b"mg nokey1 k O5 v s t c\r\n", b"nokey1", st="EN"),
    C("mg_miss_q", b"mg nokey2 q k O5\r\n", b"nokey2", st="EN"),
    C("mg_miss_plain", b"mg nokey3\r\n", b"nokey3", st="EN"),
    # --- mg stampede flags.
    C("mg_vivify", b"mg viv1 N30 t c v s k\r\n", b"viv1", st="VA", w=True),
    C("mg_vivify_t_first", b"mg viv2 t N30 s\r\n", b"viv2", st="HD", w=True),
    C("mg_vivify_again", b"mg viv3 N30 t v\r\n", b"viv3", [b"mg viv3 N30\r\n"], st="VA", z=True),
    C("mg_vivify_q_created", b"mg viv4 N30 q k\r\n", b"viv4", st="HD", w=True),
    C("mg_stale", b"mg st1 c t v\r\n", b"st1", [b"ms st1 2 T100\r\nhi\r\n", b"md st1 I T30\r\n"], st="VA", x=True, w=True),
    C("mg_stale_again", b"mg st2 c v\r\n", b"st2", [b"ms st2 2 T100\r\nhi\r\n", b"md st2 I\r\n", b"mg st2\r\n"], st="VA", z=True, x=True),
    C("mg_recache_win", b"mg rc1 R30 t v\r\n", b"rc1", [b"ms rc1 2 T10\r\nhi\r\n"], st="VA", w=True),
    C("mg_recache_no_win", b"mg rc2 R30 t\r\n", b"rc2", [b"ms rc2 2 T100\r\nhi\r\n"], st="HD"),
    C("mg_recache_token_sent", b"mg rc3 R30 t\r\n", b"rc3", [b"ms rc3 2 T10\r\nhi\r\n", b"mg rc3 R30\r\n"], st="HD", z=True),
    # --- base64 keys.
    C("mg_b64", b"mg Zm9vYmFy b k v\r\n", b"Zm9vYmFy b", [b"ms Zm9vYmFy 3 b\r\nbar\r\n"], st="VA", kb=True),
    C("mg_b64_item_plain_request", b"mg b64plainx k s\r\n", b"b64plainx",
      [b"ms YjY0cGxhaW54 3 b\r\nbar\r\n"], st="HD", kb=True),
    C("mg_b64_request_item_plain", b"mg cGxhaW4y b k\r\n", b"plain2", [b"ms plain2 1\r\nx\r\n"], st="HD"),
    C("mg_b64_miss", b"mg YjY0 b k O1\r\n", b"YjY0 b", st="EN"),
    C("mg_b64_lenient", b"mg Y!m*Y0 b k\r\n", b"YjY0 b", st="EN"),
    C("mg_b64_padded", b"mg YQ== b k\r\n", b"YQ== b", st="EN"),
    C("mg_b64_pad1", b"mg YWI= b k\r\n", b"YWI= b", st="EN"),
    # --- mg errors.
    C("mg_dup_flag", b"mg k v v\r\n"),
    C("mg_dup_flag_letter", b"mg k O1 O2\r\n"),
    C("mg_invalid_flag", b"mg k v E5\r\n"),
    C("mg_invalid_flag_digit", b"mg k 5\r\n"),
    C("mg_invalid_flag_S", b"mg k S10\r\n"),
    C("mg_high_byte_flag", b"mg k \xc3\xa9\r\n"),
    C("mg_bad_N", b"mg k Nx\r\n"),
    C("mg_bad_T_empty", b"mg k T\r\n"),
    C("mg_bad_R", b"mg k R1.5\r\n"),
    C("mg_bad_F", b"mg k Fx\r\n"),
    C("mg_bad_F_then_T", b"mg k Tx Fx\r\n"),
    C("mg_bad_C", b"mg k C-1\r\n"),
    C("mg_bad_J", b"mg k Jx\r\n"),
    C("mg_bad_D", b"mg k Dx\r\n"),
    C("mg_bad_M_len", b"mg k MSS\r\n"),
    C("mg_bad_T_then_dup", b"mg k Tx v v\r\n"),
    C("mg_b64_bad", b"mg abc b\r\n"),
    C("mg_b64_bad_pad", b"mg A=== b\r\n"),
    C("mg_key_too_long", b"mg " + b"k" * 251 + b" v\r\n"),
    C("mg_key_250", b"mg " + b"k" * 250 + b" v\r\n", b"k" * 250, st="EN"),
    C("mg_too_many_flags", b"mg k " + b" ".join(b"%c" % c for c in b"stcfvhklOquPLIRTNJ") + b"\r\n"),
    C("mg_17_flags_valid", b"mg g14 " + b" ".join(b"%c" % c for c in b"stcfvhklOuPLI") + b" D1 F1 J1 T0\r\n", b"g14", [b"ms g14 1 T100\r\nx\r\n"], st="VA"),
    C("mg_17_flags", b"mg k " + b" ".join(b"%c" % c for c in b"stcfvhklOquPLIbDF") + b"\r\n"),
    C("mg_no_key", b"mg\r\n"),
    C("mg_opaque_too_long_hit", b"mg olh " + LONG_O + b" v\r\n", b"olh", [b"ms olh 1\r\nx\r\n"], st="VA"),
    C("mg_opaque_too_long_miss_q", b"mg olm q " + LONG_O + b"\r\n", b"olm", st="EN"),
    # --- ms.
    C("ms_flags_order", b"ms s1 3 c k O1 T0 F7\r\nabc\r\n", b"s1", st="HD"),
    C("ms_flags_order2", b"ms s2 3 O1 k c\r\nabc\r\n", b"s2", st="HD"),
    C("ms_q", b"ms s3 3 q c\r\nabc\r\n", b"s3", st="HD"),
    C("ms_replace_missing", b"ms s4 3 MR c k\r\nabc\r\n", b"s4", st="NS"),
    C("ms_add_exists", b"ms s5 3 ME c q\r\nabc\r\n", b"s5", [b"ms s5 1\r\nx\r\n"], st="NS"),
    C("ms_append_missing", b"ms s6 3 MA\r\nabc\r\n", b"s6", st="NS"),
    C("ms_append", b"ms s7 3 MA c\r\nabc\r\n", b"s7", [b"ms s7 1\r\nx\r\n"], st="HD"),
    C("ms_prepend", b"ms s8 3 MP\r\nabc\r\n", b"s8", [b"ms s8 1\r\nx\r\n"], st="HD"),
    C("ms_set_mode", b"ms s9 3 MS k\r\nabc\r\n", b"s9", st="HD"),
    C("ms_cas_mismatch", b"ms s10 3 C999999 c\r\nabc\r\n", b"s10", [b"ms s10 1\r\nx\r\n"], st="EX"),
    C("ms_cas_missing_q", b"ms s11 3 C1 q O7\r\nabc\r\n", b"s11", st="NF"),
    C("ms_b64", b"ms c2V0a2V5 2 b k c\r\nhi\r\n", b"c2V0a2V5 b", st="HD", kb=True),
    C("ms_empty", b"ms s12 0 T100\r\n\r\n", b"s12", st="HD"),
    C("ms_lower_mode", b"ms s13 1 Ms\r\nx\r\n"),
    C("ms_invalid_mode", b"ms s14 3 MX\r\nabc\r\n"),
    C("ms_invalid_mode_and_opaque", b"ms s15 3 MX " + LONG_O + b"\r\nabc\r\n"),
    C("ms_opaque_too_long", b"ms s16 3 " + LONG_O + b"\r\nabc\r\n"),
    C("ms_dup_flag", b"ms s17 3 T1 T2\r\nabc\r\n"),
    C("ms_invalid_flag", b"ms s18 3 Z\r\nabc\r\n"),
    C("ms_bad_T", b"ms s19 3 Tx\r\nabc\r\n"),
    C("ms_bad_F", b"ms s20 3 Fx\r\nabc\r\n"),
    C("ms_bad_M_len", b"ms s21 3 MSS\r\nabc\r\n"),
    C("ms_b64_bad", b"ms abc 3 b\r\nabc\r\n"),
    C("ms_bad_len", b"ms s22 abc\r\nabc\r\n"),
    C("ms_neg_len", b"ms s23 -1\r\nabc\r\n"),
    C("ms_no_len", b"ms s24\r\n"),
    C("ms_bad_chunk", b"ms s25 3\r\nabcde\r\n"),
    C("ms_bad_chunk_q", b"ms s26 3 q\r\nabcd\r\n"),
    C("ms_key_too_long", b"ms " + b"k" * 251 + b" 1\r\nx\r\n"),
    C("ms_too_many_flags", b"ms s27 1 " + b" ".join(b"%c" % c for c in b"ctkOqIFTPLsfvh") + b" u l J\r\nx\r\n"),
    C("ms_16_flags_last_error_wins", b"ms s28 1 " + b" ".join(b"%c" % c for c in b"ctkOqIPLsfvhulJ") + b" D\r\nx\r\n"),
    C("ms_16_flags", b"ms s29 1 " + b" ".join(b"%c" % c for c in b"ctkOIPLsfvhul") + b" J5 D1 T0\r\nx\r\n", b"s29", st="HD"),
    C("ms_too_large", b"ms big 1048577 T0\r\n" + b"x" * 1048577 + b"\r\n"),
    C("ms_too_large_q", b"ms big2 1048577 q\r\n" + b"x" * 1048577 + b"\r\n"),
    # --- md.
    C("md_hit", b"md d1 k O1\r\n", b"d1", [b"ms d1 1\r\nx\r\n"], st="HD"),
    C("md_hit_reversed", b"md d2 O1 k\r\n", b"d2", [b"ms d2 1\r\nx\r\n"], st="HD"),
    C("md_hit_q", b"md d3 q k\r\n", b"d3", [b"ms d3 1\r\nx\r\n"], st="HD"),
    C("md_miss", b"md d4 k\r\n", b"d4", st="NF"),
    C("md_miss_q", b"md d5 q O2\r\n", b"d5", st="NF"),
    C("md_cas_mismatch_q", b"md d6 C1 q k\r\n", b"d6", [b"ms d6 1\r\nx\r\n"], st="EX"),
    C("md_stale", b"md d7 I T30 k\r\n", b"d7", [b"ms d7 1\r\nx\r\n"], st="HD"),
    C("md_b64", b"md ZGVsa2V5 b k\r\n", b"ZGVsa2V5 b", [b"ms ZGVsa2V5 1 b\r\nx\r\n"], st="HD", kb=True),
    C("md_dup_flag", b"md d8 q q\r\n"),
    C("md_bad_T", b"md d9 Tx\r\n"),
    C("md_b64_bad", b"md abc b\r\n"),
    C("md_opaque_too_long", b"md d10 " + LONG_O + b"\r\n", b"d10", [b"ms d10 1\r\nx\r\n"]),
    C("md_too_many_flags", b"md d11 " + b" ".join(b"%c" % c for c in b"stcfvhklOquPLIRTNJ") + b"\r\n"),
    C("md_key_too_long", b"md " + b"k" * 251 + b"\r\n"),
    C("md_no_key", b"md\r\n"),
    # --- ma.
    C("ma_hit", b"ma n1 v c t k O1\r\n", b"n1", [b"ms n1 2 T0\r\n10\r\n"], st="VA"),
    C("ma_hit_reversed", b"ma n2 O1 k t c v\r\n", b"n2", [b"ms n2 2 T100\r\n10\r\n"], st="VA"),
    C("ma_hd", b"ma n3 c\r\n", b"n3", [b"ms n3 2\r\n99\r\n"], st="HD"),
    C("ma_decr", b"ma n4 MD D5 v\r\n", b"n4", [b"ms n4 2\r\n12\r\n"], st="VA"),
    C("ma_decr_below_zero", b"ma n5 M- D50 v\r\n", b"n5", [b"ms n5 2\r\n12\r\n"], st="VA"),
    C("ma_incr_plus", b"ma n6 M+ D18446744073709551615 v\r\n", b"n6", [b"ms n6 1\r\n1\r\n"], st="VA"),
    C("ma_incr_MI", b"ma n7 MI v\r\n", b"n7", [b"ms n7 1\r\n1\r\n"], st="VA"),
    C("ma_hit_q", b"ma n8 q v\r\n", b"n8", [b"ms n8 1\r\n1\r\n"], st="VA"),
    C("ma_miss", b"ma n9 k O3\r\n", b"n9", st="NF"),
    C("ma_miss_q", b"ma n10 q\r\n", b"n10", st="NF"),
    C("ma_vivify", b"ma n11 N0 J13 v t c\r\n", b"n11", st="VA"),
    C("ma_vivify_ttl", b"ma n12 N100 t v\r\n", b"n12", st="VA"),
    C("ma_vivify_t_first", b"ma n13 t N100\r\n", b"n13", st="HD"),
    C("ma_vivify_q", b"ma n14 N0 q\r\n", b"n14", st="HD"),
    C("ma_t_then_T", b"ma n15 t T100\r\n", b"n15", [b"ms n15 1 T300\r\n1\r\n"], st="HD"),
    C("ma_T_then_t", b"ma n16 T100 t\r\n", b"n16", [b"ms n16 1 T300\r\n1\r\n"], st="HD"),
    C("ma_cas_mismatch", b"ma n17 C1 q k\r\n", b"n17", [b"ms n17 1\r\n1\r\n"], st="EX"),
    C("ma_b64", b"ma Y291bnRlcg== b k v\r\n", b"Y291bnRlcg== b", [b"ms Y291bnRlcg== 1 b\r\n7\r\n"], st="VA", kb=True),
    C("ma_non_numeric", b"ma n18 q\r\n", b"n18", [b"ms n18 1\r\nx\r\n"], st="NONNUM"),
    C("ma_invalid_mode", b"ma n19 MX\r\n"),
    C("ma_bad_D", b"ma n20 Dx\r\n"),
    C("ma_bad_J", b"ma n21 J-1\r\n"),
    C("ma_opaque_too_long", b"ma n22 " + LONG_O + b"\r\n", b"n22", [b"ms n22 1\r\n1\r\n"], st="HD"),
    C("ma_no_key", b"ma\r\n"),
    # --- mn, me, others.
    C("mn", b"mn\r\n"),
    C("mn_args", b"mn foo bar\r\n"),
    C("me_hit", b"me e1\r\n", b"e1", [b"ms e1 5 T100 F3\r\nhello\r\n"], st="ME"),
    C("me_hit_fetched", b"me e2\r\n", b"e2", [b"ms e2 5\r\nhello\r\n", b"mg e2 v\r\n"], st="ME"),
    C("me_b64", b"me ZTM= b\r\n", b"ZTM= b", [b"ms ZTM= 1 b\r\nx\r\n"], st="ME", kb=True),
    C("me_b64_request_item_plain", b"me ZTQ= b\r\n", b"e4", [b"ms e4 1\r\nx\r\n"], st="ME"),
    C("me_miss", b"me nokey9\r\n", st="EN"),
    C("me_no_key", b"me\r\n"),
    C("me_b64_bad", b"me abc b\r\n"),
    C("me_key_too_long", b"me " + b"k" * 251 + b"\r\n"),
    C("mx_unknown", b"mx k\r\n"),
]


class Conn:
    def __init__(self, port):
        self.s = socket.create_connection(("127.0.0.1", port))
        self.buf = b""

    def send(self, data):
        self.s.sendall(data)

    def until(self, end):
        while end not in self.buf:
            d = self.s.recv(1 << 20)
            if not d:
                raise EOFError
            self.buf += d
        i = self.buf.index(end) + len(end)
        out, self.buf = self.buf[:i], self.buf[i:]
        return out

    def sync(self):
        """Everything before the reply to a marker request (a miss with a
        fresh opaque: `mn` would be ambiguous with the `mn` cases)."""
        self.n = getattr(self, "n", 0) + 1
        marker = b"EN O%d\r\n" % self.n
        self.send(b"mg __sync__ O%d\r\n" % self.n)
        r = self.until(marker)
        return r[:-len(marker)]


def me_fields(line):
    m = re.match(rb"ME \S+ exp=(-?\d+) la=(\d+) cas=(\d+) fetch=(yes|no) cls=(\d+) size=(\d+)\r\n$", line)
    if not m:
        return None
    exp = int(m.group(1))
    return dict(ttl=None if exp == -1 else -exp, la=int(m.group(2)), cas=int(m.group(3)),
                fetched=m.group(4) == b"yes", size=int(m.group(6)))


def record(port):
    c = Conn(port)
    out = []
    for case in CASES:
        for s in case["setup"]:
            c.send(s)
        c.sync()
        before = after = None
        value = flags = None
        if case["key"] is not None:
            c.send(b"me " + case["key"] + b"\r\n")
            before = me_fields(c.sync())
        c.send(case["req"])
        reply = c.sync()
        if case["key"] is not None:
            c.send(b"me " + case["key"] + b"\r\n")
            after = me_fields(c.sync())
            c.send(b"mg " + case["key"] + b" v f u\r\n")
            r = c.sync()
            m = re.match(rb"VA (\d+) f(\d+)[^\r]*\r\n", r)
            if m:
                value = r[m.end():m.end() + int(m.group(1))]
                flags = int(m.group(2))
        out.append(dict(case, reply=reply, before=before, after=after, value=value, flags=flags))
    return out


def rust_bytes(b):
    if len(b) > 4096 and b == bytes([b[0]]) * len(b):
        return None
    s = []
    for ch in b:
        if ch == 0x22:
            s.append('\\"')
        elif ch == 0x5c:
            s.append("\\\\")
        elif 0x20 <= ch < 0x7f:
            s.append(chr(ch))
        elif ch == 0x0d:
            s.append("\\r")
        elif ch == 0x0a:
            s.append("\\n")
        else:
            s.append("\\x%02x" % ch)
    return 'b"' + "".join(s) + '"'


def rust_request(req):
    """Requests with a huge repeated block are stored as (line, block byte,
    block length, tail)."""
    line_end = req.index(b"\n") + 1
    body = req[line_end:]
    if len(body) > 4096:
        block = body[:-2]
        assert block == bytes([block[0]]) * len(block) and body.endswith(b"\r\n")
        return "Req::Big(%s, %d, %d)" % (rust_bytes(req[:line_end]), block[0], len(block))
    return "Req::Plain(%s)" % rust_bytes(req)


def rust_state(st):
    if st is None:
        return "None"
    ttl = "None" if st["ttl"] is None else "Some(%d)" % st["ttl"]
    return "Some(Me { ttl: %s, la: %d, cas: %d, fetched: %s, size: %d })" % (
        ttl, st["la"], st["cas"], "true" if st["fetched"] else "false", st["size"])


def emit(results, version):
    lines = [
        "// @generated by tests/meta-vectors/record.py from memcached %s. Do not edit." % version,
        "// Each vector: the request, memcached's whole reply to it, the",
        "// item state around the request (from `me`), and scenario annotations.",
        "",
        "use super::vectors::{Me, Req, Vector};",
        "",
        "pub const VECTORS: &[Vector] = &[",
    ]
    for r in results:
        lines.append("    Vector {")
        lines.append('        name: "%s",' % r["name"])
        lines.append("        request: %s," % rust_request(r["req"]))
        lines.append("        reply: %s," % rust_bytes(r["reply"]))
        lines.append('        status: "%s",' % (r["st"] or ""))
        lines.append("        before: %s," % rust_state(r["before"]))
        lines.append("        after: %s," % rust_state(r["after"]))
        lines.append("        value: %s," % ("None" if r["value"] is None else "Some(%s)" % rust_bytes(r["value"])))
        lines.append("        client_flags: %d," % (r["flags"] or 0))
        for k in "zxw":
            lines.append("        %s: %s," % (k, "true" if r[k] else "false"))
        lines.append("        key_binary: %s," % ("true" if r["kb"] else "false"))
        lines.append("    },")
    lines.append("];")
    return "\n".join(lines) + "\n"


def consistent(r):
    """Reject a recording that crossed a second boundary between `me` and
    the request (a `t` or `l` that disagrees with `me`)."""
    b = r["before"]
    if not b or not r["reply"][:2] in (b"VA", b"HD"):
        return True
    for tok in r["reply"].split(b"\r\n")[0].split(b" ")[1:]:
        if tok[:1] == b"l" and int(tok[1:]) != b["la"]:
            return False
    return True


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--memcached", default="/usr/bin/memcached")
    ap.add_argument("--port", type=int, default=22199)
    here = os.path.dirname(os.path.abspath(__file__))
    ap.add_argument("--out", default=os.path.join(here, "..", "..", "src", "meta_vectors.rs"))
    a = ap.parse_args()
    version = subprocess.run([a.memcached, "-V"], capture_output=True).stdout.decode().strip()
    for attempt in range(5):
        p = subprocess.Popen([a.memcached, "-p", str(a.port), "-U", "0", "-l", "127.0.0.1", "-u", "root"])
        try:
            for _ in range(50):
                try:
                    socket.create_connection(("127.0.0.1", a.port)).close()
                    break
                except OSError:
                    time.sleep(0.1)
            results = record(a.port)
        finally:
            p.terminate()
            p.wait()
        if all(consistent(r) for r in results):
            break
        print("a second boundary got in the way; recording again", file=sys.stderr)
    else:
        sys.exit("could not record consistently")
    with open(a.out, "w") as f:
        f.write(emit(results, version))
    print("%d vectors -> %s" % (len(results), os.path.normpath(a.out)))


if __name__ == "__main__":
    main()
