"""The runs list sorts by its columns (issue 17): in SQL in the selector (whitelisted columns, display names, empty
values last, keyset pages), with the leaderboard's arrow on the sorted column, kept through filters and pages and
served by the JSON twin; the static export sorts the same table in the browser."""
from __future__ import annotations

import html
import re

import pytest

from traces import views
from traces.selectors import RUN_SORTS

from .conftest import ARTIFACTS

pytestmark = pytest.mark.django_db

# What each column shows, as the expected order reads it from the API's runs.
SHOWN = {"date": lambda r: r["run_date"], "agent": lambda r: r["agent_display"].lower(),
         "scaffold": lambda r: r["scaffold"].lower(), "benchmark": lambda r: r["benchmark_name"].lower(),
         "base_model": lambda r: r["base_model_name"].lower(), "state": lambda r: r["state_text"].lower(),
         "score": lambda r: r["score"], "time": lambda r: r["time_taken_s"], "steps": lambda r: r["step_count"]}


def _expected(runs: list[dict], sort: str, direction: str) -> list[str]:
    """Ids in the order a reader expects: by the shown value (ties by id), empty values last either way."""
    known = sorted((r for r in runs if SHOWN[sort](r) is not None), key=lambda r: r["id"])
    known.sort(key=SHOWN[sort], reverse=direction == "desc")  # stable: ties stay by id
    return [r["id"] for r in known] + sorted(r["id"] for r in runs if SHOWN[sort](r) is None)


def _walk(client, query: str) -> list[dict]:
    runs, after = [], None
    while True:
        page = client.get(f"/api/runs?{query}&limit=5" + (f"&after={after}" if after else "")).json()
        runs += page["runs"]
        after = page["next"]
        if after is None:
            return runs


def test_every_column_sorts_both_ways_and_the_pages_keep_the_order(client, demo_ingested):
    assert set(views.RUN_SORT_FIRST) == set(RUN_SORTS) == set(SHOWN)
    every = client.get("/api/runs?limit=500").json()["runs"]
    assert len(every) > 10 and any(r["score"] is None for r in every)  # empty scores: they go last
    for sort in RUN_SORTS:
        for direction in ("asc", "desc"):
            walked = [r["id"] for r in _walk(client, f"sort={sort}&dir={direction}")]
            assert walked == _expected(every, sort, direction), (sort, direction)
    names = [r["agent_display"] for r in _walk(client, "sort=agent&dir=asc")]
    assert names == sorted(names, key=str.lower) and "GPT-5.1 Codex Max" in names  # display names, not ids
    assert client.get("/api/runs?sort=run_dir").status_code == 422
    assert client.get("/api/runs?sort=score&dir=up").status_code == 422


def test_the_sorted_column_has_its_arrow_and_filters_and_pages_keep_the_sort(client, demo_ingested, monkeypatch):
    monkeypatch.setattr(views, "PAGE_SIZE", 2)
    expected = [r["id"] for r in _walk(client, "state=scored&sort=score&dir=desc")]
    assert len(expected) > 4  # three pages at least
    page = client.get("/runs/?state=scored&sort=score&dir=desc").content.decode()
    head = page.split('<th data-column="score"', 1)[1].split("</th>", 1)[0]
    assert head.startswith(' class="num" aria-sort="descending">')
    assert '<a href="?state=scored&amp;sort=score&amp;dir=asc" rel="nofollow">Score<span class="sort-arrow" ' \
           'aria-hidden="true">▼</span></a>' in head  # a second click flips it
    assert page.count('class="sort-arrow"') == 1 and page.count("aria-sort=") == 1
    assert '<a href="?state=scored&amp;sort=steps&amp;dir=desc" rel="nofollow">Steps</a>' in page  # the filter stays
    assert '<input type="hidden" name="sort" value="score"><input type="hidden" name="dir" value="desc">' in page
    shown = []
    while True:
        shown += re.findall(r'<tr data-run="([0-9a-f]+)"', page)
        more = re.search(r'<a href="\?([^"]+)" rel="next">Next page</a>', page)
        if not more:
            break
        query = html.unescape(more[1])
        assert "state=scored" in query and "sort=score" in query and "dir=desc" in query
        page = client.get(f"/runs/?{query}").content.decode()
    assert shown == expected
    unsorted = client.get("/runs/?sort=run_dir").content.decode()  # not a column: the list by id, no arrow
    assert "sort-arrow" not in unsorted and "aria-sort" not in unsorted


