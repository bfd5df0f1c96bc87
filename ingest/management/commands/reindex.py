"""``python manage.py reindex [--rules facets,evidence,search] [--all] [--run ID ...]``: re-derive facets, phases,
evidence marks and the search's word index from the stored steps after a rule change (``ingest.reindex``),
without re-parsing."""
from __future__ import annotations

from django.core.management.base import BaseCommand, CommandError

from ingest.reindex import FAMILIES, reindex


class Command(BaseCommand):
    help = ("Re-derive facets/phases, evidence marks and the search index of stored runs from their steps, for the "
            "runs whose stored rules version differs from the code's (--all: every run).")

    def add_arguments(self, parser):
        parser.add_argument("--rules", default=",".join(FAMILIES),
                            help=f"comma-separated rule families to re-derive (default: {','.join(FAMILIES)})")
        parser.add_argument("--all", action="store_true", help="re-derive every run, whatever its stored version")
        parser.add_argument("--run", action="append", dest="runs", metavar="RUN_ID",
                            help="only this run (repeatable)")
        parser.add_argument("--quiet", action="store_true", help="print only the summary")

    def handle(self, *args, rules: str, all: bool, runs: list[str] | None, quiet: bool, **options):
        families = [f.strip() for f in rules.split(",") if f.strip()]
        try:
            report = reindex(families=families, force=all, run_ids=runs,
                             progress=None if quiet else self.stdout.write)
        except ValueError as exc:
            raise CommandError(str(exc)) from None
        for problem in report.problems:
            self.stderr.write(problem)
        self.stdout.write(str(report))
        if report.failed:
            raise CommandError(f"{report.failed} runs could not be re-derived")
