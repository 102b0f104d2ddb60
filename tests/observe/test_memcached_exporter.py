"""prometheus/memcached_exporter pointed at larder publishes what it publishes
for memcached 1.6.18.

Both servers get the same traffic; one exporter runs against each
(`--memcached.address=127.0.0.1:PORT --web.listen-address=127.0.0.1:FREEPORT`)
and is scraped once; prometheus_client's parser reads both scrapes. Then:

* `memcached_up 1` for both;
* larder's set of metric families contains memcached's, except EXCLUDED below
  (each with the `stats` group and fields larder lacks, and why); families
  only larder has are listed in the failure message and fail too;
* the figures that must agree for the same traffic do (commands by outcome,
  items, limits, max connections).

The exporter is not in Debian 12 (bookworm). The test looks for it at
$MEMCACHED_EXPORTER_BIN, then `prometheus-memcached-exporter` and
`memcached_exporter` on PATH and /usr/bin/prometheus-memcached-exporter.
memcached is $MEMCACHED_BIN or /usr/bin/memcached (Debian package memcached).
When either is missing these tests fail under CI=true or LARDER_REQUIRE_ALL=1
and skip otherwise.

test_stats_fields_the_exporter_reads needs no exporter: it checks the same
contract one level down, on the `stats` / `stats settings` / `stats items` /
`stats slabs` fields memcached_exporter v0.16.0 reads (pkg/exporter/exporter.go),
against memcached 1.6.18's replies, with the same exclusions.
test_stats_fields_the_exporter_reads_from_1638 does it against memcached
1.6.38 (Debian trixie, the chroot scripts/test builds): the fields the exporter
reads from today's memcached, values included where the exporter parses them
(a number, or `yes`/`no` for its boolean settings), so a field larder names
alike but fills with something the exporter cannot parse fails too.
"""

import os
import shutil
import socket
import sys
import time
import urllib.error
import urllib.request

import pytest
from prometheus_client.parser import text_string_to_metric_families

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "lib"))
import larder_servers  # noqa: E402
import memcached_1638  # noqa: E402
import needs  # noqa: E402

NO_SEGMENTED_LRU = (
    "larder has no segmented LRU (memcached's hot/warm/cold/temp sub-LRUs of each slab class): it keeps items "
    "in segments and evicts a segment at a time, so there are no per-class hot/warm/cold item counts, ages, "
    "moves between sub-LRUs or hits by sub-LRU to report")
# family memcached_exporter publishes for memcached 1.6.18 -> (stats group, fields larder lacks, why)
EXCLUDED = {
    "memcached_slab_hot_items": ("items", ["number_hot"], NO_SEGMENTED_LRU),
    "memcached_slab_warm_items": ("items", ["number_warm"], NO_SEGMENTED_LRU),
    "memcached_slab_cold_items": ("items", ["number_cold"], NO_SEGMENTED_LRU),
    "memcached_slab_hot_age_seconds": ("items", ["age_hot"], NO_SEGMENTED_LRU),
    "memcached_slab_warm_age_seconds": ("items", ["age_warm"], NO_SEGMENTED_LRU),
    "memcached_slab_items_moves_to_cold": ("items", ["moves_to_cold"], NO_SEGMENTED_LRU),
    "memcached_slab_items_moves_to_warm": ("items", ["moves_to_warm"], NO_SEGMENTED_LRU),
    "memcached_slab_items_moves_within_lru": ("items", ["moves_within_lru"], NO_SEGMENTED_LRU),
    "memcached_slab_lru_hits": ("items", ["hits_to_hot", "hits_to_warm", "hits_to_cold", "hits_to_temp"], NO_SEGMENTED_LRU),
}

