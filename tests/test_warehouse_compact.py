"""``compact_warehouse`` (ptbsite.warehouse.maintenance) on real DuckLake catalogs (SQLite and PostgreSQL) and a
plain DuckDB file: every row survives, the files the current snapshot reads shrink, what a reader may still read
stays, and a SQLite catalog's old snapshots and files go only once they are old (its text times)."""
from __future__ import annotations

import json
import sqlite3
from contextlib import closing
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest
from django.core.management import call_command

from ptbsite import warehouse
from ingest.tree import ingest_tree
from traces.selectors import list_runs

LAKES = ("ducklake-sqlite", "ducklake-postgres")


def _contents(con) -> dict[str, list[tuple]]:
    """Every table's rows, as text, sorted: what a compaction must leave exactly as it was."""
    tables = [r[0] for r in con.execute("SELECT table_name FROM duckdb_tables() WHERE database_name = "
                                        "current_database() ORDER BY table_name").fetchall()]
    assert {"runs", "steps", "step_words", "facets", "verdicts"} <= set(tables)
    out = {}
    for table in tables:
        columns = [r[0] for r in con.execute(f'DESCRIBE "{table}"').fetchall()]
        text = ", ".join(f'CAST("{c}" AS VARCHAR)' for c in columns)
        out[table] = sorted(con.execute(f'SELECT {text} FROM "{table}"').fetchall(), key=repr)
    return out


def _snapshot():
    with warehouse.connect() as con:
        return _contents(con)


@pytest.fixture(params=LAKES)
def lake(request, warehouse_factory, settings, demo_tree, tmp_path) -> str:
    """A DuckLake warehouse with the demo tree ingested, then one run changed and ingested again (its old rows
    deleted: delete files), so there are small files, inlined rows and many snapshots to compact. One run per
    ingest transaction, as runs arrive over time (a batched ingest of a whole tree writes few files already)."""
    spec = warehouse_factory.make(request.param)
    settings.PTB_WAREHOUSE, settings.PTB_INGEST_BATCH_RUNS = spec, 1
    warehouse.reset_migration_cache()
    assert ingest_tree(root=demo_tree.root).stored > 10
    metrics = sorted(demo_tree.root.glob("*/*/metrics.json"))[0]
    original = metrics.read_text()
    try:
        metrics.write_text(json.dumps({**json.loads(original), "accuracy": 0.123}))
        assert ingest_tree(root=demo_tree.root).stored == 1
    finally:
        metrics.write_text(original)  # the session's demo tree, as other tests expect it
    return spec


def test_compaction_keeps_every_row_and_merges_the_files(lake, capsys):
    before = _snapshot()
    version = warehouse.version.current().token
    runs = list_runs(limit=None)[0]

    done = warehouse.compact(keep_seconds=0)

    assert done.kind in LAKES
    assert done.files_merged > 0 and done.rows_flushed > 0 and done.snapshots_expired > 10
    assert done.live_files_after < done.live_files_before / 3
    assert done.disk_files_after == done.live_files_after < done.disk_files_before  # the rest deleted
    assert done.files_deleted >= done.disk_files_before - done.disk_files_after > 0
    assert _snapshot() == before
    assert [r.id for r in list_runs(limit=None)[0]] == [r.id for r in runs]
    assert warehouse.version.current().token != version  # a flush: pages computed during it are not kept

    call_command("compact_warehouse")  # nothing left to do, and the command says so in its figures
    out = capsys.readouterr().out
    assert (f"The site now reads {done.live_files_after} files ({done.live_files_after} before): 0 files merged "
            "into others.") in out
    assert "0 files deleted, 0 old snapshots expired." in out
    assert _snapshot() == before


def test_compaction_keeps_what_a_reader_may_still_read(lake):
    with warehouse.connect() as reader:
        reader.execute("BEGIN TRANSACTION")
        run_id, steps = reader.execute("SELECT run_id, count(*) FROM steps GROUP BY run_id ORDER BY 2 DESC "
                                       "LIMIT 1").fetchone()
        first = reader.execute("SELECT idx, kind, input, output FROM steps WHERE run_id = ? ORDER BY idx", [run_id]).fetchall()
        assert len(first) == steps > 100
        snapshots = reader.execute("SELECT count(*) FROM ducklake_snapshots('wh')").fetchone()[0]
        runs = reader.execute("SELECT id, accuracy FROM runs ORDER BY id").fetchall()  # rows inlined in the catalog

        version = warehouse.version.current().token
        done = warehouse.compact()  # the default: nothing younger than an hour is removed

        assert done.files_merged > 0 and done.live_files_after < done.live_files_before
        assert done.snapshots_expired == 0 and done.files_deleted == 0 and done.rows_flushed == 0
        assert done.disk_files_after > done.disk_files_before  # the merged files beside the ones they replace
        # the open transaction still reads its snapshot, from the files it started with
        assert reader.execute("SELECT idx, kind, input, output FROM steps WHERE run_id = ? ORDER BY idx",
                              [run_id]).fetchall() == first
        assert reader.execute("SELECT id, accuracy FROM runs ORDER BY id").fetchall() == runs
        assert warehouse.version.current().token == version  # nothing read differs: cached pages stay valid
        reader.execute("COMMIT")
    with warehouse.connect() as con:
        assert con.execute("SELECT count(*) FROM ducklake_snapshots('wh')").fetchone()[0] > snapshots
        assert con.execute("SELECT count(*) FROM steps WHERE run_id = ?", [run_id]).fetchone()[0] == steps


