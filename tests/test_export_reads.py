"""The static export reads each run's data once: reads kept per run (``warehouse.once``), read ahead for many runs
at once (``traces.selectors.read_ahead``), the same answers as the live site's one-by-one reads."""
from __future__ import annotations

import importlib
from collections import Counter

import pytest

from export.exporter import STEPS_PER_PAGE, Exporter
from ptbsite import warehouse
from ptbsite.warehouse import connections
from ptbsite.warehouse.once import kept_key, read_once, reads_kept
from traces import selectors
from traces.selectors.analysis import MAX_TIMELINE_CALLS, read_timeline
from traces.selectors.steps import read_step_index, read_steps_page, read_trace_names

pytestmark = pytest.mark.django_db

calls: list[tuple] = []


@read_once
def _counted_read(con, run_id: str, *, limit: int = 5) -> list[str]:
    calls.append((run_id, limit))
    return [run_id] * limit


def test_a_read_is_answered_once_per_block_by_its_arguments():
    calls.clear()
    assert _counted_read(None, "a") == ["a"] * 5 and _counted_read(None, "a") == ["a"] * 5
    assert len(calls) == 2  # outside a block every call reads
    with reads_kept():
        first = _counted_read(None, "a")
        assert _counted_read(None, "a", limit=5) is first  # a default named or not: one read
        _counted_read(None, "a", limit=2)
        _counted_read(None, "b")
    assert calls[2:] == [("a", 5), ("a", 2), ("b", 5)]
    with reads_kept({kept_key(_counted_read, "c"): ["read ahead"]}):
        assert _counted_read(None, "c") == ["read ahead"]
        _counted_read(None, "a")  # a new block reads again
    assert calls[5:] == [("a", 5)]


def _call(key, runs: dict[str, selectors.Run]):
    """The answer of the read a kept key names, read now outside any block (the live site's way)."""
    module, qualname, arguments = key
    read = getattr(importlib.import_module(module), qualname)
    kwargs = {name: runs[value[1]] if isinstance(value, tuple) and value[:1] == ("Run",) else value
              for name, value in arguments}
    with warehouse.snapshot() as con:
        return read(con, **kwargs)


def test_reads_ahead_answer_what_each_read_answers(export_warehouse):
    runs = {r.id: r for r in selectors.list_runs(limit=None)[0]}
    with warehouse.snapshot() as con:
        # one run whose tool calls are binned on its timeline (more than MAX_TIMELINE_CALLS)
        busy = [run_id for (run_id,) in con.execute(
            "SELECT run_id FROM steps WHERE trace = 'agent' AND kind = 'tool_call' AND elapsed_s IS NOT NULL "
            "GROUP BY run_id HAVING count(*) > ?", [MAX_TIMELINE_CALLS]).fetchall()]
        budgets = selectors.read_budgets(con)
    ahead = selectors.read_ahead(list(runs.values()), agent_pages=(STEPS_PER_PAGE, selectors.PAGE_SIZE),
                                 trace_pages=STEPS_PER_PAGE, side_budgets=budgets)
    assert set(ahead) == set(runs) and len(runs) >= 12
    reads = Counter()
    for kept in ahead.values():
        for key, answer in kept.items():
            assert answer == _call(key, runs), key
            reads[key[1]] += 1
    # every run has its texts, evaluations, facets, evidence, names, timeline, first pages... read ahead
    each = ("read_run_texts", "read_evaluations", "read_run_facets", "read_evidence", "read_trace_names",
            "read_tools_used", "read_override_log", "read_public_challenges", "read_timeline_summary",
            "read_timeline", "read_reference_scores", "_window")
    assert {name: reads[name] for name in each} == dict.fromkeys(each, len(runs)), reads
    assert reads["read_steps_page"] >= 2 * len(runs) and reads["read_step_index"] >= len(runs)
    assert reads["_phases"] >= len(runs) and reads["_reasoning"] >= 1  # judges' traces: the runs that have one
    if busy:
        timeline = ahead[busy[0]][kept_key(read_timeline, runs[busy[0]])]
        assert timeline.bin_s is not None and len(timeline.calls) <= MAX_TIMELINE_CALLS


class _Logged:
    """A warehouse connection whose statements are logged into ``log`` as (SQL, parameters)."""

    def __init__(self, con, log: list):
        self._con, self._log = con, log

    def execute(self, sql: str, *params):
        self._log.append((" ".join(sql.split()), repr(params)))
        result = self._con.execute(sql, *params)
        return self if result is self._con else result

    def __getattr__(self, name: str):
        return getattr(self._con, name)


def test_an_export_makes_each_read_of_a_run_once(export_warehouse, tmp_path, monkeypatch):
    """Every file of every run written (their pages, twins, step pages, comparison side files): no statement runs
    twice with the same parameters, and a few run alone for a run (the rest read ahead for many runs at once)."""
    runs = {r.id: r for r in selectors.list_runs(limit=None)[0]}
    peers = selectors.run_fingerprint_parts().peers
    log: list[tuple[str, str]] = []
    opened = connections._open
    monkeypatch.setattr(connections, "_open", lambda text: _Logged(opened(text), log))
    Exporter(tmp_path / "site").write_runs(sorted(runs), runs, None, peers)
    reads = [(sql, params) for sql, params in log
             if not sql.startswith(("BEGIN", "ROLLBACK", "USE", "SET", "SELECT current_setting"))]
    repeated = {statement: n for statement, n in Counter(reads).items() if n > 1}
    assert not repeated
    alone = Counter(next(run_id for run_id in runs if run_id in params) for _, params in reads
                    if sum(run_id in params for run_id in runs) == 1)
    assert set(alone) <= set(runs)
    # left: a long trace's step pages past the first, their twins and the "Earlier steps" cursors; the cell's runs
    # (its peers) and the files its judges name are read ahead with other runs' (before branch i24x2: per run)
    single = [sql for sql, params in reads if sum(run_id in params for run_id in runs) == 1]
    assert not [sql for sql in single if "JOIN methods" in sql or "contains(s.input" in sql], single
    assert max(alone.values()) <= 12 and sum(alone.values()) / len(runs) <= 3, alone
    assert sum(1 for _, params in reads if sum(run_id in params for run_id in runs) > 8) >= 10  # read ahead


