"""dashboards/larder-grafana.json stays true to what larder's /metrics exposes.

* Every metric name in every PromQL expression of the dashboard (panel targets
  and the template variables' `label_values(...)` queries) must be a series
  name in a real scrape of a real larder: a counter is queried as its
  `<name>_total` sample, a histogram as `_bucket` / `_sum` / `_count`, so the
  names are checked against the samples' names, not the families' (a query of
  `larder_cmd_get` or of a bare histogram name finds nothing in Prometheus and
  is reported as missing). Label names in selectors, in `by (...)` /
  `without (...)` and in legends' `{{label}}` must exist on the metrics the
  expression uses (`instance` and `job` come from Prometheus' scrape).
* The extractor is a small PromQL lexer (strings, durations, numbers,
  identifiers, Grafana variables); unit tests below pin it down, including a
  tiny dashboard with a bogus metric, which must be reported.
* The larder it scrapes has every option that brings conditional series
  (-Z with a session cache, -U, -o grace, -o coalesce) and gets a little
  traffic first (sets and gets in two prefixes, a miss, a failed TLS
  handshake, ...).
* With Debian's prometheus (/usr/bin/prometheus, or $PROMETHEUS_BIN), a real
  Prometheus scrapes that larder every second and every panel query, with
  Grafana's variables filled in, must evaluate without error to at least one
  series. Without it the test fails under CI=true or LARDER_REQUIRE_ALL=1 and
  skips otherwise; openssl (for the -Z certificate) likewise.
"""

import difflib
import json
import os
import re
import shutil
import socket
import ssl
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.parse
import urllib.request

import pytest
from prometheus_client.parser import text_string_to_metric_families

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "lib"))
import larder_servers  # noqa: E402
import needs  # noqa: E402

DASHBOARD = os.path.join(ROOT, "dashboards", "larder-grafana.json")

# Series Prometheus itself adds to every scrape target: a query may use them
# although no exporter exposes them.
SYNTHETIC_SERIES = {
    "up", "scrape_duration_seconds", "scrape_samples_scraped",
    "scrape_samples_post_metric_relabeling", "scrape_series_added",
}
# Labels Prometheus attaches to every scraped series.
TARGET_LABELS = {"instance", "job"}


# ------------------------------------------------------------------ extractor

AGGREGATIONS = {
    "sum", "min", "max", "avg", "group", "stddev", "stdvar", "count", "count_values",
    "bottomk", "topk", "quantile", "limitk", "limit_ratio",
}
PROMQL_FUNCTIONS = AGGREGATIONS | {
    "abs", "absent", "absent_over_time", "ceil", "changes", "clamp", "clamp_max", "clamp_min",
    "day_of_month", "day_of_week", "day_of_year", "days_in_month", "delta", "deriv", "exp", "floor",
    "histogram_avg", "histogram_count", "histogram_sum", "histogram_fraction", "histogram_quantile",
    "histogram_stddev", "histogram_stdvar", "holt_winters", "double_exponential_smoothing", "hour",
    "idelta", "increase", "irate", "label_join", "label_replace", "ln", "log2", "log10", "minute",
    "month", "predict_linear", "rate", "resets", "round", "scalar", "sgn", "sort", "sort_desc",
    "sort_by_label", "sort_by_label_desc", "sqrt", "time", "timestamp", "vector", "year",
    "avg_over_time", "min_over_time", "max_over_time", "sum_over_time", "count_over_time",
    "quantile_over_time", "stddev_over_time", "stdvar_over_time", "last_over_time",
    "present_over_time", "mad_over_time", "acos", "acosh", "asin", "asinh", "atan", "atanh",
    "cos", "cosh", "sin", "sinh", "tan", "tanh", "deg", "rad", "pi",
    # the @ modifier's start() and end()
    "start", "end",
}
# Functions whose string arguments name a label the result gets.
LABEL_MAKING_FUNCTIONS = {"label_replace", "label_join", "count_values"}
# Keywords followed by a parenthesised list of label names.
LABEL_LIST_KEYWORDS = {"by", "without", "on", "ignoring", "group_left", "group_right"}
KEYWORDS = {"bool", "and", "or", "unless", "offset", "atan2"} | LABEL_LIST_KEYWORDS
NUMBER_WORDS = {"inf", "nan"}

