"""larder-observe's Prometheus exposition, read back by a real Prometheus text
parser (prometheus_client.parser.text_string_to_metric_families).

The exposition comes from `cargo run -p larder-observe --example exposition`,
which uses every writer the server's /metrics endpoint is built from: memcached
stats, bounded per-prefix series, latency histograms, memory by category.
Set LARDER_OBSERVE_EXPOSITION to a file to parse that instead (e.g. a scrape).
"""

import math
import os
import subprocess

import pytest
from prometheus_client.parser import text_string_to_metric_families

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


@pytest.fixture(scope="module")
def families():
    path = os.environ.get("LARDER_OBSERVE_EXPOSITION")
    if path:
        with open(path) as f:
            text = f.read()
    else:
        text = subprocess.run(
            ["cargo", "run", "-q", "-p", "larder-observe", "--example", "exposition"],
            cwd=ROOT, check=True, capture_output=True, text=True, timeout=900,
        ).stdout
    fams = {f.name: f for f in text_string_to_metric_families(text)}
    assert fams, text
    return fams


def samples(fam, name=None):
    return [s for s in fam.samples if name is None or s.name == name]


def test_stats_counters_and_gauges(families):
    assert families["larder_cmd_get"].type == "counter"
    assert samples(families["larder_cmd_get"], "larder_cmd_get_total")[0].value == 1000
    assert families["larder_curr_connections"].type == "gauge"
    assert samples(families["larder_curr_connections"])[0].value == 3
    assert samples(families["larder_rusage_user_seconds"])[0].value == pytest.approx(0.123456)
    info = samples(families["larder_info"])[0]
    assert info.labels == {"version": "larder 0.1.0"} and info.value == 1
    assert "larder_libevent" not in families


def test_prefix_series_bounded_and_escaped(families):
    fam = families["larder_prefix_bytes"]
    assert fam.type == "gauge"
    by = {s.labels["prefix"]: s.value for s in fam.samples}
    # 4 tracked prefixes (6 seen), top 3 by bytes get a label, the rest fold
    # into #other; keys without delimiter are #unprefixed. A prefix is the
    # label in the escaped form every listing prints (larder-observe's
    # escape.rs: bytes outside printable ASCII as %XX), so the newline is
    # %0A; the quote and backslash are escaped by the exposition format
    # and come back whole from the parser.
    assert by == {
        'we"ird\\pre%0Afix': 400,
        "sess": 300,
        "item": 200,
        "#other": 100 + 500 + 600,
        "#unprefixed": 5,
    }
    gets = {s.labels["prefix"]: s.value for s in samples(families["larder_prefix_gets"], "larder_prefix_gets_total")}
    assert gets["#other"] == 3 and gets["sess"] == 1


def test_latency_histogram(families):
    fam = families["larder_request_duration_seconds"]
    assert fam.type == "histogram"
    for cmd in ("get", "set"):
        buckets = [s for s in fam.samples if s.name.endswith("_bucket") and s.labels["command"] == cmd]
        les = [float(s.labels["le"]) for s in buckets]
        counts = [s.value for s in buckets]
        assert les == sorted(les) and math.isinf(les[-1])
        assert counts == sorted(counts)
        count = [s.value for s in fam.samples if s.name.endswith("_count") and s.labels["command"] == cmd][0]
        total = [s.value for s in fam.samples if s.name.endswith("_sum") and s.labels["command"] == cmd][0]
        assert counts[-1] == count == 7
        assert total == pytest.approx((800 + 1500 + 3000 + 12_000 + 250_000 + 2_000_000_000 + 100_000_000_000) / 1e9)
        # 800 ns is the only value <= 1024 ns
        assert counts[0] == 1 and les[0] == pytest.approx(1.024e-6)


def test_memory_by_category(families):
    by = {s.labels["category"]: s.value for s in families["larder_memory_bytes"].samples}
    assert set(by) == {"items", "index", "dead", "connections"}