@pytest.mark.browser
def test_a_click_on_a_column_head_sorts_the_runs(live_server, demo_ingested, page):
    page.goto(f"{live_server.url}/runs/")
    assert page.locator("table.runs th[aria-sort]").count() == 0
    page.click('table.runs th[data-column="score"] a')
    page.wait_for_url("**/runs/?sort=score&dir=desc")
    head = page.locator("table.runs th[aria-sort]")
    assert head.count() == 1 and head.inner_text().strip() == "Score▼"
    scores = [float(t) for t in page.locator("table.runs tbody td:nth-child(7)").all_inner_texts() if t.strip()]
    assert len(scores) > 3 and scores == sorted(scores, reverse=True)
    page.screenshot(path=ARTIFACTS / "runs-sorted-by-score.png", full_page=True)
    page.click('table.runs th[data-column="score"] a')
    page.wait_for_url("**/runs/?sort=score&dir=asc")
    assert page.locator("table.runs th[aria-sort]").inner_text().strip() == "Score▲"
    scores = [float(t) for t in page.locator("table.runs tbody td:nth-child(7)").all_inner_texts() if t.strip()]
    assert scores == sorted(scores)
    page.select_option('select[name="state"]', "scored")
    page.click("form.filters button[type=submit]")
    page.wait_for_url("**/runs/?**state=scored**")
    assert "sort=score" in page.url and page.locator("table.runs th[aria-sort]").inner_text().strip() == "Score▲"
    assert page.js_errors == []


@pytest.mark.browser
def test_the_static_export_sorts_the_runs_in_the_browser(served, page):
    base, outdir, _, _ = served
    exported = (outdir / "runs/index.html").read_text()
    assert "?sort=" not in exported and "&amp;sort=" not in exported and 'data-sort="steps"' in exported
    page.goto(base + "runs/index.html")
    page.click('a[data-sort="steps"]')
    steps = [int(t.replace(",", "")) for t in page.locator("table.runs tbody td:nth-child(9)").all_inner_texts()]
    assert steps == sorted(steps, reverse=True) and len(set(steps)) > 5
    head = page.locator("table.runs th[aria-sort]")
    assert head.count() == 1 and head.get_attribute("aria-sort") == "descending"
    assert head.inner_text().strip() == "Steps▼"
    page.click('a[data-sort="steps"]')
    steps = [int(t.replace(",", "")) for t in page.locator("table.runs tbody td:nth-child(9)").all_inner_texts()]
    assert steps == sorted(steps) and page.locator("table.runs th[aria-sort]").inner_text().strip() == "Steps▲"
    page.click('a[data-sort="time"]')
    assert page.locator("table.runs th[aria-sort]").inner_text().strip() == "Time▼"
    # By the seconds behind "h:mm", not by the text (which would put 9:05 after 10:30 and ignore the minutes).
    shown = [t for t in page.locator("table.runs tbody td:nth-child(8)").all_inner_texts() if t]
    minutes = [int(h) * 60 + int(m) for h, m in (t.split(":") for t in shown)]
    assert minutes == sorted(minutes, reverse=True) and len({m // 60 for m in minutes}) < len(set(minutes))
    page.screenshot(path=ARTIFACTS / "export-runs-sorted.png", full_page=True)
    assert page.js_errors == []
