"""pytest entry for the larder-vs-memcached-1.6.38 differential cases (cases.py, ref.py).

A case larder answers differently today carries the #27 gap as its xfail reason,
strict: when a fix makes it pass, the run fails until the mark is removed.
"""

import os
import sys

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ref  # noqa: E402
from cases import CASES  # noqa: E402


def _reference():
    why = ref.memcached_1638.available()
    if why:
        pytest.fail(why)  # scripts/test installs it: never a skip
    return ref.memcached_1638.binary()


def _param(case):
    marks = [pytest.mark.xfail(strict=True, reason=case.xfail)] if case.xfail else []
    return pytest.param(case, id=case.name, marks=marks)


@pytest.mark.parametrize("case", [_param(c) for c in CASES])
def test_case(case):
    res = ref.compare(case, _reference(), ref.larder_servers.larder_bin())
    assert res is None, ref.report(case, res)


def test_reference_agrees_with_itself():
    """Every case run twice against memcached 1.6.38: the normalisation must make
    the reference agree with itself, or a difference above could be noise."""
    mc = _reference()
    noisy = [ref.report(c, r) for c in CASES for r in [ref.compare(c, mc, mc)] if r]
    assert not noisy, "\n".join(noisy)


def test_case_names_unique():
    names = [c.name for c in CASES]
    assert len(names) == len(set(names))


def test_normalise():
    """Meta CAS tokens, me/metadump cas=, times and exp= signs are masked; an E value stays."""
    c = ref.Conn("x", None, ref.Labels({b"77"}), {})
    raw = (b"HD c900\r\nVA 1 c901 t5\r\nx\r\nME k exp=-1 la=3 cas=900 fetch=no\r\n"
           b"key=k exp=12 la=1 cas=77\r\nts=1.5 gid=3 cfd=12 type=deleted key=k\r\nme exp=-5\r\n")
    assert c.tokens(raw) == [
        b"HD c#0\r\n", b"VA 1 c#1 t5\r\n", b"x\r\n", b"ME k exp=-1 la=* cas=#0 fetch=no\r\n",
        b"key=k exp=+ la=* cas=#%d\r\n" % (ref.Labels.LITERAL + 77),
        b"ts=* gid=* cfd=* type=deleted key=k\r\n", b"me exp=-\r\n"]
