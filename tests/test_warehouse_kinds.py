"""The same services and selectors on every warehouse kind: plain DuckDB file, DuckLake with a SQLite catalog,
DuckLake with a PostgreSQL catalog. Each test runs once per kind on a warehouse of that kind holding the
published data and a small generated tree (ingested once per kind)."""
from __future__ import annotations

import json

import pytest

from leaderboard import selectors as board_selectors
from leaderboard.services import DEFAULT_PUBLISHED_DIR, import_published
from ptbsite import warehouse
from traces import layout, selectors
from ingest.tree import ingest_tree
from traces.services import add_evaluation

from .conftest import WAREHOUSE_KINDS

SCORES = json.loads((DEFAULT_PUBLISHED_DIR / "scores.json").read_text())
KEY = {"human": "instruct", "base-model": "base-zeroshot", "base-model-fewshot": "base-fewshot"}
TABLES = ("methods", "runs", "steps", "step_words", "verdicts", "evaluations")


@pytest.fixture(scope="module")
def small_tree(tmp_path_factory: pytest.TempPathFactory):
    from demo.tree import make_demo_results

    return make_demo_results(root=tmp_path_factory.mktemp("kinds") / "results", runs=12, seed=1, long_run=False)


@pytest.fixture(scope="module", params=WAREHOUSE_KINDS)
def loaded(request, warehouse_factory, small_tree):
    """(PTB_WAREHOUSE value, IngestReport) of a warehouse of each kind with the published data and the tree."""
    from django.conf import settings

    previous = settings.PTB_WAREHOUSE
    settings.PTB_WAREHOUSE = warehouse_factory.make(request.param)
    warehouse.reset_migration_cache()
    try:
        import_published()
        yield settings.PTB_WAREHOUSE, ingest_tree(root=small_tree.root)
    finally:
        settings.PTB_WAREHOUSE = previous


@pytest.fixture
def kind(loaded, settings):
    """The module's warehouse of the current kind, with the setting pointing at it for one test."""
    settings.PTB_WAREHOUSE = loaded[0]
    return loaded


def _counts() -> dict[str, int]:
    with warehouse.connect() as con:
        return {t: con.execute(f"SELECT count(*) FROM {t}").fetchone()[0] for t in TABLES}


def test_spec_syntax():
    assert warehouse.parse_spec("data/w.duckdb") == warehouse.WarehouseSpec("file", "data/w.duckdb")
    lake = warehouse.parse_spec("ducklake:sqlite:/x/catalog.sqlite?data=/x/data")
    assert (lake.kind, lake.catalog, lake.data) == ("ducklake-sqlite", "/x/catalog.sqlite", "/x/data")
    pg = warehouse.parse_spec("ducklake:postgres:dbname=ptb host=127.0.0.1 password=s3cret?data=/srv/lake")
    assert (pg.kind, pg.catalog, pg.data) == ("ducklake-postgres", "dbname=ptb host=127.0.0.1 password=s3cret", "/srv/lake")
    assert "s3cret" not in warehouse.describe("ducklake:postgres:postgresql://ptb:s3cret@db/ptb?data=/srv/lake")
    with pytest.raises(ValueError, match=r"\?data="):
        warehouse.parse_spec("ducklake:sqlite:/x/catalog.sqlite")
    with pytest.raises(ValueError, match="ducklake:sqlite"):
        warehouse.parse_spec("ducklake:mysql:db?data=/x")


def test_published_leaderboard_numbers(kind):
    import_published()  # again: replaces, never adds
    with warehouse.connect() as con:
        assert con.execute("SELECT count(*) FROM reported_cells").fetchone()[0] == 728
    rows = {r.key: r for r in board_selectors.leaderboard().rows}
    assert (round(100 * rows["opus-4.6"].average, 1), round(100 * rows["opus-4.6"].std, 1)) == (23.2, 1.8)
    for site_key, published in SCORES["aggregatedScores"].items():
        assert 100 * rows[site_key].average == pytest.approx(published["avg"], abs=0.005)
    rows = {r.key: r for r in board_selectors.leaderboard(base_model="Qwen3-4B-Base").rows}
    for site_key, per_model in SCORES["modelBenchmarkData"].items():
        for benchmark, cell in per_model["Qwen3-4B-Base"].items():
            assert round(100 * rows[KEY.get(site_key, site_key)].cells[benchmark].score, 2) == pytest.approx(cell["value"])


def test_ingest_run_selectors_and_reingest(kind, small_tree):
    report = kind[1]
    assert (report.stored, report.failed) == (len(small_tree.runs) + len(small_tree.baseline_runs), 0)
    before = _counts()
    assert before["runs"] == report.stored

    for demo in small_tree.runs:
        run = selectors.get_run(layout.run_id(*demo.run_dir.split("/")))
        assert (run.state, run.is_latest) == (demo.state, demo.is_latest), demo.run_dir
        pages, after = [], -1
        while True:
            page = selectors.steps_page(run.id, after=after, limit=40)
            pages += page.steps
            if page.next is None:
                break
            after = page.next
        assert len(pages) == page.total == run.step_count, demo.run_dir
    listed, _ = selectors.list_runs(limit=500)
    assert len(listed) == len(small_tree.runs)
    assert any(r.source == "runs" for r in board_selectors.leaderboard(source="all").rows)

    again = ingest_tree(root=small_tree.root)
    assert (again.stored, again.unchanged) == (0, report.stored)
    assert _counts() == before