_TOKEN = re.compile(r"""
    (?P<ws>\s+)
  | (?P<string>"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*'|`[^`]*`)
  | (?P<var>\$\{[^}]*\}|\$[A-Za-z_][A-Za-z0-9_]*|\[\[[A-Za-z_][A-Za-z0-9_:]*\]\])
  | (?P<duration>(?:\d+(?:ms|[smhdwy]))+(?![A-Za-z0-9_]))
  | (?P<number>0[xX][0-9a-fA-F]+|(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?)
  | (?P<ident>[A-Za-z_:][A-Za-z0-9_:]*)
  | (?P<op>=~|!~|!=|==|<=|>=|[-+*/%^<>=(){}\[\],@])
""", re.VERBOSE)


class PromQLError(ValueError):
    pass


def _tokens(expr):
    pos, out = 0, []
    while pos < len(expr):
        m = _TOKEN.match(expr, pos)
        if not m:
            raise PromQLError(f"cannot read {expr[pos:pos + 20]!r} in {expr!r}")
        pos = m.end()
        kind = m.lastgroup
        if kind != "ws":
            out.append((kind, m.group()))
    return out


def _string_value(tok):
    s = tok[1:-1]
    if tok[0] == "`":
        return s
    return re.sub(r"\\(.)", r"\1", s)


class Uses:
    """What one PromQL expression refers to."""

    def __init__(self):
        self.metrics = set()          # series names
        self.selector_labels = {}     # series name -> label names in its {...}
        self.grouping_labels = set()  # labels in by/without/on/ignoring/group_*
        self.makes_labels = False     # label_replace & co. may create labels

    def __repr__(self):
        return f"Uses(metrics={sorted(self.metrics)}, grouping={sorted(self.grouping_labels)})"


def _matchers(toks, i, expr):
    """Reads `{l op "v", ...}` from toks[i] == '{'; returns (labels, __name__ or None, index after '}')."""
    assert toks[i] == ("op", "{")
    i += 1
    labels, name = set(), None
    while True:
        if i >= len(toks):
            raise PromQLError(f"unclosed {{ in {expr!r}")
        if toks[i] == ("op", "}"):
            return labels, name, i + 1
        if toks[i][0] != "ident" or i + 2 >= len(toks) or toks[i + 1] not in {
                ("op", "="), ("op", "!="), ("op", "=~"), ("op", "!~")} or toks[i + 2][0] != "string":
            raise PromQLError(f"bad label matcher near {toks[i][1]!r} in {expr!r}")
        label, op, value = toks[i][1], toks[i + 1][1], _string_value(toks[i + 2][1])
        if label == "__name__":
            if op != "=":
                raise PromQLError(f"__name__{op} cannot be checked: use a plain name in {expr!r}")
            name = value
        else:
            labels.add(label)
        i += 3
        if i < len(toks) and toks[i] == ("op", ","):
            i += 1


