"""Retries: a unit of work is a whole function, a selector (``@retrying``) or a service's
writes (``run_in_transaction``); when it fails on a lock or a commit conflict ("Could not set lock", "database
is locked", "Transaction conflict", a failed DuckLake commit) the whole unit runs again, with exponential backoff
from 20 ms capped at 1 s, until ``settings.PTB_WAREHOUSE_RETRY_SECONDS`` (default 10 s) have passed. An
unreachable catalog is retried ``UNREACHABLE_ATTEMPTS`` times only: a server that is down does not come back
within a request. Either then raises ``WarehouseUnavailable``, which pages and the API answer with 503.
"""
from __future__ import annotations

import logging
import random
import threading
import time
from collections.abc import Callable
from functools import wraps
from typing import TypeVar

import duckdb
from django.conf import settings

from . import connections
from .spec import describe, warehouse_spec

log = logging.getLogger("ptbsite.warehouse")

T = TypeVar("T")

# Lower-cased fragments of DuckDB / DuckLake / SQLite errors that clear when the other writer is done.
_CONFLICT_MARKERS = ("could not set lock", "database is locked", "conflict", "failed to commit ducklake transaction")
# ... and of errors that mean the catalog's server cannot be reached.
_UNREACHABLE_MARKERS = ("unable to connect", "connection refused", "could not connect", "server closed the connection",
                        "no connection to the server", "terminating connection", "connection to server")
UNREACHABLE_ATTEMPTS = 3

_scope = threading.local()


class WarehouseUnavailable(RuntimeError):
    """The warehouse stayed locked, conflicted or unreachable through every retry; pages answer 503."""


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


def with_retries(work: Callable[[], T]) -> T:
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
                    connections.forget_instance(text)
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
    """Decorator for a read (a selector): the whole function is one unit of work, retried as ``with_retries``."""

    @wraps(function)
    def wrapper(*args, **kwargs) -> T:
        return with_retries(lambda: function(*args, **kwargs))

    return wrapper
