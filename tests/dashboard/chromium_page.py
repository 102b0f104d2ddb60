"""What the dashboard's browser tests share: finding Debian's headless
chromium and chromedriver (and Selenium), starting the browser, waiting for
the page, and reading its tables. The `browser` fixture itself is in
conftest.py.
"""

import os
import shutil
import socket
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "lib"))
import needs  # noqa: E402

# Window size and scale fixed so that screenshots are comparable.
CHROMIUM_ARGS = ["--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu",
                 "--window-size=1400,1000", "--hide-scrollbars", "--force-device-scale-factor=1"]


def find_browser():
    """(chromium, chromedriver) paths; fails or skips (needs.require) when
    either or Selenium is missing."""
    try:
        import selenium  # noqa: F401
    except ImportError:
        needs.require("selenium is not installed (tests/requirements.txt)")
    chromium = os.environ.get("CHROMIUM_BIN") or shutil.which("chromium") or "/usr/bin/chromium"
    driver = os.environ.get("CHROMEDRIVER_BIN") or shutil.which("chromedriver") or "/usr/bin/chromedriver"
    for path, pkg in [(chromium, "chromium"), (driver, "chromium-driver")]:
        if not os.access(path, os.X_OK):
            needs.require(f"no {path} (Debian package {pkg})")
    return chromium, driver


def start_browser():
    """A headless chromium under Selenium; the caller quits it."""
    chromium, driver_path = find_browser()
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    opts = webdriver.ChromeOptions()
    opts.binary_location = chromium
    for a in CHROMIUM_ARGS:
        opts.add_argument(a)
    return webdriver.Chrome(service=Service(executable_path=driver_path), options=opts)


def wait(what, cond, timeout):
    """cond()'s first true value, polled every 0.2 s for `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        v = cond()
        if v:
            return v
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout} s waiting for {what}")
        time.sleep(0.2)


def can_connect(port):
    try:
        socket.create_connection(("127.0.0.1", port), timeout=1).close()
        return True
    except OSError:
        return False


def rows(d, table_id):
    """A table's data rows as lists of cell texts (header row left out)."""
    return d.execute_script(
        "return Array.from(document.getElementById(arguments[0]).rows)"
        ".filter(r => r.cells[0].tagName === 'TD').map(r => Array.from(r.cells, c => c.textContent));",
        table_id)
