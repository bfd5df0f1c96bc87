"""The search's word index (traces.search_index): a search answered from the index finds exactly the steps the scan
finds, on the demo traces and on planted texts (unicode, punctuation, a word deep in a long step, a word past the
stored cut, a word inside a very long word), and the index follows every write of a run (ingest, re-ingest,
delete, reindex)."""
from __future__ import annotations

import json
import random
from pathlib import Path

import pytest
from django.core.management import call_command

from ptbsite import warehouse
from traces import layout, search_index, selectors
from ingest.reindex import reindex
from ingest.tree import ingest_tree
from traces.selectors.steps import read_matches
from traces.services import delete_run
from traces.vocabulary import STEP_TEXT_CAP

pytestmark = pytest.mark.django_db

ALL = 10 ** 6  # a limit no trace reaches
FIXED_QUERIES = [
    "import", "IMPORT", "def ", "->", "::", " = ", "(", "'", '"', "\n", "a", "ab", "abc", "__init__", "_", "e",
    "omitted-api-key", "<omitted-api-key>", "learning_rate", "Traceback (most recent call last)", "pip install",
    "torch.cuda", "error:", "naïve", "ΟΔΟΣ", "日本", "😀", "→", "   ", "zebra quasar", "0.", "1e-05", "--", "{",
    "</script>", "window.__pwned", "http", "the model", "is not", "python3 train.py",
]


def _queries_from(con, run_id: str, trace: str, rng: random.Random, n: int) -> list[str]:
    """``n`` queries cut from the trace's own texts: random substrings (1-40 characters) of random steps' input or
    output, some with their case changed, some widened to whole lines."""
    texts = [t for row in con.execute("SELECT input, output FROM steps WHERE run_id = ? AND trace = ?",
                                      [run_id, trace]).fetchall() for t in row if t]
    queries = []
    for _ in range(n):
        text = rng.choice(texts)
        start = rng.randrange(len(text))
        q = text[start:start + rng.randint(1, 40)]
        if rng.random() < 0.3:
            q = q.upper() if rng.random() < 0.5 else q.swapcase()
        if rng.random() < 0.1:
            q = text[text.rfind("\n", 0, start) + 1:].split("\n", 1)[0] or q
        queries.append(q)
    return queries


def test_the_index_finds_what_the_scan_finds_on_every_demo_trace(demo_ingested):
    rng = random.Random(18)
    runs, _ = selectors.list_runs(limit=None)
    compared = answered = 0
    with warehouse.connect() as con:
        for run in runs:
            for trace in selectors.trace_names(run.id):
                assert search_index.indexed(con, run.id)
                for q in FIXED_QUERIES + _queries_from(con, run.id, trace, rng, 12):
                    indexed = read_matches(con, run.id, trace=trace, q=q, limit=ALL)
                    assert indexed == read_matches(con, run.id, trace=trace, q=q, limit=ALL, use_index=False), \
                        (run.id, trace, q)
                    compared += 1
                    answered += search_index.plan(con, q).terms is not None
    assert compared > 800 and answered > compared / 2  # most are answered by the index, not by the scan


def test_windows_filters_and_pages_agree_with_the_scan(demo_ingested, monkeypatch):
    from traces.selectors import steps as step_reads

    run = max(selectors.list_runs(limit=None)[0], key=lambda r: r.step_count)
    with warehouse.connect() as con:
        for q in ("import", "the", "error", "->", "omitted-api-key", "i"):
            for kind in (None, "tool_result", "tool_call"):
                for after, upto in ((-1, None), (10, 60), (40, None), (-1, 25)):
                    for descending in (False, True):
                        args = dict(trace="agent", kind=kind, q=q, after=after, upto=upto, limit=7,
                                    descending=descending)
                        assert read_matches(con, run.id, **args) == read_matches(con, run.id, **args,
                                                                                 use_index=False), (q, args)
    # The pages a search shows (count, steps, next and previous cursors) are those of the scan, capped or not.
    def page(q: str) -> tuple:
        found = selectors.run_steps(run.id, q=q, after=3, limit=4)
        return (found.page.total, found.page.capped, found.page.next, found.previous,
                [s.index for s in found.page.steps])

    for cap in (step_reads.MATCH_COUNT_CAP, 5):
        monkeypatch.setattr(step_reads, "MATCH_COUNT_CAP", cap)
        for q in ("import", "the", "error:"):
            indexed = page(q)
            with monkeypatch.context() as scan_only:
                scan_only.setattr(search_index, "lookup", lambda *args: None)
                assert page(q) == indexed, (cap, q)
            assert indexed[0] > 0 or q == "error:"


