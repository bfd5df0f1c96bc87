"""The one place that opens the warehouse, applies its schema migrations and retries on locks and conflicts.

Runs, scores, trace steps and verdicts live here, reached only from the apps' selectors and services.

The warehouse setting (``settings.PTB_WAREHOUSE``, env ``PTB_WAREHOUSE``) names one of three kinds:

- a plain DuckDB file, e.g. ``data/warehouse.duckdb`` (any value not starting with ``ducklake:``). One process
  at a time may hold it (a second one gets ``IOException: Could not set lock on file``): tests, notebooks,
  the static export, ``runserver``. Every unit of work opens the file and closes it again, so two low-rate
  processes take turns.
- ``ducklake:sqlite:<catalog path>?data=<folder>``: DuckLake with its catalog in a SQLite file and the data as
  Parquet files in a local folder, e.g. ``ducklake:sqlite:data/ducklake/catalog.sqlite?data=data/ducklake/data``.
  Several processes may read and write at once; no service needed (the embedded default).
- ``ducklake:postgres:<libpq conninfo or URL>?data=<folder>``: DuckLake with its catalog in PostgreSQL, e.g.
  ``ducklake:postgres:dbname=ptb host=127.0.0.1 user=postgres?data=/srv/ptb/lake`` (production).

The text after the last ``?data=`` is the data folder (relative paths are taken from the working directory).

A DuckLake warehouse is one in-memory DuckDB per process with the DuckLake extension loaded (offline, from the
``duckdb-extension-*`` packages) and the catalog attached as ``wh``; each unit of work gets its own cursor on it.

Retries (DESIGN.md, "Decisions"): a unit of work is a whole function, a selector (``@retrying``) or a service's
writes (``run_in_transaction``); when it fails on a lock or a commit conflict ("Could not set lock", "database
is locked", "Transaction conflict", a failed DuckLake commit) the whole unit runs again, with exponential backoff
from 20 ms capped at 1 s, until ``settings.PTB_WAREHOUSE_RETRY_SECONDS`` (default 10 s) have passed. An
unreachable catalog is retried ``UNREACHABLE_ATTEMPTS`` times only: a server that is down does not come back
within a request. Either then raises ``WarehouseUnavailable``, which pages and the API answer with 503.

Schema migrations are the numbered ``*.sql`` files in ``ptbsite/warehouse_sql/`` (``0001_name.sql``), applied
in order, each once, recorded in ``schema_migrations``. Every statement must run on a plain DuckDB file and on a
DuckLake catalog alike: no PRIMARY KEY, UNIQUE, FOREIGN KEY, CHECK or indexes; uniqueness is the services' job.
"""
from __future__ import annotations

import importlib
import logging
import os
import random
import re
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import closing, contextmanager
from dataclasses import dataclass
from functools import wraps
from pathlib import Path
from typing import TypeVar

import duckdb
from django.conf import settings

log = logging.getLogger(__name__)

T = TypeVar("T")

SQL_DIR = Path(__file__).resolve().parent / "warehouse_sql"
_MIGRATION_NAME = re.compile(r"^(\d{4})_[a-z0-9_]+\.sql$")
# Lower-cased fragments of DuckDB / DuckLake / SQLite errors that clear when the other writer is done.
_CONFLICT_MARKERS = ("could not set lock", "database is locked", "conflict", "failed to commit ducklake transaction")
# ... and of errors that mean the catalog's server cannot be reached.
_UNREACHABLE_MARKERS = ("unable to connect", "connection refused", "could not connect", "server closed the connection",
                        "no connection to the server", "terminating connection", "connection to server")
UNREACHABLE_ATTEMPTS = 3
ALIAS = "wh"

_migrated: set[str] = set()
_migrate_lock = threading.Lock()
_instances: dict[tuple[str, int], duckdb.DuckDBPyConnection] = {}
_instances_lock = threading.Lock()
_scope = threading.local()


