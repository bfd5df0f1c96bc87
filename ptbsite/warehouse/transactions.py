"""Units of work: :func:`connect` (one connection, schema migrated), :func:`transaction` (BEGIN ... COMMIT) and
:func:`run_in_transaction` (a transaction retried as a whole on a lock or commit conflict)."""
from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TypeVar

import duckdb

from . import connections, migrations, version, writers
from .retry import with_retries
from .spec import parse_spec, warehouse_spec

T = TypeVar("T")


@contextmanager
def connect() -> Iterator[duckdb.DuckDBPyConnection]:
    """Open the warehouse for one unit of work and close it afterwards.

    Yields a ``duckdb.DuckDBPyConnection`` (on DuckLake: a cursor with ``wh`` in use) with the schema migrated.
    Opening is retried on a lock; a query in the body is retried only if the caller is a unit of work
    (``@retrying``, ``run_in_transaction``), since the body itself cannot run twice.

    Raises:
        WarehouseUnavailable: the warehouse stayed locked or unreachable through every retry.
    """
    text = warehouse_spec()

    def open_migrated() -> duckdb.DuckDBPyConnection:
        con = connections._open(text)
        try:
            if not migrations.is_migrated(text):
                migrations.migrate(con)
        except BaseException:
            connections.close(text, con)
            raise
        return con

    con = with_retries(open_migrated)
    try:
        yield con
    except BaseException:
        connections.close(text, con)
        raise
    connections.close(text, con, clean=True)


@contextmanager
def snapshot() -> Iterator[duckdb.DuckDBPyConnection]:
    """:func:`connect` inside one read-only transaction, rolled back at the end: every read of a page sees the same
    snapshot of the warehouse, and on DuckLake the catalog's snapshot is looked up once for the unit of work
    instead of once per query (a run page issues ~18 queries: about a third of its time, ``bench/viewer.py``; the
    leaderboard from runs ~13). For reads only: nothing written in it is kept."""
    with connect() as con:
        con.execute("BEGIN TRANSACTION")
        try:
            yield con
        finally:
            try:
                con.execute("ROLLBACK")
            except duckdb.Error:  # a failed query already ended the transaction
                pass


def never_written(con: duckdb.DuckDBPyConnection, tables: tuple[str, ...]) -> list[str]:
    """Those of ``tables`` (of the warehouse's main schema) that have never held a row, in ``tables``' order: on
    DuckLake, the live tables without a statistics row in its catalog (``ducklake_table_stats``: written with the
    first rows a table is given, by a commit, kept when they are deleted; so a table without one is empty in every
    snapshot up to now, this unit's included), read in one query of the catalog database; [] on a plain DuckDB
    file (its scans cost no catalog work). Why: DuckLake 1.5.5 looks a table's statistics up again for each
    column a query names when the table has none (a negative answer is not cached), ~4 CPU ms a column, so that a
    query of an empty table costs 10-35 ms (bench/RESULTS.md, issue 24)."""
    if not tables or not parse_spec(warehouse_spec()).is_ducklake:
        return []
    meta = f"__ducklake_metadata_{connections.ALIAS}"
    empty = {row[0] for row in con.execute(
        f"SELECT t.table_name FROM {meta}.ducklake_table t JOIN {meta}.ducklake_schema s ON s.schema_id = t.schema_id "
        "WHERE s.schema_name = 'main' AND t.end_snapshot IS NULL AND s.end_snapshot IS NULL "
        "AND list_contains(?::VARCHAR[], t.table_name) "
        f"AND NOT EXISTS (SELECT 1 FROM {meta}.ducklake_table_stats st WHERE st.table_id = t.table_id)",
        [list(tables)]).fetchall()}
    return [table for table in tables if table in empty]


