"""A run page in headless Chromium: filter, search, jump, keys, load more; a planted script never runs."""
from __future__ import annotations

import re

import pytest

from traces import layout, selectors
from traces.schemas import Step
from traces.templatetags.trace_format import is_long

from .conftest import ARTIFACTS

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.browser]


def test_trace_viewer_in_a_browser(live_server, demo_ingested, page):
    report, _, _ = demo_ingested
    run_dir = report.hostile_run_dirs[0]
    run_id = layout.run_id(*run_dir.split("/"))
    page.goto(f"{live_server.url}/runs/{run_id}/")
    assert page.locator("#steps li.step").count() == 50
    page.screenshot(path=ARTIFACTS / "run.png")

    # Search for the planted markup: it shows as text and never runs.
    page.fill('#trace-filters input[name="q"]', "__pwned")
    page.click('#trace-filters button[type="submit"]')
    page.wait_for_url("**q=__pwned**")
    assert page.locator("#steps li.step").count() >= 1
    assert "<script>window.__pwned=1</script>" in page.locator("#steps").inner_text()
    assert page.evaluate("window.__pwned") is None
    assert page.locator("#steps img").count() == 0

    # Filter by kind.
    page.goto(f"{live_server.url}/runs/{run_id}/")
    page.select_option('select[name="kind"]', "tool_call")
    page.click('#trace-filters button[type="submit"]')
    page.wait_for_url("**kind=tool_call**")
    kinds = page.locator("#steps li.step .kind").all_inner_texts()
    assert kinds and set(kinds) == {"tool_call"}

    # Load more steps in place (htmx), then jump to a step and move with the keyboard.
    page.goto(f"{live_server.url}/runs/{run_id}/")
    page.click("#steps li.load-more button")
    page.wait_for_selector("#step-50")
    assert page.locator("#steps li.step").count() == 100
    page.fill('input[name="step"]', "42")
    page.click('#trace-jump button[type="submit"]')
    page.wait_for_url("**step=42**")
    assert "focus" in page.locator("#step-42").get_attribute("class")
    page.keyboard.press("j")
    assert "focus" in page.locator("#step-43").get_attribute("class")
    assert "step=43" in page.url
    page.keyboard.press("k")
    page.keyboard.press("k")  # the page starts at the linked step: k stops at its first step
    assert "focus" in page.locator("#step-42").get_attribute("class")
    assert "step=42" in page.url and "focus" not in page.locator("#step-43").get_attribute("class")
    page.screenshot(path=ARTIFACTS / "run-step.png")
    assert page.js_errors == []


def test_a_search_swaps_in_the_marked_matches_without_reloading_the_page(live_server, demo_ingested, page):
    report, _, _ = demo_ingested
    run_id = layout.run_id(*report.hostile_run_dirs[0].split("/"))
    page.goto(f"{live_server.url}/runs/{run_id}/")
    page.evaluate("window.__kept = 'same document'")  # a reload or a new page would lose it
    partials = []
    page.on("request", lambda r: partials.append(r.headers.get("hx-target")) if "q=__pwned" in r.url else None)
    page.fill('#trace-filters input[name="q"]', "__pwned")
    page.click('#trace-filters button[type="submit"]')
    page.wait_for_selector("#steps mark")
    assert partials == ["trace-results"] and page.evaluate("window.__kept") == "same document"
    assert "q=__pwned" in page.url  # the search is a deep link
    mark = page.locator("#steps mark").first
    assert mark.inner_text().lower() == "__pwned" and mark.is_visible()
    page.wait_for_function("(() => { const r = document.querySelector('#steps mark').getBoundingClientRect();"
                           " return r.top >= 0 && r.bottom <= window.innerHeight; })()", timeout=5000)  # in view
    assert "focus" in page.locator("#steps mark").first.locator("xpath=ancestor::li[contains(@class,'step')]")\
        .get_attribute("class")
    assert page.evaluate("window.__pwned") is None and page.locator("#steps img").count() == 0
    # htmx keeps no snapshot of the page (historyCacheSize 0): Back reloads the run page as it was before the search.
    assert page.evaluate("localStorage.getItem('htmx-history-cache')") is None
    page.go_back()
    page.wait_for_url(f"**/runs/{run_id}/")
    page.wait_for_selector("#steps li.step")
    assert page.locator("#steps mark").count() == 0 and page.input_value('#trace-filters input[name="q"]') == ""
    assert page.js_errors == []


def _a_long_output() -> tuple[str, Step, str]:
    """(run id, step, word): a tool result of a demo run whose output the page shows whole and collapses (more than
    the preview's lines), and a word of its last line."""
    for run in sorted(selectors.list_runs(limit=None)[0], key=lambda r: r.id):
        for step in selectors.steps_page(run.id, limit=400).steps:
            lines = (step.output or "").splitlines()
            words = re.findall(r"[A-Za-z]{5,}", lines[-1]) if len(lines) > 8 else []
            if step.kind == "tool_result" and is_long(step.output) and not step.output_not_shown and words:
                return run.id, step, words[0]
    raise AssertionError("no demo run has a long tool output")


def test_a_long_output_marked_by_a_search_shows_each_line_once(live_server, demo_ingested, page):
    """A search of every trace opens a step's page with ?mark=<word>: the long output's preview and, opened because
    the word is in it, the rest under it show each of the output's lines once (the rest held the preview's lines
    again)."""
    run_id, step, word = _a_long_output()
    page.goto(f"{live_server.url}/runs/{run_id}/steps?after={step.index - 1}&mark={word}")
    item = page.locator(f"#step-{step.index}")
    assert item.locator("details.more[open]").count() == 1
    shown = item.locator("pre.output").all_inner_texts()
    assert len(shown) == 2 and "\n".join(shown).splitlines() == step.output.splitlines()
    assert word.lower() in {m.lower() for m in item.locator("details.more mark").all_inner_texts()}
    item.screenshot(path=ARTIFACTS / "run-long-output-marked.png")
    assert page.js_errors == []