def promql_uses(expr):
    """The metric names (and label names) a PromQL expression uses."""
    toks = _tokens(expr)
    uses = Uses()
    i = 0
    while i < len(toks):
        kind, text = toks[i]
        nxt = toks[i + 1] if i + 1 < len(toks) else (None, None)
        if kind == "ident":
            if text in LABEL_LIST_KEYWORDS:
                i += 1
                if nxt == ("op", "("):
                    i += 1
                    while i < len(toks) and toks[i] != ("op", ")"):
                        if toks[i][0] == "ident":
                            uses.grouping_labels.add(toks[i][1])
                        elif toks[i] != ("op", ","):
                            raise PromQLError(f"bad label list in {expr!r}")
                        i += 1
                    i += 1
                continue
            if text in AGGREGATIONS and nxt in (("ident", "by"), ("ident", "without")):
                i += 1  # `sum by (l) (...)`: the label list comes next
                continue
            if nxt == ("op", "("):
                if text not in PROMQL_FUNCTIONS:
                    raise PromQLError(f"unknown PromQL function {text}() in {expr!r}")
                if text in LABEL_MAKING_FUNCTIONS:
                    uses.makes_labels = True
                i += 1
                continue
            if text in KEYWORDS or text.lower() in NUMBER_WORDS:
                i += 1
                continue
            # a metric name, bare or with a selector
            uses.metrics.add(text)
            i += 1
            if nxt == ("op", "{"):
                labels, name, i = _matchers(toks, i, expr)
                if name is not None and name != text:
                    raise PromQLError(f"{text}{{__name__={name!r}}} can never match in {expr!r}")
                uses.selector_labels.setdefault(text, set()).update(labels)
            continue
        if (kind, text) == ("op", "{"):
            labels, name, i = _matchers(toks, i, expr)
            if name is None:
                raise PromQLError(f"a selector without a metric name cannot be checked in {expr!r}")
            uses.metrics.add(name)
            uses.selector_labels.setdefault(name, set()).update(labels)
            continue
        if (kind, text) == ("op", "["):
            # a range or subquery: durations, Grafana variables, ':'
            depth = 0
            while i < len(toks):
                if toks[i] == ("op", "["):
                    depth += 1
                elif toks[i] == ("op", "]"):
                    depth -= 1
                    if depth == 0:
                        break
                i += 1
            i += 1
            continue
        i += 1
    return uses


_LABEL_VALUES = re.compile(r"^\s*label_values\(\s*(?:(?P<expr>.*\S)\s*,\s*)?(?P<label>[A-Za-z_][A-Za-z0-9_]*)\s*\)\s*$", re.S)
_QUERY_RESULT = re.compile(r"^\s*query_result\((?P<expr>.*)\)\s*$", re.S)


def variable_query_uses(query):
    """A Grafana Prometheus variable query: label_values(...), query_result(...) or label_names()."""
    m = _LABEL_VALUES.match(query)
    if m:
        uses = promql_uses(m.group("expr")) if m.group("expr") else Uses()
        if m.group("expr"):
            for name in uses.metrics:
                uses.selector_labels.setdefault(name, set()).add(m.group("label"))
        return uses
    m = _QUERY_RESULT.match(query)
    if m:
        return promql_uses(m.group("expr"))
    if re.match(r"^\s*label_names\(\s*\)\s*$", query):
        return Uses()
    raise PromQLError(f"variable query not understood (label_values, query_result, label_names): {query!r}")


def _all_panels(panels):
    for p in panels:
        yield p
        yield from _all_panels(p.get("panels", []))  # a collapsed row holds its panels


def dashboard_queries(dash):
    """(where, kind, query, legend) for every Prometheus query in a dashboard: kind 'expr' or 'variable'."""
    out = []
    for p in _all_panels(dash.get("panels", [])):
        for t in p.get("targets", []) or []:
            if t.get("expr"):
                out.append((f"panel {p.get('id')} {p.get('title')!r} ref {t.get('refId')}", "expr", t["expr"],
                            t.get("legendFormat") or ""))
    for var in dash.get("templating", {}).get("list", []):
        if var.get("type") != "query":
            continue
        q = var.get("query")
        if isinstance(q, dict):
            q = q.get("query")
        if q:
            out.append((f"variable ${var.get('name')}", "variable", q, ""))
    return out


def query_uses(kind, query):
    return promql_uses(query) if kind == "expr" else variable_query_uses(query)


