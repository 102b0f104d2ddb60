"""The dashboard in a real browser (issue 15): headless Debian chromium driven by
Selenium through Debian's chromium-driver, against a real larder under a known load.

What it checks is what a person sees, after the page has refreshed itself:
  * the prefix holding the most memory is listed first, with the right figure;
  * the 10 MiB value (-I 16m) is among the big keys;
  * the hammered key leads the hot keys by requests;
  * the hit-ratio chart has points (the canvas's data-points attribute, set by
    dashboard.js when it draws);
  * a key holding <script> is displayed as text: the page text contains it, no
    script element besides dashboard.js exists, and the script never ran.

It also saves a full-page screenshot under load: to $LARDER_DASHBOARD_SCREENSHOT
if set (scripts/dashboard-screenshot sets docs/dashboard.png and lets the load run
$LARDER_DASHBOARD_WARMUP seconds first, for fuller charts), else to
tests/.work/dashboard.png (gitignored; look at it when the test fails).

chromium, chromedriver or Selenium missing: the test fails under CI=true or
LARDER_REQUIRE_ALL=1 (scripts/test sets it: it installed them), and skips otherwise.
"""

import json
import os
import random
import socket
import sys
import threading
import time
import urllib.request

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "lib"))
import larder_servers  # noqa: E402
from chromium_page import can_connect as _can_connect, rows as _rows, wait as _wait  # noqa: E402

MIB = 1024 * 1024

# Three prefixes of known sizes: (prefix, items, value bytes). Plus "blob", the
# 10 MiB value's prefix, which ranks second.
PREFIXES = [("user", 1200, 16384), ("sess", 600, 4096), ("cfg", 100, 512)]
BIG_KEY, BIG_SIZE = "blob:video", 10 * MIB
HOT_KEY, HOT_GETS = "cfg:flags", 3000
EVIL_KEY, EVIL_GETS = "<script>window.__larder_xss=1</script>", 300


class Client:
    """A minimal text-protocol client (pipelined sets, plain gets)."""

    def __init__(self, port):
        self.s = socket.create_connection(("127.0.0.1", port), timeout=10)
        self.buf = b""

    def _read_until(self, marker):
        while marker not in self.buf:
            chunk = self.s.recv(1 << 20)
            if not chunk:
                raise ConnectionError("server closed the connection")
            self.buf += chunk
        i = self.buf.index(marker) + len(marker)
        out, self.buf = self.buf[:i], self.buf[i:]
        return out

    def set_many(self, items):
        items = list(items)
        self.s.sendall(b"".join(
            b"set %s 0 0 %d noreply\r\n%s\r\n" % (k.encode(), len(v), v) for k, v in items))
        # noreply: confirm with one round trip that all were taken
        self.s.sendall(b"mn\r\n")
        self._read_until(b"MN\r\n")

    def set(self, key, value):
        self.s.sendall(b"set %s 0 0 %d\r\n%s\r\n" % (key.encode(), len(value), value))
        line = self._read_until(b"\r\n")
        assert line == b"STORED\r\n", (key, line)

    def get_many_times(self, key, n, batch=100):
        """n gets of one key, pipelined `batch` at a time: returns the hits."""
        hits = 0
        left = n
        while left:
            k = min(batch, left)
            self.s.sendall(b"get %s\r\n" % key.encode() * k)
            for _ in range(k):
                head = self._read_until(b"\r\n")
                if head.startswith(b"VALUE "):
                    size = int(head.split()[3])
                    while len(self.buf) < size + 2:
                        self.buf += self.s.recv(1 << 20)
                    self.buf = self.buf[size + 2:]
                    assert self._read_until(b"\r\n") == b"END\r\n"
                    hits += 1
                else:
                    assert head == b"END\r\n", head
            left -= k
        return hits

    def close(self):
        self.s.close()


def _http_json(mport, path):
    with urllib.request.urlopen(f"http://127.0.0.1:{mport}{path}", timeout=5) as r:
        return json.load(r)


def _parse_count(text):
    """The page's fmtNum: 659, 34.7k, 1.20M."""
    mult = {"k": 1e3, "M": 1e6, "G": 1e9}.get(text[-1:], 1)
    return float(text.rstrip("kMG")) * mult


def _parse_bytes(text):
    num, unit = text.split()
    return float(num) * {"B": 1, "KiB": 1024, "MiB": MIB, "GiB": 1024 * MIB}[unit]


