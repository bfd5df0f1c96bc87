"""Units of work: :func:`connect` (one connection, schema migrated), :func:`transaction` (BEGIN ... COMMIT) and
:func:`run_in_transaction` (a transaction retried as a whole on a lock or commit conflict)."""
from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TypeVar

import duckdb

from . import connections, migrations, version
from .retry import with_retries
from .spec import warehouse_spec

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
    judge re-runs).
    """
    with connect() as con:
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
