"""Warehouse upkeep (``manage.py compact_warehouse``): DuckLake's own maintenance functions, run so that a
warehouse read by web processes stays safe to read while it is compacted.

Every DuckLake commit writes new Parquet files and never deletes one: the 96-run demo ingest leaves 185 data
files (48 of ``steps``, 51 of ``step_words``, ...), runs rows inlined in the catalog, and 110 snapshots; every
re-ingest or ``reindex`` adds more, and the old files stay on disk for ever. :func:`compact` runs, in the order
DuckLake's own ``CHECKPOINT`` does (https://ducklake.select/docs/stable/duckdb/maintenance/checkpoint),
after one step of its own:

0. the per-run tables given their layout (``layout``: sorted by run, in small row groups) where the catalog does
   not have it yet, their rows rewritten in that order: once per warehouse (and after a layout changes), in one
   transaction; what the tables hold is unchanged, so the warehouse version is not bumped;
1. ``ducklake_flush_inlined_data``: rows inlined in the catalog are written to Parquet, only with
   ``keep_seconds`` 0. In DuckLake 1.5.5 a transaction open during the flush no longer sees the rows flushed
   (``tests/test_warehouse_compact.py`` saw a run's 301 steps read as none), and a page computed in it would be
   cached without them (a flush therefore bumps the warehouse version, as a safety net). Yet the flush
   pays: ``bench/compact.py`` at 656 runs (4,479 inlined rows), pages took 0.56-0.70x of the uncompacted
   warehouse's time with ``keep_seconds`` 0, 0.67-0.91x with the default, 0.59-0.78x with the default and then
   the flush alone;
2. ``ducklake_merge_adjacent_files``: small files of a table are merged (transparent: old snapshots read their
   part of the merged file);
3. ``ducklake_rewrite_data_files``: files most of whose rows were deleted are rewritten (DuckLake's threshold);
4. ``ducklake_expire_snapshots``: snapshots older than ``keep_seconds``, never the current one;
5. ``ducklake_cleanup_old_files`` and ``ducklake_delete_orphaned_files``: files no snapshot needs any more (or
   that no commit ever recorded, such as those of a rolled-back ingest, and those of one still running), once
   older than ``keep_seconds``: a run's ingest transaction lasts seconds to minutes, far less than the hour.

Steps 0 and 2-3 do not change what any query reads, an open transaction's included (tested), so the warehouse version
(``ptbsite.warehouse.version``) is not bumped for them and cached pages stay valid. Steps 4-5 only remove what no query
newer than ``keep_seconds`` can read: web requests read one snapshot for at most their timeout (``serve
--timeout``, 60 s), far less than the default hour. ``CHECKPOINT`` itself is not used: it takes its ages from
catalog options, and on a SQLite catalog (DuckLake 1.5.5) it and the functions' ``older_than`` expire every
snapshot and delete every file of the current day whatever the age asked (the catalog keeps times as text,
``2026-12-01 20:46:53+00``, compared with text of another form). So snapshots to expire are chosen here by their
typed ``ducklake_snapshots`` time and passed as ``versions``, and on a SQLite catalog the file cut-off is moved
back to the end of the day before it, which that comparison gets right (a file is then kept up to a day longer than
asked).

A plain DuckDB file has none of this: :func:`compact` runs ``CHECKPOINT`` (the write-ahead log into the file).
"""
from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path

import duckdb
from django.conf import settings

from . import connections, layout, version, writers
from .connections import ALIAS
from .retry import with_retries
from .spec import is_object_url, parse_spec, warehouse_spec
from .transactions import connect


@dataclass(frozen=True)
class Compaction:
    """What :func:`compact` did. ``live_files_*``: the Parquet data and delete files the current snapshot reads
    (every table), before and after; ``disk_files_*``: ``*.parquet`` files under the data folder (or bucket prefix); ``rows_flushed``:
    catalog-inlined rows written to Parquet; ``rows_laid_out``: rows of per-run tables rewritten in their layout's
    order (``layout``); ``files_merged``: small files merged into others;
    ``snapshots_expired``; ``files_deleted``: files removed from disk; ``seconds``: wall time. All zero on a plain
    DuckDB file (``kind`` ``file``)."""

    kind: str
    live_files_before: int = 0
    live_files_after: int = 0
    disk_files_before: int = 0
    disk_files_after: int = 0
    rows_flushed: int = 0
    rows_laid_out: int = 0
    files_merged: int = 0
    snapshots_expired: int = 0
    files_deleted: int = 0
    seconds: float = 0.0


