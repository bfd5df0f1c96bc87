"""The static export in headless Chromium, served by ``python -m http.server`` with no Django behind it."""
from __future__ import annotations

import re
import urllib.request

import pytest

from export.exporter import STEPS_PER_PAGE, export_site
from traces import selectors

from .conftest import ARTIFACTS
from .test_export import DEEP_WORD, HOSTILE, OTHER_WORD, _write, assert_no_broken_link

pytestmark = [pytest.mark.django_db, pytest.mark.browser]


def test_the_exported_site_works_without_a_server(served, page):
    base, outdir, run, _ = served
    page.goto(base)
    assert page.locator('tr[data-agent="opus-4.6"] td.avg').inner_text().startswith("23.2")
    page.screenshot(path=ARTIFACTS / "export-leaderboard.png", full_page=True)

    # Another base model's view is its own pre-rendered page.
    page.click('a[data-base-model="Qwen3-4B-Base"]')
    page.wait_for_url("**/base_model/Qwen3-4B-Base/index.html")
    page.wait_for_selector('table[data-view="Qwen3-4B-Base"]')
    assert not page.locator('tr[data-agent="opus-4.6"] td.avg').inner_text().startswith("23.2")
    # Sorting runs in the browser: by agent name, then the other way round.
    page.click('a[data-sort="agent"]')
    names = page.locator("table.leaderboard tbody tr:not(.baseline) td.agent").all_inner_texts()
    assert names == sorted(names, key=str.lower)
    baseline = "rows => rows.map(r => r.classList.contains('baseline'))"
    kinds = page.locator("table.leaderboard tbody tr").evaluate_all(baseline)
    assert True in kinds and kinds == sorted(kinds)  # the grey reference rows after the agents, as live (issue 29)
    page.click('a[data-sort="agent"]')
    assert page.locator("table.leaderboard tbody tr:not(.baseline) td.agent").all_inner_texts() == sorted(
        names, key=str.lower)[::-1]
    assert page.locator("table.leaderboard tbody tr").evaluate_all(baseline) == kinds
    # By average, the reference rows sit where their average places them.
    page.click('a[data-sort="average"]')
    averages = [float(t.split()[0]) for t in page.locator("table.leaderboard tbody td.avg").all_inner_texts()]
    kinds = page.locator("table.leaderboard tbody tr").evaluate_all(baseline)
    assert averages == sorted(averages, reverse=True) and kinds != sorted(kinds)
    page.screenshot(path=ARTIFACTS / "export-leaderboard-qwen3-4b.png", full_page=True)

    # The runs list filters in the browser; a run opens with its first page of steps.
    page.goto(base + f"runs/index.html?agent={run.agent_key}&benchmark={run.benchmark}")
    visible = page.locator("table.runs tbody tr:visible")
    assert 0 < visible.count() < page.locator("table.runs tbody tr").count()
    assert page.locator('select[name="benchmark"]').input_value() == run.benchmark
    page.click(f'tr[data-run="{run.id}"] a')
    page.wait_for_url(f"**/runs/{run.id}/index.html")
    assert page.locator("#steps li.step").count() == STEPS_PER_PAGE
    page.screenshot(path=ARTIFACTS / "export-run.png")
    # A link to a step of the same page (evidence, a cited step) makes that step the current one (issue 29).
    same_page = page.locator('main a[href^="index.html#step-"]:not(.idx)')
    assert same_page.count() > 0
    target = same_page.first.get_attribute("href").split("#")[1]
    same_page.first.click()
    page.wait_for_selector(f"li#{target}.focus")
    assert page.locator("#steps li.step.focus").count() == 1

    # Step pages: next, then back; j moves the focus.
    page.click("#steps li.load-more a")
    page.wait_for_url(f"**/runs/{run.id}/steps/2.html")
    assert page.locator(f"#step-{STEPS_PER_PAGE}").count() == 1
    page.keyboard.press("j")
    assert page.locator(f"#step-{STEPS_PER_PAGE}.focus").count() == 1
    page.screenshot(path=ARTIFACTS / "export-steps-2.png")
    page.click('nav.pager a[rel="prev"] >> nth=0')
    page.wait_for_url(f"**/runs/{run.id}/index.html")

    # Jump to a step number (over jump.json).
    page.fill('#static-jump input[name="step"]', str(STEPS_PER_PAGE + 1))
    page.click("#static-jump button")
    page.wait_for_url(f"**/steps/2.html#step-{STEPS_PER_PAGE + 1}")

    # A plot draws from the vendored plotly.js.
    page.goto(base + "plots/time-vs-score/index.html")
    page.wait_for_selector('#time-vs-score[data-drawn="true"]')
    assert page.locator("#time-vs-score svg .point").count() > 10
    page.screenshot(path=ARTIFACTS / "export-plot.png", full_page=True)
    assert page.js_errors == []

    assert assert_no_broken_link(outdir) > 1000
    # issue 29: /favicon.ico is there, and no attribute of any page names a path from the server's root.
    with urllib.request.urlopen(base + "favicon.ico") as answer:
        assert answer.read()[:4] == b"\x00\x00\x01\x00"  # an ICO file
    absolute = [(str(p.relative_to(outdir)), m) for p in outdir.rglob("*.html")
                for m in re.findall(r'\s[a-z-]+="(/[^"]*)"', p.read_text())]
    assert absolute == []


