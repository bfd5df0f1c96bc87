"""The one place that opens the warehouse (DuckDB), applies its schema migrations and retries on a lock.

Runs, scores, trace steps and verdicts live here, reached only from the apps' selectors and services.
Connections are short-lived: DuckDB lets one process at a time hold a database file (a second one gets
``IOException: Could not set lock on file``), so every unit of work opens, works and closes, and a lock
conflict is retried with exponential backoff (DESIGN.md, "Decisions").

Schema migrations are the numbered ``*.sql`` files in ``ptbsite/warehouse_sql/`` (``0001_name.sql``), applied
in order, each once, recorded in ``schema_migrations``. Every statement must run on a plain DuckDB file and on a
DuckLake catalog alike: no PRIMARY KEY, UNIQUE, FOREIGN KEY, CHECK or indexes; uniqueness is the services' job.
"""
from __future__ import annotations

import logging
import random
import re
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import duckdb
from django.conf import settings

log = logging.getLogger(__name__)

SQL_DIR = Path(__file__).resolve().parent / "warehouse_sql"
_MIGRATION_NAME = re.compile(r"^(\d{4})_[a-z0-9_]+\.sql$")
_RETRY_MARKERS = ("Could not set lock", "database is locked", "Conflict", "conflict")

_migrated: set[str] = set()
_migrate_lock = threading.Lock()


class WarehouseUnavailable(RuntimeError):
    """The warehouse could not be opened after all retries (locked by another process, or unreachable)."""


def warehouse_spec() -> str:
    """The configured warehouse: a DuckDB file path (settings.PTB_WAREHOUSE, env ``PTB_WAREHOUSE``)."""
    return str(settings.PTB_WAREHOUSE)


def _open(spec: str) -> duckdb.DuckDBPyConnection:
    # Always read-write: DuckDB refuses a read-only and a read-write connection to one file in one process.
    if spec != ":memory:":
        Path(spec).parent.mkdir(parents=True, exist_ok=True)
    return duckdb.connect(spec)


def _is_retryable(exc: Exception) -> bool:
    return any(marker in str(exc) for marker in _RETRY_MARKERS)


@contextmanager
def connect(*, attempts: int = 12) -> Iterator[duckdb.DuckDBPyConnection]:
    """Open the warehouse for one unit of work and close it afterwards.

    Yields a ``duckdb.DuckDBPyConnection`` with the schema migrated. A lock held by another process is
    retried ``attempts`` times with exponential backoff from 20 ms, capped at 1 s (about 8 s in all).

    Raises:
        WarehouseUnavailable: the file stayed locked (or unreachable) through every attempt.
    """
    spec = warehouse_spec()
    delay = 0.02
    for attempt in range(attempts):
        try:
            con = _open(spec)
            break
        except (duckdb.IOException, duckdb.TransactionException) as exc:
            if not _is_retryable(exc) or attempt == attempts - 1:
                raise WarehouseUnavailable(f"warehouse {spec} unavailable: {exc}") from exc
            time.sleep(delay * (1 + random.random()))
            delay = min(delay * 2, 1.0)
    try:
        if spec not in _migrated:
            migrate(con)
        yield con
    finally:
        con.close()


@contextmanager
def transaction() -> Iterator[duckdb.DuckDBPyConnection]:
    """A connection inside BEGIN ... COMMIT; any exception rolls everything back and propagates."""
    with connect() as con:
        con.execute("BEGIN TRANSACTION")
        try:
            yield con
        except BaseException:
            con.execute("ROLLBACK")
            raise
        con.execute("COMMIT")


def migration_files() -> list[tuple[int, str, Path]]:
    """The migrations on disk as (version, name, path), sorted by version."""
    found = []
    for path in sorted(SQL_DIR.glob("*.sql")):
        match = _MIGRATION_NAME.match(path.name)
        if not match:
            raise ValueError(f"{path}: migration file names look like 0001_some_name.sql")
        found.append((int(match.group(1)), path.stem, path))
    return found


def migrate(con: duckdb.DuckDBPyConnection) -> list[str]:
    """Apply every migration not yet recorded, each in its own transaction; return the names applied."""
    with _migrate_lock:
        con.execute(
            "CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER NOT NULL, name VARCHAR NOT NULL, "
            "applied_at TIMESTAMP NOT NULL)"
        )
        done = {row[0] for row in con.execute("SELECT version FROM schema_migrations").fetchall()}
        applied = []
        for version, name, path in migration_files():
            if version in done:
                continue
            con.execute("BEGIN TRANSACTION")
            try:
                for statement in _statements(path.read_text()):
                    con.execute(statement)
                con.execute(
                    "INSERT INTO schema_migrations VALUES (?, ?, now()::TIMESTAMP)", [version, name]
                )
            except BaseException:
                con.execute("ROLLBACK")
                raise
            con.execute("COMMIT")
            applied.append(name)
            log.info("warehouse: applied migration %s", name)
        _migrated.add(warehouse_spec())
        return applied


def _statements(sql: str) -> list[str]:
    # Migrations hold plain DDL without semicolons inside strings or comments, so a split on ';' is exact.
    lines = [line.split("--", 1)[0] for line in sql.splitlines()]
    return [s.strip() for s in "\n".join(lines).split(";") if s.strip()]


def reset_migration_cache() -> None:
    """Forget which warehouses this process has migrated (tests switch PTB_WAREHOUSE between files)."""
    _migrated.clear()