def compact(*, keep_seconds: float | None = None) -> Compaction:
    """Compact the configured warehouse (module doc). ``keep_seconds``: how old a snapshot or an unneeded file
    must be before it is removed (default ``settings.PTB_COMPACT_KEEP_SECONDS``, 3600); 0 also flushes the
    inlined rows and removes every snapshot but the current one and every unneeded file at once: only while
    nothing reads or writes the warehouse (tests, a stopped site), since the Parquet files of an ingest's
    transaction not yet committed are orphans until its commit.

    Each step is its own DuckLake transaction holding the one-writer lock (``writers``: a SQLite catalog), retried
    on a commit conflict with a concurrent writer (PostgreSQL). Only a flush of inlined rows bumps the warehouse
    version.

    Raises:
        ValueError: ``keep_seconds`` < 0.
        WarehouseUnavailable: the catalog stayed locked or unreachable through every retry.
        duckdb.Error: a maintenance function failed (what earlier steps did stays done; none loses data).
    """
    keep = float(settings.PTB_COMPACT_KEEP_SECONDS if keep_seconds is None else keep_seconds)
    if keep < 0:
        raise ValueError(f"keep_seconds must be >= 0, not {keep}")
    spec = parse_spec(warehouse_spec())
    started = time.perf_counter()

    def run(step):
        def unit():
            with connect() as con, writers.one_writer(warehouse_spec()):
                return step(con)

        return with_retries(unit)

    if not spec.is_ducklake:
        run(lambda con: con.execute("CHECKPOINT"))
        return Compaction(kind=spec.kind, seconds=time.perf_counter() - started)
    assert spec.data is not None  # a DuckLake spec always names its data folder

    live_before, disk_before = run(_live_files), run(lambda con: _disk_files(con, spec.data))
    laid_out = run(_lay_out)
    flushed = 0
    if keep == 0:  # not while anything reads: an open transaction then misses the rows flushed (module doc)
        flushed = run(lambda con: sum(int(r[2] or 0) for r in _call(con, "ducklake_flush_inlined_data")))
        if flushed:
            version.bump()  # should anything have read during the flush, no page it computed stays cached
    merged = run(lambda con: sum(int(r[2] or 0) for r in _call(con, "ducklake_merge_adjacent_files")))
    run(lambda con: con.execute(f"CALL ducklake_rewrite_data_files('{ALIAS}')"))
    expired = run(lambda con: _expire(con, keep))
    cutoff = _file_cutoff(keep, sqlite=spec.kind == "ducklake-sqlite")
    deleted = run(lambda con: len(_call(con, "ducklake_cleanup_old_files", cutoff)))
    deleted += run(lambda con: len(_call(con, "ducklake_delete_orphaned_files", cutoff)))
    return Compaction(kind=spec.kind, live_files_before=live_before, live_files_after=run(_live_files),
                      disk_files_before=disk_before, disk_files_after=run(lambda con: _disk_files(con, spec.data)), rows_flushed=flushed,
                      rows_laid_out=laid_out, files_merged=merged, snapshots_expired=expired, files_deleted=deleted,
                      seconds=time.perf_counter() - started)


def _lay_out(con: duckdb.DuckDBPyConnection) -> int:
    """Step 0 (module doc): every table whose layout the catalog does not have yet given it, in one transaction;
    returns the rows rewritten (0: none was pending, nothing written)."""
    con.execute("BEGIN TRANSACTION")
    try:
        rows = sum(layout.apply(con, table) for table in layout.pending(con))
        con.execute("COMMIT")
    except BaseException:
        connections.rollback(con)
        raise
    return rows


def _call(con: duckdb.DuckDBPyConnection, function: str, arguments: str = "") -> list[tuple]:
    return con.execute(f"SELECT * FROM {function}('{ALIAS}'{arguments})").fetchall()


def _live_files(con: duckdb.DuckDBPyConnection) -> int:
    row = con.execute(f"SELECT sum(file_count) + sum(delete_file_count) FROM ducklake_table_info('{ALIAS}')").fetchone()
    return int(row[0] or 0) if row else 0


def _disk_files(con: duckdb.DuckDBPyConnection, data: str) -> int:
    """The ``*.parquet`` files under the data folder, local or in object storage (DuckDB's ``glob``)."""
    if not is_object_url(data):
        return sum(1 for _ in Path(data).rglob("*.parquet"))
    row = con.execute("SELECT count(*) FROM glob(?)", [data.rstrip("/") + "/**/*.parquet"]).fetchone()
    return int(row[0]) if row else 0


def _expire(con: duckdb.DuckDBPyConnection, keep: float) -> int:
    """Expire the snapshots older than ``keep`` seconds but the current one, chosen by their typed time."""
    ids = [r[0] for r in con.execute(
        f"SELECT snapshot_id FROM ducklake_snapshots('{ALIAS}') WHERE snapshot_time < now() - to_microseconds(?) "
        f"AND snapshot_id < (SELECT max(snapshot_id) FROM ducklake_snapshots('{ALIAS}')) ORDER BY snapshot_id",
        [int(keep * 1e6)]).fetchall()]
    if ids:
        # CALL, not SELECT: the rows it answers hold TIMESTAMPTZ values, which Python gets only through pytz
        con.execute(f"CALL ducklake_expire_snapshots('{ALIAS}', versions => {[int(i) for i in ids]})")
    return len(ids)


def _file_cutoff(keep: float, *, sqlite: bool) -> str:
    """The arguments giving the cleanup functions their cut-off (module doc: a SQLite catalog's day rounding)."""
    if keep == 0:
        return ", cleanup_all => true"
    cutoff = f"now() - to_microseconds({int(keep * 1e6)})"
    if sqlite:
        cutoff = f"date_trunc('day', {cutoff}) - INTERVAL 1 MICROSECOND"
    return f", older_than => {cutoff}"