class Exposition:
    """Series names and the label names each carries, from a parsed scrape."""

    def __init__(self, text):
        self.families = {f.name: f for f in text_string_to_metric_families(text)}
        self.labels = {}
        for fam in self.families.values():
            for s in fam.samples:
                self.labels.setdefault(s.name, set()).update(s.labels)

    def hint(self, name):
        """Why a name is not a series: the family it belongs to, if any."""
        for fam in self.families.values():
            if name == fam.name and fam.type in ("counter", "histogram", "summary"):
                names = sorted({s.name for s in fam.samples})
                return f"{name} is a {fam.type} family: query one of {names}"
        close = difflib.get_close_matches(name, list(self.labels), n=3, cutoff=0.8)
        return f"similar series: {close}" if close else "no similar series"


def check_dashboard(dash, expo):
    """Problems (strings) with a dashboard against an exposition: unknown metrics or labels."""
    problems = []
    for where, kind, query, legend in dashboard_queries(dash):
        try:
            uses = query_uses(kind, query)
        except PromQLError as e:
            problems.append(f"{where}: {e}")
            continue
        known_labels = set(TARGET_LABELS)
        for name in sorted(uses.metrics):
            if name in SYNTHETIC_SERIES:
                continue
            if name not in expo.labels:
                problems.append(f"{where}: metric {name} is not in larder's /metrics ({expo.hint(name)}): {query}")
                continue
            known_labels |= expo.labels[name]
            extra = uses.selector_labels.get(name, set()) - expo.labels[name] - TARGET_LABELS
            if extra:
                problems.append(f"{where}: {name} has no label(s) {sorted(extra)}: {query}")
        if not uses.makes_labels:
            extra = uses.grouping_labels - known_labels
            if extra:
                problems.append(f"{where}: grouping by label(s) {sorted(extra)} that no metric of the query has: {query}")
            # {{label}} in the legend: a label no metric has shows as nothing
            extra = set(re.findall(r"\{\{\s*([A-Za-z_][A-Za-z0-9_]*)\s*\}\}", legend)) - known_labels
            if extra:
                problems.append(f"{where}: legend {legend!r} names label(s) {sorted(extra)} that no metric of the query has")
    return problems


# ------------------------------------------------------------------ extractor tests

def test_extractor_reads_promql():
    u = promql_uses('sum by (instance, le) (rate(larder_request_duration_seconds_bucket{job=~"$job",instance=~"$instance"}[$__rate_interval]))')
    assert u.metrics == {"larder_request_duration_seconds_bucket"}
    assert u.selector_labels == {"larder_request_duration_seconds_bucket": {"job", "instance"}}
    assert u.grouping_labels == {"instance", "le"}

    u = promql_uses('histogram_quantile(0.99, sum(rate(a_bucket[5m])) without (pod)) / ignoring(x) group_left b'
                    ' offset 1h30m > bool 1e3 and on() c or d unless Inf')
    assert u.metrics == {"a_bucket", "b", "c", "d"}
    assert u.grouping_labels == {"pod", "x"}

    # strings never name metrics, even when they look like one; a regex with '{' inside
    u = promql_uses('label_replace(up{job="larder_cmd_get_total"}, "dst", "$1", "src", "(x{2})") + x:recorded:rate5m @ start()')
    assert u.metrics == {"up", "x:recorded:rate5m"} and u.makes_labels

    # __name__ matchers, subqueries, Grafana variables in every form
    u = promql_uses('max_over_time({__name__="larder_uptime", instance=~"${instance:regex}"}[1h:$__interval]) * [[scale]] + $offset')
    assert u.metrics == {"larder_uptime"} and u.selector_labels["larder_uptime"] == {"instance"}

    # variable queries: the label is a label, not a metric
    u = variable_query_uses('label_values(larder_info{job=~"$job"}, instance)')
    assert u.metrics == {"larder_info"} and u.selector_labels["larder_info"] == {"job", "instance"}
    assert variable_query_uses("label_values(job)").metrics == set()

    with pytest.raises(PromQLError, match="unknown PromQL function rat"):
        promql_uses("rat(larder_cmd_get_total[5m])")
    with pytest.raises(PromQLError):
        promql_uses('{__name__=~"larder_.*"}')


