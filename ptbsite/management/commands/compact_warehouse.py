"""``python manage.py compact_warehouse [--keep SECONDS]``: merge a DuckLake warehouse's small Parquet files, flush
the rows inlined in its catalog, sort the per-run tables by run once (``ptbsite.warehouse.layout``), expire old
snapshots and delete the files nothing needs any more (``ptbsite.warehouse.maintenance``); safe while the site
serves. On a plain DuckDB file: a checkpoint."""
from __future__ import annotations

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from ptbsite import units, warehouse
from ptbsite.warehouse.layout import LAYOUTS
from ptbsite.warehouse.maintenance import Compaction


def _files(n: int) -> str:
    return f"{n:,} file{'' if n == 1 else 's'}"


def describe(done: Compaction, keep_seconds: float) -> str:
    """What a DuckLake compaction did, in a person's words: the files the site reads now (and before), what was
    merged and moved out of the catalog, the files kept on disk until they are ``keep_seconds`` old and why, what
    was deleted. E.g. "compacted in 0.8 s. The site now reads 11 files (185 before): 174 files merged into others.
    On disk: 191 files (185 before); the 180 that nothing reads any more stay until they are 1:00 (h:mm) old, so
    requests already reading them can finish (...); 0 files deleted, 0 old snapshots expired." (it printed "live
    files 185 -> 11, files on disk 185 -> 191")."""
    moved = f", {done.rows_flushed:,} rows moved from the catalog into files" if done.rows_flushed else ""
    if done.rows_laid_out:
        tables = ", ".join(table.table for table in LAYOUTS)
        moved += f", {done.rows_laid_out:,} rows of the per-run tables ({tables}) rewritten sorted by run"
    unread = max(done.disk_files_after - done.live_files_after, 0)
    if unread and keep_seconds > 0:
        kept = (f"; the {unread:,} that nothing reads any more stay until they are {units.hm(keep_seconds)} (h:mm) "
                "old, so requests already reading them can finish (--keep 0 removes them now, only while nothing "
                "reads or writes the warehouse)")
    else:
        kept = ""
    return (f"compacted in {done.seconds:.1f} s. The site now reads {_files(done.live_files_after)} "
            f"({done.live_files_before:,} before): {_files(done.files_merged)} merged into others{moved}. "
            f"On disk: {_files(done.disk_files_after)} ({done.disk_files_before:,} before){kept}; "
            f"{_files(done.files_deleted)} deleted, {done.snapshots_expired:,} old snapshot"
            f"{'' if done.snapshots_expired == 1 else 's'} expired.")


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
        keep_seconds = settings.PTB_COMPACT_KEEP_SECONDS if keep is None else keep
        self.stdout.write(f"{warehouse.describe()}: {describe(done, keep_seconds)}")