def hits(page) -> list[dict]:
    """The search page's results as shown: the link's href and text, the step line, the excerpt's text and its
    highlighted words."""
    return page.eval_on_selector_all("#search-results li.search-hit", """items => items.map(li => ({
        href: li.querySelector("a").getAttribute("href"), title: li.querySelector("a").textContent,
        where: li.querySelector(".hit-head .muted").textContent, excerpt: li.querySelector(".excerpt").textContent,
        marks: Array.from(li.querySelectorAll(".excerpt mark")).map(m => m.textContent),
        elements: Array.from(li.querySelectorAll(".excerpt *")).map(e => e.tagName)}))""")


def search_for(page, word: str) -> list[dict]:
    page.fill("#search-form input[name=q]", word)
    page.wait_for_function("word => document.getElementById('search-results').dataset.query === word", arg=word)
    return hits(page)


def test_the_search_page_finds_a_word_deep_in_a_long_step_across_runs(served, page):
    base, outdir, _, added = served
    deep_title = selectors.get_run(added.deep_run).title
    requested: list[str] = []
    page.on("request", lambda request: requested.append(request.url))

    # From the runs list to the search page; the index is not loaded until the search is used.
    page.goto(base + "runs/index.html")
    page.click("#search-link a")
    page.wait_for_url("**/search/index.html")
    assert page.locator("header.site nav a", has_text="Search").count() == 1
    assert not [url for url in requested if "/pagefind/" in url]

    # A word that only the long step of one run holds, 280 KB into its ~320 KB output (past the 256 KiB the
    # pages show): one result, the run's title, the step, the word highlighted in the excerpt.
    found = search_for(page, DEEP_WORD)
    assert [url for url in requested if url.endswith("/pagefind/pagefind.js")]
    assert len(found) == 1, found
    hit = found[0]
    assert hit["href"] == f"../runs/{added.deep_run}/steps/2.html?mark={DEEP_WORD}#step-{added.deep_step}"
    assert hit["title"] == deep_title
    assert hit["where"] == f"step {added.deep_step} · tool_result Bash"
    assert hit["marks"] == [DEEP_WORD] and f"note {DEEP_WORD} here" in hit["excerpt"]
    assert page.locator("#search-status").inner_text() == f"1 step matches \u201c{DEEP_WORD}\u201d."
    page.screenshot(path=ARTIFACTS / "export-search-deep-word.png", full_page=True)
    assert re.search(r"[?&]q=" + DEEP_WORD, page.url)  # the address keeps the search

    # The result opens the step on its pre-rendered page (the word is past what the page shows: nothing to mark).
    page.click("#search-results li.search-hit a")
    page.wait_for_url(f"**/runs/{added.deep_run}/steps/2.html?mark={DEEP_WORD}#step-{added.deep_step}")
    assert page.locator(f"#step-{added.deep_step}.focus").count() == 1

    # A word only the other run holds is found from the same page: the index spans runs. Its step's markup-like
    # text shows as text (no element is made of it), entities as written (Pagefind's excerpt escapes "<" but not
    # "&": a "&lt;" of the trace would read as "<" if the excerpt were unescaped).
    page.go_back()
    page.wait_for_url("**/search/index.html?q=*")
    found = search_for(page, OTHER_WORD)
    assert [h["href"] for h in found] == [f"../runs/{added.other_run}/index.html?mark={OTHER_WORD}#step-{added.other_step}"]
    assert found[0]["marks"] == [OTHER_WORD]
    assert f"found {OTHER_WORD} {HOSTILE} in data.txt" == found[0]["excerpt"]
    assert found[0]["elements"] == ["MARK"]
    assert page.title().startswith("Search the traces")
    # Its page marks the word in the step, as the live site's search does (issue 29).
    page.click("#search-results li.search-hit a")
    page.wait_for_url(f"**/runs/{added.other_run}/index.html?mark={OTHER_WORD}#step-{added.other_step}")
    marks = page.locator(f"#step-{added.other_step} mark")
    assert marks.count() >= 1 and set(marks.all_inner_texts()) == {OTHER_WORD}
    assert page.locator("#steps mark").count() == marks.count()  # only the hit's step
    assert page.locator(f"#step-{added.other_step}.focus").count() == 1
    page.screenshot(path=ARTIFACTS / "export-search-hit-marked.png")
    page.go_back()
    page.wait_for_url("**/search/index.html?q=*")

    # The run page's search is this page narrowed to the run: the other run's word is not in the deep run.
    page.goto(base + f"runs/{added.deep_run}/index.html")
    page.fill('#static-search input[name="q"]', OTHER_WORD)
    page.click("#static-search button")
    page.wait_for_url(f"**/search/index.html?run={added.deep_run}*")
    page.wait_for_function("word => document.getElementById('search-results').dataset.query === word", arg=OTHER_WORD)
    assert hits(page) == [] and page.locator("#search-status").inner_text() == f"0 steps match \u201c{OTHER_WORD}\u201d."
    assert page.locator("#search-run").is_visible()
    assert "trace=agent" in page.url and f"run={added.deep_run}" in page.url  # the filters the run page sent, kept
    found = search_for(page, DEEP_WORD)
    assert [h["href"] for h in found] == [f"../runs/{added.deep_run}/steps/2.html?mark={DEEP_WORD}#step-{added.deep_step}"]
    assert page.locator("#search-run .run-title").inner_text() == deep_title
    page.screenshot(path=ARTIFACTS / "export-search-one-run.png", full_page=True)
    # The filters come from the index: the benchmarks of the exported runs by their display names.
    benchmarks = page.locator('select[name="benchmark"] option').all_inner_texts()
    assert benchmarks[0] == "any" and "GSM8K" in benchmarks and "HumanEval" in benchmarks
    assert benchmarks[1:] == sorted({r.benchmark_name for r in selectors.list_runs(limit=None)[0]})
    assert page.locator('select[name="trace"]').input_value() == "agent"  # the run page searched its agent trace
    assert page.js_errors == []