def _catalog_time(at: datetime) -> str:
    # DuckLake's SQLite catalog keeps its times as text, in this form (read off a catalog DuckLake wrote)
    return at.astimezone(timezone.utc).strftime("%Y-%m-%d %H:%M:%S.%f+00")


def test_a_sqlite_catalog_loses_only_what_is_old(warehouse_factory, settings, demo_tree):
    """DuckLake 1.5.5 compares a SQLite catalog's text times with text of another form, so its own ``older_than``
    takes everything of the current day; here a snapshot or a file 30 minutes old stays, 2 days old goes."""
    spec = warehouse_factory.make("ducklake-sqlite")
    settings.PTB_WAREHOUSE = spec
    warehouse.reset_migration_cache()
    assert ingest_tree(root=demo_tree.root).stored > 10
    before = _snapshot()
    assert warehouse.compact().files_merged > 0  # the replaced files are now scheduled for deletion
    catalog = warehouse.parse_spec(spec).catalog
    now = datetime.now(timezone.utc)
    with closing(sqlite3.connect(catalog)) as db, db:
        scheduled = [r[0] for r in db.execute("SELECT data_file_id FROM ducklake_files_scheduled_for_deletion "
                                              "ORDER BY data_file_id")]
        old, recent = scheduled[::2], scheduled[1::2]
        assert old and recent
        db.executemany("UPDATE ducklake_files_scheduled_for_deletion SET schedule_start = ? WHERE data_file_id = ?",
                       [(_catalog_time(now - timedelta(days=2)), i) for i in old]
                       + [(_catalog_time(now - timedelta(minutes=30)), i) for i in recent])
        snapshots = [r[0] for r in db.execute("SELECT snapshot_id FROM ducklake_snapshot ORDER BY snapshot_id")]
        db.executemany("UPDATE ducklake_snapshot SET snapshot_time = ? WHERE snapshot_id = ?",
                       [(_catalog_time(now - timedelta(days=2)), i) for i in snapshots[:5]]
                       + [(_catalog_time(now - timedelta(minutes=30)), i) for i in snapshots[5:]])

    done = warehouse.compact(keep_seconds=3600)

    assert done.snapshots_expired == 5
    assert done.files_deleted == len(old)
    with closing(sqlite3.connect(catalog)) as db:
        left = [r[0] for r in db.execute("SELECT data_file_id FROM ducklake_files_scheduled_for_deletion "
                                         "ORDER BY data_file_id")]
        assert left == recent
        kept = [r[0] for r in db.execute("SELECT snapshot_id FROM ducklake_snapshot ORDER BY snapshot_id")]
    assert kept[:len(snapshots) - 5] == snapshots[5:]  # then those the compaction's own commits made
    assert all(s > snapshots[-1] for s in kept[len(snapshots) - 5:])
    assert _snapshot() == before


def test_a_plain_file_is_checkpointed(fresh_warehouse: Path, capsys):
    with warehouse.transaction() as con:
        con.execute("CREATE TABLE probe AS SELECT 1 AS a")
    done = warehouse.compact()
    assert (done.kind, done.files_merged, done.live_files_before, done.snapshots_expired) == ("file", 0, 0, 0)
    call_command("compact_warehouse")
    assert "checkpointed in" in capsys.readouterr().out
    with warehouse.connect() as con:
        assert con.execute("SELECT a FROM probe").fetchall() == [(1,)]


def test_a_negative_keep_is_refused(fresh_warehouse: Path):
    with pytest.raises(ValueError, match="keep_seconds must be >= 0"):
        warehouse.compact(keep_seconds=-1)


def _files_in_order(con, table: str, columns: str) -> list[list[tuple]]:
    """Per live data file of ``table``: its rows' ``columns`` in the order the file holds them."""
    files = [r[0] for r in con.execute(f"SELECT data_file FROM ducklake_list_files('wh', '{table}')").fetchall()]
    return [con.execute(f"SELECT {columns} FROM read_parquet(?)", [path]).fetchall() for path in files]


