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
import socket
import sys
import urllib.error
import urllib.parse
import urllib.request

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "lib"))
import larder_servers  # noqa: E402
from chromium_page import can_connect as _can_connect, rows as _rows, wait as _wait  # noqa: E402

USER, PASSWORD = "viewer", "pa ss:word"
SECRET = "session:alice@example.com"


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
