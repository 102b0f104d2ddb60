"""The dashboard behind the admin listener's access control, in a real browser
(headless Debian chromium through Selenium, as test_dashboard_browser.py):

  * with -o metrics_auth_file, the page and its JSON answer 401 with a Basic
    challenge to a client without credentials;
  * a browser that authenticates with basic auth (the user and password in
    the address, as a person would type them into the browser's prompt)
    gets the page, and the page's own polling of /api/v1/* goes through
    with the credentials the browser keeps: the page goes live;
  * with -X the big and hot keys are listed as "(hidden)" with their prefix,
    size and counts, and no key name reaches the page.

chromium, chromedriver or Selenium missing: fails under CI=true or
LARDER_REQUIRE_ALL=1, skips otherwise (as the other dashboard test).
"""

import base64
import json
import os
import shutil
import socket
import sys
import time
import urllib.error
import urllib.parse
import urllib.request

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "lib"))
import larder_servers  # noqa: E402

USER, PASSWORD = "viewer", "pa ss:word"
SECRET = "session:alice@example.com"


def _require(what):
    strict = os.environ.get("CI") == "true" or os.environ.get("LARDER_REQUIRE_ALL") == "1"
    if strict:
        pytest.fail(f"{what} (CI=true or LARDER_REQUIRE_ALL=1: required; scripts/test installs it)")
    pytest.skip(what)


def _find_browser():
    try:
        import selenium  # noqa: F401
    except ImportError:
        _require("selenium is not installed (tests/requirements.txt)")
    chromium = os.environ.get("CHROMIUM_BIN") or shutil.which("chromium") or "/usr/bin/chromium"
    driver = os.environ.get("CHROMEDRIVER_BIN") or shutil.which("chromedriver") or "/usr/bin/chromedriver"
    for path, pkg in [(chromium, "chromium"), (driver, "chromium-driver")]:
        if not os.access(path, os.X_OK):
            _require(f"no {path} (Debian package {pkg})")
    return chromium, driver


def _wait(what, cond, timeout):
    deadline = time.monotonic() + timeout
    while True:
        v = cond()
        if v:
            return v
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout} s waiting for {what}")
        time.sleep(0.2)


def _can_connect(port):
    try:
        socket.create_connection(("127.0.0.1", port), timeout=1).close()
        return True
    except OSError:
        return False


def _get(mport, path, auth=None):
    req = urllib.request.Request(f"http://127.0.0.1:{mport}{path}")
    if auth:
        req.add_header("Authorization", "Basic " + base64.b64encode(auth.encode()).decode())
    try:
        with urllib.request.urlopen(req, timeout=5) as r:
            return r.status, dict(r.headers), r.read()
    except urllib.error.HTTPError as e:
        return e.code, dict(e.headers), e.read()


@pytest.fixture(scope="module")
def guarded(tmp_path_factory):
    """A larder with -X and an admin listener that wants basic auth, holding
    a big and hot key whose name must not be shown."""
    creds = tmp_path_factory.mktemp("admin") / "credentials"
    creds.write_text(f"# the dashboard's viewer\nbasic {USER}:{PASSWORD}\n")
    mport = larder_servers.free_port()
    srv = larder_servers.Server(
        larder_servers.larder_bin(), name="larder",
        args=["-X", "-o", f"metrics_port={mport},metrics_auth_file={creds},bigkeys_min_size=100"])
    srv.start()
    try:
        _wait("the admin port", lambda: _can_connect(mport), 10)
        s = socket.create_connection(("127.0.0.1", srv.port), timeout=10)
        value = b"v" * 5000
        s.sendall(b"set %s 0 0 %d\r\n%s\r\n" % (SECRET.encode(), len(value), value))
        s.sendall(b"get %s\r\n" % SECRET.encode() * 40)
        want = b"STORED\r\n" + (b"VALUE %s 0 5000\r\n%s\r\nEND\r\n" % (SECRET.encode(), value)) * 40
        got = b""
        while len(got) < len(want):
            chunk = s.recv(1 << 20)
            assert chunk, got[-200:]
            got += chunk
        assert got == want
        s.close()
        yield srv, mport
        assert srv.alive(), f"server died:\n{srv.log_text()}"
    finally:
        srv.stop()


@pytest.fixture(scope="module")
def browser():
    chromium, driver_path = _find_browser()
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    opts = webdriver.ChromeOptions()
    opts.binary_location = chromium
    for a in ["--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu",
              "--window-size=1400,1000"]:
        opts.add_argument(a)
    d = webdriver.Chrome(service=Service(executable_path=driver_path), options=opts)
    try:
        yield d
    finally:
        d.quit()


def _rows(d, table_id):
    return d.execute_script(
        "return Array.from(document.getElementById(arguments[0]).rows)"
        ".filter(r => r.cells[0].tagName === 'TD').map(r => Array.from(r.cells, c => c.textContent));",
        table_id)


def test_without_credentials_everything_is_refused(guarded):
    _, mport = guarded
    for path in ["/", "/dashboard.js", "/api/v1/keys", "/metrics"]:
        status, headers, body = _get(mport, path)
        assert status == 401, (path, status)
        challenge = {k.lower(): v for k, v in headers.items()}.get("www-authenticate", "")
        assert challenge.startswith("Basic realm="), (path, headers)
        assert b"alice" not in body
        assert _get(mport, path, auth=f"{USER}:wrong")[0] == 401
    status, _, body = _get(mport, "/api/v1/keys", auth=f"{USER}:{PASSWORD}")
    assert status == 200
    keys = json.loads(body)
    assert keys["key_names"] == "hidden"
    assert keys["bigkeys"][0]["key"] is None and keys["bigkeys"][0]["prefix"] == "session"


def test_dashboard_with_basic_auth_shows_no_key_names(browser, guarded):
    _, mport = guarded
    d = browser
    quoted = urllib.parse.quote(PASSWORD, safe="")
    d.get(f"http://{USER}:{quoted}@127.0.0.1:{mport}/")
    status = lambda: d.find_element("id", "status").text  # noqa: E731
    first = _wait("the page to go live", lambda: status().startswith("live") and status(), 10)
    _wait("a second refresh", lambda: status().startswith("live") and status() != first, 10)

    big = _rows(d, "t-big")
    assert big and big[0][0] == "(hidden)" and big[0][1] == "session", big
    assert big[0][2].endswith("KiB"), big[0]
    hot = _rows(d, "t-hotreq")
    assert hot and hot[0][0] == "(hidden)" and hot[0][1] == "session" and hot[0][2] == "40", hot
    assert "alice" not in d.find_element("tag name", "body").text
    try:
        errors = [e for e in d.get_log("browser") if e.get("level") == "SEVERE"]
    except Exception:  # some drivers do not keep the log
        errors = []
    assert not errors, errors
