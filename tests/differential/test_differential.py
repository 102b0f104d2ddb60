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
    batches = diff.Gen(seed).stream(COUNT)
    reports = diff.run_stream(batches, diff.larder_servers.MEMCACHED_BIN, diff.larder_servers.larder_bin(),
                              f"seed-{seed}")
    assert not reports, "\n".join(reports) + \
        f"\nreproduce: python3 tests/differential/diff.py --seed {seed} --count {COUNT}"
