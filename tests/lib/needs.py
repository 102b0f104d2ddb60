"""What a Python test does when something it needs is missing (a binary, a
package): under CI=true or LARDER_REQUIRE_ALL=1 (scripts/test sets it: it
installed everything) it fails, elsewhere it skips, saying what is missing.
The Rust tests' counterpart is larder_testkit::require_or_skip.
"""

import os

import pytest


def strict():
    """Whether a missing dependency fails the test (CI, LARDER_REQUIRE_ALL)."""
    def is_set(v):
        return bool(v) and v != "0" and v.lower() != "false"
    return is_set(os.environ.get("CI")) or is_set(os.environ.get("LARDER_REQUIRE_ALL"))


def require(what):
    """`what` is missing: fail under CI, else skip."""
    if strict():
        pytest.fail(f"{what} (CI or LARDER_REQUIRE_ALL=1: required; scripts/test installs it)")
    pytest.skip(what)