# The fields memcached_exporter v0.16.0 reads, by `stats` group (its
# extstore_* and proxy_* fields only when memcached runs with extstore or as a
# proxy: left out). A field it reads but memcached 1.6.18 does not have is
# ignored below (the exporter skips missing fields).
EXPORTER_READS = {
    "general": [
        "version", "uptime", "time", "rusage_user", "rusage_system", "cmd_set", "cmd_flush", "cas_badval",
        "get_hits", "get_misses", "delete_hits", "delete_misses", "incr_hits", "incr_misses", "decr_hits",
        "decr_misses", "cas_hits", "cas_misses", "touch_hits", "touch_misses", "bytes", "limit_maxbytes",
        "curr_items", "total_items", "bytes_read", "bytes_written", "curr_connections", "total_connections",
        "rejected_connections", "conn_yields", "listen_disabled_num", "evictions", "reclaimed",
        "store_too_large", "store_no_memory", "lru_crawler_starts", "direct_reclaims", "crawler_items_checked",
        "crawler_reclaimed", "moves_to_cold", "moves_to_warm", "moves_within_lru", "total_malloced",
        "accepting_conns",
    ],
    "settings": [
        "maxconns", "lru_crawler", "lru_crawler_sleep", "lru_crawler_tocrawl", "lru_maintainer_thread",
        "hot_lru_pct", "warm_lru_pct", "hot_max_factor", "warm_max_factor",
    ],
    "items": [
        "number", "age", "hits_to_hot", "hits_to_warm", "hits_to_cold", "hits_to_temp", "crawler_reclaimed",
        "evicted", "evicted_nonzero", "evicted_time", "evicted_unfetched", "expired_unfetched", "outofmemory",
        "reclaimed", "store_too_large", "store_no_memory", "tailrepairs", "mem_requested", "moves_to_cold",
        "moves_to_warm", "moves_within_lru", "number_hot", "number_warm", "number_cold", "number_temp",
        "age_hot", "age_warm",
    ],
    "slabs": [
        "get_hits", "delete_hits", "incr_hits", "decr_hits", "cas_hits", "touch_hits", "cas_badval", "cmd_set",
        "chunk_size", "chunks_per_page", "total_pages", "total_chunks", "used_chunks", "free_chunks",
        "free_chunks_end", "mem_requested",
    ],
}


def _memcached_bin():
    path = larder_servers.MEMCACHED_BIN
    if not os.access(path, os.X_OK):
        needs.require(f"no memcached at {path} (Debian package memcached; or set MEMCACHED_BIN)")
    return path


def _exporter_bin():
    candidates = [os.environ.get("MEMCACHED_EXPORTER_BIN"), shutil.which("prometheus-memcached-exporter"),
                  shutil.which("memcached_exporter"), "/usr/bin/prometheus-memcached-exporter"]
    for path in candidates:
        if path and os.access(path, os.X_OK):
            return path
    needs.require("no memcached_exporter (prometheus/memcached_exporter: set MEMCACHED_EXPORTER_BIN, or put "
             "prometheus-memcached-exporter or memcached_exporter on PATH; Debian 12 does not package it)")


# ------------------------------------------------------------------ traffic and stats

class Conn:
    def __init__(self, port):
        self.s = socket.create_connection(("127.0.0.1", port), timeout=5)
        self.buf = b""

    def line(self):
        while b"\r\n" not in self.buf:
            chunk = self.s.recv(65536)
            if not chunk:
                raise ConnectionError("closed")
            self.buf += chunk
        line, self.buf = self.buf.split(b"\r\n", 1)
        return line

    def cmd(self, data, end=None):
        """Sends data; reads lines until one equals `end` (or one line)."""
        self.s.sendall(data)
        lines = [self.line()]
        if end is not None:
            while lines[-1] != end:
                lines.append(self.line())
        return lines

    def stats(self, group=""):
        lines = self.cmd(f"stats {group}".strip().encode() + b"\r\n", end=b"END")
        out = {}
        for ln in lines[:-1]:
            _, name, value = ln.decode().split(" ", 2)
            out[name] = value
        return out

    def close(self):
        self.s.close()