FAKE_EXPOSITION = """\
# HELP larder_cmd_get_total memcached stat cmd_get.
# TYPE larder_cmd_get_total counter
larder_cmd_get_total 3
# HELP larder_curr_items memcached stat curr_items.
# TYPE larder_curr_items gauge
larder_curr_items 1
# HELP larder_prefix_bytes Bytes by prefix.
# TYPE larder_prefix_bytes gauge
larder_prefix_bytes{prefix="user"} 10
# HELP lat_seconds Latency.
# TYPE lat_seconds histogram
lat_seconds_bucket{le="0.001"} 1
lat_seconds_bucket{le="+Inf"} 2
lat_seconds_sum 0.5
lat_seconds_count 2
"""


def _tiny_dashboard(*exprs, var='label_values(larder_curr_items, instance)'):
    return {
        "schemaVersion": 39,
        "templating": {"list": [{"name": "instance", "type": "query", "query": {"query": var, "refId": "V"}}]},
        "panels": [{"id": 1, "type": "row", "title": "r", "collapsed": True, "panels": [
            {"id": 2 + i, "type": "timeseries", "title": f"p{i}", "targets": [{"refId": "A", "expr": e}]}
            for i, e in enumerate(exprs)]}],
    }


def test_extractor_catches_a_bogus_metric():
    expo = Exposition(FAKE_EXPOSITION)
    good = _tiny_dashboard('rate(larder_cmd_get_total{instance=~"$instance"}[5m])',
                           'sum by (prefix) (larder_prefix_bytes) / on(instance) group_left larder_curr_items',
                           'histogram_quantile(0.9, sum by (le) (rate(lat_seconds_bucket[5m])))',
                           'rate(lat_seconds_sum[5m]) / rate(lat_seconds_count[5m]) * up')
    assert check_dashboard(good, expo) == []

    bogus = _tiny_dashboard('rate(larder_cmd_get_total[5m])', 'larder_bogus_bytes / larder_curr_items')
    problems = check_dashboard(bogus, expo)
    assert len(problems) == 1 and "larder_bogus_bytes" in problems[0] and "panel 3" in problems[0], problems

    # a counter's family name, a bare histogram name, a missing label, a variable on a bogus metric
    wrong = _tiny_dashboard('rate(larder_cmd_get[5m])', 'rate(lat_seconds[5m])',
                            'larder_prefix_bytes{command="get"}', 'sum by (command) (larder_prefix_bytes)',
                            var='label_values(larder_nope, instance)')
    wrong["panels"][0]["panels"][0]["targets"].append(
        {"refId": "B", "expr": "larder_prefix_bytes", "legendFormat": "{{instance}} {{ prefix }} {{prefx}}"})
    problems = check_dashboard(wrong, expo)
    text = "\n".join(problems)
    assert len(problems) == 6, text
    assert "names label(s) ['prefx']" in text
    assert "larder_cmd_get is a counter family: query one of ['larder_cmd_get_total']" in text
    assert "lat_seconds is a histogram family" in text
    assert "larder_prefix_bytes has no label(s) ['command']" in text
    assert "grouping by label(s) ['command']" in text
    assert "variable $instance: metric larder_nope" in text


# ------------------------------------------------------------------ the dashboard itself

@pytest.fixture(scope="module")
def dashboard():
    with open(DASHBOARD) as f:
        return json.load(f)


