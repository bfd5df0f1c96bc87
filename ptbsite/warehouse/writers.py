"""One writer at a time on a DuckLake whose catalog is a SQLite file: every write (a unit's transaction, a
migration, a compaction step) holds an exclusive lock on ``<catalog>.writer-lock`` beside the catalog, across the
processes and threads of the machine, from its BEGIN to its COMMIT.

Why: DuckLake's transaction keeps its SQLite read snapshot from BEGIN to COMMIT, so its commit fails ("Failed to
flush changes into DuckLake: database is locked", SQLite's busy-snapshot error, which no busy timeout waits out)
whenever any other writer committed in between, even to other tables (checked on DuckLake 1.5.5 in WAL mode: a
2 s transaction and a 0.1 s one started 0.5 s after it). Without the lock such writers redo their whole unit
until one gets a quiet window: a long unit (an ingest batch on a loaded machine) kept losing to a stream of short
ones and gave up after ``PTB_WAREHOUSE_RETRY_SECONDS`` (CI, tests/test_serve_concurrency.py). SQLite takes one
writer at a time anyway, so queueing them costs no throughput and saves the redone work.

A PostgreSQL catalog or a plain DuckDB file is not locked here: the first is shared by machines a file lock cannot
reach (its conflicts are retried, ``retry``), the second takes DuckDB's own lock of the file.

The lock is `filelock <https://py-filelock.readthedocs.io>`_'s ``FileLock`` (``flock(2)`` on Linux: released by
the kernel when a holder dies), re-entrant per thread (a migration inside a unit's ``connect`` takes it again).
"""
from __future__ import annotations

import os
import threading
from collections.abc import Iterator
from contextlib import contextmanager

from django.conf import settings
from filelock import FileLock, Timeout

from .retry import WarehouseUnavailable
from .spec import describe, parse_spec

# Seconds between two tries of a waiting writer: short, so that it takes the lock in the gap between two units
# of a writer that writes back to back (an ingest).
POLL_SECONDS = 0.005

_locks: dict[tuple[str, int], FileLock] = {}
_locks_lock = threading.Lock()


def lock_path(text: str) -> str | None:
    """The lock file of the warehouse ``text`` (a ``PTB_WAREHOUSE`` value): ``<catalog>.writer-lock`` for a
    DuckLake with a SQLite catalog, None for the kinds not locked here (module doc)."""
    spec = parse_spec(text)
    return f"{spec.catalog}.writer-lock" if spec.kind == "ducklake-sqlite" else None


@contextmanager
def one_writer(text: str) -> Iterator[None]:
    """Hold the writer lock of the warehouse ``text`` for the block (nothing for the kinds not locked).

    Waits up to ``settings.PTB_WAREHOUSE_RETRY_SECONDS`` for the writer before it, trying every ``POLL_SECONDS``.

    Raises:
        WarehouseUnavailable: another writer held the lock all that time (its file is named).
    """
    path = lock_path(text)
    if path is None:
        yield
        return
    key = (path, os.getpid())  # after a fork, the child's lock is its own
    with _locks_lock:
        lock = _locks.get(key)
        if lock is None:
            lock = _locks[key] = FileLock(path, preserve_lock_file=True)
    waited = float(settings.PTB_WAREHOUSE_RETRY_SECONDS)
    try:
        lock.acquire(timeout=waited, poll_interval=POLL_SECONDS)
    except Timeout as exc:
        raise WarehouseUnavailable(
            f"The warehouse ({describe(text)}) is unavailable: another writer held {path} for {waited:g} s."
        ) from exc
    try:
        yield
    finally:
        lock.release()
