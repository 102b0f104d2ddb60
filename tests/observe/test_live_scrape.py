"""A live /metrics scrape of a running larder, read by prometheus_client's parser.

The Rust integration test crates/larder-server/tests/metrics.rs starts larder
with -o metrics_port, sends some traffic, scrapes /metrics into a file and runs
this file with LARDER_OBSERVE_SCRAPE=<file> (skipped without it).
"""

import os

import pytest
from prometheus_client.parser import text_string_to_metric_families

PATH = os.environ.get("LARDER_OBSERVE_SCRAPE")
pytestmark = pytest.mark.skipif(not PATH, reason="LARDER_OBSERVE_SCRAPE not set")


@pytest.fixture(scope="module")
def families():
    with open(PATH) as f:
        text = f.read()
    return {f.name: f for f in text_string_to_metric_families(text)}


def value(fam, name=None, **labels):
    for s in fam.samples:
        if (name is None or s.name == name) and all(s.labels.get(k) == v for k, v in labels.items()):
            return s.value
    raise KeyError((fam.name, name, labels))


def test_general_stats(families):
    assert families["larder_cmd_get"].type == "counter"
    assert value(families["larder_cmd_get"], "larder_cmd_get_total") >= 3
    assert value(families["larder_get_hits"], "larder_get_hits_total") >= 2
    assert families["larder_curr_items"].type == "gauge"
    assert value(families["larder_curr_items"]) == 3
    assert value(families["larder_curr_connections"]) >= 1
    assert families["larder_info"].samples[0].labels["version"] == "1.6.18"
    assert families["larder_segments_used"].type == "gauge"


def test_memory_by_category(families):
    fam = families["larder_memory_bytes"]
    assert fam.type == "gauge"
    cats = {s.labels["category"]: s.value for s in fam.samples}
    assert set(cats) == {"items", "index", "dead", "connections"}
    assert cats["items"] == value(families["larder_bytes"])
    assert cats["index"] > 0
    assert cats["connections"] >= 32768


def test_prefix_series(families):
    by = {s.labels["prefix"]: s.value for s in families["larder_prefix_items"].samples}
    assert by["user"] == 2 and by["sess"] == 1, by


def test_latency_histogram(families):
    fam = families["larder_request_duration_seconds"]
    assert fam.type == "histogram"
    count = value(fam, "larder_request_duration_seconds_count")
    # 6 requests; the last one's time is recorded just after its reply went
    # out, so a scrape may come before it.
    assert count >= 5
    assert value(fam, "larder_request_duration_seconds_bucket", le="+Inf") == count