# --- a planted trace -------------------------------------------------------------------------------------------

METHOD, RUN = "claude_claude-opus-4-6_10h_run2", "gsm8k_Qwen_Qwen3-4B-Base_17000001"
UNICODE = ("İstanbul ΟΔΟΣ naïve café e\u0301te\u0301 日本語テキスト 😀 x->y::z == (a, b); foo.bar(baz='qux') "
           "CamelCaseIdentifier")
LONG_WORD = "a" * 150 + "needle" + "b" * 50


def _events(deep: str) -> list[dict]:
    def call(n: int, name: str, tool_input: dict) -> dict:
        return {"type": "assistant", "message": {"id": f"m{n}", "role": "assistant", "content": [
            {"type": "tool_use", "id": f"toolu_{n}", "name": name, "input": tool_input}]}}

    def result(n: int, text: str) -> dict:
        return {"type": "user", "message": {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": f"toolu_{n}", "content": text}]}}

    beyond_cut = "# padding\n" * (STEP_TEXT_CAP // 10 + 100) + "zanzibar_quokka_marker = 1\n"
    log = "epoch 1 loss 0.5000\n" * 3000 + f"the {deep} appears here, deep in a long output\n"
    return [
        {"type": "system", "subtype": "init", "session_id": "s", "model": "claude-opus-4-6"},
        call(1, "Write", {"file_path": "/home/ben/task/train.py", "content": beyond_cut}), result(1, "File created"),
        call(2, "Bash", {"command": "cat /tmp/train.log"}), result(2, log),
        call(3, "Bash", {"command": "echo unicode"}), result(3, UNICODE),
        call(4, "Bash", {"command": "echo long"}), result(4, LONG_WORD + " tail"),
        {"type": "result", "subtype": "success", "is_error": False, "result": "done"},
    ]


def _write_tree(root: Path, deep: str = "deepword_xyzzy") -> Path:
    run_dir = root / METHOD / RUN
    run_dir.mkdir(parents=True, exist_ok=True)
    (run_dir / "solve_out.txt").write_text("".join(json.dumps(e) + "\n" for e in _events(deep)))
    return root


@pytest.fixture
def planted(tmp_path: Path, fresh_warehouse) -> Path:
    root = _write_tree(tmp_path / "results")
    assert ingest_tree(root=root).stored == 1
    return root


def _step(call: str, kind: str) -> int:
    with warehouse.connect() as con:
        return con.execute("SELECT idx FROM steps WHERE call_id = ? AND kind = ?", [call, kind]).fetchone()[0]


def _both(q: str) -> list[int]:
    rid = layout.run_id(METHOD, RUN)
    with warehouse.connect() as con:
        indexed = read_matches(con, rid, q=q, limit=ALL)
        assert indexed == read_matches(con, rid, q=q, limit=ALL, use_index=False), q
    return indexed


@pytest.mark.parametrize(("q", "call", "kind"), [
    ("zanzibar_quokka_marker", "toolu_1", "tool_call"),       # past the stored cut: in step_texts only
    ("QUOKKA", "toolu_1", "tool_call"),                        # a part of that word
    ("zanzibar_quokka_marker = 1", "toolu_1", "tool_call"),    # a phrase past the cut
    ("deepword_xyzzy", "toolu_2", "tool_result"),              # deep in a 60 KB output
    ("the DEEPWORD", "toolu_2", "tool_result"),
    ("xyzzy appears here, deep", "toolu_2", "tool_result"),
    ("İstanbul", "toolu_3", "tool_result"), ("ISTANBUL", "toolu_3", "tool_result"),
    ("ΟΔΟΣ", "toolu_3", "tool_result"), ("οδοσ", "toolu_3", "tool_result"),
    ("οδος", None, None),  # DuckDB's lower() keeps a final sigma: the text lowers to οδοσ (the scan's answer too)
    ("naïve", "toolu_3", "tool_result"), ("NAÏVE café", "toolu_3", "tool_result"), ("naive", None, None),
    ("e\u0301te\u0301", "toolu_3", "tool_result"), ("été", None, None),  # no Unicode normalisation, as the scan
    ("日本", "toolu_3", "tool_result"), ("テキスト 😀", "toolu_3", "tool_result"), ("😀", "toolu_3", "tool_result"),
    ("x->y::z == (a, b);", "toolu_3", "tool_result"), ("bar(baz='qux')", "toolu_3", "tool_result"),
    ("camelcase", "toolu_3", "tool_result"), ("->y", "toolu_3", "tool_result"),
    ("needle", "toolu_4", "tool_result"),                      # inside a word over MAX_WORD characters
    ("aaaneedlebbb", "toolu_4", "tool_result"), ("a" * 120, "toolu_4", "tool_result"),
    ("b tail", "toolu_4", "tool_result"), ("needle tail", None, None),
    ("zebra", None, None), ("quokka zebra", None, None),
    (UNICODE, "toolu_3", "tool_result"), (UNICODE + "!", None, None),  # more words than MAX_TERMS
])
def test_planted_texts_are_found_by_the_index_as_by_the_scan(planted, q, call, kind):
    assert _both(q) == ([_step(call, kind)] if call else [])


def test_the_index_is_written_with_the_run_and_reindex_rebuilds_the_same(planted):
    rid = layout.run_id(METHOD, RUN)

    def words() -> set[tuple]:
        with warehouse.connect() as con:
            return {(r[0], r[1], tuple(r[2])) for r in con.execute(
                "SELECT trace, word, list_sort(flatten(list(steps))) FROM step_words WHERE run_id = ? "
                "GROUP BY trace, word", [rid]).fetchall()}

    fresh = words()
    # From step_texts: the call's input is its JSON, so the word after an escaped newline starts with its "n".
    assert ("agent", "nzanzibar_quokka_marker", (_step("toolu_1", "tool_call"),)) in fresh
    assert ("agent", "", (_step("toolu_4", "tool_result"),)) in fresh  # the long-word marker
    assert ("agent", "istanbul", (_step("toolu_3", "tool_result"),)) in fresh
    report = reindex(families=["search"], force=True)
    assert (report.reindexed, report.failed) == (1, 0)
    assert words() == fresh


def test_a_reingested_run_is_searched_in_its_new_text_only(planted):
    assert _both("deepword_xyzzy") == [_step("toolu_2", "tool_result")]
    _write_tree(planted, deep="freshword_plugh")
    assert ingest_tree(root=planted).stored == 1
    assert _both("deepword_xyzzy") == [] and _both("freshword_plugh") == [_step("toolu_2", "tool_result")]
    with warehouse.connect() as con:
        assert con.execute("SELECT count(*) FROM step_words WHERE word = 'deepword_xyzzy'").fetchone()[0] == 0


def test_a_deleted_run_leaves_no_index(planted):
    rid = layout.run_id(METHOD, RUN)
    warehouse.run_in_transaction(lambda con: delete_run(con, rid))
    with warehouse.connect() as con:
        assert con.execute("SELECT count(*) FROM step_words WHERE run_id = ?", [rid]).fetchone()[0] == 0


def test_a_run_stored_without_the_index_is_scanned_until_reindex_builds_it(planted):
    """A run ingested before migration 0017 (or by another version of the index) has no "search" version."""
    rid = layout.run_id(METHOD, RUN)
    deep = _step("toolu_2", "tool_result")

    def old_run(con) -> None:
        con.execute("DELETE FROM step_words WHERE run_id = ?", [rid])
        con.execute("UPDATE runs SET rules_version = ? WHERE id = ?",
                    [json.dumps({"evidence": "x", "facets": "y"}), rid])

    warehouse.run_in_transaction(old_run)
    with warehouse.connect() as con:
        assert not search_index.indexed(con, rid)
    assert _both("deepword_xyzzy") == [deep]  # the scan answers
    assert selectors.steps_page(rid, q="deepword_xyzzy").total == 1
    call_command("reindex", "--rules", "search", "--quiet")
    with warehouse.connect() as con:
        assert search_index.indexed(con, rid)
        assert con.execute("SELECT count(*) FROM step_words WHERE run_id = ?", [rid]).fetchone()[0] > 10
    assert _both("deepword_xyzzy") == [deep]


def test_the_search_reads_the_index(planted):
    """With the run's index emptied behind its back, a word the scan finds is not found: the index is what
    answers (which is why every write of a run rewrites it)."""
    rid = layout.run_id(METHOD, RUN)
    warehouse.run_in_transaction(lambda con: con.execute("DELETE FROM step_words WHERE run_id = ?", [rid]))
    assert selectors.steps_page(rid, q="deepword_xyzzy").total == 0
    with warehouse.connect() as con:
        assert read_matches(con, rid, q="deepword_xyzzy", limit=ALL, use_index=False) == \
            [_step("toolu_2", "tool_result")]
