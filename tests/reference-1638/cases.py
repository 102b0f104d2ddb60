"""The cases of the larder-vs-memcached-1.6.38 differential suite (ref.py runs them).

Each covers a protocol change between memcached 1.6.18 and 1.6.38 (read from
memcached's doc/protocol.txt and its commit history), a case named in issue #27,
or the 1.6.18 behaviour next to it. `xfail` names the gap when larder differs
today: the pytest entry marks the case xfail(strict=True), so fixing the gap
turns the case into an unexpected pass that must be unmarked here.

Steps: (conn, bytes) ends with a `version` fence; (conn, bytes, "quiet") reads
until silence (dumps, watchers). Connections are numbered from 0.
"""

from dataclasses import dataclass, field


@dataclass
class Case:
    name: str
    steps: list
    args: tuple = ()            # extra server flags, given to both servers
    xfail: str = None           # why larder differs today (the #27 gap)
    sort: bool = False          # compare quiet steps' lines as a sorted list
    grep: bytes = None          # compare only reply lines matching this regex
    keep_stats: tuple = ()      # STAT names whose values are compared too
    pause_before: dict = field(default_factory=dict)  # payload -> seconds to sleep before it
    # larder follows a newer memcached here: its quiet replies must begin with these bytes, which
    # 1.6.38 does not send; they are cut before comparing (docs/differences.md lists each case)
    newer_prefix: bytes = None
    # larder follows memcached 1.6.40+'s metadump lines, which end with a space before the `\n`
    # (its unrolled formatter puts one after every field): the space is checked and cut
    newer_dump_lines: bool = False
    # both servers started with -Z and memcached t/'s certificate; the case's connections go to a
    # plain `notls:` listener on the harness's port (the comparison is of what -Z changes there)
    tls: bool = False


def s(*payloads):
    """Steps on connection 0, each fenced."""
    return [(0, p) for p in payloads]


SET_K = b"set k 0 0 2\r\nab\r\n"
OK_1643 = b"OK\r\n"    # memcached 1.6.43 began lru_crawler dumps with it (1.6.19-1.6.42 did not)
NEWER_DUMP = dict(newer_prefix=OK_1643, newer_dump_lines=True)  # metadump as memcached 1.6.43+ sends it
ITEMS3 = b"set a 1 0 1\r\nA\r\nset b 2 0 2\r\nBB\r\nset c 3 0 3\r\nCCC\r\n"
B64_CRLF = b"YQ0KYg=="   # base64 of b"a\r\nb": a key only the b flag can carry

GAP_CRAWL = "larder answers ERROR to lru_crawler crawl (memcached 1.6.18 and 1.6.38: OK)"
GAP_FLAGS_SIZE = "#27: stats settings lacks client_flags_size (1.6.22)"
GAP_ADMIN = "#27: memcached's slab/LRU tuning commands answer ERROR in larder"
GAP_METADUMP = "#27 bug: metadump size= differs from me's, and lacks flags= (1.6.24)"
GAP_MN_DUMP = "#27 bug: mn then metadump/watch on one connection answers ERROR (memcached: mn flushes)"
GAP_X_STATS = "#27: -X does not refuse stats detail (1.6.37)"
GAP_STATS_NAMES = "#27: stats lists slab_reassign_evictions_nomem, which 1.6.34 renamed slab_reassign_busy_nomem"
NEWER_SHUTDOWN = "memcached 1.6.40 refuses shutdown without -A with SERVER_ERROR (1.6.38: ERROR); larder follows it"
NEWER_NUMBERS = ("memcached 1.6.40 (gat, cas, flush_all, verbosity) and 1.6.45 (touch, incr/decr) read these numbers "
                 "strictly (1.6.38: strtol); larder follows them")
NEWER_PARSER = ("memcached 1.6.40's request parser (proto_parser.c) answers malformed and odd lines otherwise "
                "(1.6.38: ERROR for a wrong token count, ...; docs/differences.md); larder follows 1.6.45")
NEWER_DELETE = ("#27: larder accepts delete's noreplY, which memcached's proxy sends for noreply (as a "
                "token that does not silence the reply); 1.6.38 refuses it, and the key stays")
