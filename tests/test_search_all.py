"""The search of every trace (``traces.selectors.search``, ``/search/``, ``/api/search``): for many queries (words,
parts of words, unicode, punctuation, quoted phrases, several needles) and filters (the runs list's, kind, tool,
verdicts), every page's runs, counts, capped flags and first matches are those of a plain scan of the stored
texts; excerpts mark every needle; pages are keyset pages; a run without a current index is scanned."""
from __future__ import annotations

import json
import random
import re
from pathlib import Path

import pytest

from ptbsite import warehouse
from traces import layout, selectors
from ingest.tree import ingest_tree
from traces.selectors import search
from traces.vocabulary import STEP_TEXT_CAP

pytestmark = pytest.mark.django_db


def _scan(q: str, *, kind: str | None = None, tool: str | None = None, runs: set[str] | None = None
          ) -> dict[str, list[tuple[str, int]]]:
    """{run id: its matching (trace, index) in the result's order}: every stored step read and tested in Python
    on DuckDB's lower() of its whole texts (the stored text, or the whole one from step_texts when it was cut)."""
    needles, _ = search.parse_query(q)
    with warehouse.connect() as con:
        lowered = [con.execute("SELECT lower(?)", [n]).fetchone()[0] for n in needles]
        rows = con.execute(
            "SELECT run_id, trace, idx, kind, tool, lower(coalesce(input, '')), lower(output), "
            "input_bytes > strlen(input), output_bytes > strlen(output) FROM steps").fetchall()
        found: dict[str, list[tuple[str, int]]] = {}
        for run_id, trace, idx, k, t, text_in, text_out, cut_in, cut_out in rows:
            if (runs is not None and run_id not in runs) or (kind and k != kind) or (tool and t != tool):
                continue
            if cut_in:
                text_in = con.execute("SELECT lower(?)", [selectors.step_text(
                    run_id, trace=trace, index=idx, field="input", offset=0, length=10 ** 9).text]).fetchone()[0]
            if cut_out:
                text_out = con.execute("SELECT lower(?)", [selectors.step_text(
                    run_id, trace=trace, index=idx, field="output", offset=0, length=10 ** 9).text]).fetchone()[0]
            if needles and all(n in text_in or n in text_out for n in lowered):
                found.setdefault(run_id, []).append((trace, idx))
    return {r: sorted(v, key=lambda k: (k[0] != "agent", k[0], k[1])) for r, v in found.items()}


def _all_pages(q: str, limit: int = 3, **options) -> list[search.SearchRun]:
    out, after, pages = [], None, 0
    while True:
        page = search.search_page(q, after=after, limit=limit, **options)
        out += page.runs
        pages += 1
        assert pages < 500
        if page.next is None:
            return out
        assert page.runs or page.tested == search.MAX_RUNS_TESTED
        after = page.next


def _check(q: str, limit: int = 3, **options) -> int:
    kind, tool = options.get("kind"), options.get("tool")
    run_filters = {k: v for k, v in options.items() if k not in ("kind", "tool", "verdict")}
    listed, _ = selectors.list_runs(limit=None, **run_filters)
    allowed = {r.id for r in listed if "verdict" not in options
               or search._run_ok(r, None, options["verdict"])}
    expected = _scan(q, kind=kind, tool=tool, runs=allowed)
    got = _all_pages(q, limit=limit, **options)
    assert [r.run.id for r in got] == sorted(expected), (q, options)
    for result in got:
        want = expected[result.run.id]
        assert result.count == min(len(want), search.RUN_COUNT_CAP), (q, result.run.id)
        assert result.capped == (len(want) > search.RUN_COUNT_CAP)
        assert [(m.trace, m.index) for m in result.matches] == want[:search.SHOWN], (q, result.run.id)
        needles, _ = search.parse_query(q)
        for match in result.matches:
            marked = [match.excerpt[a:b] for a, b in match.marks]
            assert match.excerpt and all(b > a for a, b in match.marks)
            # Every mark is a needle (or needles overlapping), and the first needle is marked: the excerpt is
            # taken around it (Python's case rules mark it; they agree with DuckDB's on these texts).
            assert all(any(re.search(re.escape(n), m, re.I) for n in needles) for m in marked), (q, match)
            if re.search(re.escape(needles[0]), match.excerpt, re.I):
                assert any(re.search(re.escape(needles[0]), m, re.I) for m in marked), (q, match)
    return len(got)


