"""The static export's search reads ``key=value`` words of the query as its filters, as the live search does (a new
user's pass, branch nuz2): ``benchmark=gsm8k loss`` typed in the header's box of the exported site searched the words
"benchmark", "gsm8k" and "loss" in every run (HumanEval runs first, "benchmark" highlighted)."""
from __future__ import annotations

import re
from urllib.parse import quote

import pytest

from traces import selectors

from .conftest import ARTIFACTS
from .test_browser_export import hits

pytestmark = [pytest.mark.django_db, pytest.mark.browser]

WORD = "import"


def _searched(page, query: str) -> list[dict]:
    """The hits once the search page answered ``query`` (its words left after the filters)."""
    page.wait_for_function("q => document.getElementById('search-results').dataset.query === q", arg=query)
    return hits(page)


def test_typed_filters_in_the_header_box_narrow_the_static_search(served, page):
    base, _, _, _ = served
    names = {r.benchmark_name for r in selectors.list_runs(limit=None)[0]}
    assert "GSM8K" in names and len(names) > 1
    page.goto(base + "search/index.html?q=" + quote(WORD))
    everywhere = _searched(page, WORD)
    assert any(" on GSM8K " not in h["title"] for h in everywhere)  # the word is in other benchmarks' runs too
    assert page.locator("#typed-filters").is_hidden()

    # Typed in the header's box of another page, as a new user does.
    page.goto(base + "runs/index.html")
    page.fill("header.site form.site-search input[name=q]", f"benchmark=gsm8k {WORD}")
    page.press("header.site form.site-search input[name=q]", "Enter")
    page.wait_for_url("**/search/index.html?q=*")
    found = _searched(page, WORD)
    assert found and all(" on GSM8K " in h["title"] for h in found), [h["title"] for h in found]
    assert all(h["marks"] and set(m.lower() for m in h["marks"]) <= {WORD} for h in found)  # not "benchmark"
    assert page.locator('select[name="benchmark"]').input_value() == "GSM8K"
    assert page.locator("#search-form input[name=q]").input_value() == WORD
    note = page.locator("#typed-filters")
    assert note.is_visible()
    assert note.inner_text() == f"Read as filters: benchmark=gsm8k is Benchmark: GSM8K, searching {WORD}."  # the q element quotes it
    assert note.locator("code").all_inner_texts() == ["benchmark=gsm8k"]
    assert re.search(r"[?&]benchmark=GSM8K(&|$)", page.url) and re.search(r"[?&]q=" + WORD + "(&|$)", page.url)
    page.screenshot(path=ARTIFACTS / "export-search-typed-filter.png")
    page.set_viewport_size({"width": 390, "height": 844})
    assert page.evaluate("document.documentElement.scrollWidth") <= 390  # the note wraps on a phone
    page.screenshot(path=ARTIFACTS / "export-search-typed-filter-390.png")
    page.set_viewport_size({"width": 1400, "height": 900})

    # A quoted value, and a value the filter does not have: it stays words, and the page says so.
    agent = found[0]["title"].split(" on GSM8K")[0]  # an agent with a GSM8K run holding the word (the filter stays)
    assert " " in agent
    page.fill("#search-form input[name=q]", f'agent="{agent.lower()}" {WORD}')
    page.press("#search-form input[name=q]", "Enter")
    found = _searched(page, WORD)
    assert page.locator('select[name="agent"]').input_value() == agent
    assert found and all(h["title"].startswith(agent + " on GSM8K") for h in found), (agent, [h["title"] for h in found])
    page.fill("#search-form input[name=q]", f"base_model=nope {WORD}")
    page.press("#search-form input[name=q]", "Enter")
    _searched(page, f"base_model=nope {WORD}")
    assert page.locator('select[name="base_model"]').input_value() == ""
    assert note.inner_text() == ("base_model=nope: not a value of the filter Base model in this copy of the site: "
                                 "searched as words.")
    # Typing is not read as filters until Enter (a value half typed is not taken out of the box).
    page.fill("#search-form input[name=q]", "kind=tool_call")
    page.wait_for_timeout(600)
    assert page.locator("#search-form input[name=q]").input_value() == "kind=tool_call"
    assert page.js_errors == []
