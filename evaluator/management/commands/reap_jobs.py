"""``python manage.py reap_jobs [--every SECONDS] [--parent PID]``: end running jobs whose worker stopped sending
heartbeats, and queued jobs whose credential expired (services.reap_stale_jobs). Once, for cron; or every N
seconds until stopped (``manage.py serve`` starts one so, which exits when the server's process does)."""
from __future__ import annotations

import os
import time

from django.conf import settings
from django.core.management.base import BaseCommand
from django.db import close_old_connections

from evaluator.services import reap_stale_jobs


class Command(BaseCommand):
    help = ("End running jobs with no heartbeat for PTB_JOB_STALE_SECONDS (worker lost) and queued jobs whose "
            "credential expired. Run from cron, or with --every N.")

    def add_arguments(self, parser):
        parser.add_argument("--every", type=float, default=None, help="repeat every N seconds until stopped")
        parser.add_argument("--parent", type=int, default=None, help="exit when this process is no longer our parent")

    def handle(self, *args, every: float | None, parent: int | None, **options):
        while True:
            ended = reap_stale_jobs()
            if ended or every is None:
                self.stdout.write(f"{len(ended)} stale job(s) ended (no heartbeat for {settings.PTB_JOB_STALE_SECONDS} s)"
                                  + (f": {', '.join(map(str, ended))}" if ended else ""))
                self.stdout.flush()
            if every is None:
                return
            close_old_connections()
            deadline = time.monotonic() + every
            while time.monotonic() < deadline:
                if parent is not None and os.getppid() != parent:
                    return
                time.sleep(min(1.0, every))
