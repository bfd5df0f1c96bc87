"""The leaderboard in headless Chromium: the filter swaps the table in place and the URL follows."""
from __future__ import annotations

import pytest

from .conftest import ARTIFACTS

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.browser]


def test_filter_swaps_the_table_in_place(live_server, use_published, page):
    page.goto(live_server.url + "/")
    opus = page.locator('tr[data-agent="opus-4.6"] td.avg')
    assert opus.inner_text().startswith("23.2")
    page.screenshot(path=ARTIFACTS / "leaderboard.png", full_page=True)
    page.evaluate("window.__sameDocument = true")
    page.click('a[data-base-model="Qwen3-4B-Base"]')
    page.wait_for_url("**/?base_model=Qwen3-4B-Base")
    page.wait_for_selector('table[data-view="Qwen3-4B-Base"]')
    # No full reload: the marker set on the old document survives the htmx swap.
    assert page.evaluate("window.__sameDocument") is True
    changed = page.locator('tr[data-agent="opus-4.6"] td.avg').inner_text()
    assert not changed.startswith("23.2")
    assert page.locator('tr[data-agent="base-zeroshot"] td[data-benchmark="gsm8k"]').inner_text().strip() == "41.8"
    page.screenshot(path=ARTIFACTS / "leaderboard-qwen3-4b.png", full_page=True)
    # The URL is a shareable link to the same view.
    page.goto(live_server.url + "/?base_model=Qwen3-4B-Base")
    assert page.locator('tr[data-agent="opus-4.6"] td.avg').inner_text() == changed
    assert page.js_errors == []
