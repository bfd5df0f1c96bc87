"""One long unbroken word typed by a visitor or a reviewer (a file path, a hash, a pasted blob) never widens a page,
in headless Chromium at 1440 px and at 390 px (a new user's pass, nu3): the search of every trace says what it
searched in its summary (a 600-character word made /search/ ~1,930 px wide at either width), and a reviewer's
override reason in the run page's public override log (400 x's made the page 4,279 px wide at 1440 px). The words
stay whole text, never HTML. Screenshots: test-artifacts/pages/long-word-*.png."""
from __future__ import annotations

import shutil
from urllib.parse import quote

import pytest

from ptbsite import warehouse
from traces import selectors, services

from .conftest import ARTIFACTS

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.browser]
SHOTS = ARTIFACTS / "pages"
SIZES = [(1440, ""), (390, "-390")]
WORD = "<b>" + "x" * 400 + "</b>"
WIDER = "() => document.documentElement.scrollWidth - window.innerWidth"


@pytest.fixture
def overridden(demo_warehouse_state, tmp_path, settings) -> str:
    """A copy of the demo warehouse (the session's stays as it is) where a reviewer overrode one run's
    contamination verdict with a reason holding WORD; the run's id."""
    _, source = demo_warehouse_state
    path = tmp_path / "long-words.duckdb"
    shutil.copy(source, path)
    settings.PTB_WAREHOUSE = str(path)
    warehouse.reset_migration_cache()
    run = next(r for r in selectors.list_runs(limit=None)[0] if r.is_latest and not r.method.startswith("baseline"))
    services.override_verdict(run_id=run.id, kind="contamination", flagged=True,
                              reason=f"the test split is read from {WORD}", reviewer="reviewer")
    yield run.id
    warehouse.reset_migration_cache()


@pytest.mark.parametrize(("width", "suffix"), SIZES)
def test_a_long_word_wraps_in_the_search_summary_and_the_override_log(live_server, overridden, page, width,
                                                                       suffix):
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.set_viewport_size({"width": width, "height": 900})
    for q in ("y" * 600, "agent=" + "y" * 600, '"' + "y" * 600 + '" loss'):
        page.goto(f"{live_server.url}/search/?q={quote(q)}")
        summary = page.locator("#search-summary")
        assert "y" * 150 in summary.inner_text()
        assert page.evaluate(WIDER) <= 0, (width, q[:10], page.evaluate(WIDER))
    page.screenshot(path=SHOTS / f"long-word-search{suffix}.png")

    page.goto(f"{live_server.url}/runs/{overridden}/")
    reason = page.locator("#override-log td").last
    assert reason.inner_text() == f"the test split is read from {WORD}"  # whole, as text
    assert page.locator("#override-log b").count() == 0
    assert page.evaluate(WIDER) <= 0, (width, page.evaluate(WIDER))
    box = reason.bounding_box()
    assert box is not None and box["width"] >= 200  # a column to read, not a word a line
    if width > 600:  # the whole table on the screen; on a phone it scrolls sideways in its own box
        assert box["x"] + box["width"] <= width
    page.locator("#override-log").scroll_into_view_if_needed()
    page.screenshot(path=SHOTS / f"long-word-override{suffix}.png")
    assert page.js_errors == []