class WarehouseUnavailable(RuntimeError):
    """The warehouse stayed locked, conflicted or unreachable through every retry; pages answer 503."""


@dataclass(frozen=True)
class WarehouseSpec:
    """A parsed ``PTB_WAREHOUSE``: ``kind`` is ``file``, ``ducklake-sqlite`` or ``ducklake-postgres``;
    ``catalog`` the DuckDB file, the SQLite catalog file or the PostgreSQL conninfo; ``data`` the DuckLake data
    folder (None for a plain file)."""

    kind: str
    catalog: str
    data: str | None = None

    @property
    def is_ducklake(self) -> bool:
        return self.kind != "file"


def parse_spec(text: str) -> WarehouseSpec:
    """Parse a warehouse setting (syntax in the module docstring).

    Raises:
        ValueError: a ``ducklake:`` value with another catalog than sqlite/postgres, or without ``?data=``.
    """
    if not text.startswith("ducklake:"):
        return WarehouseSpec("file", text)
    rest = text[len("ducklake:"):]
    catalog_kind, _, rest = rest.partition(":")
    if catalog_kind not in ("sqlite", "postgres"):
        raise ValueError(f"PTB_WAREHOUSE {text!r}: use ducklake:sqlite:<file>?data=<folder> or "
                         "ducklake:postgres:<conninfo>?data=<folder>")
    catalog, marker, data = rest.rpartition("?data=")
    if not marker or not catalog or not data:
        raise ValueError(f"PTB_WAREHOUSE {text!r}: a DuckLake warehouse needs its data folder, ...?data=<folder>")
    if catalog_kind == "sqlite":
        catalog = str(Path(catalog).resolve())
    return WarehouseSpec(f"ducklake-{catalog_kind}", catalog, str(Path(data).resolve()))


def warehouse_spec() -> str:
    """The configured warehouse setting, as text (settings.PTB_WAREHOUSE, env ``PTB_WAREHOUSE``)."""
    return str(settings.PTB_WAREHOUSE)


def describe(text: str | None = None) -> str:
    """The warehouse for messages: kind and location, without a PostgreSQL password."""
    spec = parse_spec(text or warehouse_spec())
    catalog = re.sub(r"(password=)\S+|(://[^:/@]+:)[^@]+@", lambda m: (m[1] or m[2]) + "***" + ("" if m[1] else "@"),
                     spec.catalog)
    return f"{spec.kind} {catalog}" + (f" (data {spec.data})" if spec.data else "")