def test_dashboard_is_importable_shape(dashboard):
    d = dashboard
    assert d["schemaVersion"] >= 36
    assert d.get("uid") and d.get("title") and d.get("id") is None
    variables = {v["name"]: v for v in d["templating"]["list"]}
    ds = variables["datasource"]
    assert ds["type"] == "datasource" and ds["query"] == "prometheus"
    inst = variables["instance"]
    assert inst["type"] == "query"
    q = inst["query"]["query"] if isinstance(inst["query"], dict) else inst["query"]
    assert q.startswith("label_values(") and q.rstrip().endswith(", instance)")
    ids = [p["id"] for p in _all_panels(d["panels"])]
    assert len(ids) == len(set(ids)), "panel ids must be unique"
    cells = {}
    for p in _all_panels(d["panels"]):
        g = p["gridPos"]
        assert 0 <= g["x"] and g["x"] + g["w"] <= 24, p["title"]
        for x in range(g["x"], g["x"] + g["w"]):
            for y in range(g["y"], g["y"] + g["h"]):
                assert (x, y) not in cells, f"{p['title']!r} overlaps {cells[(x, y)]!r}"
                cells[(x, y)] = p["title"]
        if p["type"] in ("row", "text"):
            continue
        assert p["datasource"] == {"type": "prometheus", "uid": "${datasource}"}, p["title"]
        assert p["targets"], p["title"]
        refs = [t["refId"] for t in p["targets"]]
        assert len(refs) == len(set(refs)), p["title"]
        for t in p["targets"]:
            assert t["datasource"] == {"type": "prometheus", "uid": "${datasource}"}, p["title"]
            assert 'instance=~"$instance"' in t["expr"], f"{p['title']}: not filtered by $instance: {t['expr']}"
    assert len(dashboard_queries(d)) >= 50


# ------------------------------------------------------------------ a real larder

class FullLarder(larder_servers.Server):
    """larder with every option that adds series: TLS (beside a plain port), UDP,
    grace, coalescing, the admin port. Ready when the plain port answers."""

    def __init__(self, cert, key):
        super().__init__(larder_servers.larder_bin(), name="larder-grafana")
        self.cert, self.key = cert, key

    def command(self, port):
        if port == "PORT":
            self.tls_port = self.udp_port = self.metrics_port = "PORT"
        else:
            self.tls_port = larder_servers.free_port()
            self.udp_port = larder_servers.free_port(socket.SOCK_DGRAM)
            self.metrics_port = larder_servers.free_port()
        cmd = [self.binary, "-p", str(port), "-U", str(self.udp_port),
               "-l", f"notls:127.0.0.1:{port},127.0.0.1:{self.tls_port}",
               "-Z", "-o", f"ssl_chain_cert={self.cert},ssl_key={self.key},ssl_session_cache",
               "-o", "grace=30", "-o", "coalesce=500ms", "-o", f"metrics_port={self.metrics_port}"]
        if os.geteuid() == 0:
            cmd += ["-u", "root"]
        return cmd


def _request(port, payload, expect_end):
    with socket.create_connection(("127.0.0.1", port), timeout=5) as s:
        s.sendall(payload)
        buf = b""
        while not buf.endswith(expect_end):
            chunk = s.recv(65536)
            if not chunk:
                break
            buf += chunk
        return buf


def drive_traffic(srv, ca, round_=0):
    """Commands that make every counter the dashboard shows exist (most are
    always there; the prefix rows and the histogram need traffic)."""
    p = srv.port
    cmds = []
    for prefix, n, size in (("user", 20, 300), ("sess", 10, 50)):
        for i in range(n):
            cmds.append(b"set %s:%d 0 0 %d\r\n%s\r\n" % (prefix.encode(), i, size, b"v" * size))
    cmds += [b"set counter 0 0 1\r\n5\r\n", b"incr counter 3\r\n", b"decr counter 1\r\n", b"incr nokey 1\r\n",
             b"get user:1 user:2 sess:1\r\n", b"get user:missing\r\n", b"touch sess:2 100\r\n",
             b"delete sess:3\r\n", b"delete nokey\r\n", b"mg user:4 v\r\n",
             b"set unprefixed 0 0 1\r\nx\r\n", b"version\r\n"]
    out = _request(p, b"".join(cmds), b"VERSION 1.6.18\r\n")
    assert out.endswith(b"VERSION 1.6.18\r\n"), out[-200:]
    # one get over TLS, one failed handshake
    ctx = ssl.create_default_context(cafile=ca)
    with socket.create_connection(("127.0.0.1", srv.tls_port), timeout=5) as raw:
        with ctx.wrap_socket(raw, server_hostname="127.0.0.1") as s:
            s.sendall(b"get user:5\r\n")
            buf = b""
            while not buf.endswith(b"END\r\n"):
                buf += s.recv(65536)
    with socket.create_connection(("127.0.0.1", srv.tls_port), timeout=5) as s:
        s.sendall(b"this is not a ClientHello\r\n\r\n")
        try:
            s.recv(100)
        except OSError:
            pass
    # a UDP get
    u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    u.settimeout(2)
    try:
        u.sendto(b"\x00\x01\x00\x00\x00\x01\x00\x00get user:6\r\n", ("127.0.0.1", srv.udp_port))
        u.recv(65536)
    finally:
        u.close()


