"""Reads answered once per block: :func:`read_once` marks a read of one run's data (``read_X(con, run_id, ...)``)
whose answer, inside a :func:`reads_kept` block, is kept by its arguments and answered again (the same object) instead of
querying the warehouse again. The static export renders every file of a run (its page, the page's JSON twin, its
step pages and their twins, its comparison side) inside one block: those pages read many of the same things
(the run's texts, evaluations, facets, verdicts, steps pages) and each read on DuckLake costs ~10-20 CPU ms of
catalog work whatever it returns. Outside a block (the live site) every read queries, as before.

A block may also start with answers read ahead (:func:`kept_key` names them): the export reads some of them for
many runs in one query (``traces.selectors.read_ahead``).

Callers use it as ``warehouse.once.read_once`` / ``warehouse.once.reads_kept``.
"""
from __future__ import annotations

import functools
import inspect
from collections.abc import Callable, Hashable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any, TypeVar

import duckdb
from pydantic import BaseModel

F = TypeVar("F", bound=Callable[..., Any])

# The answers kept in this block: {kept_key(...): answer}; None outside a block (every read queries).
_KEPT: ContextVar[dict[Hashable, Any] | None] = ContextVar("reads_kept", default=None)


@contextmanager
def reads_kept(ahead: dict[Hashable, Any] | None = None) -> Iterator[dict[Hashable, Any]]:
    """Within the block (this thread's context), each :func:`read_once` read answers from what it answered before
    for the same arguments, or from ``ahead`` ({:func:`kept_key`: answer}, read ahead); yields the kept answers."""
    kept = dict(ahead or {})
    token = _KEPT.set(kept)
    try:
        yield kept
    finally:
        _KEPT.reset(token)


def keeping() -> bool:
    """Whether this context is inside a :func:`reads_kept` block (its reads answered once, many read ahead: a unit
    of work there need not copy tables for reads that will not query them)."""
    return _KEPT.get() is not None


def _hashable(value: Any) -> Hashable:
    """A value as part of a key: a model by its ``id`` when it has one (a Run: the block reads one snapshot of
    each run), lists as tuples."""
    if isinstance(value, BaseModel):
        return (type(value).__name__, getattr(value, "id", None) or value.model_dump_json())
    if isinstance(value, (list, tuple)):
        return tuple(_hashable(v) for v in value)
    if isinstance(value, dict):
        return tuple(sorted((k, _hashable(v)) for k, v in value.items()))
    return value


def kept_key(function: Callable[..., Any], *args: Any, **kwargs: Any) -> Hashable:
    """The key of ``function(con, *args, **kwargs)``'s answer (the connection left out; defaults filled in, so a
    call naming a default and one leaving it out are one read)."""
    target = getattr(function, "__wrapped__", function)
    bound = _signature(target).bind(None, *args, **kwargs)
    bound.apply_defaults()
    values = list(bound.arguments.items())[1:]
    return (target.__module__, target.__qualname__, tuple((name, _hashable(v)) for name, v in values))


@functools.cache
def _signature(function: Callable[..., Any]) -> inspect.Signature:
    return inspect.signature(function)


def read_once(function: F) -> F:
    """Mark ``function(con, ...)``, a read whose answer depends only on its arguments within one snapshot, as
    answered once per :func:`reads_kept` block. Every caller in the block gets the same answer (as
    ``warehouse.memo``'s): callers must not change it (deep copies of a run's step pages cost the export ~10% of its
    CPU)."""

    @functools.wraps(function)
    def wrapper(con: duckdb.DuckDBPyConnection, *args: Any, **kwargs: Any) -> Any:
        kept = _KEPT.get()
        if kept is None:
            return function(con, *args, **kwargs)
        key = kept_key(function, *args, **kwargs)
        if key not in kept:
            kept[key] = function(con, *args, **kwargs)
        return kept[key]

    return wrapper  # type: ignore[return-value]
