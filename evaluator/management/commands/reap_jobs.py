"""``python manage.py reap_jobs``: fail running rerun jobs whose worker stopped sending heartbeats."""
from __future__ import annotations

from django.conf import settings
from django.core.management.base import BaseCommand

from evaluator.services import reap_stale_jobs


class Command(BaseCommand):
    help = "Mark running rerun jobs with no heartbeat for PTB_JOB_STALE_SECONDS as failed (worker lost). Run from cron."

    def handle(self, *args, **options):
        ended = reap_stale_jobs()
        self.stdout.write(f"{len(ended)} stale job(s) ended (no heartbeat for {settings.PTB_JOB_STALE_SECONDS} s)"
                          + (f": {', '.join(map(str, ended))}" if ended else ""))
