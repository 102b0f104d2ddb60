"""pytest entry for the differential test: seeded random streams, memcached vs larder.

DIFF_SEEDS (default 1-8) and DIFF_COUNT (default 3000 commands per stream) tune it.
A failing stream is saved under tests/.work/differential/ for reproduction.
"""

import os
import sys

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import diff  # noqa: E402

SEEDS = diff.parse_seeds(os.environ.get("DIFF_SEEDS", "1-8"))
COUNT = int(os.environ.get("DIFF_COUNT", "3000"))


@pytest.mark.parametrize("seed", SEEDS)
def test_stream(seed):
    if not os.path.exists(diff.larder_servers.MEMCACHED_BIN):
        pytest.fail(f"reference server {diff.larder_servers.MEMCACHED_BIN} missing (apt-get install memcached)")
    # larder rejects a gat/gats line with an over-long key whole; memcached
    # touches the keys before the bad one, then reports the same error. The
    # difference is documented in docs/differences.md; streams leave that case out.
    batches = diff.Gen(seed).stream(COUNT, no_long_key_gat=True)
    reports = diff.run_stream(batches, diff.larder_servers.MEMCACHED_BIN, diff.larder_servers.larder_bin(),
                              f"seed-{seed}")
    assert not reports, "\n".join(reports) + \
        f"\nreproduce: python3 tests/differential/diff.py --seed {seed} --count {COUNT}"


def test_reference_agrees_with_itself():
    """memcached against memcached: the streams themselves must be deterministic,
    or every divergence reported above could be noise."""
    mc = diff.larder_servers.MEMCACHED_BIN
    if not os.path.exists(mc):
        pytest.fail(f"reference server {mc} missing (apt-get install memcached)")
    reports = diff.run_stream(diff.Gen(SEEDS[0]).stream(COUNT), mc, mc, "self-check", save=False)
    assert not reports, "\n".join(reports)


def test_normalise():
    """CAS uniques map to order of first appearance; VERSION and STAT values are masked."""
    side = diff.Side("x", None)
    raw = (b"VALUE a 0 1 900\r\nx\r\nVALUE b 5 2 77\r\n\r\n\r\nVALUE a 0 1 900\r\nx\r\nEND\r\n"
           b"STAT pid 123\r\nVERSION 1.6.18\r\n")
    assert side.normalise(raw) == [
        b"VALUE a 0 1 cas#0\r\n", b"x\r\n", b"VALUE b 5 2 cas#1\r\n", b"\r\n\r\n",
        b"VALUE a 0 1 cas#0\r\n", b"x\r\n", b"END\r\n", b"STAT pid *\r\n", b"VERSION x\r\n"]
    assert side.cas_seen == {b"a": [b"900"], b"b": [b"77"]}
    other = diff.Side("y", None)
    assert other.normalise(b"VALUE a 0 1 5\r\nx\r\n") == [b"VALUE a 0 1 cas#0\r\n", b"x\r\n"]
    assert other.normalise(b"VALUE a 0 1 6\r\ny\r\n") != side.normalise(b"VALUE a 0 1 900\r\nx\r\n")