def test_the_search_page_merges_the_index_of_a_run_changed_since(site_copy, serve, page):
    """A run re-ingested after the export: its pages and its own small index are written, the base bundle is not;
    the search page finds its new text (merged index), no longer its old text (the base's records of it are
    hidden), and the other runs' steps as before."""
    outdir, added = site_copy.outdir, site_copy.added
    _write(site_copy.warehouse,
           ("UPDATE steps SET output = 'now zanzibarquill only' WHERE run_id = ? AND idx = ?",
            [added.other_run, added.other_step]),
           ("UPDATE runs SET content_hash = 'changed' WHERE id = ?", [added.other_run]))
    report = export_site(outdir)
    assert (report.search_runs_indexed, report.search_rebuilt) == (1, False)
    base = serve(outdir)
    page.goto(base + "search/index.html")
    found = search_for(page, "zanzibarquill")
    assert [h["href"] for h in found] == [f"../runs/{added.other_run}/index.html?mark=zanzibarquill#step-{added.other_step}"]
    assert found[0]["marks"] == ["zanzibarquill"]
    assert search_for(page, OTHER_WORD) == []
    assert page.locator("#search-status").inner_text() == f"0 steps match \u201c{OTHER_WORD}\u201d."
    found = search_for(page, DEEP_WORD)
    assert [h["href"] for h in found] == [f"../runs/{added.deep_run}/steps/2.html?mark={DEEP_WORD}#step-{added.deep_step}"]
    # a common word: every result is one step, each linked to its anchor on an exported page
    found = search_for(page, "step")
    assert len(found) == 20 and all(re.search(r"^\.\./runs/.*\.html\?mark=step#step-\d+$", h["href"]) for h in found)
    assert "pages of steps" in page.locator("#search-status").inner_text() or \
        "the best 20 first" in page.locator("#search-status").inner_text()
    page.screenshot(path=ARTIFACTS / "export-search-merged.png", full_page=True)
    assert page.js_errors == []


def test_a_written_file_is_found_and_shown_as_its_lines(served, page):
    """A Write call's input is its tool's JSON arguments: the search indexes and shows the file as the trace viewer
    does, its path and lines, so its quotes show once (not ``\\"``) and its line breaks are no ``\\n``."""
    base = served[0]
    page.goto(base + "search/index.html")
    found = search_for(page, "Supervised")
    written = [h for h in found if h["where"].lower().endswith(" write")]
    assert written, found
    for hit in written:
        assert '"""Supervised fine-tuning' in hit["excerpt"] and "/home/ben/task/train_sft_v" in hit["excerpt"], hit
        assert '\\"' not in hit["excerpt"] and "\\n" not in hit["excerpt"] and '"content"' not in hit["excerpt"], hit
        assert hit["marks"] == ["Supervised"], hit  # Pagefind marks '"""Supervised': the mark is its letters
    page.screenshot(path=ARTIFACTS / "export-search-written-file.png", full_page=True)
    assert page.js_errors == []