FIXED = ["import", "IMPORT torch", '"import torch"', "learning_rate", "the model", '"the model"', "->", "::",
         "(", "'", '"', "omitted-api-key", "<omitted-api-key>", "Traceback", "error:", "zebra quasar",
         "pip install", '"pip install"', "naïve", "日本", "😀", "__init__", "a", "e", "1e-05", "--", "{", "</script>",
         "python3 train.py", '"python3 train.py"', "gsm8k accuracy", "nosuchwordanywhere", 'unbalanced "quote']


def _sampled(n: int, seed: int) -> list[str]:
    """Queries cut from stored texts: substrings, whole words, two words, quoted phrases (some case-changed)."""
    rng = random.Random(seed)
    with warehouse.connect() as con:
        texts = [t for row in con.execute("SELECT input, output FROM steps USING SAMPLE 400 ROWS (reservoir, 7)")
                 .fetchall() for t in row if t]
    out = []
    for _ in range(n):
        text = rng.choice(texts)
        words = re.findall(r"\w+", text)
        choice = rng.random()
        if choice < 0.3 and words:
            q = rng.choice(words)
        elif choice < 0.55 and len(words) > 3:
            i = rng.randrange(len(words) - 1)
            q = f"{words[i]} {words[i + 1]}"
        elif choice < 0.8:
            start = rng.randrange(len(text))
            q = '"' + text[start:start + rng.randint(3, 30)].replace('"', "") + '"'
        else:
            start = rng.randrange(len(text))
            q = text[start:start + rng.randint(1, 12)]
        if rng.random() < 0.3:
            q = q.swapcase()
        out.append(q)
    return out


def test_every_query_finds_what_a_scan_of_the_stored_texts_finds(demo_ingested):
    matched = 0
    for q in FIXED + _sampled(60, 27):
        matched += _check(q) > 0
    assert matched > 40


def test_filters_narrow_the_search_as_the_scan(demo_ingested):
    runs, _ = selectors.list_runs(limit=None)
    some = runs[0]
    options = [
        {"agent": some.agent_key}, {"benchmark": some.benchmark}, {"base_model": some.base_model},
        {"state": "scored"}, {"flagged": True}, {"flagged": False}, {"latest_only": True},
        {"kind": "tool_call"}, {"kind": "tool_result"}, {"tool": "Bash"}, {"kind": "tool_call", "tool": "Bash"},
        {"verdict": "flagged"}, {"verdict": "clean"}, {"verdict": "disallowed_model:flagged"},
        {"suite": some.suite, "state": "scored", "kind": "assistant"},
    ]
    for option in options:
        for q in ("import", "the", '"pip install"', "error", "->"):
            _check(q, **option)


def test_counts_are_capped_and_say_so(demo_ingested, monkeypatch):
    monkeypatch.setattr(search, "RUN_COUNT_CAP", 4)
    monkeypatch.setattr(search, "TEST_CHUNK", 3)
    got = _all_pages("the", limit=2)
    assert any(r.capped and r.count == 4 for r in got)
    _check("the")
    _check('"the model"')
    _check("import torch")