def drive_traffic(port):
    """The same commands, with the same replies, on either server."""
    c = Conn(port)
    try:
        assert c.cmd(b"flush_all\r\n") == [b"OK"]
        for prefix, n, size in (("user", 20, 300), ("sess", 10, 2000)):
            for i in range(n):
                assert c.cmd(b"set %s:%d 0 0 %d\r\n%s\r\n" % (prefix.encode(), i, size, b"v" * size)) == [b"STORED"]
        assert c.cmd(b"set counter 0 0 1\r\n5\r\n") == [b"STORED"]
        assert c.cmd(b"incr counter 3\r\n") == [b"8"]
        assert c.cmd(b"decr counter 1\r\n") == [b"7"]
        assert c.cmd(b"incr nokey 1\r\n") == [b"NOT_FOUND"]
        assert c.cmd(b"decr nokey 1\r\n") == [b"NOT_FOUND"]
        assert len(c.cmd(b"get user:1 user:2 sess:1\r\n", end=b"END")) == 7
        assert c.cmd(b"get user:missing\r\n") == [b"END"]
        assert c.cmd(b"touch sess:2 100\r\n") == [b"TOUCHED"]
        assert c.cmd(b"touch nokey 100\r\n") == [b"NOT_FOUND"]
        assert c.cmd(b"delete sess:3\r\n") == [b"DELETED"]
        assert c.cmd(b"delete nokey\r\n") == [b"NOT_FOUND"]
        gets = c.cmd(b"gets user:3\r\n", end=b"END")
        unique = int(gets[0].split()[4])
        assert c.cmd(b"cas user:3 0 0 1 %d\r\nx\r\n" % unique) == [b"STORED"]
        assert c.cmd(b"cas user:3 0 0 1 %d\r\ny\r\n" % unique) == [b"EXISTS"]
        assert c.cmd(b"cas nokey 0 0 1 1\r\nz\r\n") == [b"NOT_FOUND"]
        big = b"b" * (2 * 1024 * 1024)
        assert c.cmd(b"set toolarge 0 0 %d\r\n%s\r\n" % (len(big), big)) == [b"SERVER_ERROR object too large for cache"]
    finally:
        c.close()


def stats_groups(port):
    c = Conn(port)
    try:
        return {"general": c.stats(), "settings": c.stats("settings"),
                "items": c.stats("items"), "slabs": c.stats("slabs")}
    finally:
        c.close()


def field_names(groups):
    """Per group, field names with the slab class stripped (items:1:number -> number, 1:chunk_size -> chunk_size)."""
    out = {}
    for g, fields in groups.items():
        names = set()
        for k in fields:
            if g == "items":
                names.add(k.split(":", 2)[2])
            elif g == "slabs":
                names.add(k.split(":", 1)[1] if ":" in k else k)
            else:
                names.add(k)
        out[g] = names
    return out


# ------------------------------------------------------------------ servers and exporters

@pytest.fixture(scope="module")
def servers():
    started = []
    try:
        for name, binary in (("larder", larder_servers.larder_bin()), ("memcached", _memcached_bin())):
            srv = larder_servers.Server(binary, name=f"{name}-exporter-test")
            srv.start()
            started.append(srv)
        yield dict(zip(("larder", "memcached"), started))
        for srv in started:
            assert srv.alive(), f"{srv.name} died:\n{srv.log_text()}"
    finally:
        for srv in started:
            srv.stop()


class Exporter(larder_servers.Server):
    """memcached_exporter pointed at the server on `target_port`, started,
    logged and stopped as the servers are (larder_servers.Server); its port
    is its web listener, ready when that answers."""

    def __init__(self, binary, target_port):
        super().__init__(binary, name="memcached-exporter")
        self.target_port = target_port

    def command(self, port):
        return [self.binary, f"--memcached.address=127.0.0.1:{self.target_port}",
                f"--web.listen-address=127.0.0.1:{port}"]

    def _wait_ready(self):
        deadline = time.monotonic() + self.start_timeout
        while time.monotonic() < deadline and self.proc.poll() is None:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/", timeout=2):
                    return True
            except (urllib.error.URLError, OSError):
                time.sleep(0.05)
        return False

    def scrape(self):
        with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/metrics", timeout=10) as r:
            return r.read().decode()


@pytest.fixture(scope="module")
def scrapes(servers):
    binary = _exporter_bin()
    out = {}
    for name, srv in servers.items():
        drive_traffic(srv.port)
        exp = Exporter(binary, srv.port).start()
        try:
            text = exp.scrape()
            out[name] = {f.name: f for f in text_string_to_metric_families(text)}
            out[name]["__log__"] = exp.log_text()
        finally:
            exp.stop()
    return out


