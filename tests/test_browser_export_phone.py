"""The static export and the runs list at 1440x900 and on a phone (390x844), in headless Chromium (issue 29): no
page wider than the screen, a wide table scrolling inside its own box. Screenshots for a person to look at go to
test-artifacts/pages/export-*-{1440,390}.png and runs-list-{1440,390}.png."""
from __future__ import annotations

import pytest

from .conftest import ARTIFACTS
from .test_browser_phone import OVERFLOWING

pytestmark = [pytest.mark.browser, pytest.mark.django_db]
SHOTS = ARTIFACTS / "pages"
WIDTHS = {1440: 900, 390: 844}


def _look(page, url: str, name: str) -> None:
    """Open ``url`` at each width, screenshot its first screen, and check that nothing reaches past the right edge
    outside a box that scrolls sideways by itself."""
    SHOTS.mkdir(parents=True, exist_ok=True)
    for width, height in WIDTHS.items():
        page.set_viewport_size({"width": width, "height": height})
        response = page.goto(url)
        assert response is not None and response.status == 200, url
        page.wait_for_load_state("networkidle")
        page.screenshot(path=SHOTS / f"{name}-{width}.png")
        scroll = page.evaluate("document.documentElement.scrollWidth")
        assert scroll <= width, (url, width, scroll, page.evaluate(OVERFLOWING))
        assert page.evaluate(OVERFLOWING) == [], (url, width)


def test_the_export_fits_a_phone_and_a_desktop(served, page):
    base, _, run, _ = served
    _look(page, base, "export-leaderboard")
    _look(page, base + "runs/index.html", "export-runs")
    _look(page, base + f"runs/{run.id}/index.html", "export-run")
    _look(page, base + "analysis/index.html", "export-analysis")
    assert page.js_errors == [], page.js_errors


@pytest.mark.django_db(transaction=True)
def test_the_runs_list_at_both_widths(live_server, demo_ingested, page):
    _look(page, live_server.url + "/runs/", "runs-list")
    _look(page, live_server.url + "/runs/?sort=score&dir=desc&page=2", "runs-list-page-2")
    assert page.js_errors == [], page.js_errors


def test_the_live_only_page_reads_on_a_phone(served, browser):
    """The export's live-only.html (where a facet filter, another suite or the API docs lead) on a phone, a mobile
    browser that lays a page out at 980 px unless it says otherwise (a new user's pass, nu3): it had no viewport
    and no stylesheet, so it showed 980 px of unstyled serif text at 40 % size; now the site's look, its header
    leading home, as wide as the screen."""
    from .conftest import open_page

    base = served[0]
    context, phone = open_page(browser, viewport={"width": 390, "height": 844}, is_mobile=True, has_touch=True)
    try:
        response = phone.goto(base + "live-only.html")
        assert response is not None and response.status == 200
        assert phone.evaluate("innerWidth") == 390
        assert phone.evaluate("document.documentElement.scrollWidth") <= 390
        assert phone.locator("header.site a.brand").get_attribute("href") == "index.html"
        assert "serif" not in phone.locator("h1").evaluate("h => getComputedStyle(h).fontFamily").replace(
            "sans-serif", "")  # the site's stylesheet, not the browser's default serif
        phone.locator("main a", has_text="Back to the leaderboard").click()
        phone.wait_for_load_state()
        assert phone.url == base + "index.html" and phone.locator("table.leaderboard").count() == 1
        SHOTS.mkdir(parents=True, exist_ok=True)
        phone.goto(base + "live-only.html")
        phone.screenshot(path=SHOTS / "export-live-only-390.png")
        assert phone.js_errors == [], phone.js_errors
    finally:
        context.close()


@pytest.mark.parametrize("width", [1440, 390])
def test_a_long_word_wraps_in_the_exported_search(served, page, width):
    """The static export's search says what it searched; one long word there (a path, a hash; here 300 z's, and a
    typed filter's value) wraps instead of widening the page (a new user's pass, nu3: ~2,170 px at 390 and at
    1440 px)."""
    base = served[0]
    page.set_viewport_size({"width": width, "height": 844})
    for q in ("z" * 300, "agent=" + "z" * 300):
        page.goto(base + "search/index.html?q=" + q)
        page.wait_for_function("document.getElementById('search-status').textContent.includes('zzzz')")
        assert page.evaluate("document.documentElement.scrollWidth") <= width, (width, q[:8])
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=SHOTS / f"export-search-long-word-{width}.png")
    assert page.js_errors == [], page.js_errors