@pytest.fixture(scope="module")
def loaded():
    """A larder with an admin port, loaded, and a background load of gets."""
    mport = larder_servers.free_port()
    srv = larder_servers.Server(
        larder_servers.larder_bin(), name="larder",
        args=["-m", "256", "-I", "16m", "-t", "2", "-o", f"metrics_port={mport}"])
    srv.start()
    _wait("the admin port", lambda: _can_connect(mport), 10)
    stop = threading.Event()
    loader = None
    try:
        c = Client(srv.port)
        for prefix, n, size in PREFIXES:
            value = (prefix.encode() * size)[:size]
            for start in range(0, n, 100):
                c.set_many((f"{prefix}:{i}", value) for i in range(start, min(n, start + 100)))
        c.set(BIG_KEY, os.urandom(BIG_SIZE // 2).hex().encode())
        c.set(HOT_KEY, b"on")
        c.set(EVIL_KEY, b"<b>not bold</b>")
        assert c.get_many_times(HOT_KEY, HOT_GETS) == HOT_GETS
        assert c.get_many_times(EVIL_KEY, EVIL_GETS) == EVIL_GETS
        assert c.get_many_times(BIG_KEY, 1) == 1

        def load():
            # Keeps the charts moving: gets of user:* keys, one in five a miss;
            # the hammered key and the <script> key stay hot whatever the wait
            # (the hot-key window is 60 s).
            lc = Client(srv.port)
            rnd = random.Random(15)
            try:
                while not stop.is_set():
                    for _ in range(50):
                        lc.get_many_times(f"user:{rnd.randrange(1500)}", 1)
                    lc.get_many_times(HOT_KEY, 20)
                    lc.get_many_times(EVIL_KEY, 2)
                    time.sleep(0.01)
            finally:
                lc.close()

        loader = threading.Thread(target=load, daemon=True)
        loader.start()
        # The hit-ratio chart needs history samples (one every 2 s) with gets in them.
        _wait("three history samples with gets", lambda: _samples_with_hits(mport) >= 3, 20)
        # scripts/dashboard-screenshot lets the load run longer, for fuller charts.
        time.sleep(float(os.environ.get("LARDER_DASHBOARD_WARMUP", "0")))
        yield srv, mport
        assert srv.alive(), f"server died:\n{srv.log_text()}"
    finally:
        stop.set()
        if loader:
            loader.join(5)
        srv.stop()


def _samples_with_hits(mport):
    h = _http_json(mport, "/api/v1/history")
    i = h["fields"].index("hits_per_s")
    return sum(1 for s in h["samples"] if s[i])


def test_dashboard_in_a_browser(browser, loaded):  # the browser first: missing, it fails fast
    srv, mport = loaded
    d = browser
    t0 = time.monotonic()
    d.get(f"http://127.0.0.1:{mport}/")

    # Wait for a refresh: the status line says "live" with two different times.
    status = lambda: d.find_element("id", "status").text  # noqa: E731
    first = _wait("the page to go live", lambda: status().startswith("live") and status(), 10)
    _wait("a second refresh", lambda: status().startswith("live") and status() != first, 10)
    _wait("the hit-ratio chart's points",
          lambda: int(d.find_element("id", "c-hit").get_attribute("data-points") or 0) >= 3, 10)

    # Prefixes: the one holding the most memory first, with its figure.
    prefix, n, size = PREFIXES[0]
    rows = _rows(d, "t-prefixes")
    assert rows and rows[0][0] == prefix, rows[:4]
    shown = _parse_bytes(rows[0][1])
    # item overhead (key, header) is counted too: a few percent at most
    assert n * size - 0.05 * MIB <= shown <= n * size * 1.03 + 0.05 * MIB, (rows[0], n * size)
    order = [r[0] for r in rows]
    assert order[:4] == ["user", "blob", "sess", "cfg"], order

    # Big keys: the 10 MiB value, first.
    big = _rows(d, "t-big")
    assert big and big[0][0] == BIG_KEY and big[0][1] == "blob", big[:3]
    assert big[0][2] == "10.0 MiB", big[0]

    # Hot keys: the hammered key leads, the <script> key follows.
    hot = _rows(d, "t-hotreq")
    assert hot and hot[0][0] == HOT_KEY and hot[0][1] == "cfg", hot[:3]
    counts = [_parse_count(r[2]) for r in hot]
    assert counts[0] >= HOT_GETS and counts[0] > max(counts[1:]), hot[:3]
    assert any(r[0] == EVIL_KEY for r in hot), hot

    # The <script> key is text: shown as is, no script element made, never run.
    assert EVIL_KEY in d.find_element("tag name", "body").text
    scripts = d.execute_script("return Array.from(document.scripts, s => s.src)")
    assert scripts == [f"http://127.0.0.1:{mport}/dashboard.js"], scripts
    assert d.execute_script("return window.__larder_xss === undefined")
    assert not d.execute_script("return document.querySelector('td b')"), "the value or key became markup"

    # Every chart drew something (the load runs; the history has samples).
    for cid in ["c-req", "c-hit", "c-mem", "c-lat", "c-items"]:
        assert int(d.find_element("id", cid).get_attribute("data-points") or 0) > 0, cid

    # No console errors (CSP violations, failed fetches, exceptions).
    try:
        errors = [e for e in d.get_log("browser") if e.get("level") == "SEVERE"]
    except Exception:  # some drivers do not keep the log
        errors = []
    assert not errors, errors

    _screenshot(d)
    print(f"browser checks took {time.monotonic() - t0:.1f} s")


def _screenshot(d):
    root = os.path.dirname(os.path.dirname(HERE))
    path = os.environ.get("LARDER_DASHBOARD_SCREENSHOT") or os.path.join(root, "tests", ".work", "dashboard.png")
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    # The whole page, beyond the viewport (the charts keep their drawn size).
    import base64
    width, height = d.execute_script(
        "const e = document.documentElement; return [e.scrollWidth, e.scrollHeight];")
    shot = d.execute_cdp_cmd("Page.captureScreenshot", {
        "format": "png", "captureBeyondViewport": True,
        "clip": {"x": 0, "y": 0, "width": width, "height": min(height, 4000), "scale": 1}})
    with open(path, "wb") as f:
        f.write(base64.b64decode(shot["data"]))
