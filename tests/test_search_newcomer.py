"""The search of every trace as a new user met it (defects of a new-user pass): a match's link opens its step with
the query marked on the run page (``q`` for one needle, ``mark`` for several; trace text escaped); a phrase
search says how many runs hold it, as a word search does; ``key=value`` filters typed in the header's box are
read as the search's filters when the key and the value are known, and the page says what it understood."""
from __future__ import annotations

import html
import re

import pytest

from traces import search_views, selectors
from traces.selectors import search

from .test_search_all import _scan

pytestmark = pytest.mark.django_db


def _step_html(body: str, index: int) -> str:
    """The ``<li id="step-N">`` of a run page (up to the next step)."""
    start = body.index(f'id="step-{index}"')
    end = body.find('<li class="step', start)
    return body[start:end if end > 0 else len(body)]


def _flat(body: str) -> str:
    """The page with its runs of whitespace as one space (the template's line breaks)."""
    return " ".join(body.split())


def _links(body: str) -> list[str]:
    return [html.unescape(h) for h in re.findall(r'<a class="step-link" href="([^"]+)"', body)]


# --- 1. a match's link carries the query; the run page marks it -------------------------------------------------

def test_a_match_links_to_its_step_with_its_word_marked(client, demo_ingested):
    body = client.get("/search/", {"q": "import"}).content.decode()
    links = _links(body)
    assert links
    for href in links[:6]:
        assert "&q=import#step-" in href, href
        index = int(href.rsplit("#step-", 1)[1])
        page = client.get(href.split("#")[0]).content.decode()
        step = _step_html(page, index)
        assert re.search(r"<mark>import</mark>", step, re.IGNORECASE), href
        # The run page's own search: its box says what it searched.
        assert 'name="q" value="import"' in page


def test_several_needles_are_marked_without_filtering_the_trace(client, demo_ingested):
    q = 'import "torch"'
    twin = client.get("/api/search", {"q": q}).json()
    assert twin["runs"]
    body = client.get("/search/", {"q": q}).content.decode()
    links = _links(body)
    assert links and all("&mark=import+%22torch%22#step-" in h for h in links), links[:3]
    href = links[0]
    index = int(href.rsplit("#step-", 1)[1])
    page = client.get(href.split("#")[0]).content.decode()
    step = _step_html(page, index)
    marked = {m.lower() for m in re.findall(r"<mark>(.*?)</mark>", step)}
    assert {"import", "torch"} <= marked, marked
    # Not filtered: the trace shows its steps from the one asked for on, matching or not.
    shown = [int(i) for i in re.findall(r'id="step-(\d+)"', page)]
    assert shown[0] == index and len(shown) > 1 and shown == list(range(index, index + len(shown)))
    # "Load more" keeps the marks.
    assert "mark=import+%22torch%22" in page.split('id="steps"', 1)[1]


def test_marks_on_the_run_page_escape_the_trace_text(client, demo_ingested):
    body = client.get("/search/", {"q": "__pwned"}).content.decode()
    href = _links(body)[0]
    index = int(href.rsplit("#step-", 1)[1])
    page = client.get(href.split("#")[0]).content.decode()
    step = _step_html(page, index)
    assert "<script>window.__pwned" not in page
    assert "&lt;script&gt;window.<mark>__pwned</mark>" in step
    # A mark that is markup itself is text too.
    run_id = href.split("/runs/")[1].split("/")[0]
    page = client.get(f"/runs/{run_id}/", {"mark": '<script> "</pre><b>"'}).content.decode()
    assert "<mark><script>" not in page and "<mark></pre><b></mark>" not in page


def test_highlight_marks_each_needle_and_escapes():
    from traces.templatetags.trace_format import has_match, highlight

    assert highlight("a <b>Torch</b> import torch", ["torch", "import"]) == (
        "a &lt;b&gt;<mark>Torch</mark>&lt;/b&gt; <mark>import</mark> <mark>torch</mark>")
    assert highlight("pip install x", ["pip", "pip install"]) == "<mark>pip install</mark> x"  # longest first
    assert highlight("x & y", "&") == "x <mark>&amp;</mark> y"
    assert highlight("<i>", []) == "<i>"  # no query: the template autoescapes it
    assert has_match("Import torch", ["nope", "TORCH"]) and not has_match("x", ["y"]) and not has_match("x", "")


# --- 2. a phrase search says how many runs hold it ---------------------------------------------------------------