@contextmanager
def rows_in_memory(con: duckdb.DuckDBPyConnection, tables: tuple[str, ...] = (), column: str = "run_id",
                   values: list[str] | None = None, *, unwritten: tuple[str, ...] = ()) -> Iterator[None]:
    """Within the block, each of ``tables`` named without its database on ``con`` is an in-memory copy of the
    warehouse table's rows whose ``column`` is one of ``values`` (a DuckDB temporary table of the same name: the
    temporary schema comes first in DuckDB's search path), read in one query each, in ``con``'s transaction and
    snapshot; and each of ``unwritten`` that never held a row (:func:`never_written`) an empty copy, made without
    reading the table; all dropped at the end (and by the transaction's rollback). For a unit of work that reads the
    same rows of a table in several queries, every one of them restricted to those values: on DuckLake each query
    of a table costs ~6-20 CPU ms of catalog work (its files, their statistics, its inlined rows, read again from
    the catalog whatever the query returns), a query of the copy ~1 (bench/RESULTS.md, issue 24)."""
    row = con.execute("SELECT current_database()").fetchone()
    assert row is not None
    database, made = row[0], []
    try:
        for table in never_written(con, tuple(t for t in unwritten if t not in tables)):
            con.execute(f'CREATE TEMPORARY TABLE "{table}" AS SELECT * FROM "{database}".main."{table}" LIMIT 0')
            made.append(table)
        for table in tables:
            con.execute(f'CREATE TEMPORARY TABLE "{table}" AS SELECT * FROM "{database}".main."{table}" '
                        f'WHERE "{column}" = ANY(?::VARCHAR[])', [values or []])
            made.append(table)
        yield
    finally:
        for table in made:
            try:
                con.execute(f'DROP TABLE IF EXISTS temp.main."{table}"')
            except duckdb.Error:  # a failed query ended the transaction: its rollback dropped them
                pass


@contextmanager
def duckdb_threads(count: int) -> Iterator[None]:
    """DuckDB's threads of this process's warehouse instance set to ``count`` for the block, then back to what they
    were (a global setting of the instance: every unit of the process sees it). For a process whose concurrency is
    its own threads, as the static export's: its small queries cost about half the CPU on one DuckDB thread each
    (bench/RESULTS.md, "The export's CPU per run")."""
    with connect() as con:
        row = con.execute("SELECT current_setting('threads')").fetchone()
        before = int(row[0]) if row else 0
        con.execute(f"SET threads = {int(count)}")
    try:
        yield
    finally:
        if before:
            with connect() as con:
                con.execute(f"SET threads = {before}")


@contextmanager
def transaction() -> Iterator[duckdb.DuckDBPyConnection]:
    """A connection inside BEGIN ... COMMIT; any exception rolls everything back and propagates.

    Not retried by itself: use ``run_in_transaction`` (or call it inside a ``@retrying`` function). After the
    COMMIT, the warehouse version is bumped (``ptbsite.warehouse.version``), so that pages cached by every process
    are recomputed: this is the one path every write takes (ingest, ``import_published``, evaluations, overrides,
    judge re-runs). On a SQLite catalog it holds the one-writer lock from BEGIN to COMMIT (``writers``).

    Raises:
        WarehouseUnavailable: another writer held the one-writer lock through every retry.
    """
    with connect() as con, writers.one_writer(warehouse_spec()):
        con.execute("BEGIN TRANSACTION")
        try:
            yield con
        except BaseException:
            connections.rollback(con)
            raise
        try:
            con.execute("COMMIT")
        except BaseException:
            connections.rollback(con)
            raise
    version.bump()


def run_in_transaction(work: Callable[[duckdb.DuckDBPyConnection], T]) -> T:
    """Run ``work(con)`` inside one transaction and return its result; on a lock or commit conflict the
    transaction is rolled back and ``work`` runs again from the start, so it must only write through ``con``.

    Raises:
        WarehouseUnavailable: retries exhausted (nothing of ``work`` is stored).
        duckdb.Error and whatever ``work`` raises: rolled back, not retried.
    """

    def unit() -> T:
        with transaction() as con:
            return work(con)

    return with_retries(unit)
