"""Gunicorn server hooks for ``manage.py serve`` (passed as ``--config python:ptbsite.gunicorn_hooks``).

``worker_exit``: a worker that stops (SIGTERM from the master on shutdown, a HUP reload, a restart after
``--timeout``) closes its warehouse instances, flushes its logs and leaves at once, without the interpreter's
finalization. Without it every worker that had served a page aborted on the way out ("terminate called without an
active exception", gunicorn logging ``Worker (pid:N) was sent SIGABRT!``): gthread's request threads are not joined
on shutdown (gunicorn stops its pool with ``wait=False``), and DuckDB's native state was torn down by the C++ static
destructors while a thread of it was still joinable. Closing the instances alone did not avoid it
(tests/test_serve_shutdown.py).
"""
from __future__ import annotations

import logging
import os
import sys
from typing import Any


def worker_exit(server: Any, worker: Any) -> None:
    """Close every DuckDB/DuckLake instance of this worker process (``ptbsite.warehouse.close_connections``),
    flush logging and stdio, then ``os._exit(0)``: the worker has finished serving (gunicorn calls this after
    its loop ended), so nothing is left for the finalization to do but the aborting teardown."""
    from ptbsite import warehouse  # loaded by now (preloaded in the master, or imported by the worker)

    warehouse.close_connections()
    logging.shutdown()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)