def test_read_steps_page_is_kept_by_its_arguments(export_warehouse):
    run = selectors.list_runs(limit=1)[0][0]
    with warehouse.snapshot() as con, reads_kept():
        page = read_steps_page(con, run.id, limit=3)
        assert read_steps_page(con, run.id, trace="agent", after=-1, limit=3) is page
        assert read_steps_page(con, run.id, limit=4) is not page


def test_the_search_reads_every_step_whole_ahead_as_paging_does(export_warehouse, tmp_path):
    from .test_export import DEEP_WORD, add_search_runs

    added = add_search_runs(tmp_path / "tree")  # one of its steps is stored cut: its whole text is in step_texts
    run_ids = sorted(r.id for r in selectors.list_runs(limit=None)[0])
    ahead = selectors.read_search_ahead(run_ids)
    runs = {r.id: r for r in selectors.list_runs(limit=None)[0]}
    for run_id, kept in ahead.items():
        # the layout's trace names and step indices too, taken from the steps' rows (branch i24ra: no query of theirs)
        names = kept[kept_key(read_trace_names, run_id)]
        assert all(kept_key(read_step_index, run_id, trace=trace) in kept for trace in {"agent", *names})
        for key, answer in kept.items():
            assert answer == _call(key, runs), key
    with reads_kept(ahead[added.deep_run]):
        steps = []
        after = -1
        while page := selectors.whole_steps(added.deep_run, after=after):
            steps += page
            after = page[-1].index
    assert [s.index for s in steps] == list(range(len(steps))) and len(steps) > 2 * 64
    assert DEEP_WORD in steps[added.deep_step].output and steps[added.deep_step].output == added.long_output


def test_while_held_a_ducklake_unit_takes_the_cursor_a_clean_unit_left(warehouse_factory, settings):
    settings.PTB_WAREHOUSE = warehouse_factory.make("ducklake-sqlite")
    warehouse.reset_migration_cache()
    with warehouse.connect() as con:
        threads = con.execute("SELECT current_setting('threads')").fetchone()[0]
    with warehouse.connect() as other:
        assert other is not con  # not held: a cursor per unit, closed after it
    with warehouse.hold_cursors(), warehouse.duckdb_threads(1):
        with warehouse.snapshot() as first:
            assert first.execute("SELECT current_setting('threads')").fetchone()[0] == 1
        with warehouse.connect() as second:
            assert second is first and second.execute("SELECT count(*) FROM runs").fetchone() == (0,)
        with pytest.raises(RuntimeError), warehouse.snapshot() as failed:
            raise RuntimeError("a unit that fails leaves no cursor")
        assert failed is first
        with warehouse.connect() as third:
            assert third is not first and third.execute("SELECT count(*) FROM runs").fetchone() == (0,)
    with warehouse.connect() as after:
        assert after is not third
        assert after.execute("SELECT current_setting('threads')").fetchone()[0] == threads


@pytest.mark.parametrize("kind", ["ducklake-sqlite", "file"])
def test_rows_in_memory_shadow_a_units_tables_and_go_with_it(warehouse_factory, settings, kind):
    """``warehouse.rows_in_memory``: within the block the unit's queries of a table read the copy of the rows asked
    for, and a table that never held a row (DuckLake only: ``never_written``) an empty copy; after it, the
    warehouse's tables again (and other units never saw the copies)."""
    settings.PTB_WAREHOUSE = warehouse_factory.make(kind)
    warehouse.reset_migration_cache()
    with warehouse.transaction() as con:
        con.execute("INSERT INTO phases VALUES ('a', 'setup', 0, 1, 0, 1), ('b', 'setup', 0, 2, 0, 2), "
                    "('c', 'train', 1, 3, 1, 3)")
    count = "SELECT count(*) FROM phases"
    with warehouse.snapshot() as con:
        unwritten = warehouse.never_written(con, ("phases", "verdict_overrides", "step_texts"))
        assert unwritten == ([] if kind == "file" else ["verdict_overrides", "step_texts"])
        whole = con.execute("SELECT * FROM phases WHERE run_id IN ('a', 'c') ORDER BY run_id").fetchall()
        with warehouse.rows_in_memory(con, ("phases",), "run_id", ["a", "c"], unwritten=("verdict_overrides",)):
            assert con.execute(count).fetchone() == (2,)
            assert con.execute("SELECT * FROM phases ORDER BY run_id").fetchall() == whole
            assert con.execute("SELECT count(*) FROM verdict_overrides").fetchone() == (0,)
            with warehouse.connect() as other:
                assert other.execute(count).fetchone() == (3,)
        assert con.execute(count).fetchone() == (3,)
    with warehouse.snapshot() as con:
        assert con.execute(count).fetchone() == (3,)
        assert con.execute("SELECT count(*) FROM duckdb_tables() WHERE temporary").fetchone() == (0,)
    with warehouse.transaction() as con:
        con.execute("INSERT INTO verdict_overrides (run_id, kind, flagged, reason, reviewer, created_at) "
                    "VALUES ('a', 'flag', true, 'r', 'me', now())")
        con.execute("DELETE FROM verdict_overrides")
    with warehouse.snapshot() as con:  # written once, emptied: not "never written"
        assert warehouse.never_written(con, ("verdict_overrides",)) == []