def scrape(port):
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as r:
        assert r.status == 200
        return r.read().decode()


@pytest.fixture(scope="module")
def pki():
    openssl = shutil.which("openssl")
    if not openssl:
        needs.require("no openssl command (Debian package openssl) to make the -Z certificate")
    d = tempfile.mkdtemp(prefix="larder-grafana-")
    subprocess.run([openssl, "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", "key.pem", "-out", "cert.pem",
                    "-days", "3650", "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1"],
                   cwd=d, check=True, capture_output=True)
    yield os.path.join(d, "cert.pem"), os.path.join(d, "key.pem")
    shutil.rmtree(d, ignore_errors=True)


@pytest.fixture(scope="module")
def larder(pki):
    srv = FullLarder(*pki)
    srv.start()
    try:
        drive_traffic(srv, pki[0])
        yield srv
        assert srv.alive(), f"larder died:\n{srv.log_text()}"
    finally:
        srv.stop()


@pytest.fixture(scope="module")
def exposition(larder):
    # the last request's latency is recorded just after its reply: give it a moment
    time.sleep(0.2)
    return Exposition(scrape(larder.metrics_port))


def test_the_scrape_has_the_conditional_series(exposition):
    labels = exposition.labels
    for name in ("larder_ssl_handshake_errors_total", "larder_ssl_new_sessions_total", "larder_udp_replies_cut",
                 "larder_grace_hits_total", "larder_coalesce_parked", "larder_request_duration_seconds_bucket"):
        assert name in labels, name
    prefixes = {s.labels["prefix"] for s in exposition.families["larder_prefix_bytes"].samples}
    assert {"user", "sess", "#unprefixed"} <= prefixes, prefixes
    hs = [s.value for s in exposition.families["larder_ssl_handshake_errors"].samples]
    assert hs and hs[0] >= 1, hs


def test_every_dashboard_metric_is_exposed(dashboard, exposition):
    problems = check_dashboard(dashboard, exposition)
    assert not problems, "the dashboard queries what larder does not expose:\n" + "\n".join(problems)


def test_dashboard_uses_the_families_an_operator_needs(dashboard):
    used = set()
    for _, kind, q, _ in dashboard_queries(dashboard):
        used |= query_uses(kind, q).metrics
    for name in ("larder_get_hits_total", "larder_get_misses_total", "larder_cmd_get_total", "larder_cmd_set_total",
                 "larder_bytes_read_total", "larder_bytes_written_total", "larder_curr_connections",
                 "larder_rejected_connections_total", "larder_memory_used", "larder_limit_maxbytes", "larder_curr_items",
                 "larder_evictions_total", "larder_reclaimed_total", "larder_conn_budget_used",
                 "larder_request_duration_seconds_bucket", "larder_prefix_bytes", "larder_conn_panics",
                 "larder_ssl_handshake_errors_total", "larder_auth_errors_total"):
        assert name in used, name


# ------------------------------------------------------------------ a real Prometheus

