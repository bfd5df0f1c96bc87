"""``python manage.py compact_warehouse [--keep SECONDS]``: merge a DuckLake warehouse's small Parquet files, flush
the rows inlined in its catalog, expire old snapshots and delete the files nothing needs any more
(``ptbsite.warehouse.maintenance``); safe while the site serves. On a plain DuckDB file: a checkpoint."""
from __future__ import annotations

from django.core.management.base import BaseCommand, CommandError

from ptbsite import warehouse


class Command(BaseCommand):
    help = ("Compact the warehouse: merge small files, flush inlined rows, expire snapshots and delete unneeded "
            "files older than --keep seconds (default PTB_COMPACT_KEEP_SECONDS, 3600).")

    def add_arguments(self, parser):
        parser.add_argument("--keep", type=float, default=None, metavar="SECONDS",
                            help="keep snapshots and unneeded files younger than this (0: remove them all now; "
                                 "only when nothing reads or writes the warehouse)")

    def handle(self, *args, keep: float | None, **options):
        try:
            done = warehouse.compact(keep_seconds=keep)
        except (ValueError, warehouse.WarehouseUnavailable, warehouse.duckdb.Error) as exc:
            raise CommandError(f"{warehouse.describe()}: {exc}") from None
        if done.kind == "file":
            self.stdout.write(f"{warehouse.describe()}: checkpointed in {done.seconds:.1f} s")
            return
        self.stdout.write(
            f"{warehouse.describe()}: live files {done.live_files_before} -> {done.live_files_after}, "
            f"files on disk {done.disk_files_before} -> {done.disk_files_after}; {done.rows_flushed} inlined rows "
            f"flushed, {done.files_merged} files merged, {done.snapshots_expired} snapshots expired, "
            f"{done.files_deleted} files deleted, in {done.seconds:.1f} s")