def test_the_per_run_tables_are_sorted_by_run_once(lake, monkeypatch, demo_tree):
    """Compaction gives steps, monitor and phases their layout (ptbsite.warehouse.layout): the catalog keeps their
    sort order and row-group size, their rows are rewritten in that order (each file's row groups cover ascending,
    disjoint spans of run ids, so a read of one run skips the others), nothing they hold changes, the next
    compaction rewrites nothing, a later ingest's rows keep the order, and a changed layout is applied again."""
    from ptbsite.warehouse import layout

    monkeypatch.setattr(layout, "LAYOUTS", tuple(layout.Layout(t.table, t.sort, 4096) for t in layout.LAYOUTS))
    before = _snapshot()
    with warehouse.connect() as con:
        assert [t.table for t in layout.pending(con)] == ["steps", "monitor", "phases"]

    done = warehouse.compact()

    rows = {t: len(before[t]) for t in ("steps", "monitor", "phases")}
    assert done.rows_laid_out == sum(rows.values()) > 1000
    assert _snapshot() == before
    with warehouse.connect() as con:
        assert layout.pending(con) == []
        settings_now = layout.current(con)
        assert settings_now["steps"] == (("run_id", "trace", "idx"), 4096)
        assert settings_now["monitor"] == (("run_id", "time"), 4096)  # DuckLake keeps the keyword quoted: "time"
        assert settings_now["runs"] == ((), None)
        for table in ("steps", "monitor", "phases"):
            files = _files_in_order(con, table, ", ".join(settings_now[table][0]))
            assert sum(map(len, files)) == rows[table]
            spans = sorted((f[0][0], f[-1][0]) for f in files if f)
            assert all(a[1] < b[0] for a, b in zip(spans, spans[1:])), (table, spans)  # disjoint runs per file
            for held in files:
                assert held == sorted(held), table  # each file in the table's order
            assert con.execute("SELECT max(row_group_num_rows) FROM parquet_metadata(?)",
                               [[r[0] for r in con.execute(f"SELECT data_file FROM ducklake_list_files('wh', "
                                                           f"'{table}')").fetchall()]]).fetchone()[0] <= 4096

    assert warehouse.compact().rows_laid_out == 0  # laid out once

    metrics = sorted(demo_tree.root.glob("*/*/metrics.json"))[1]
    original = metrics.read_text()
    try:  # DuckLake sorts each insert by the table's order: a run ingested again keeps every row, and the order
        metrics.write_text(json.dumps({**json.loads(original), "accuracy": 0.321}))
        assert ingest_tree(root=demo_tree.root).stored == 2  # and the fixture's run, whose metrics it put back
    finally:
        metrics.write_text(original)
    assert _snapshot()["steps"] == before["steps"]

    monkeypatch.setattr(layout, "LAYOUTS", (layout.Layout("phases", ("run_id", "start_s"), 128),))
    assert warehouse.compact().rows_laid_out == rows["phases"]
    with warehouse.connect() as con:
        assert layout.current(con)["phases"] == (("run_id", "start_s"), 128)


def test_a_table_is_rewritten_a_range_of_runs_at_a_time(warehouse_factory, settings):
    """``layout.rewrite`` holds at most ``batch_rows`` rows at once (a run larger than that alone): each range of
    consecutive run ids becomes a file of its own, the ranges disjoint, and the table holds what it held."""
    from ptbsite.warehouse import layout

    settings.PTB_WAREHOUSE = warehouse_factory.make("ducklake-sqlite")
    warehouse.reset_migration_cache()
    sizes = {"r5": 30, "r1": 10, "r4": 120, "r2": 25, "r3": 5}  # r4 alone exceeds the batch
    with warehouse.transaction() as con:
        for run_id, n in sizes.items():
            con.execute("INSERT INTO phases SELECT ?, 'training', i, i + 1, i, i FROM range(?) t(i)", [run_id, n])
    with warehouse.connect() as con:
        before = sorted(con.execute("SELECT * FROM phases").fetchall())
    with warehouse.transaction() as con:
        assert layout.rewrite(con, layout.Layout("phases", ("run_id", "start_s")), batch_rows=40) == 190
    with warehouse.connect() as con:
        assert sorted(con.execute("SELECT * FROM phases").fetchall()) == before
        spans = sorted(con.execute(
            "SELECT min(run_id), max(run_id), count(*) FROM read_parquet(?, filename = true) GROUP BY filename",
            [[r[0] for r in con.execute("SELECT data_file FROM ducklake_list_files('wh', 'phases')").fetchall()]]
        ).fetchall())
    # r1 to r3 (10 + 25 + 5 rows: 40), r4 (120, alone), r5 (30: with r4's it would exceed 40)
    assert spans == [("r1", "r3", 40), ("r4", "r4", 120), ("r5", "r5", 30)]