GAP_SETTINGS_NAMES = ("stats settings lists 41 names, memcached 1.6.38 79: the slab, LRU and extstore settings "
                      "(missing against 1.6.18 too) and 1.6.38's proxy_enabled, proxy_uring_enabled, client_flags_size")
GAP_MS_S = "#27: ms s flag (1.6.20: return the stored size) not implemented"
GAP_MS_N = "#27: ms N in append/prepend mode (1.6.20: autovivify on miss) not implemented"
GAP_X = "#27: the x flag (1.6.27: md drops the value; every meta command accepts it) not implemented"
GAP_E0 = "#27 bug: ms k 1 E0 gives the item CAS 0, so cas k 0 0 1 0 then succeeds (memcached ignores E0)"
GAP_INCR_MAX = "#27: incr of a stored 18446744073709551615 answers the 1.6.18 way"
GAP_ME_EXP = "#27: me's exp= sign answers the 1.6.18 way (1.6.24 fixed exptime in the debug command)"

CASES = [
    # ---- lru_crawler mgdump (1.6.19) -------------------------------------------------
    Case("mgdump all", s(ITEMS3) + [(0, b"lru_crawler mgdump all\r\n", "quiet")], sort=True, newer_prefix=OK_1643),
    Case("mgdump hash", s(ITEMS3) + [(0, b"lru_crawler mgdump hash\r\n", "quiet")], sort=True,
         newer_prefix=OK_1643),
    Case("mgdump base64 key", s(b"ms " + B64_CRLF + b" 1 b\r\nx\r\n") +
         [(0, b"lru_crawler mgdump all\r\n", "quiet")], sort=True, newer_prefix=OK_1643),
    Case("mgdump bad class", [(0, b"lru_crawler mgdump 99999\r\n", "quiet")]),
    # ---- watch deletions (1.6.20) -----------------------------------------------------
    Case("watch deletions: delete and md", [(1, b"watch deletions\r\n", "quiet")] +
         s(SET_K, b"delete k\r\n", b"delete k\r\n", SET_K, b"md k\r\n", b"md k q\r\n") +
         [(1, b"", "quiet")]),
    Case("watch deletions and mutations", [(1, b"watch deletions mutations\r\n", "quiet")] +
         s(SET_K, b"delete k\r\n") + [(1, b"", "quiet")]),
    # md x logs the emptied item (size=0); md I (stale), a CAS mismatch, a miss and an expired item log nothing
    Case("watch deletions: md x, I, C, misses", [(1, b"watch deletions\r\n", "quiet")] +
         s(b"set k 0 0 5\r\nhello\r\n", b"md k x\r\n", b"mg k s v\r\n", b"md k I\r\n", b"md k C1\r\n",
           b"md nope\r\n", b"set e 0 -1 1\r\nx\r\n", b"delete e\r\n", b"md k\r\n",
           b"set " + b"a%20b" + b" 0 0 3\r\nabc\r\n", b"delete a%20b noreply\r\n") +
         [(1, b"", "quiet")]),
    Case("watch deletions with fetchers", [(1, b"watch fetchers deletions\r\n", "quiet")] +
         s(b"set k 0 0 3\r\nabc\r\n", b"delete k\r\n", b"ms m 2\r\nzz\r\n", b"md m q\r\n", b"mn\r\n") +
         [(1, b"", "quiet")]),
    Case("watch mutations (1.6.18 behaviour)", [(1, b"watch mutations\r\n", "quiet")] +
         s(SET_K, b"ms m 1 T0\r\nz\r\n") + [(1, b"", "quiet")]),
    # ---- ms s, ms N in append mode (1.6.20) -------------------------------------------
    Case("ms MA s", s(SET_K, b"ms k 2 MA s\r\ncd\r\n", b"mg k v\r\n")),
    Case("ms s on set", s(b"ms k 3 s\r\nabc\r\n")),
    Case("ms c with s", s(b"ms k 3 c s\r\nabc\r\n", b"mg k c s\r\n")),
    Case("ms MA N autovivify", s(b"ms k 2 MA N30\r\nxy\r\n", b"mg k v t\r\n")),
    Case("ms MP N autovivify", s(b"ms k 2 MP N0\r\nxy\r\n", b"ms k 1 MP N0\r\nw\r\n", b"mg k v\r\n")),
    Case("ms MA without N on a miss", s(b"ms k 2 MA\r\nxy\r\n", b"mg k v\r\n")),
    Case("ms MA C on a miss and a hit", s(b"ms k 2 MA C5000 T30\r\nhi\r\n", b"ms k 2 MA T30\r\nhi\r\n",
                                          b"ms k 2 T30\r\nho\r\n", b"ms k 2 MA C1 T30\r\nhi\r\n", b"mg k v\r\n")),
    Case("ms MA and MA N keep the item's TTL", s(b"ms k 2 T100\r\nab\r\n", b"ms k 2 MA T30\r\ncd\r\n",
                                                 b"ms k 2 MA N30\r\nef\r\n", b"mg k t v\r\n")),
    Case("ms MA N s", s(b"ms k 2 MA N30 s\r\nmo\r\n", b"ms k 2 MA N30 s\r\nko\r\n", b"mg k v s\r\n")),
    Case("ms MP N keeps the first flags", s(b"ms k 1 MP N0 F3\r\nb\r\n", b"ms k 1 MP N0 F9\r\na\r\n", b"mg k v f\r\n")),
    Case("ms s k O q", s(b"ms k 3 s k O7 q\r\nabc\r\n", b"ms k 2 ME s O8\r\nxy\r\n", b"mn\r\n")),
    # ---- x flag (1.6.27) ---------------------------------------------------------------
    Case("md x keeps the item", s(b"ms k 3 F7\r\nabc\r\n", b"md k x\r\n", b"mg k v f s\r\n")),
    Case("md I x tombstone", s(b"ms k 3\r\nabc\r\n", b"md k I x\r\n", b"mg k v\r\n")),
    Case("md x on a miss", s(b"md k x\r\n")),
    Case("mg x", s(SET_K, b"mg k v x\r\n")),
    Case("ms x", s(b"ms k 2 x\r\nab\r\n", b"mg k v\r\n")),
    Case("ma x", s(b"set k 0 0 1\r\n5\r\n", b"ma k x\r\n", b"mg k v\r\n")),
    Case("md x E", s(b"ms k 3\r\nabc\r\n", b"md k x E888\r\n", b"mg k c v\r\n")),
    Case("md x q", s(SET_K, b"md k x q\r\nmn\r\n", b"mg k v\r\n")),
    Case("md x F T", s(b"ms k 3 T100 F4\r\nabc\r\n", b"md k x F5\r\n", b"mg k v f t\r\n", b"md k x T50\r\n",
                       b"mg k f t v\r\n")),
    Case("md x C", s(b"ms k 1\r\nx\r\n", b"md k x C1\r\n", b"mg k v\r\n", b"mg k c\r\n")),
    Case("md x k O", s(SET_K, b"md k x k O7\r\n", b"md nope x k O8\r\n")),
    Case("md x counts a delete hit", s(SET_K, b"md k x\r\n", b"md nope x\r\n", b"stats\r\n"),
         grep=rb"STAT delete_", keep_stats=("delete_hits", "delete_misses")),
    # ---- E flag (1.6.27) ---------------------------------------------------------------
    Case("ms E sets the CAS", s(b"ms k 1 E12345 c\r\nx\r\n", b"mg k c\r\n", b"gets k\r\n")),
    Case("ms E0 then cas 0", s(b"ms k 1 E0\r\nx\r\n", b"cas k 0 0 1 0\r\ny\r\n", b"get k\r\n")),
    Case("ms E0 c", s(b"ms k 1 E0 c\r\nx\r\n", b"mg k c\r\n")),
    Case("E0 on mg N, md I, ma N", s(b"mg k N30 E0 c\r\n", b"mg k c\r\n", b"ms k 1\r\nx\r\n", b"md k I E0\r\n",
                                     b"mg k c\r\n", b"ma n N0 E0 c\r\n", b"ma n c\r\n")),
    Case("md I E", s(b"ms k 1\r\nx\r\n", b"md k I E777\r\n", b"mg k c v\r\n")),
    Case("ma E", s(b"set k 0 0 1\r\n1\r\n", b"ma k E4242 c v\r\n", b"gets k\r\n")),
    Case("mg E on a hit changes nothing", s(b"ms k 1 E5\r\nx\r\n", b"mg k E6 c\r\n", b"mg k c\r\n")),
    Case("mg N E autovivify", s(b"mg k N30 E999 c\r\n", b"mg k c\r\n")),
    # ---- ma, mg flags documented since 1.6.18 ------------------------------------------
    Case("ma O k", s(b"set k 0 0 1\r\n1\r\n", b"ma k O55 k v\r\n", b"ma missing O56 k q\r\nmn\r\n")),
    Case("ma N autovivify J", s(b"ma k N0 J7 v\r\n", b"ma k v\r\n", b"ma k MD D100 v\r\n")),
    Case("mg R recache", s(b"ms k 1 T100\r\nx\r\n", b"mg k R200 v c\r\n", b"mg k R10 v c\r\n")),
    Case("mg h l t", s(b"ms k 1 T0\r\nx\r\n", b"mg k h l t\r\n", b"mg k h l t\r\n")),
    # ---- stats (1.6.22, 1.6.25, 1.6.34, 1.6.37) --------------------------------------------------------
    Case("stats settings client_flags_size", s(b"stats settings\r\n"), grep=rb"client_flags_size",
         keep_stats=("client_flags_size",)),
    Case("stats settings names", s(b"stats settings\r\n")),
    Case("stats names", s(b"stats\r\n")),
    Case("stats sizes_enable removed", s(b"stats sizes_enable\r\n", b"stats sizes_disable\r\n")),
    Case("stats sizes", s(SET_K, b"stats sizes\r\n")),
    Case("-X refuses stats detail", s(b"stats detail on\r\n", b"stats detail dump\r\n"), args=("-X",)),
    # ---- -Z (1.6.30: ssl_proto_errors; the live TLS checks are in test_tls_1638.py) ------
    Case("stats names with -Z", s(b"stats\r\n"), tls=True),
    Case("stats ssl_ values with -Z", s(b"stats\r\n"), tls=True, grep=rb"^STAT (ssl_|time_since_server_cert)",
         keep_stats=("ssl_handshake_errors", "ssl_proto_errors")),
    Case("stats settings names with -Z", s(b"stats settings\r\n"), tls=True),
    # ---- incr/decr ---------------------------------------------------------------------
    Case("incr of 18446744073709551615", s(b"set k 0 0 20\r\n18446744073709551615\r\n", b"incr k 1\r\n",
                                          b"get k\r\n")),
    Case("incr of 18446744073709551615 -", s(b"set k 0 0 22\r\n18446744073709551615 -\r\n", b"incr k 1\r\n",
                                            b"get k\r\n")),
    Case("incr wraps 18446744073709551614 by 2", s(b"set k 0 0 20\r\n18446744073709551614\r\n",
                                                  b"incr k 2\r\n")),
    Case("decr of 18446744073709551615 -", s(b"set k 0 0 22\r\n18446744073709551615 -\r\n", b"decr k 1\r\n",
                                            b"ma k v\r\n", b"get k\r\n")),
    Case("decr below zero", s(b"set k 0 0 1\r\n3\r\n", b"decr k 5\r\n", b"ma k MD D1 v\r\n")),
    Case("incr non-numeric", s(SET_K, b"incr k 1\r\n", b"ma k\r\n")),
    # ---- me ------------------------------------------------------------------------------
    Case("me exp sign: no exptime", s(b"set k 0 0 1\r\nx\r\n", b"me k\r\n")),
    Case("me exp sign: exptime 100", s(b"set k 0 100 1\r\nx\r\n", b"me k\r\n")),
    Case("me exp sign: touched", s(b"set k 0 0 1\r\nx\r\n", b"touch k 1000\r\n", b"me k\r\n")),
    Case("me base64 key b", s(b"ms " + B64_CRLF + b" 1 b\r\nx\r\n", b"me " + B64_CRLF + b" b\r\n")),
    Case("me miss", s(b"me nope\r\n")),
    # ---- metadump ------------------------------------------------------------------------
    Case("metadump size= and flags=", s(b"set k 5 0 3\r\nabc\r\n", b"me k\r\n") +
         [(0, b"lru_crawler metadump all\r\n", "quiet")], **NEWER_DUMP),
    Case("metadump hash", s(b"set k 5 0 3\r\nabc\r\n") + [(0, b"lru_crawler metadump hash\r\n", "quiet")],
         **NEWER_DUMP),
    Case("mn then metadump", s(SET_K) + [(0, b"mn\r\nlru_crawler metadump all\r\n", "quiet")], **NEWER_DUMP),
    Case("mn then watch", [(0, b"mn\r\nwatch mutations\r\n", "quiet")] + [(1, SET_K)] + [(0, b"", "quiet")]),
    # ---- slab / LRU tuning commands ------------------------------------------------------
    Case("slabs automove 0 1 2", s(b"slabs automove 0\r\n", b"slabs automove 1\r\n", b"slabs automove 2\r\n")),
    Case("slabs automove 3", s(b"slabs automove 3\r\n")),
    Case("lru mode", s(b"lru mode flat\r\n", b"lru mode segmented\r\n", b"lru mode other\r\n")),
    Case("lru temp_ttl", s(b"lru temp_ttl 10\r\n", b"lru temp_ttl -1\r\n")),
    Case("lru tune", s(b"lru tune 10 25 0.1 2\r\n")),
    Case("lru_crawler sleep", s(b"lru_crawler sleep 100\r\n", b"lru_crawler sleep 2000000\r\n")),
    Case("lru_crawler tocrawl", s(b"lru_crawler tocrawl 10\r\n", b"lru_crawler tocrawl x\r\n")),
    Case("lru_crawler crawl all", s(b"lru_crawler crawl all\r\n")),
    # ---- delete --------------------------------------------------------------------------
    Case("delete k 0 and k 0 noreply", s(SET_K, b"delete k 0\r\n", SET_K, b"delete k 0 noreply\r\n", b"get k\r\n")),
    Case("delete with extra tokens", s(SET_K, b"delete k 0\r\n", SET_K, b"delete k noreplY\r\n",
                                       b"delete k 0 noreply\r\n", b"get k\r\n"), xfail=NEWER_DELETE),
    Case("delete k x y z", s(SET_K, b"delete k x y z\r\n", b"get k\r\n"), xfail=NEWER_PARSER),
    # ---- newer than 1.6.38: larder answers as 1.6.45 (docs/differences.md) -------------------
    Case("shutdown not enabled", s(b"shutdown\r\n", b"shutdown graceful\r\n"), xfail=NEWER_SHUTDOWN),
    Case("numbers read strictly", s(SET_K, b"touch k +5\r\n", b"gat 99999999999 k\r\n", b"incr k +1\r\n",
                                    b"verbosity +1\r\n", b"flush_all +1\r\n", b"get k\r\n"), xfail=NEWER_NUMBERS),
    Case("numbers both readings agree on", s(SET_K, b"touch k 100\r\n", b"gat -1 k\r\n", b"set n 0 0 1\r\n5\r\n",
                                             b"incr n 18446744073709551610\r\n", b"decr n 7\r\n",
                                             b"verbosity 1\r\n", b"flush_all 0\r\n", b"get k n\r\n")),
    # 1.6.40's request parser (each line checked against the 1.6.45 binary)
    Case("lines under 4 bytes", s(b"\r\n", b" \r\n", b"\x00\r\n", b"x\r\n", b"ab\n"), xfail=NEWER_PARSER),
    Case("required token missing", s(b"gat\r\n", b"gat 0\r\n", b"incr\r\n", b"incr k\r\n", b"delete\r\n",
                                     b"touch k\r\n", b"set\r\n", b"set k 0 0\r\n", b"verbosity\r\n", b"mg\r\n"),
         xfail=NEWER_PARSER),
    Case("extra tokens ignored", s(SET_K, b"touch k 1 2 3\r\n", b"set n 0 0 1\r\n5\r\n", b"incr n 1 2 3\r\n",
                                   b"verbosity 1 2 3\r\n", b"flush_all 0 2 3\r\n", b"get k n\r\n"),
         xfail=NEWER_PARSER),
    Case("noreply is the last token", s(b"set k 0 0 1 noreply extra\r\nx\r\n", b"set n 0 0 1 extra noreply\r\ny\r\n",
                                        b"get k n\r\n"), xfail=NEWER_PARSER),
    Case("refused storage line swallows its block", s(b"cas foo 0 0 6 \r\nbarva2\r\n", b"set k x 0 1\r\nx\r\n",
                                                      b"cas foo 0 0 6 noreply\r\nbarva2\r\n"), xfail=NEWER_PARSER),
    Case("too few tokens: the data line is a command", s(b"set k 0\r\nx\r\n"), xfail=NEWER_PARSER),
    Case("noreply silences an unknown command", s(b"foo noreply\r\n", b"slabs noreply\r\n"), xfail=NEWER_PARSER),
    Case("leading space names no data command", s(SET_K, b" get k\r\n", b" version\r\n"), xfail=NEWER_PARSER),
    Case("bget is gone", s(SET_K, b"bget k\r\n"), xfail=NEWER_PARSER),
    Case("NUL is part of a token", s(b"set k\x000 0 0 1\r\nx\r\n", b"get k\x000 k\r\n"), xfail=NEWER_PARSER),
    Case("odd lines both parsers agree on", s(SET_K, b"  \r\n", b"GET k\r\n", b"foo\r\n", b"stats foo\r\n",
                                              b" flush_all\r\n", b"\x00\x00\r\n", b"get k \r\n", b"mn foo\r\n",
                                              b"flush_all noreply 5\r\n", b"get\tk\r\n")),
    # ---- other 1.6.19-1.6.38 changes -------------------------------------------------------
    Case("bare get", s(b"get\r\n", b"gets\r\n"), xfail=NEWER_PARSER),
    Case("flush_all then gets", s(SET_K, b"flush_all\r\n", SET_K, b"gets k\r\n")),
    # stats.t (1.6.38): an item stored seconds before flush_all, then read: get_flushed
    Case("get_flushed after flush_all", s(SET_K, b"flush_all\r\n", b"get k\r\n", b"stats\r\n"),
         pause_before={b"flush_all\r\n": 2.2}, grep=rb"STAT get_(flushed|misses)",
         keep_stats=("get_flushed", "get_misses")),
    # an item stored in flush_all's own second (1.6.25's flush unlinks it at once)
    Case("get_flushed, same second", s(SET_K, b"flush_all\r\n", b"get k\r\n", b"stats\r\n"),
         grep=rb"STAT get_(flushed|misses)", keep_stats=("get_flushed", "get_misses")),
    Case("ms base64 key then mg k", s(b"ms " + B64_CRLF + b" 1 b\r\nx\r\n", b"mg " + B64_CRLF + b" b k v\r\n")),
    Case("ms invalid mode", s(b"ms k 1 MZ\r\nx\r\n")),
    Case("ms I invalidate", s(b"ms k 1\r\nx\r\n", b"md k I T30\r\n", b"mg k v c\r\n", b"ms k 1 I\r\ny\r\n",
                              b"mg k v\r\n")),
    Case("mg q k O miss then mn", s(b"mg nope q k O9 v\r\nmn\r\n")),
    Case("large client flags", s(b"set k 4294967295 0 1\r\nx\r\n", b"set k 4294967296 0 1\r\nx\r\n",
                                 b"mg k f\r\n")),
    # (a bare `verbosity` is in "required token missing": 1.6.40 answers it otherwise)
    Case("verbosity", s(b"verbosity 1\r\n", b"verbosity 0 noreply\r\n")),
    Case("cache_memlimit", s(b"cache_memlimit 100\r\n", b"cache_memlimit 0\r\n")),
]
