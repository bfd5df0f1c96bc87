"""The one place that opens the warehouse (DuckDB or DuckLake), applies its schema migrations and retries on locks
and conflicts. Runs, scores, trace steps and verdicts live there, reached only from the apps' selectors and
services. The modules: spec (the ``PTB_WAREHOUSE`` setting), connections, retry, writers (one writer at a time on
a SQLite catalog), transactions (units of work), bulk (inserts), memo (results kept per version), once (reads
answered once per block: the static export), migrations (``sql/*.sql``), maintenance (compaction), middleware,
version (the token every write bumps, read without opening the warehouse: ``ptbsite.pagecache`` keys pages on
it). docs/architecture.md draws where it sits.

Callers use this package's names (``from ptbsite import warehouse; warehouse.connect()``), not the modules'.
"""
from __future__ import annotations

import duckdb

from . import memo, once, version
from .bulk import insert_rows
from .connections import ALIAS, close_connections, hold_cursors, hold_open
from .maintenance import Compaction, compact
from .middleware import RequestScopeMiddleware
from .migrations import SQL_DIR, migrate, migrate_now, migration_files, reset_migration_cache
from .retry import UNREACHABLE_ATTEMPTS, WarehouseUnavailable, retrying
from .spec import WarehouseSpec, describe, parse_spec, warehouse_spec
from .transactions import connect, duckdb_threads, never_written, rows_in_memory, run_in_transaction, snapshot, transaction

__all__ = [
    "ALIAS", "SQL_DIR", "UNREACHABLE_ATTEMPTS", "Compaction", "RequestScopeMiddleware", "WarehouseSpec",
    "WarehouseUnavailable", "close_connections", "compact", "connect", "describe", "duckdb", "duckdb_threads", "hold_cursors", "hold_open", "insert_rows", "memo", "once", "migrate", "migrate_now",
    "migration_files", "never_written", "parse_spec", "reset_migration_cache", "retrying", "rows_in_memory", "run_in_transaction", "snapshot", "transaction",
    "version", "warehouse_spec",
]
