"""Schema migrations are the numbered ``*.sql`` files in ``ptbsite/warehouse/sql/`` (``0001_name.sql``), applied
in order, each once, recorded in ``schema_migrations``. Every statement must run on a plain DuckDB file and on a
DuckLake catalog alike: no PRIMARY KEY, UNIQUE, FOREIGN KEY, CHECK or indexes; uniqueness is the services' job.
"""
from __future__ import annotations

import logging
import re
import threading
from pathlib import Path

import duckdb

from . import connections, writers
from . import version as warehouse_version
from .retry import with_retries
from .spec import warehouse_spec

log = logging.getLogger("ptbsite.warehouse")

SQL_DIR = Path(__file__).resolve().parent / "sql"
_MIGRATION_NAME = re.compile(r"^(\d{4})_[a-z0-9_]+\.sql$")

_migrated: set[str] = set()
_migrate_lock = threading.Lock()


def migration_files() -> list[tuple[int, str, Path]]:
    """The migrations on disk as (version, name, path), sorted by version."""
    found = []
    for path in sorted(SQL_DIR.glob("*.sql")):
        match = _MIGRATION_NAME.match(path.name)
        if not match:
            raise ValueError(f"{path}: migration file names look like 0001_some_name.sql")
        found.append((int(match.group(1)), path.stem, path))
    return found


def is_migrated(text: str) -> bool:
    """Whether this process has migrated the warehouse ``text`` already."""
    return text in _migrated


def migrate(con: duckdb.DuckDBPyConnection) -> list[str]:
    """Apply every migration not yet recorded, each in its own transaction; return the names applied.

    Only when some migration is not recorded, it holds the one-writer lock (``writers``: a SQLite catalog); two
    processes migrating one DuckLake at once then apply each migration once. Without that lock (PostgreSQL), the
    second one's commit conflicts and its unit of work is retried, finding the migration recorded.
    """
    with _migrate_lock:
        if _recorded(con) >= {version for version, _, _ in migration_files()}:
            _migrated.add(warehouse_spec())
            return []
        with writers.one_writer(warehouse_spec()):
            applied = _apply(con)
        _migrated.add(warehouse_spec())
        if applied:
            warehouse_version.bump()  # a new schema: pages cached for the old one are recomputed
        return applied


def _recorded(con: duckdb.DuckDBPyConnection) -> set[int]:
    """The migration versions recorded in ``schema_migrations`` (none before the table exists)."""
    try:
        return {row[0] for row in con.execute("SELECT version FROM schema_migrations").fetchall()}
    except duckdb.CatalogException:
        return set()


def _apply(con: duckdb.DuckDBPyConnection) -> list[str]:
    """Apply the migrations not recorded (read again under the writer lock), all of them in one transaction: every
    one or none is recorded. On DuckLake each commit is a round of catalog work: a fresh warehouse's 14
    migrations, committed one by one, cost 3.2 CPU s of its first ingest, in one transaction 0.9
    (bench/RESULTS.md, i24walk)."""
    con.execute(
        "CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER NOT NULL, name VARCHAR NOT NULL, "
        "applied_at TIMESTAMP NOT NULL)"
    )
    done = _recorded(con)
    pending = [(version, name, path) for version, name, path in migration_files() if version not in done]
    if not pending:
        return []
    con.execute("BEGIN TRANSACTION")
    try:
        for version, name, path in pending:
            for statement in _statements(path.read_text()):
                con.execute(statement)
            con.execute("INSERT INTO schema_migrations VALUES (?, ?, now()::TIMESTAMP)", [version, name])
        con.execute("COMMIT")
    except BaseException:
        connections.rollback(con)
        raise
    for _, name, _ in pending:
        log.info("warehouse: applied migration %s", name)
    return [name for _, name, _ in pending]


def migrate_now() -> list[str]:
    """Migrate the configured warehouse (``serve`` does this once before starting its workers)."""
    text = warehouse_spec()

    def unit() -> list[str]:
        con = connections._open(text)
        try:
            return migrate(con)
        finally:
            connections.close(text, con)

    return with_retries(unit)


def _statements(sql: str) -> list[str]:
    # Migrations hold plain DDL without semicolons inside strings or comments, so a split on ';' is exact.
    lines = [line.split("--", 1)[0] for line in sql.splitlines()]
    return [s.strip() for s in "\n".join(lines).split(";") if s.strip()]


def reset_migration_cache() -> None:
    """Forget which warehouses this process has migrated (tests switch PTB_WAREHOUSE between files)."""
    _migrated.clear()
