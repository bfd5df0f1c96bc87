"""Results computed once per warehouse version in a process: a selector whose answer depends only on the warehouse
content (and its arguments) keeps it in a :class:`PerVersion`; every page and JSON twin that asks for it while the
version (``version.current``) stays the same gets the same object. A write anywhere bumps the version, so the next
call recomputes. :func:`forget` empties every memo (benches measuring a cache miss, tests).
"""
from __future__ import annotations

import logging
import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable
from typing import Generic, TypeVar

from . import version
from .spec import warehouse_spec

log = logging.getLogger("ptbsite.warehouse")

T = TypeVar("T")
_ALL: list[PerVersion] = []


class PerVersion(Generic[T]):
    """The ``maxsize`` newest results of one computation, keyed by (warehouse spec, version token, the caller's key).
    A result is shared by every caller of its version: callers must not change it."""

    def __init__(self, maxsize: int = 8) -> None:
        self.maxsize = maxsize
        self._entries: OrderedDict[tuple, T] = OrderedDict()
        self._lock = threading.Lock()
        _ALL.append(self)

    def get(self, key: Hashable, compute: Callable[[], T]) -> T:
        """The result for ``key`` in the current warehouse version, ``compute()`` on a miss. The version is read
        before computing, so a write during the computation only files the fresher result under the older token.
        When the version cannot be read (the page cache's server is down) it computes and keeps nothing."""
        try:
            spec = warehouse_spec()
            full = (spec, version.current(spec).token, key)
        except Exception as exc:  # noqa: BLE001 (the cache server is down: compute, as the page cache does)
            log.warning("warehouse version unreadable, computed without the memo: %s", exc)
            return compute()
        with self._lock:
            if full in self._entries:
                self._entries.move_to_end(full)
                return self._entries[full]
        value = compute()
        with self._lock:
            self._entries[full] = value
            while len(self._entries) > self.maxsize:
                self._entries.popitem(last=False)
        return value

    def clear(self) -> None:
        """Forget every result."""
        with self._lock:
            self._entries.clear()


def forget() -> None:
    """Empty every :class:`PerVersion` of this process."""
    for memo in _ALL:
        memo.clear()