# Grafana's values for its variables when the queries go straight to Prometheus.
GRAFANA_VARS = {"job": ".*", "instance": ".*", "__rate_interval": "10s", "__interval": "10s", "__range": "1m"}


def grafana_expand(expr):
    def var(m):
        name = m.group(1) or m.group(2) or m.group(3)
        name = name.split(":")[0]
        if name not in GRAFANA_VARS:
            raise KeyError(f"no value for Grafana variable ${name} in {expr}")
        return GRAFANA_VARS[name]
    return re.sub(r"\$\{([^}]+)\}|\$([A-Za-z_][A-Za-z0-9_]*)|\[\[([A-Za-z_][A-Za-z0-9_:]*)\]\]", var, expr)


def _prometheus_bin():
    path = os.environ.get("PROMETHEUS_BIN") or shutil.which("prometheus") or "/usr/bin/prometheus"
    if not os.access(path, os.X_OK):
        needs.require(f"no {path} (Debian package prometheus) to evaluate the dashboard's queries")
    return path


def _prom_query(port, q):
    url = f"http://127.0.0.1:{port}/api/v1/query?" + urllib.parse.urlencode({"query": q})
    try:
        with urllib.request.urlopen(url, timeout=10) as r:
            return json.loads(r.read())
    except urllib.error.HTTPError as e:
        return json.loads(e.read())


def test_every_panel_query_returns_data_in_prometheus(dashboard, larder, pki):
    binary = _prometheus_bin()
    d = tempfile.mkdtemp(prefix="larder-grafana-prom-")
    port = larder_servers.free_port()
    with open(os.path.join(d, "prometheus.yml"), "w") as f:
        f.write("global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\n"
                "scrape_configs:\n  - job_name: larder\n    static_configs:\n"
                f"      - targets: ['127.0.0.1:{larder.metrics_port}']\n")
    log = open(os.path.join(d, "prometheus.log"), "wb")
    proc = subprocess.Popen([binary, f"--config.file={d}/prometheus.yml", f"--storage.tsdb.path={d}/data",
                             f"--web.listen-address=127.0.0.1:{port}"],
                            stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        # traffic while Prometheus scrapes, so rate() windows see it change
        deadline = time.monotonic() + 60
        scrapes = 0
        while time.monotonic() < deadline:
            if proc.poll() is not None:
                break
            drive_traffic(larder, pki[0])
            try:
                r = _prom_query(port, 'count_over_time(up{job="larder"}[1m])')
                res = r.get("data", {}).get("result", [])
                scrapes = int(float(res[0]["value"][1])) if res else 0
            except OSError:
                pass
            if scrapes >= 12:
                break
            time.sleep(0.5)
        with open(os.path.join(d, "prometheus.log"), "rb") as f:
            plog = f.read()[-3000:].decode("utf-8", "replace")
        assert scrapes >= 12, f"Prometheus scraped larder {scrapes} times in 60 s:\n{plog}"
        up = _prom_query(port, 'up{job="larder"}')["data"]["result"]
        assert up and up[0]["value"][1] == "1", up

        failures = []
        for where, kind, query, _ in dashboard_queries(dashboard):
            if kind == "variable":
                uses = variable_query_uses(query)
                q = grafana_expand(" or ".join(sorted(uses.metrics))) if uses.metrics else None
                if q is None:
                    continue
            else:
                q = grafana_expand(query)
            r = _prom_query(port, q)
            if r.get("status") != "success":
                failures.append(f"{where}: {r.get('errorType')}: {r.get('error')}\n    {q}")
            elif not r["data"]["result"]:
                failures.append(f"{where}: no series\n    {q}")
        assert not failures, "dashboard queries that fail or find nothing in a real Prometheus:\n" + "\n".join(failures)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, 15)
            try:
                proc.wait(10)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, 9)
                proc.wait(5)
        log.close()
        shutil.rmtree(d, ignore_errors=True)
