"""``python manage.py ingest RESULTS_ROOT``: store every run of a results tree in the warehouse."""
from __future__ import annotations

from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from traces.ingest import ingest_tree


class Command(BaseCommand):
    help = "Ingest a PostTrainBench results tree (method dirs, run dirs, baseline dirs); re-ingesting adds nothing."

    def add_arguments(self, parser):
        parser.add_argument("root", type=Path)
        parser.add_argument("--suite", default="posttrainbench")
        parser.add_argument("--synthetic", action="store_true", default=None,
                            help="label the runs as synthetic demo data (default: whether ROOT/SYNTHETIC exists)")
        parser.add_argument("--quiet", action="store_true",
                            help="print only the summary (the problems are listed on each run's page)")

    def handle(self, *args, root: Path, suite: str, synthetic: bool | None, quiet: bool, **options):
        try:
            report = ingest_tree(root=root, suite_id=suite, synthetic=synthetic,
                                 progress=None if quiet else self.stdout.write)
        except FileNotFoundError as exc:
            raise CommandError(str(exc)) from None
        if not quiet:
            for problem in report.problems:
                self.stderr.write(problem)
        self.stdout.write(str(report))
