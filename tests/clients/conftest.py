"""Fixtures for the real-client tests: one server under test per test module."""

import itertools
import os
import sys

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "lib"))
import larder_servers  # noqa: E402

_seq = itertools.count()


@pytest.fixture(scope="module")
def server():
    """The server under test ($LARDER_BIN, default target/release/larder) on a free port."""
    srv = larder_servers.Server(larder_servers.larder_bin(), name="larder")
    srv.start()
    try:
        yield srv
        if not srv.alive():
            pytest.fail(f"server died during the tests (exit {srv.proc.returncode}):\n{srv.log_text()}")
    finally:
        srv.stop()


@pytest.fixture
def key():
    """A key prefix unique to this test, so tests sharing a server never collide."""
    n = next(_seq)
    return lambda suffix="k": f"t{os.getpid()}_{n}_{suffix}"


ALL_BYTES = bytes(range(256))
# Values that break naive framing: \r\n inside, a line that looks like "END", and all 256 bytes.
TRICKY_VALUES = [
    b"",
    b"\r\n",
    b"a\r\nb\r\n",
    b"\r\nEND\r\n",
    b"VALUE x 0 1\r\nz\r\nEND",
    ALL_BYTES,
    ALL_BYTES * 40 + b"\r\n",
]
