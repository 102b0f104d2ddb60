"""The dashboard tests' shared fixture: one headless chromium per module
(chromium_page.start_browser)."""

import pytest

import chromium_page


@pytest.fixture(scope="module")
def browser():
    d = chromium_page.start_browser()
    try:
        yield d
    finally:
        d.quit()
