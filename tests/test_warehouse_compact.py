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