def test_pages_are_keyset_pages_and_end_early_when_runs_hold_no_match(demo_ingested, monkeypatch):
    first = search.search_page("the", limit=2)
    assert len(first.runs) == 2 and first.next == first.runs[-1].run.id
    second = search.search_page("the", limit=2, after=first.next)
    assert second.runs[0].run.id > first.next
    # A page tests at most MAX_RUNS_TESTED runs: past them it ends with a cursor, and the pages still add up.
    monkeypatch.setattr(search, "MAX_RUNS_TESTED", 1)
    _check('"zebra quasar"')
    _check("python3 train.py")


def test_a_single_word_counts_exactly_and_says_so(demo_ingested):
    page = search.search_page("import", limit=50)
    assert page.exact and page.candidates == len(page.runs) > 0
    assert not search.search_page('"import torch"', limit=50).exact
    assert not search.search_page("import", limit=50, kind="tool_call").exact


# --- planted texts: unicode, punctuation, a word past the stored cut, a run without a current index -----------

METHOD, RUN = "claude_claude-opus-4-6_10h_run2", "gsm8k_Qwen_Qwen3-4B-Base_17000001"
METHOD_B, RUN_B = "codex_gpt-5.2_10h_run1", "aime2025_Qwen_Qwen3-1.7B-Base_17000002"
UNICODE = "İstanbul ΟΔΟΣ naïve café e\u0301te\u0301 日本語テキスト 😀 x->y::z == (a, b); foo.bar(baz='qux')"


