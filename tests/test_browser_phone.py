"""The site on a phone (issue 29), in headless Chromium at 390x844: no page is wider than the screen (a wide table
scrolls inside its own box and the header stays put), the judge table shows each question whole, and a long tool
call id wraps. Screenshots of each page's first screen at 390 px go to test-artifacts/pages/phone-*.png."""
from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model

from traces import selectors

from .conftest import ARTIFACTS, open_page

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]
PHONE = {"width": 390, "height": 844}
SHOTS = ARTIFACTS / "pages"
# Elements reaching past the right edge of the screen, outside any box that scrolls sideways by itself.
OVERFLOWING = """() => [...document.querySelectorAll('body *')].filter(el => {
    if (el.getBoundingClientRect().right <= innerWidth + 1) return false;
    for (let up = el.parentElement; up; up = up.parentElement) {
        const style = getComputedStyle(up);
        if (['auto', 'scroll', 'hidden'].includes(style.overflowX)) return false;
    }
    return true;
}).slice(0, 5).map(el => el.tagName + '.' + el.className + ' right=' + Math.round(el.getBoundingClientRect().right))"""


@pytest.fixture
def phone(browser):
    context, page = open_page(browser, viewport=PHONE, device_scale_factor=1, is_mobile=True, has_touch=True)
    yield page
    context.close()


def _open(page, url: str, name: str) -> None:
    response = page.goto(url)
    assert response is not None and response.status == 200, url
    page.wait_for_load_state("networkidle")
    width = page.evaluate("document.documentElement.scrollWidth")
    assert width <= PHONE["width"], (url, width, page.evaluate(OVERFLOWING))
    assert page.evaluate(OVERFLOWING) == [], url
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=SHOTS / f"phone-{name}.png")


def _table_scrolls_in_its_box(page, selector: str) -> None:
    """The table is wider than the screen and scrolls sideways by itself; the page and its header do not move."""
    box = page.locator(selector).first
    assert box.evaluate("t => t.scrollWidth > t.clientWidth + 50 && t.clientWidth <= innerWidth"), selector
    box.evaluate("t => { t.scrollLeft = t.scrollWidth; }")
    assert box.evaluate("t => t.scrollLeft") > 50
    assert page.evaluate("scrollX") == 0
    header = page.locator("header.site").bounding_box()
    assert header is not None and header["x"] == 0 and header["width"] <= PHONE["width"]


def test_no_page_is_wider_than_a_phone(live_server, demo_ingested, phone):
    base = live_server.url
    _open(phone, base + "/", "leaderboard")
    _table_scrolls_in_its_box(phone, "table.leaderboard")
    _open(phone, base + "/runs/", "runs")
    _table_scrolls_in_its_box(phone, "table.runs")
    _open(phone, base + "/analysis/", "analysis")
    _open(phone, base + "/analysis/?suite=frogsgame", "analysis-frogsgame")
    _open(phone, base + "/plots/", "plots")
    _open(phone, base + "/plots/per-benchmark/", "plot-per-benchmark")
    _open(phone, base + "/plots/time-spent/", "plot-time-spent")
    assert phone.js_errors == [], phone.js_errors


def test_a_run_page_on_a_phone(live_server, demo_ingested, phone):
    runs = selectors.list_runs(limit=None)[0]
    judged = next(r for r in sorted(runs, key=lambda r: -r.step_count)
                  if any(v.text for v in selectors.run_page(r.id, limit=1).judge_panel))
    _open(phone, live_server.url + f"/runs/{judged.id}/", "run")
    # Each question of the judge table is one block: its words as wide as the screen allows, nothing cut off.
    words = phone.locator("table.verdicts td.verdict-text").first
    box = words.bounding_box()
    assert box is not None and box["width"] > 0.8 * (PHONE["width"] - 40) and box["x"] + box["width"] <= PHONE["width"]
    heads = phone.locator("table.verdicts thead")  # one judge table per question (issue 26)
    assert heads.count() >= 1 and all(heads.nth(n).is_hidden() for n in range(heads.count()))
    # A tool call id is one unbroken word; it wraps inside its step instead of widening it.
    ids = phone.locator("li.step .call-id")
    assert ids.count() > 0
    for n in range(min(ids.count(), 20)):
        right = ids.nth(n).evaluate("el => el.getBoundingClientRect().right")
        step = ids.nth(n).evaluate("el => el.closest('li.step').getBoundingClientRect().right")
        assert right <= step <= PHONE["width"]
    phone.locator("#judge-panel").scroll_into_view_if_needed()
    phone.screenshot(path=SHOTS / "phone-run-judge.png")
    assert phone.js_errors == [], phone.js_errors


# The header's rows at a width: the top of each page link (the links of nav, not the account's), the account's, the
# search box's and the brand's, and what the links' row can scroll.
HEADER_ROWS = """() => {
    const top = el => Math.round(el.getBoundingClientRect().top);
    const links = [...document.querySelectorAll('header.site nav a')].filter(a => !a.closest('.account'));
    const row = links[0].parentElement;
    return {links: links.map(top), brand: document.querySelector('header.site .brand').getBoundingClientRect().height,
            account: top(document.querySelector('header.site .account')),
            search: document.querySelector('header.site form.site-search').getBoundingClientRect().width,
            last: links[links.length - 1].getBoundingClientRect().right, scrolls: row.scrollWidth - row.clientWidth};
}"""


@pytest.mark.parametrize("width", [390, 1440])
def test_the_header_lays_out_in_rows_of_one_line(live_server, use_published, browser, width):
    """The site's header at a phone's 390 px and at 1440 px: the page links on one line (on a phone a row of its
    own that scrolls sideways when it is wider than the screen; they wrapped onto two lines under the brand, the
    search box between them), the account's link on the links' row, the brand on one line, the search box whole
    (on a phone as wide as the screen allows), nothing wider than the screen."""
    context, page = open_page(browser, viewport={"width": width, "height": 844}, device_scale_factor=1,
                              is_mobile=width < 600, has_touch=width < 600)
    get_user_model().objects.create_user("reviewer", password="a-long-test-password", is_staff=True)
    SHOTS.mkdir(parents=True, exist_ok=True)
    for who in ("visitor", "staff"):
        if who == "staff":
            page.goto(live_server.url + "/login/?next=/")
            page.fill("#id_username", "reviewer")
            page.fill("#id_password", "a-long-test-password")
            page.click("main input[type=submit]")
            page.wait_for_url(live_server.url + "/")
        else:
            page.goto(live_server.url + "/")
        page.screenshot(path=SHOTS / f"header-{width}-{who}.png", clip={"x": 0, "y": 0, "width": width, "height": 240})
        rows = page.evaluate(HEADER_ROWS)
        assert len(set(rows["links"])) == 1, (who, rows)
        assert abs(rows["account"] - rows["links"][0]) <= 4, (who, rows)
        assert rows["brand"] < 30, (who, rows)
        assert page.evaluate("document.documentElement.scrollWidth") <= width
        assert page.evaluate(OVERFLOWING) == [], who
        if width < 600:
            assert rows["search"] >= 0.9 * (width - 40), (who, rows)
            page.evaluate("() => { const r = document.querySelector('header.site nav a').parentElement;"
                          " r.scrollLeft = r.scrollWidth; }")
            assert page.evaluate(HEADER_ROWS)["last"] <= width, who  # every link can be reached
        else:
            assert rows["scrolls"] == 0 and rows["last"] <= width, (who, rows)
    assert page.js_errors == []
    context.close()
