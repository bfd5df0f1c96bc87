"""``python manage.py make_demo_results DIR --runs N --seed S [--no-long-run]``: write a seeded demo results tree.

``make_demo_results DIR --methods K --seed S [--no-long-run] [--trace-scale X]`` writes the real benchmark's shape
instead: K method dirs of the real naming with one latest run per (benchmark, base model) cell (28 x K), trace
sizes drawn from the real distribution times X. See ``demo/tree.py`` for what the tree contains.
"""
from __future__ import annotations

import time
from typing import Any
from pathlib import Path

from django.core.management.base import BaseCommand, CommandError, CommandParser

from demo.tree import make_demo_results


class Command(BaseCommand):
    requires_system_checks: list[str] = []  # pure file generation: needs no URLconf, models or database
    help = "Write a seeded, realistic PostTrainBench results tree (methods, runs, traces, verdicts, metrics)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("dir", type=Path, help="results root to write (created if missing)")
        parser.add_argument("--runs", type=int, default=None,
                            help="number of agent run dirs, retries included (default 40; not with --methods)")
        parser.add_argument("--methods", type=int, default=None,
                            help="the real shape: this many method dirs, 28 latest runs each (not with --runs)")
        parser.add_argument("--trace-scale", type=float, default=1.0,
                            help="with --methods: multiply the drawn trace sizes (median ~0.6 MB) by this")
        parser.add_argument("--seed", type=int, default=0, help="random seed; same seed, same bytes")
        parser.add_argument("--no-long-run", action="store_true",
                            help="skip the ~10 h, 20,000-step, ~50 MB Claude Code trace")

    def handle(self, *args: object, **options: Any) -> None:
        started = time.perf_counter()
        if options["runs"] is not None and options["methods"] is not None:
            raise CommandError("give --runs or --methods, not both")
        runs = None if options["methods"] is not None else (options["runs"] or 40)
        report = make_demo_results(root=options["dir"], runs=runs, seed=options["seed"],
                                   long_run=not options["no_long_run"], methods=options["methods"],
                                   trace_scale=options["trace_scale"],
                                   progress=None if options["verbosity"] < 1 else self.stdout.write)
        self.stdout.write(
            f"Wrote {len(report.runs)} runs in {len(report.methods)} methods "
            f"(+{len(report.baseline_runs)} baseline runs), {report.files_written} files, "
            f"{report.bytes_written / 1e6:.1f} MB to {report.root} in {time.perf_counter() - started:.1f} s"
        )