def test_an_evaluation_is_stored_once(kind, small_tree):
    scored = next(d for d in small_tree.runs if d.accuracy is not None)
    run_id = layout.run_id(*scored.run_dir.split("/"))
    for _ in range(2):  # a redelivered result replaces itself
        add_evaluation(run_id=run_id, accuracy=0.5, metrics={"accuracy": 0.5}, provenance={"job": 7},
                       evaluation_id="job-7")
    evaluations = selectors.evaluations(run_id)
    assert [e.origin for e in evaluations].count("rerun") == 1
    assert 100 * selectors.get_run(run_id).score == pytest.approx(50.0)
    with pytest.raises(LookupError):
        add_evaluation(run_id="nope", accuracy=0.5, metrics={}, provenance={}, evaluation_id="job-8")


def test_the_search_index_answers_as_the_scan_does(kind, small_tree):
    from traces import search_index
    from traces.selectors.steps import read_matches

    answered = 0
    with warehouse.connect() as con:
        assert con.execute("SELECT count(*) FROM step_words").fetchone()[0] > 1000
        for demo in small_tree.runs:
            run_id = layout.run_id(*demo.run_dir.split("/"))
            assert search_index.indexed(con, run_id)
            for q in ("import", "the model", "Error:", "->", "omitted-api-key", "naïve", "loss", "a"):
                found = read_matches(con, run_id, q=q, limit=10 ** 6)
                assert found == read_matches(con, run_id, q=q, limit=10 ** 6, use_index=False), (demo.run_dir, q)
                answered += bool(found) and search_index.plan(con, q).terms is not None
    assert answered > 10  # matches found through the index, not only absences


def test_the_search_of_every_trace_answers_on_every_kind(kind, small_tree):
    """The search of every trace (its candidates statement, the sorted step_words, steps read by row id in one
    snapshot) on each kind of warehouse: every run whose agent trace holds the query is listed, each with its
    matches' excerpts holding it."""
    from traces import search_across
    from traces.selectors import search
    from traces.selectors.steps import read_matches

    warehouse.run_in_transaction(lambda con: search_across.sort_step_words(con, min_rows=0))
    found = 0
    for q in ("import", '"the model"', '"pip install"', "loss"):
        needle = q.strip('"').lower()
        listed, after = {}, None
        while True:
            page = search.search_page(q, after=after, limit=3)
            listed.update({r.run.id: r for r in page.runs})
            if page.next is None:
                break
            after = page.next
        with warehouse.connect() as con:
            holding = {rid for rid in (layout.run_id(*d.run_dir.split("/")) for d in small_tree.runs)
                       if read_matches(con, rid, q=needle, limit=1, use_index=False)}
        assert holding <= set(listed), (kind, q)
        found += len(holding)
        for result in listed.values():
            assert result.count >= 1 and result.matches, (kind, q)
            assert all(needle in m.excerpt.lower() for m in result.matches), (kind, q)
    assert found > 10


def test_pending_migrations_are_applied_all_or_none(any_warehouse, tmp_path, monkeypatch):
    """A warehouse's pending migrations are applied in one transaction (on DuckLake each commit is a round of
    catalog work): one that fails leaves none of them recorded nor their tables made, and the next open applies
    them all."""
    from ptbsite.warehouse import connections, migrations

    real = migrations.migration_files()
    broken = tmp_path / "9999_broken.sql"
    broken.write_text("CREATE TABLE broken_too (x INTEGER);\nSELECT * FROM no_such_table;\n")
    monkeypatch.setattr(migrations, "migration_files", lambda: [*real, (9999, broken.stem, broken)])
    with pytest.raises(Exception, match="no_such_table"):
        with warehouse.connect():
            pass
    con = connections._open(any_warehouse)
    try:
        assert migrations._recorded(con) == set()  # (before: the 14 before the broken one)
    finally:
        connections.close(any_warehouse, con)
    monkeypatch.setattr(migrations, "migration_files", lambda: real)
    warehouse.reset_migration_cache()
    with warehouse.connect() as con:
        tables = {row[0] for row in con.execute("SELECT table_name FROM information_schema.tables "
                                                  "WHERE table_catalog = current_database()").fetchall()}
        recorded = sorted(row[0] for row in con.execute("SELECT version FROM schema_migrations").fetchall())
    assert "broken_too" not in tables and {"runs", "latest_runs"} <= tables
    assert recorded == [version for version, _, _ in real]
