"""Across runs in headless Chromium: the header's search box on every page leads to the results page (grouped by
run, matches marked, links to the steps); the compare page; both at 1440 px and at 390 px (a phone), where no page
is wider than the viewport. Screenshots go to test-artifacts/pages/ (search-*.png, compare-*.png)."""
from __future__ import annotations

import pytest

from traces import layout, selectors

from .conftest import ARTIFACTS

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.browser]
SHOTS = ARTIFACTS / "pages"
WIDER = "() => document.documentElement.scrollWidth - window.innerWidth"
# The header (brand, links, the search box) fits the viewport on every page, whatever the page's own tables do.
HEADER_WIDER = "() => document.querySelector('header.site').scrollWidth - window.innerWidth"


def _id(demo_run) -> str:
    return layout.run_id(*demo_run.run_dir.split("/"))


@pytest.mark.parametrize(("width", "suffix"), [(1440, ""), (390, "-390")])
def test_the_header_box_searches_every_trace(live_server, demo_ingested, page, width, suffix):
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.set_viewport_size({"width": width, "height": 900})
    run = selectors.list_runs(limit=1)[0][0]
    for path in ("/", "/runs/", f"/runs/{run.id}/", "/analysis/"):
        page.goto(live_server.url + path)
        assert page.locator("header.site form.site-search input[name=q]").is_visible(), path
        assert page.evaluate(HEADER_WIDER) <= 0, (path, width)
    page.fill("header.site form.site-search input[name=q]", '"import torch"')
    page.press("header.site form.site-search input[name=q]", "Enter")
    page.wait_for_url("**/search/?q=%22import+torch%22")
    results = page.locator("#search-results li.search-run")
    assert results.count() >= 1
    marks = page.locator("#search-results pre.excerpt mark").all_inner_texts()
    assert marks and {m.lower() for m in marks} == {"import torch"}
    assert page.locator("header.site input[name=q]").input_value() == '"import torch"'
    assert page.evaluate(WIDER) <= 0, width
    page.screenshot(path=SHOTS / f"search{suffix}.png", full_page=True)
    # A match links to its step, opened at it on the run page.
    link = page.locator("#search-results a.step-link").first
    href = link.get_attribute("href")
    link.click()
    page.wait_for_load_state("domcontentloaded")
    step = href.rsplit("#step-", 1)[1]
    assert page.locator(f"#step-{step}").is_visible()
    # The planted markup is found as text and never runs.
    page.goto(live_server.url + "/search/?q=__pwned")
    assert "<script>window.__pwned" in page.locator("#search-results").inner_text()
    assert page.evaluate("window.__pwned") is None
    assert page.js_errors == []


@pytest.mark.parametrize(("width", "suffix"), [(1440, ""), (390, "-390")])
def test_the_compare_page(live_server, demo_ingested, page, width, suffix):
    report, _, _ = demo_ingested
    timed = [_id(r) for r in report.runs if r.timestamped and r.steps_planned > 30][:2]
    page.set_viewport_size({"width": width, "height": 900})
    # From the runs list: tick two runs, compare.
    page.goto(live_server.url + "/runs/")
    for run_id in timed:
        page.check(f'input[name=runs][value="{run_id}"]')
    page.click("#compare-form button")
    page.wait_for_url("**/compare/?runs=*")  # the one-parameter link, the runs in the list's order
    assert sorted(page.url.split("runs=")[1].split("%2C")) == sorted(timed)
    assert page.locator("#compare-facts th.compare-run").count() == 2
    assert page.locator("#compare-facts tr.differs").count() >= 1
    assert page.locator("#compare-phases .phase-axis").count() == 2
    steps = page.locator("#compare-steps .step-link")
    shown = steps.count()
    assert 0 < shown <= 50
    assert page.evaluate(WIDER) <= 0, width
    page.screenshot(path=SHOTS / f"compare{suffix}.png", full_page=True)
    # More steps swap in below (htmx), the page stays.
    page.click("#compare-more a")
    page.wait_for_function(f"document.querySelectorAll('#compare-steps .step-link').length > {shown}")
    assert page.locator("h1").count() == 1
    assert page.js_errors == []


@pytest.mark.parametrize(("width", "suffix"), [(1440, ""), (390, "-390")])
def test_a_run_page_offers_the_agents_after_it_and_every_run_of_its_cell(live_server, demo_ingested, page, width,
                                                                        suffix):
    """A run's "Compare with": the other agents (the ones after it by name, ``pick_peers``) each with a compare
    link, and a link to every run of its cell on the runs list, which lists only that cell. Screenshot
    run-peers*.png."""
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.set_viewport_size({"width": width, "height": 900})
    run = next(r for r in selectors.list_runs(limit=200)[0]
               if any(p.relation == "other" for p in selectors.cell_peers(r.id)))
    others = [p.run.id for p in selectors.cell_peers(run.id) if p.relation == "other"]
    page.goto(live_server.url + f"/runs/{run.id}/#compare-with")
    page.click("details.peer-others summary")
    assert page.locator("details.peer-others li.peer-other").evaluate_all(
        "els => els.map(e => e.dataset.run)") == others
    assert page.locator("details.peer-others .peer-note").is_visible()
    assert page.evaluate(WIDER) <= 0, width
    page.locator("#compare-with").screenshot(path=SHOTS / f"run-peers{suffix}.png")
    page.click("details.peer-others .peer-note a")
    page.wait_for_url("**/runs/?benchmark=*")
    listed = page.locator("input[name=runs]").evaluate_all("els => els.map(e => e.value)")
    cell = {r.id for r in selectors.list_runs(limit=500, benchmark=run.benchmark, base_model=run.base_model)[0]}
    assert run.id in listed and set(listed) <= cell and set(others) <= set(listed)
    assert page.js_errors == []
