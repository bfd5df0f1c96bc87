"""``python manage.py export_static OUTDIR``: write the public site as static files (see export.exporter)."""
from __future__ import annotations

from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from export.exporter import ExportError, export_site


class Command(BaseCommand):
    help = ("Export the public site (leaderboard views, plots, run pages with their steps, JSON twins, assets) as "
            "plain files with relative links; incremental: unchanged runs are not rendered again. On a terminal a "
            "progress bar shows runs and pages written and the time left.")

    def add_arguments(self, parser):
        parser.add_argument("outdir", type=Path)

    def handle(self, *args, outdir: Path, **options):
        try:
            report = export_site(outdir, progress=lambda message: self.stderr.write(message), bar=None)
        except ExportError as exc:
            raise CommandError(str(exc)) from None
        self.stdout.write(f"exported {report}")