def _claude(lines: list[str]) -> str:
    events = [{"type": "system", "subtype": "init", "session_id": "s", "model": "claude-opus-4-6"}]
    for n, text in enumerate(lines, 1):
        events.append({"type": "assistant", "message": {"id": f"m{n}", "role": "assistant", "content": [
            {"type": "tool_use", "id": f"toolu_{n}", "name": "Bash", "input": {"command": f"echo {n}"}}]}})
        events.append({"type": "user", "message": {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": f"toolu_{n}", "content": text}]}})
    return "".join(json.dumps(e) + "\n" for e in events)


@pytest.fixture
def planted(tmp_path: Path, fresh_warehouse) -> Path:
    root = tmp_path / "results"
    beyond_cut = "# padding\n" * (STEP_TEXT_CAP // 10 + 100) + "zanzibar_quokka_marker = 1\n"
    for method, run, lines in ((METHOD, RUN, [UNICODE, beyond_cut, "the plain words"]),
                               (METHOD_B, RUN_B, ["Plain text: naïve ΟΔΟΣ", "x->y and more"])):
        (root / method / run).mkdir(parents=True)
        (root / method / run / "solve_out.txt").write_text(_claude(lines))
    assert ingest_tree(root=root).stored == 2
    return root


@pytest.mark.parametrize("q", [
    "İstanbul", "ISTANBUL", "ΟΔΟΣ", "οδοσ", "naïve", "NAÏVE café", "naive", "e\u0301te\u0301", "日本", "テキスト 😀",
    "x->y", '"x->y::z == (a, b);"', "bar(baz='qux')", "->", "zanzibar_quokka_marker", "QUOKKA",
    '"zanzibar_quokka_marker = 1"', "plain", '"plain words"', '"plain text"', "plain naïve", "echo",
])
def test_planted_texts(planted, q):
    assert _check(q, limit=1) >= (0 if q in ("naive",) else 1) and _check(q) == len(_scan(q))


def test_a_run_without_a_current_index_is_scanned(planted):
    rid = layout.run_id(METHOD, RUN)
    warehouse.run_in_transaction(lambda con: (
        con.execute("DELETE FROM step_words WHERE run_id = ?", [rid]),
        con.execute("UPDATE runs SET rules_version = NULL WHERE id = ?", [rid])))
    page = search.search_page("zanzibar_quokka_marker")
    assert [r.run.id for r in page.runs] == [rid] and not page.exact
    _check("naïve")
    _check("->")


def _word_runs(con) -> dict[str, set[str]]:
    """{word: run ids} of the inverted index (``word_runs``: its rows' lists joined, ids back from numbers)."""
    return {w: set(runs) for w, runs in con.execute(
        "SELECT word, list_distinct(flatten(list(list_transform(runs, n -> lower(lpad(to_hex(n), 16, '0')))))) "
        "FROM word_runs GROUP BY word").fetchall()}


def test_the_inverted_index_lists_the_runs_of_every_word_and_forgets_a_deleted_run(planted):
    from traces import search_index
    from traces.services import delete_run

    def from_steps(con) -> dict[str, set[str]]:
        return {w: set(runs) for w, runs in con.execute(
            "SELECT word, list_distinct(list(run_id)) FROM step_words GROUP BY word").fetchall()}

    rid, other = layout.run_id(METHOD, RUN), layout.run_id(METHOD_B, RUN_B)
    with warehouse.connect() as con:
        index = _word_runs(con)
        assert index == from_steps(con)
        assert index["zanzibar_quokka_marker"] == {rid}  # a word past the stored cut (its whole text indexed)
        assert index["plain"] == {rid, other}
        rows, words = con.execute("SELECT count(*), count(DISTINCT word) FROM word_runs").fetchone()
        assert rows <= search_index.MERGE_SPREAD * words
    warehouse.run_in_transaction(lambda con: delete_run(con, rid))
    with warehouse.connect() as con:
        index = _word_runs(con)
        assert index == from_steps(con) and rid not in set().union(*index.values())
        assert "zanzibar_quokka_marker" not in index and index["plain"] == {other}


def test_the_excerpt_holds_the_match_past_the_cut(planted):
    (result,) = search.search_page("zanzibar_quokka_marker").runs
    (match,) = result.matches
    assert [match.excerpt[a:b] for a, b in match.marks] == ["zanzibar_quokka_marker"]
    assert match.field == "output" and match.kind == "tool_result"


# --- the page and its twin --------------------------------------------------------------------------------------

def test_the_page_and_its_twin_show_the_same_results_escaped_and_marked(client, demo_ingested, monkeypatch):
    from traces import search_views

    monkeypatch.setattr(search_views, "PAGE_RUNS", 2)
    q = "__pwned"  # the demo's planted markup: shown as text, never run
    twin = client.get("/api/search", {"q": q}).json()
    assert twin["runs"], "the planted markup is in the demo's traces"
    body = client.get("/search/", {"q": q}).content.decode()
    assert "<script>window.__pwned" not in body and "&lt;script&gt;window.<mark>__pwned</mark>" in body
    for result in twin["runs"]:
        run_id = result["run"]["id"]
        assert f'data-run="{run_id}"' in body
        assert f'{result["count"]} matching step' in body
        for m in result["matches"]:
            trace = "" if m["trace"] == "agent" else f"&amp;trace={m['trace'].replace(':', '%3A')}"
            assert f'href="/runs/{run_id}/?step={m["index"]}{trace}&amp;q={q}#step-{m["index"]}"' in body
            assert [m["excerpt"][a:b] for a, b in m["marks"]] and all(
                m["excerpt"][a:b].lower() == q for a, b in m["marks"])
    # Filters and pages travel in the links; the form keeps them.
    first = client.get("/search/", {"q": "the", "kind": "tool_result"}).content.decode()
    assert 'rel="next"' in first and "kind=tool_result" in first.split('rel="next"')[0].rsplit("href=", 1)[1]
    assert '<option value="tool_result" selected>' in first
    assert client.get("/api/search", {"q": "the", "limit": 2}).json()["next"]
    assert "Search every trace" in client.get("/search/").content.decode()  # the empty form


def test_every_page_has_the_header_search_box(client, demo_ingested):
    run = selectors.list_runs(limit=1)[0][0]
    for path in ("/", "/runs/", f"/runs/{run.id}/", "/analysis/", "/search/?q=import", f"/compare/?runs={run.id}"):
        body = client.get(path).content.decode()
        assert '<form class="site-search" method="get" action="/search/" role="search">' in body, path
    assert 'name="q" aria-label="Search every trace" placeholder="Search every trace" value="import"' in \
        client.get("/search/?q=import").content.decode()


# --- step_words kept sorted by word (migration 0020, search_across.sort_step_words) ------------------------------

def _step_word_rows(con) -> list[tuple]:
    """step_words' rows in storage order (row id), each step list sorted."""
    return con.execute("SELECT run_id, trace, word, list_sort(steps) FROM step_words ORDER BY rowid").fetchall()


def test_sorting_step_words_by_word_keeps_every_row_and_every_answer(demo_ingested, tmp_path, settings):
    import shutil

    from traces import search_across

    copy = tmp_path / "sorted.duckdb"
    shutil.copy(demo_ingested[2], copy)
    settings.PTB_WAREHOUSE = str(copy)
    warehouse.reset_migration_cache()
    with warehouse.connect() as con:
        before = _step_word_rows(con)
    assert len(before) < search_across.SORT_MIN_ROWS  # the demo is too small to be sorted at ingest
    assert [r[2] for r in before] != sorted(r[2] for r in before)
    assert not warehouse.run_in_transaction(lambda con: search_across.sort_step_words(con))
    assert warehouse.run_in_transaction(lambda con: search_across.sort_step_words(con, min_rows=0))
    with warehouse.connect() as con:
        after = _step_word_rows(con)
        sorted_rows = con.execute("SELECT sorted_rows FROM step_words_sorted").fetchall()
    assert sorted(after) == sorted(before) and sorted_rows == [(len(before),)]
    assert [(r[2], r[0]) for r in after] == sorted((r[2], r[0]) for r in after)  # by word, then run
    # Nothing unsorted since: nothing to do, until as many rows again are written (spread 2).
    assert not warehouse.run_in_transaction(lambda con: search_across.sort_step_words(con, min_rows=0))
    for q in ("import", '"pip install"', "the model", "learning_rate", "->", "naïve"):
        _check(q)


def test_reindex_sorts_step_words_left_unsorted(planted):
    from ingest.reindex import reindex

    with warehouse.connect() as con:
        assert con.execute("SELECT count(*) FROM step_words_sorted").fetchone() == (0,)
        rows = con.execute("SELECT count(*) FROM step_words").fetchone()[0]
    report = reindex(families=["search"])
    assert report.reindexed == 0 and report.up_to_date == 2  # every run's index was current: only the sort ran
    with warehouse.connect() as con:
        assert con.execute("SELECT sorted_rows FROM step_words_sorted").fetchall() == [(rows,)]
        words = [r[2] for r in _step_word_rows(con)]
    assert words == sorted(words)
    _check("zanzibar_quokka_marker")
    _check('"plain words"')


def test_the_ingest_command_sorts_step_words_once_done(tmp_path, fresh_warehouse, monkeypatch):
    from django.core.management import call_command

    from traces import search_across

    # The batches never sort (a huge spread), the end of the command does (any table size).
    monkeypatch.setattr(search_across, "SORT_SPREAD", 10.0 ** 9)
    monkeypatch.setattr(search_across, "SORT_MIN_ROWS", 0)
    root = tmp_path / "results"
    for method, run, lines in ((METHOD, RUN, [UNICODE, "the plain words"]), (METHOD_B, RUN_B, ["x->y and more"])):
        (root / method / run).mkdir(parents=True)
        (root / method / run / "solve_out.txt").write_text(_claude(lines))
    call_command("ingest", str(root), quiet=True)
    with warehouse.connect() as con:
        rows = con.execute("SELECT count(*) FROM step_words").fetchone()[0]
        assert con.execute("SELECT sorted_rows FROM step_words_sorted").fetchall() == [(rows,)]
        words = [r[2] for r in _step_word_rows(con)]
    assert words == sorted(words) and rows > 10
    _check("plain")