def families(scrape):
    return {n for n in scrape if n != "__log__"}


def value(fams, family, **labels):
    found = [s.value for s in fams[family].samples
             if all(s.labels.get(k) == v for k, v in labels.items()) and not s.name.endswith("_created")]
    assert len(found) == 1, (family, labels, found)
    return found[0]


# ------------------------------------------------------------------ tests

def test_exporter_sees_both_servers_up(scrapes):
    for name in ("memcached", "larder"):
        assert value(scrapes[name], "memcached_up") == 1, f"{name}: memcached_up != 1\n{scrapes[name]['__log__']}"
        assert "level=ERROR" not in scrapes[name]["__log__"], scrapes[name]["__log__"]


def test_larder_publishes_every_family_memcached_does(scrapes):
    mc, la = families(scrapes["memcached"]), families(scrapes["larder"])
    missing = sorted(mc - la - set(EXCLUDED))
    extra = sorted(la - mc)
    stale = sorted(f for f in EXCLUDED if f in la)
    unknown = sorted(f for f in EXCLUDED if f not in mc)
    report = "\n".join(
        [f"published for memcached, not for larder: {missing}",
         f"published for larder, not for memcached: {extra}",
         f"excluded but now published for larder (drop the exclusion): {stale}",
         f"excluded but not published for memcached either (stale list): {unknown}"])
    assert not (missing or extra or stale or unknown), report
    # the main families, named so a rename in the exporter shows here
    for fam in ("memcached_up", "memcached_commands", "memcached_current_connections", "memcached_current_items",
                "memcached_items", "memcached_current_bytes", "memcached_limit_bytes", "memcached_items_evicted",
                "memcached_items_reclaimed", "memcached_read_bytes", "memcached_written_bytes",
                "memcached_max_connections", "memcached_connections", "memcached_connections_rejected",
                "memcached_slab_current_items", "memcached_slab_chunk_size_bytes", "memcached_slab_commands",
                "memcached_slab_mem_requested_bytes", "memcached_slab_items_evicted"):
        assert fam in la, fam


def test_figures_agree_for_the_same_traffic(scrapes):
    mc, la = scrapes["memcached"], scrapes["larder"]
    cmds = {(s.labels["command"], s.labels["status"]) for s in mc["memcached_commands"].samples
            if s.name == "memcached_commands_total"}
    assert ("get", "hit") in cmds and ("cas", "badval") in cmds and ("flush", "hit") in cmds
    for command, status in sorted(cmds):
        assert value(la, "memcached_commands", command=command, status=status) == \
            value(mc, "memcached_commands", command=command, status=status), (command, status)
    assert value(la, "memcached_commands", command="get", status="hit") == 4  # 3 keys of a get, 1 gets
    assert value(la, "memcached_commands", command="get", status="miss") == 1
    assert value(la, "memcached_commands", command="cas", status="badval") == 1
    for fam in ("memcached_current_items", "memcached_limit_bytes", "memcached_max_connections",
                "memcached_items_evicted", "memcached_accepting_connections", "memcached_item_too_large"):
        assert value(la, fam) == value(mc, fam), fam
    assert value(la, "memcached_current_items") == 20 + 10 - 1 + 1
    assert value(la, "memcached_item_too_large") == 1
    assert value(la, "memcached_limit_bytes") == 64 * 1024 * 1024
    assert value(la, "memcached_max_connections") == 1024
    assert value(la, "memcached_current_connections") >= 1
    assert value(la, "memcached_read_bytes") > 2 * 1024 * 1024
    assert value(la, "memcached_written_bytes") > 0
    # the per-class figures add up to the server's
    for name in ("larder", "memcached"):
        per_class = sum(s.value for s in scrapes[name]["memcached_slab_current_items"].samples)
        assert per_class == value(scrapes[name], "memcached_current_items"), name
    assert {s.labels["version"] for s in la["memcached_version"].samples} == {"1.6.18"}


