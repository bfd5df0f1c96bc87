"""The new-user pass's defects, in headless Chromium at 1440 px and at 390 px (a phone): a filter typed in the
header's search box is read and said; the phrase search says how many runs hold it; a match opens its step with
the query marked; a judging rule on the published rows alone says where it applies instead of a blank column;
the report card marks a disagreement a reviewer already decided. Screenshots: test-artifacts/pages/newcomer-*.png."""
from __future__ import annotations

from datetime import datetime

import pytest

from tests.test_judge_eras import _eras_warehouse, _run, eras_tree  # noqa: F401 (fixtures)

from .conftest import ARTIFACTS

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.browser]
SHOTS = ARTIFACTS / "pages"
WIDER = "() => document.documentElement.scrollWidth - window.innerWidth"
SIZES = [(1440, ""), (390, "-390")]


@pytest.mark.parametrize(("width", "suffix"), SIZES)
def test_a_typed_filter_a_counted_phrase_and_a_marked_step(live_server, demo_ingested, page, width, suffix):
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.set_viewport_size({"width": width, "height": 900})
    page.goto(live_server.url + "/runs/")
    box = "header.site form.site-search input[name=q]"
    page.fill(box, 'benchmark=aime2025 "import torch"')
    page.press(box, "Enter")
    page.wait_for_load_state("domcontentloaded")
    notice = page.locator("#typed-filters")
    assert notice.is_visible() and "Benchmark: AIME 2025" in notice.inner_text()
    assert page.locator("select[name=benchmark]").input_value() == "aime2025"
    assert page.locator("form.search-form input[name=q]").input_value() == '"import torch"'
    summary = page.locator("#search-summary").inner_text()
    shown = page.locator("#search-results li.search-run").count()
    assert shown >= 1 and summary.startswith(f"{shown} run"), summary
    assert page.evaluate(WIDER) <= 0, width
    page.screenshot(path=SHOTS / f"newcomer-search-typed{suffix}.png", full_page=True)
    # The match opens its step with the phrase marked (the run page's own search, q).
    link = page.locator("#search-results a.step-link").first
    step = link.get_attribute("href").rsplit("#step-", 1)[1]
    link.click()
    page.wait_for_load_state("domcontentloaded")
    marks = page.locator(f"#step-{step} mark")
    assert marks.count() >= 1 and {m.lower() for m in marks.all_inner_texts()} == {"import torch"}
    assert marks.first.is_visible()
    assert page.locator("#trace-filters input[name=q]").input_value() == "import torch"
    assert page.evaluate(WIDER) <= 0, width
    page.screenshot(path=SHOTS / f"newcomer-run-marked{suffix}.png")
    # Several needles: each marked in the step, the trace not filtered.
    page.goto(live_server.url + "/search/?q=import+torch")
    link = page.locator("#search-results a.step-link").first
    step = link.get_attribute("href").rsplit("#step-", 1)[1]
    link.click()
    page.wait_for_load_state("domcontentloaded")
    marked = {m.lower() for m in page.locator(f"#step-{step} mark").all_inner_texts()}
    assert {"import", "torch"} <= marked, marked
    assert page.locator("#trace-filters input[name=q]").input_value() == ""
    page.screenshot(path=SHOTS / f"newcomer-run-marked-words{suffix}.png")
    assert page.js_errors == []


@pytest.mark.parametrize(("width", "suffix"), SIZES)
def test_a_judging_rule_on_the_published_rows(live_server, demo_ingested, page, width, suffix):
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.set_viewport_size({"width": width, "height": 900})
    page.goto(live_server.url + "/?verdicts=any")
    assert page.locator("#judging-published").is_visible()
    assert page.locator("th", has_text="Rank Δ").count() == 0
    assert page.evaluate(WIDER) <= 0 or width == 390  # the leaderboard table scrolls in its own box on a phone
    page.locator("#judging-published").screenshot(path=SHOTS / f"newcomer-leaderboard-any-published{suffix}.png")
    page.click("#judging-published a")
    page.wait_for_selector("th:has-text('Rank Δ')")
    assert "source=runs" in page.url and "verdicts=any" in page.url
    page.goto(live_server.url + "/?source=all&verdicts=any")
    dash = page.locator("tr.source-published td.rank-change span").first
    assert dash.inner_text() == "—" and "only to rows computed from runs" in dash.get_attribute("title")
    page.screenshot(path=SHOTS / f"newcomer-leaderboard-any-both{suffix}.png", full_page=True)
    assert page.js_errors == []


@pytest.mark.parametrize(("width", "suffix"), SIZES)
def test_the_report_card_marks_a_reviewed_disagreement(live_server, eras_tree, page, width, suffix):  # noqa: F811
    """On the judge-eras tree (tests/test_judges_report.py): gsm8k's contamination, which both judges flagged and
    the rules find no step for, overridden by a reviewer: its row is marked, linked, listed last."""
    from ptbsite import warehouse

    SHOTS.mkdir(parents=True, exist_ok=True)
    page.set_viewport_size({"width": width, "height": 900})
    gsm8k = _run("gsm8k").id
    with warehouse.connect() as con:
        con.execute("INSERT INTO verdict_overrides (run_id, kind, flagged, reason, reviewer, created_at) "
                    "VALUES (?, 'contamination', false, 'the train split', 'newcomer-test', ?)",
                    [gsm8k, datetime(2026, 11, 3)])
    try:
        page.goto(live_server.url + "/judges/")
        rows = page.locator("#judge-disagreements tbody tr")
        row = page.locator(f'#judge-disagreements tr.reviewed[data-run="{gsm8k}"][data-mode="test_data"]')
        assert rows.last.get_attribute("data-run") == gsm8k  # after those still waiting
        assert row.locator("a.badge.reviewed").inner_text() == "reviewed"
        assert "set clean by newcomer-test, 2026-11-03" in row.inner_text()
        assert page.locator("#judge-disagreements tr.reviewed").count() == 1
        assert page.evaluate(WIDER) <= 0 or width == 390  # the tables scroll in their own box on a phone
        page.locator("#judge-disagreements").screenshot(path=SHOTS / f"newcomer-judges-reviewed{suffix}.png")
        row.locator("a.badge.reviewed").click()
        page.wait_for_load_state("domcontentloaded")
        assert page.url.endswith(f"/runs/{gsm8k}/#override-log") and page.locator("#override-log").is_visible()
    finally:
        with warehouse.connect() as con:
            con.execute("DELETE FROM verdict_overrides WHERE reviewer = 'newcomer-test'")
    assert page.js_errors == []
