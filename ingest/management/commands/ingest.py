"""``python manage.py ingest RESULTS_ROOT``: store every run of a results tree in the warehouse, sort the word index
``step_words`` when more than a tenth of it is unsorted (``traces.search_across.sort_step_words``), then compute the
most visited public pages of the new version into the page cache (``ptbsite.pagecache.warm``; none when it is
off)."""
from __future__ import annotations

import sys
from pathlib import Path

import pyarrow as pa
from django.conf import settings
from django.core.management.base import BaseCommand, CommandError
from tqdm import tqdm

from ingest.tree import TreeProgress, ingest_tree
from ptbsite import pagecache, warehouse
from traces import search_across


QUIET_PROBLEMS = 10  # problems --quiet still prints (the rest are counted)


class Command(BaseCommand):
    help = ("Ingest a PostTrainBench results tree (method dirs, run dirs, baseline dirs) on all cores; re-ingesting "
            "adds nothing. On a terminal a progress bar shows runs, MB and the time left; otherwise one summary line.")

    def add_arguments(self, parser):
        parser.add_argument("root", type=Path)
        parser.add_argument("--suite", default=settings.DEFAULT_SUITE)
        parser.add_argument("--synthetic", action="store_true", default=None,
                            help="label the runs as synthetic demo data (default: whether ROOT/SYNTHETIC exists)")
        parser.add_argument("--quiet", action="store_true",
                            help=f"print the summary and the first {QUIET_PROBLEMS} problems only (each run's page "
                                 "lists its own)")
        parser.add_argument("--workers", type=int, default=None,
                            help="processes reading runs (default: one per core, or PTB_INGEST_WORKERS)")

    def handle(self, *args, root: Path, suite: str, synthetic: bool | None, quiet: bool, workers: int | None,
               **options):
        # The steps reach DuckDB as Arrow batches built from Python lists; the system allocator returns the freed
        # batches to the process where pyarrow's default (mimalloc) keeps them: the 180 MB bench trace's peak RSS
        # 548 -> 509 MB, in the same time (bench/RESULTS.md, issue 15).
        pa.set_memory_pool(pa.system_memory_pool())
        bar = None
        on_terminal = sys.stderr.isatty()

        def tick(state: TreeProgress) -> None:
            nonlocal bar
            if bar is None:  # MB on the bar (what the time left depends on), runs beside it
                bar = tqdm(total=state.bytes_total, unit="B", unit_scale=True, unit_divisor=1000, desc="ingest",
                           file=sys.stderr, dynamic_ncols=True)
            bar.update(state.bytes_done - bar.n)
            bar.set_postfix_str(f"{state.runs_done}/{state.runs_total} runs", refresh=True)

        try:
            report = ingest_tree(root=root, suite_id=suite, synthetic=synthetic, workers=workers,
                                 progress=None if quiet or on_terminal else self.stdout.write,
                                 ticker=tick if on_terminal else None)
        except FileNotFoundError as exc:
            raise CommandError(str(exc)) from None
        finally:
            if bar is not None:
                bar.close()
        shown = report.problems if not quiet else report.problems[:QUIET_PROBLEMS]
        for problem in shown:  # "path: message": which file of which run, and what ingest made of it
            self.stderr.write(problem)
        self.stdout.write(str(report))
        if report.problems:
            more = len(report.problems) - len(shown)
            self.stdout.write(
                f"{len(report.problems)} problem{'s' if len(report.problems) != 1 else ''} "
                f"{'listed above' if not more else f'in all: the first {len(shown)} listed above (without --quiet: every one)'}"
                "; nothing stored was lost, and each run's page lists its own (\"ingest problems\").")
        if report.stored:  # the batches left up to half of step_words unsorted: sorted once the ingest is done
            warehouse.run_in_transaction(
                lambda con: search_across.sort_step_words(con, spread=search_across.SETTLED_SPREAD))
        warmed = pagecache.warm()  # the new version's most visited pages, before visitors ask for them
        if warmed and not quiet:
            self.stdout.write(f"page cache: {sum(1 for _, status, _ in warmed if status == 200)} pages computed")
