"""``python manage.py serve [--workers N] [--bind HOST:PORT]``: the production server (gunicorn, several worker
processes, static files by WhiteNoise) on the configured warehouse.

Static files are collected into STATIC_ROOT and the warehouse schema is migrated once here, before the workers
start. Several workers need a DuckLake warehouse
(the default: SQLite catalog under data/); on a plain DuckDB file only ``--workers 1`` works, since the file
admits one process. ``DJANGO_DEBUG`` defaults to 0 for the server (set it to 1 to debug).
"""
from __future__ import annotations

import os
import subprocess
import sys

from django.conf import settings
from django.core.management import call_command
from django.core.management.base import BaseCommand, CommandError

from ptbsite import warehouse


class Command(BaseCommand):
    help = "Run the production server: gunicorn with several worker processes on the configured warehouse."

    def add_arguments(self, parser):
        parser.add_argument("--workers", type=int, default=3, help="worker processes (default 3)")
        parser.add_argument("--bind", default="127.0.0.1:8000", help="HOST:PORT (default 127.0.0.1:8000)")
        parser.add_argument("--timeout", type=int, default=60, help="seconds before a silent worker is restarted")
        parser.add_argument("--reap-every", type=float, default=30.0,
                            help="seconds between runs of the stale-job reaper started beside the server")

    def handle(self, *args, workers: int, bind: str, timeout: int, reap_every: float, **options):
        spec = warehouse.parse_spec(warehouse.warehouse_spec())
        if not spec.is_ducklake and workers > 1:
            raise CommandError(f"the warehouse is a plain DuckDB file ({spec.catalog}), which one process at a time "
                               "may open: use --workers 1, or a DuckLake PTB_WAREHOUSE (see README, Settings)")
        call_command("collectstatic", interactive=False, verbosity=0)  # WhiteNoise serves STATIC_ROOT
        applied = warehouse.migrate_now()
        if applied:
            self.stdout.write(f"warehouse: applied {', '.join(applied)}")
        self.stdout.write(f"Serving on http://{bind}/ with {workers} worker(s); warehouse {warehouse.describe()}")
        sys.stdout.flush()
        env = {"DJANGO_DEBUG": "0", **os.environ}
        # Stale rerun jobs are ended by a reaper beside the server, never by a page read; it exits with gunicorn
        # (which takes over this process id).
        subprocess.Popen([sys.executable, "manage.py", "reap_jobs", "--every", str(reap_every), "--parent",
                          str(os.getpid())], cwd=settings.BASE_DIR, env=env, stdout=subprocess.DEVNULL)
        # Workers import the app after the fork (no --preload): each opens its own warehouse connection.
        argv = [sys.executable, "-m", "gunicorn", "ptbsite.wsgi:application", "--workers", str(workers),
                "--bind", bind, "--timeout", str(timeout), "--graceful-timeout", "10", "--log-level", "warning"]
        os.execve(sys.executable, argv, env)
