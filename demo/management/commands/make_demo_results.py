"""``python manage.py make_demo_results DIR --runs N --seed S [--no-long-run]``: write a seeded demo results tree.

See ``demo/tree.py`` for what the tree contains.
"""
from __future__ import annotations

import time
from typing import Any
from pathlib import Path

from django.core.management.base import BaseCommand, CommandParser

from demo.tree import make_demo_results


class Command(BaseCommand):
    requires_system_checks: list[str] = []  # pure file generation: needs no URLconf, models or database
    help = "Write a seeded, realistic PostTrainBench results tree (methods, runs, traces, verdicts, metrics)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("dir", type=Path, help="results root to write (created if missing)")
        parser.add_argument("--runs", type=int, default=40, help="number of agent run dirs, retries included")
        parser.add_argument("--seed", type=int, default=0, help="random seed; same seed, same bytes")
        parser.add_argument("--no-long-run", action="store_true",
                            help="skip the ~10 h, 20,000-step, ~50 MB Claude Code trace")

    def handle(self, *args: object, **options: Any) -> None:
        started = time.perf_counter()
        report = make_demo_results(root=options["dir"], runs=options["runs"], seed=options["seed"],
                                   long_run=not options["no_long_run"],
                                   progress=None if options["verbosity"] < 1 else self.stdout.write)
        self.stdout.write(
            f"Wrote {len(report.runs)} runs in {len(report.methods)} methods "
            f"(+{len(report.baseline_runs)} baseline runs), {report.files_written} files, "
            f"{report.bytes_written / 1e6:.1f} MB to {report.root} in {time.perf_counter() - started:.1f} s"
        )
