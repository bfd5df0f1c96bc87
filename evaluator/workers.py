"""Which Celery workers listen on a queue: asked with Celery's remote control (``inspect().active_queues()``,
a broadcast every worker answers through the broker), kept PTB_WORKER_SEEN_SECONDS in Django's cache.

The job page of a job nobody took says "no worker is listening on queue X"; the rerun form warns before a job is
queued. Nothing here writes.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

from django.conf import settings
from django.core.cache import cache


def _celery() -> Any:
    """The Celery app, imported on first use: a web worker that only serves pages never loads Celery's app and
    worker machinery (~12 MB of RSS; bench/web_memory.py)."""
    from ptbsite.celery import app

    return app


@dataclass(frozen=True)
class WorkerCensus:
    """The workers that answered, for one queue: their names (``celery@host``), when it was asked (epoch
    seconds), and the error text when the broker could not be asked."""

    queue: str
    workers: tuple[str, ...] = field(default=())
    checked_at: float = 0.0
    error: str = ""

    @property
    def listening(self) -> bool:
        return bool(self.workers)


def census(queue: str, *, timeout: float | None = None, fresh: bool = False) -> WorkerCensus:
    """The workers consuming ``queue`` now, from the cache unless ``fresh`` or older than
    PTB_WORKER_SEEN_SECONDS. A broadcast waits ``timeout`` seconds (default PTB_WORKER_CENSUS_TIMEOUT) for answers;
    a broker that cannot be reached gives a census with no workers and its ``error``."""
    timeout = settings.PTB_WORKER_CENSUS_TIMEOUT if timeout is None else timeout
    key = f"evaluator:census:{_celery().conf.broker_url}:{queue}"
    if not fresh and (cached := cache.get(key)) is not None:
        return cached
    try:
        # A connection of its own, to the broker configured now (the app's pool keeps the first broker it saw).
        with _celery().connection_for_write() as connection:
            answers = _celery().control.inspect(timeout=timeout, connection=connection).active_queues() or {}
        error = ""
    except Exception as exc:  # noqa: BLE001 - a broker that is down is an answer here, not an error page
        answers, error = {}, f"{type(exc).__name__}: {exc}"
    workers = tuple(sorted(name for name, queues in answers.items()
                           if any(q.get("name") == queue for q in queues or [])))
    found = WorkerCensus(queue=queue, workers=workers, checked_at=time.time(), error=error)
    cache.set(key, found, settings.PTB_WORKER_SEEN_SECONDS)
    return found