def test_a_phrase_search_says_how_many_runs_hold_it(client, demo_ingested, monkeypatch):
    q = '"import torch"'
    expected = len(_scan(q))
    assert expected >= 2
    page = search.search_page(q, limit=50)
    assert not page.exact and page.total == expected == len(page.runs)
    body = _flat(client.get("/search/", {"q": q}).content.decode())
    assert f'data-total="{expected}">{expected} runs</span> hold <q>import torch</q>' in body
    # A word search says it the same way.
    words = search.search_page("import", limit=50)
    assert words.total == words.candidates == len(words.runs)
    body = _flat(client.get("/search/", {"q": "import"}).content.decode())
    assert f'data-total="{words.total}">{words.total} runs</span> hold <q>import</q>.' in body
    # When later pages may add runs, the first says "at least", the next "more on this page".
    monkeypatch.setattr(search_views, "PAGE_RUNS", 1)
    assert search.search_page(q, limit=1).total is None
    first = _flat(client.get("/search/", {"q": q}).content.decode())
    assert 'data-at-least="1">At least 1 run</span> holds <q>import torch</q>' in first
    following = _flat(client.get("/search/?" + html.unescape(re.search(r'href="\?([^"]+)" rel="next"', first)[1])
                                 ).content.decode())
    assert "1 more run</span> on this page holds" in following


# --- 3. key=value filters typed among the words -------------------------------------------------------------------

OPTIONS = {"agents": [("opus-4.6", "Opus 4.6")], "benchmarks": [("gsm8k", "GSM8K")],
           "base_models": [("Qwen3-4B-Base", "Qwen3 4B Base")]}


@pytest.mark.parametrize(("q", "rest", "filters", "refused"), [
    ("benchmark=gsm8k import", "import", {"benchmark": "gsm8k"}, []),
    ("import BENCHMARK=GSM8K", "import", {"benchmark": "gsm8k"}, []),
    ('agent="opus 4.6" "a=b c" lr=1e-5', '"a=b c" lr=1e-5', {"agent": "opus-4.6"}, []),
    ("base-model=qwen3-4b-base kind=tool_call tool=Bash x", "x",
     {"base_model": "Qwen3-4B-Base", "kind": "tool_call", "tool": "Bash"}, []),
    ("flagged=yes latest=1 state=scored verdict=contamination:flagged y", "y",
     {"flagged": "1", "latest": "1", "state": "scored", "verdict": "contamination:flagged"}, []),
    ("benchmark=nope kind=banana x", "benchmark=nope kind=banana x", {}, ["benchmark=nope", "kind=banana"]),
    ("verdict=flagged:clean latest=0 x", "verdict=flagged:clean latest=0 x", {}, ["verdict=flagged:clean",
                                                                                  "latest=0"]),
    ('"benchmark=gsm8k"  lr=1e-5', '"benchmark=gsm8k"  lr=1e-5', {}, []),  # a phrase, an unknown key: words
    ("benchmark=gsm8k benchmark=nope x", "benchmark=nope x", {"benchmark": "gsm8k"}, ["benchmark=nope"]),
])
def test_typed_filters_are_split_from_the_words(q, rest, filters, refused):
    got = search.split_filters(q, OPTIONS)
    assert got.q == rest
    assert {f.param: f.value for f in got.filters} == filters
    assert [token for token, _ in got.refused] == refused


def test_the_header_box_reads_a_typed_filter(client, demo_ingested, monkeypatch):
    body = _flat(client.get("/search/", {"q": "benchmark=gsm8k import"}).content.decode())
    twin = client.get("/api/search", {"q": "import", "benchmark": "gsm8k", "limit": 50}).json()
    assert twin["runs"]
    shown = re.findall(r'data-run="([0-9a-f]+)"', body)
    assert shown == [r["run"]["id"] for r in twin["runs"]]
    assert {selectors.get_run(r).benchmark for r in shown} == {"gsm8k"}
    assert 'id="typed-filters"' in body and '<code>benchmark=gsm8k</code> is <strong data-filter="benchmark">' \
        'Benchmark: GSM8K</strong>, searching <q>import</q>' in body
    assert '<option value="gsm8k" selected>' in body  # the form holds the filter
    assert 'name="q" value="import"' in body  # and the words left
    # The next pages keep it as a parameter, the words as q.
    counts = {b: len(client.get("/api/search", {"q": "the", "benchmark": b, "limit": 50}).json()["runs"])
              for b, _ in search.filter_options()["benchmarks"]}
    bench = max(counts, key=lambda b: counts[b])
    assert counts[bench] >= 2
    monkeypatch.setattr(search_views, "PAGE_RUNS", 1)
    paged = client.get("/search/", {"q": f"benchmark={bench} the"}).content.decode()
    following = html.unescape(re.search(r'href="\?([^"]+)" rel="next"', paged)[1])
    assert following.startswith("q=the&") and f"benchmark={bench}" in following
    monkeypatch.setattr(search_views, "PAGE_RUNS", 20)
    # A value no benchmark has stays a word, and the page says so.
    body = _flat(client.get("/search/", {"q": "benchmark=nope import"}).content.decode())
    assert "<code>benchmark=nope</code>: not a value of the filter Benchmark: searched as words." in body
    assert "<q>benchmark=nope</q>" in body
    # Only filters: the form, with them chosen.
    body = _flat(client.get("/search/", {"q": "benchmark=gsm8k"}).content.decode())
    assert "Type words to search with it." in body and '<option value="gsm8k" selected>' in body
    assert 'id="search-results"' not in body
