"""Opening the warehouse: one in-memory DuckDB per process, each unit of work getting its own cursor on it. A
DuckLake warehouse: the DuckLake extension loaded (offline, from the ``duckdb-extension-*`` packages) and the
catalog attached as ``wh`` for the life of the process. A plain DuckDB file: attached while some unit of this
process uses it (:func:`_file_cursor`), detached, and so unlocked for other processes, when the last one closes
(:func:`close`)."""
from __future__ import annotations

import hashlib
import importlib
import os
import sqlite3
import threading
from collections.abc import Iterator
from contextlib import closing, contextmanager
from pathlib import Path

import duckdb
from django.conf import settings

from .spec import WarehouseSpec, parse_spec, warehouse_spec

ALIAS = "wh"

_instances: dict[tuple[str, int], duckdb.DuckDBPyConnection] = {}
_instances_lock = threading.Lock()
# Plain files: the process's in-memory instance they are attached to (by pid), and per (file, pid) the units of
# work using it now (the file is attached while there is one).
_file_instances: dict[int, duckdb.DuckDBPyConnection] = {}
_file_users: dict[tuple[str, int], int] = {}


def _quote(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def _load_extension(con: duckdb.DuckDBPyConnection, name: str) -> None:
    # The duckdb-extension-<name> packages carry the binaries, so nothing is downloaded (requirements.txt).
    try:
        package = importlib.import_module(f"duckdb_extension_{name}")
    except ImportError:
        con.execute(f"LOAD {name}")
        return
    version = duckdb.__version__ if duckdb.__version__.startswith("v") else f"v{duckdb.__version__}"
    assert package.__file__ is not None
    con.execute(f"LOAD {_quote(str(Path(package.__file__).parent / 'extensions' / version / f'{name}.duckdb_extension'))}")


def _sqlite_wal(path: str) -> None:
    """Put the SQLite catalog in write-ahead-log mode (kept in the file): readers then never block the writer's
    commit. In SQLite's default rollback journal, web processes reading all the time starved the ingest's
    commits ("database is locked" through 10 s of retries, with 3 workers reading)."""
    with closing(sqlite3.connect(path, timeout=10)) as con:
        if con.execute("PRAGMA journal_mode").fetchone()[0] != "wal":
            con.execute("PRAGMA journal_mode=WAL")


def _object_storage_secret(con: duckdb.DuckDBPyConnection) -> None:
    """Load httpfs and give this DuckDB instance the S3 credentials and endpoint of the ``PTB_S3_*`` and ``AWS_*``
    settings as a temporary secret (in memory only, never in a file or a log). Without a key id, DuckDB's default
    (anonymous) access is used: a public bucket can be read, not written."""
    _load_extension(con, "httpfs")
    options = {"REGION": settings.PTB_S3_REGION, "URL_STYLE": settings.PTB_S3_URL_STYLE}
    if settings.PTB_S3_ENDPOINT:
        options["ENDPOINT"] = settings.PTB_S3_ENDPOINT
    if settings.AWS_ACCESS_KEY_ID:
        options["KEY_ID"] = settings.AWS_ACCESS_KEY_ID
        options["SECRET"] = settings.AWS_SECRET_ACCESS_KEY
    if settings.AWS_SESSION_TOKEN:
        options["SESSION_TOKEN"] = settings.AWS_SESSION_TOKEN
    fields = ", ".join(f"{name} {_quote(value)}" for name, value in options.items())
    con.execute(f"CREATE OR REPLACE TEMPORARY SECRET ptb_s3 (TYPE s3, {fields}, "
                f"USE_SSL {'true' if settings.PTB_S3_USE_SSL else 'false'})")


def _configure(con: duckdb.DuckDBPyConnection) -> None:
    """Apply the process-wide DuckDB settings to a new instance: its threads (``PTB_DUCKDB_THREADS``; 0 leaves
    DuckDB's one per core) and whether its allocator returns freed pages to the system from a background thread
    (``PTB_DUCKDB_ALLOCATOR_BACKGROUND_THREADS``, DuckDB's ``allocator_background_threads``: without it, the jemalloc
    built into DuckDB's package keeps what queries freed, 10-50 MB per web process after every page once at K=90,
    until that thread allocates again; bench/RESULTS.md, issue 24)."""
    if settings.PTB_DUCKDB_THREADS:
        con.execute(f"SET threads = {int(settings.PTB_DUCKDB_THREADS)}")
    if settings.PTB_DUCKDB_ALLOCATOR_BACKGROUND_THREADS:
        con.execute("SET allocator_background_threads = true")


def _attach(spec: WarehouseSpec) -> duckdb.DuckDBPyConnection:
    """A new in-memory DuckDB with the DuckLake catalog attached as ``wh``; its data folder local or in object
    storage (``s3://``, through httpfs: :func:`_object_storage_secret`)."""
    assert spec.data is not None  # a DuckLake spec always names its data folder (parse_spec)
    if spec.kind == "ducklake-sqlite":
        Path(spec.catalog).parent.mkdir(parents=True, exist_ok=True)
        _sqlite_wal(spec.catalog)
    if not spec.data_in_object_storage:
        Path(spec.data).mkdir(parents=True, exist_ok=True)
    con = duckdb.connect(config={"autoinstall_known_extensions": False, "autoload_known_extensions": False})
    try:
        # DuckLake's Parquet files never change once written (new data is new files), so their footers may be
        # kept in memory; and a server's concurrency is its requests, not DuckDB's threads (PTB_DUCKDB_THREADS,
        # which `serve` sets to 1 for its workers: a run page 2-4x faster there, bench/RESULTS.md).
        con.execute("SET parquet_metadata_cache = true")
        if not spec.data_in_object_storage:
            # DuckDB's external file cache keeps the bytes it read of data files in its own memory; a local folder's
            # files are in the system's page cache already, so it only doubled them: 1.5 MB per web process after
            # every page once at K=90, no CPU difference (bench/web_memory.py, bench/RESULTS.md, issue 24). Kept
            # for object storage, where it saves a request per read.
            con.execute("SET enable_external_file_cache = false")
        _configure(con)
        if spec.data_in_object_storage:
            _object_storage_secret(con)
        _load_extension(con, "ducklake")
        _load_extension(con, "sqlite_scanner" if spec.kind == "ducklake-sqlite" else "postgres_scanner")
        source = ("ducklake:sqlite:" if spec.kind == "ducklake-sqlite" else "ducklake:postgres:") + spec.catalog
        con.execute(f"ATTACH {_quote(source)} AS {ALIAS} (DATA_PATH {_quote(spec.data.rstrip('/') + '/')})")
    except BaseException:
        con.close()
        raise
    return con


def _ducklake_cursor(text: str, spec: WarehouseSpec) -> duckdb.DuckDBPyConnection:
    # One attached instance per process (after a fork, the child attaches its own), a cursor per unit of work
    # (while cursors are held, one a unit left idle: hold_cursors).
    key = (text, os.getpid())
    with _instances_lock:
        idle = _idle_cursors.get(key)
        if _cursor_holders and idle:
            return idle.pop()
        instance = _instances.get(key)
        if instance is None:
            instance = _instances[key] = _attach(spec)
        cursor = instance.cursor()
    cursor.execute(f"USE {ALIAS}")
    return cursor


# While some block of this process holds cursors (hold_cursors): per DuckLake instance, the cursors units of work
# released cleanly (no transaction left open), for the next units to take instead of opening new ones.
_idle_cursors: dict[tuple[str, int], list[duckdb.DuckDBPyConnection]] = {}
_cursor_holders = 0


@contextmanager
def hold_cursors() -> Iterator[None]:
    """Within the block, a DuckLake unit of work reuses a cursor an earlier unit of this process released instead
    of opening one (a new cursor's ``USE wh`` costs ~8 CPU ms on DuckLake, more than many of the static export's
    queries: it runs ~10 units per run); the cursors are closed when the last such block ends. For a process that
    owns its warehouse instance, as the export's: a cursor keeps nothing of a unit but ``USE wh`` (released only
    when its unit ended without an error, so with no transaction open)."""
    global _cursor_holders
    with _instances_lock:
        _cursor_holders += 1
    try:
        yield
    finally:
        with _instances_lock:
            _cursor_holders -= 1
            idle = [c for cursors in _idle_cursors.values() for c in cursors] if not _cursor_holders else []
            if not _cursor_holders:
                _idle_cursors.clear()
        for cursor in idle:
            cursor.close()


def forget_instance(text: str) -> None:
    """Drop this process's attached instance (after the catalog became unreachable); the next unit reattaches."""
    with _instances_lock:
        instance = _instances.pop((text, os.getpid()), None)
        idle = _idle_cursors.pop((text, os.getpid()), [])
    for cursor in idle:
        cursor.close()
    if instance is not None:
        try:
            instance.close()
        except duckdb.Error:
            pass


def close_connections() -> None:
    """Close every DuckLake instance this process holds (tests, before dropping a catalog database)."""
    for key in [k for k in _instances if k[1] == os.getpid()]:
        forget_instance(key[0])


def _file_alias(path: str) -> str:
    """The name a plain file is attached under: one per file, as a process may use several (tests)."""
    return "wh_" + hashlib.sha256(path.encode()).hexdigest()[:16]


def _file_cursor(path: str) -> duckdb.DuckDBPyConnection:
    """A cursor on the plain DuckDB file ``path`` (absolute), attached to this process's in-memory instance
    unless some unit of this process has it already; the caller releases it with :func:`close`.

    Why not ``duckdb.connect(path)`` per unit: a new DuckDB instance per request (its thread pool, its memory)
    cost a web request 7 ms of CPU to open and made its first queries 2-3x slower than the same queries on a
    file attached to an instance that lives on (on the K=90 tree: ``bench/search_all.py``, bench/RESULTS.md).
    The file is still detached when no unit uses it, so that another process (an ingest) can open it, as before.
    Raises duckdb.Error (the file is locked by another process: the caller retries)."""
    key = (path, os.getpid())
    alias = _file_alias(path)
    with _instances_lock:
        instance = _file_instances.get(key[1])
        if instance is None:
            instance = _file_instances[key[1]] = duckdb.connect(":memory:")
            _configure(instance)  # as the DuckLake instance (_attach)
        if not _file_users.get(key):
            Path(path).parent.mkdir(parents=True, exist_ok=True)
            instance.execute(f"ATTACH {_quote(path)} AS {alias}")
        _file_users[key] = _file_users.get(key, 0) + 1
        cursor = instance.cursor()
    try:
        cursor.execute(f"USE {alias}")
    except BaseException:
        _release_file(path, cursor)
        raise
    return cursor


def _release_file(path: str, con: duckdb.DuckDBPyConnection) -> None:
    """Close a cursor of :func:`_file_cursor`; the last unit of the process using the file detaches it (DuckDB
    checkpoints it then, as on closing a connection)."""
    key = (path, os.getpid())
    with _instances_lock:
        try:
            con.close()
        finally:
            _file_users[key] -= 1
            if not _file_users[key]:
                del _file_users[key]
                _file_instances[key[1]].execute(f"DETACH {_file_alias(path)}")


def _open(text: str) -> duckdb.DuckDBPyConnection:
    """A cursor on the warehouse ``text`` (DuckLake: :func:`_ducklake_cursor`; a plain file: :func:`_file_cursor`;
    ``:memory:``: a new database), to be released with :func:`close`; callers call it as ``connections._open``
    so that a test may configure the engine by patching it here."""
    spec = parse_spec(text)
    if spec.is_ducklake:
        return _ducklake_cursor(text, spec)
    if text == ":memory:":
        return duckdb.connect(text)
    # Always read-write: DuckDB refuses a read-only and a read-write connection to one file in one process.
    return _file_cursor(os.path.abspath(text))


def close(text: str, con: duckdb.DuckDBPyConnection, *, clean: bool = False) -> None:
    """Release a connection :func:`_open` gave for the warehouse ``text``: close it (a DuckLake cursor whose unit
    ended ``clean``, without an error, is kept for the next unit while cursors are held: :func:`hold_cursors`),
    and for a plain file detach the file once no unit of this process uses it."""
    if text == ":memory:":
        con.close()
    elif parse_spec(text).is_ducklake:
        key = (text, os.getpid())
        with _instances_lock:
            if clean and _cursor_holders and key in _instances:
                _idle_cursors.setdefault(key, []).append(con)
                return
        con.close()
    else:
        _release_file(os.path.abspath(text), con)


def rollback(con: duckdb.DuckDBPyConnection) -> None:
    """ROLLBACK, ignoring the error of a transaction a failed COMMIT has already ended."""
    try:
        con.execute("ROLLBACK")
    except duckdb.Error:
        pass


@contextmanager
def hold_open() -> Iterator[None]:
    """Hold a plain-file warehouse open for a while (one web request, one ingest), so that the units of work
    inside reuse the attached file (:func:`_file_cursor`) instead of attaching it again and checkpointing it on
    detach, 15-40 ms each. A file that cannot be opened right now (another
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
        close(text, con)
