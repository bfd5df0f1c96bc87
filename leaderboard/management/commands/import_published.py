"""``python manage.py import_published [DIR]``: load the published leaderboard data into the warehouse."""
from __future__ import annotations

from pathlib import Path

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from leaderboard.services import DEFAULT_PUBLISHED_DIR, PublishedDataError, import_published


class Command(BaseCommand):
    help = "Load published PostTrainBench website data (CSVs, factors.json) into the warehouse; idempotent."

    def add_arguments(self, parser):
        parser.add_argument("directory", nargs="?", type=Path, default=DEFAULT_PUBLISHED_DIR)
        parser.add_argument("--suite", default=settings.DEFAULT_SUITE)

    def handle(self, *args, directory: Path, suite: str, **options):
        try:
            report = import_published(directory=directory, suite_id=suite)
        except PublishedDataError as exc:
            raise CommandError(str(exc)) from None
        self.stdout.write(f"imported {report}")