def _quote(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def _load_extension(con: duckdb.DuckDBPyConnection, name: str) -> None:
    # The duckdb-extension-<name> packages carry the binaries, so nothing is downloaded (DESIGN.md).
    try:
        package = importlib.import_module(f"duckdb_extension_{name}")
    except ImportError:
        con.execute(f"LOAD {name}")
        return
    version = duckdb.__version__ if duckdb.__version__.startswith("v") else f"v{duckdb.__version__}"
    con.execute(f"LOAD {_quote(str(Path(package.__file__).parent / 'extensions' / version / f'{name}.duckdb_extension'))}")


def _sqlite_wal(path: str) -> None:
    """Put the SQLite catalog in write-ahead-log mode (kept in the file): readers then never block the writer's
    commit. In SQLite's default rollback journal, web processes reading all the time starved the ingest's
    commits ("database is locked" through 10 s of retries, with 3 workers reading)."""
    with closing(sqlite3.connect(path, timeout=10)) as con:
        if con.execute("PRAGMA journal_mode").fetchone()[0] != "wal":
            con.execute("PRAGMA journal_mode=WAL")


def _attach(spec: WarehouseSpec) -> duckdb.DuckDBPyConnection:
    """A new in-memory DuckDB with the DuckLake catalog attached as ``wh``."""
    if spec.kind == "ducklake-sqlite":
        Path(spec.catalog).parent.mkdir(parents=True, exist_ok=True)
        _sqlite_wal(spec.catalog)
    Path(spec.data).mkdir(parents=True, exist_ok=True)
    con = duckdb.connect(config={"autoinstall_known_extensions": False, "autoload_known_extensions": False})
    try:
        _load_extension(con, "ducklake")
        _load_extension(con, "sqlite_scanner" if spec.kind == "ducklake-sqlite" else "postgres_scanner")
        source = ("ducklake:sqlite:" if spec.kind == "ducklake-sqlite" else "ducklake:postgres:") + spec.catalog
        con.execute(f"ATTACH {_quote(source)} AS {ALIAS} (DATA_PATH {_quote(spec.data.rstrip('/') + '/')})")
    except BaseException:
        con.close()
        raise
    return con


def _ducklake_cursor(text: str, spec: WarehouseSpec) -> duckdb.DuckDBPyConnection:
    # One attached instance per process (after a fork, the child attaches its own), a cursor per unit of work.
    key = (text, os.getpid())
    with _instances_lock:
        instance = _instances.get(key)
        if instance is None:
            instance = _instances[key] = _attach(spec)
        cursor = instance.cursor()
    cursor.execute(f"USE {ALIAS}")
    return cursor


def _forget_instance(text: str) -> None:
    """Drop this process's attached instance (after the catalog became unreachable); the next unit reattaches."""
    with _instances_lock:
        instance = _instances.pop((text, os.getpid()), None)
    if instance is not None:
        try:
            instance.close()
        except duckdb.Error:
            pass


def close_connections() -> None:
    """Close every DuckLake instance this process holds (tests, before dropping a catalog database)."""
    for key in [k for k in _instances if k[1] == os.getpid()]:
        _forget_instance(key[0])


def _open(text: str) -> duckdb.DuckDBPyConnection:
    spec = parse_spec(text)
    if spec.is_ducklake:
        return _ducklake_cursor(text, spec)
    # Always read-write: DuckDB refuses a read-only and a read-write connection to one file in one process.
    if text != ":memory:":
        Path(text).parent.mkdir(parents=True, exist_ok=True)
    return duckdb.connect(text)


def _classify(exc: BaseException) -> str | None:
    """``conflict`` (a lock or commit conflict: retry), ``unreachable`` (the catalog's server) or None."""
    if not isinstance(exc, duckdb.Error):
        return None
    text = str(exc).lower()
    if any(marker in text for marker in _UNREACHABLE_MARKERS):
        return "unreachable"
    if any(marker in text for marker in _CONFLICT_MARKERS):
        return "conflict"
    return None


def _with_retries(work: Callable[[], T]) -> T:
    """Run ``work`` as one unit, again from the start on a lock, conflict or unreachable catalog (module doc).

    Nested units (a selector calling another) run once inside the outermost unit's retries.

    Raises:
        WarehouseUnavailable: retries exhausted; the last error is its ``__cause__``.
    """
    if getattr(_scope, "active", False):
        return work()
    _scope.active = True
    try:
        text = warehouse_spec()
        deadline = time.monotonic() + settings.PTB_WAREHOUSE_RETRY_SECONDS
        delay, unreachable = 0.02, 0
        while True:
            try:
                return work()
            except duckdb.Error as exc:
                kind = _classify(exc)
                if kind is None:
                    raise
                if kind == "unreachable":
                    _forget_instance(text)
                    unreachable += 1
                wait = delay * (1 + random.random())
                if unreachable >= UNREACHABLE_ATTEMPTS or time.monotonic() + wait > deadline:
                    reason = "its catalog is unreachable" if kind == "unreachable" else "it stayed locked"
                    raise WarehouseUnavailable(
                        f"The warehouse ({describe(text)}) is unavailable: {reason}. {str(exc).splitlines()[0]}"
                    ) from exc
                log.info("warehouse: %s, retrying in %.0f ms: %s", kind, 1000 * wait, str(exc).splitlines()[0])
                time.sleep(wait)
                delay = min(delay * 2, 1.0)
    finally:
        _scope.active = False


def retrying(function: Callable[..., T]) -> Callable[..., T]:
    """Decorator for a read (a selector): the whole function is one unit of work, retried as ``_with_retries``."""

    @wraps(function)
    def wrapper(*args, **kwargs) -> T:
        return _with_retries(lambda: function(*args, **kwargs))

    return wrapper


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
        con = _open(text)
        try:
            if text not in _migrated:
                migrate(con)
        except BaseException:
            con.close()
            raise
        return con

    con = _with_retries(open_migrated)
    try:
        yield con
    finally:
        con.close()


@contextmanager
def transaction() -> Iterator[duckdb.DuckDBPyConnection]:
    """A connection inside BEGIN ... COMMIT; any exception rolls everything back and propagates.

    Not retried by itself: use ``run_in_transaction`` (or call it inside a ``@retrying`` function).
    """
    with connect() as con:
        con.execute("BEGIN TRANSACTION")
        try:
            yield con
        except BaseException:
            _rollback(con)
            raise
        try:
            con.execute("COMMIT")
        except BaseException:
            _rollback(con)
            raise


def _rollback(con: duckdb.DuckDBPyConnection) -> None:
    try:
        con.execute("ROLLBACK")
    except duckdb.Error:
        pass  # a failed COMMIT has already ended the transaction


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

    return _with_retries(unit)


def insert_rows(con: duckdb.DuckDBPyConnection, table: str, rows: list[tuple], *, columns: str = "",
                chunk: int = 500) -> None:
    """Insert ``rows`` (tuples in the table's column order, or ``columns``' order) with one multi-row VALUES
    statement per ``chunk`` rows: on DuckLake each statement costs a round of catalog work, so ``executemany``
    (one statement per row) is slow there."""
    for start in range(0, len(rows), chunk):
        part = rows[start:start + chunk]
        marks = ", ".join("(" + ", ".join("?" * len(row)) + ")" for row in part)
        con.execute(f"INSERT INTO {table} {f'({columns}) ' if columns else ''}VALUES {marks}",
                    [value for row in part for value in row])


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
    """Apply every migration not yet recorded, each in its own transaction; return the names applied.

    Two processes migrating one DuckLake at once: the second one's commit conflicts, and its unit of work is
    retried, finding the migration recorded.
    """
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
                con.execute("COMMIT")
            except BaseException:
                _rollback(con)
                raise
            applied.append(name)
            log.info("warehouse: applied migration %s", name)
        _migrated.add(warehouse_spec())
        return applied


def migrate_now() -> list[str]:
    """Migrate the configured warehouse (``serve`` does this once before starting its workers)."""
    text = warehouse_spec()

    def unit() -> list[str]:
        con = _open(text)
        try:
            return migrate(con)
        finally:
            con.close()

    return _with_retries(unit)


def _statements(sql: str) -> list[str]:
    # Migrations hold plain DDL without semicolons inside strings or comments, so a split on ';' is exact.
    lines = [line.split("--", 1)[0] for line in sql.splitlines()]
    return [s.strip() for s in "\n".join(lines).split(";") if s.strip()]


def reset_migration_cache() -> None:
    """Forget which warehouses this process has migrated (tests switch PTB_WAREHOUSE between files)."""
    _migrated.clear()


@contextmanager
def hold_open() -> Iterator[None]:
    """Hold a plain-file warehouse open for a while (one web request, one ingest), so that the units of work
    inside reuse the open database (DuckDB shares one instance per file within a process) instead of opening the
    file again and checkpointing it on close, 15-40 ms each. A file that cannot be opened right now (another
    process holds it) is not held: each unit then retries on its own. DuckLake warehouses already keep one
    attached catalog per process."""
    text = warehouse_spec()
    if parse_spec(text).is_ducklake:
        yield
        return
    try:
        con = _open(text)
    except duckdb.Error:
        yield
        return
    try:
        yield
    finally:
        con.close()


class RequestScopeMiddleware:
    """Django middleware: every request runs inside :func:`hold_open`."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        with hold_open():
            return self.get_response(request)