def test_stats_fields_the_exporter_reads(servers):
    """The same contract without the exporter: the fields it reads."""
    got = {}
    for name, srv in servers.items():
        drive_traffic(srv.port)
        got[name] = field_names(stats_groups(srv.port))
    excluded = {(g, f) for g, fields, _ in EXCLUDED.values() for f in fields}
    missing, stale = [], []
    for group, fields in EXPORTER_READS.items():
        for f in fields:
            if f not in got["memcached"][group]:
                continue  # the exporter skips it for memcached 1.6.18 too
            if f not in got["larder"][group] and (group, f) not in excluded:
                missing.append(f"stats {group}: {f}")
            if f in got["larder"][group] and (group, f) in excluded:
                stale.append(f"stats {group}: {f}")
    assert not missing, f"larder lacks fields memcached_exporter reads: {missing}"
    assert not stale, f"excluded fields larder now has (drop the exclusion): {stale}"
    # each exclusion names fields memcached 1.6.18 really has
    for fam, (group, fields, _) in EXCLUDED.items():
        for f in fields:
            assert f in got["memcached"][group], (fam, group, f)


# stats settings fields memcached_exporter reads as booleans (parseBoolAndNewMetric: "yes" or "no").
EXPORTER_BOOLS = {("settings", "lru_crawler"), ("settings", "lru_maintainer_thread")}


def _parses_as_exporter_reads(group, field, value):
    """Whether memcached_exporter can read `value`: `yes`/`no` for its booleans, rusage as seconds
    (parseTimevalAndNewMetric), everything else a float (strconv.ParseFloat)."""
    if (group, field) in EXPORTER_BOOLS:
        return value in ("yes", "no")
    try:
        float(value)
        return True
    except ValueError:
        return False


def _values(groups):
    """Per group, field name (slab class stripped, as field_names) -> one of its values."""
    out = {}
    for g, fields in groups.items():
        names = field_names({g: {k: None for k in fields}})[g]
        vals = {}
        for k, v in fields.items():
            for n in names:
                if k == n or k.endswith(":" + n):
                    vals[n] = v
        out[g] = vals
    return out


def test_stats_fields_the_exporter_reads_from_1638():
    """The exporter's fields against memcached 1.6.38: every one 1.6.38 gives (and the exporter
    reads for a server without extstore or proxy) larder gives too, in a form the exporter parses,
    except the EXCLUDED families larder cannot have."""
    why = memcached_1638.available()
    if why:
        pytest.fail(why)  # scripts/test builds the chroot: never a skip
    started = []
    try:
        for name, binary in (("larder", larder_servers.larder_bin()), ("memcached", memcached_1638.binary())):
            srv = larder_servers.Server(binary, name=f"{name}-exporter-1638-test")
            srv.start()
            started.append(srv)
        got = {}
        for name, srv in zip(("larder", "memcached"), started):
            drive_traffic(srv.port)
            got[name] = _values(stats_groups(srv.port))
    finally:
        for srv in started:
            srv.stop()
    excluded = {(g, f) for g, fields, _ in EXCLUDED.values() for f in fields}
    missing, unparsable, stale = [], [], []
    for group, fields in EXPORTER_READS.items():
        for f in fields:
            if f not in got["memcached"][group]:
                continue  # the exporter skips it for memcached 1.6.38 too
            if (group, f) in excluded:
                if f in got["larder"][group]:
                    stale.append(f"stats {group}: {f}")
                continue
            if f not in got["larder"][group]:
                missing.append(f"stats {group}: {f}")
            elif _parses_as_exporter_reads(group, f, got["memcached"][group][f]) and \
                    not _parses_as_exporter_reads(group, f, got["larder"][group][f]):
                unparsable.append(f"stats {group}: {f} = {got['larder'][group][f]!r}")
    assert not missing, f"larder lacks fields memcached_exporter reads from 1.6.38: {missing}"
    assert not unparsable, f"fields the exporter cannot parse from larder: {unparsable}"
    assert not stale, f"excluded fields larder now has (drop the exclusion): {stale}"
    for fam, (group, fields, _) in EXCLUDED.items():
        for f in fields:
            assert f in got["memcached"][group], (fam, group, f)
