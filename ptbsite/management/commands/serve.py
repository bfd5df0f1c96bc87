"""``python manage.py serve [--workers N] [--threads T] [--bind HOST:PORT]``: the production server (gunicorn,
several worker processes of T threads each, static files by WhiteNoise) on the configured warehouse.

Workers are gunicorn's ``gthread`` kind: each process serves ``--threads`` requests at once, of which at most
``PTB_MAX_INFLIGHT`` compute a page (``ptbsite.overload``: beyond, a request waits ``PTB_SLOT_WAIT_SECONDS`` and
answers 503 with Retry-After); the other threads answer static files, cached pages (``ptbsite.pagecache``) and those
503s at once, so an overload is shed rather than queued. The warehouse is thread-safe: DuckLake gives each unit of
work its own cursor on the process's attached catalog, a plain file its own connection (DuckDB shares the
database within the process). ``--backlog`` bounds the kernel's queue of connections not yet accepted.

Static files are collected into STATIC_ROOT, the site's database and the warehouse schema are migrated and the
most visited public pages are computed into the page cache (``ptbsite.pagecache.warm``) once here, before the
workers start (a restart with the same code finds them cached: the cache's keys hold the code's fingerprint,
``ptbsite.codeprint``). Several workers need a DuckLake warehouse
(the default: SQLite catalog under data/); on a plain DuckDB file only ``--workers 1`` works, since the file
admits one process. ``DJANGO_DEBUG`` defaults to 0 for the server (set it to 1 to debug).

The app is imported once, in gunicorn's master, before it forks the workers (``--preload``; ``--no-preload`` imports
it in each worker instead), so the workers share the memory of what it imported (issue 24, bench/RESULTS.md). A
code change needs a restart of ``serve`` (gunicorn's HUP reloads workers from the master's already imported code).
A stopping worker closes its warehouse and leaves without the interpreter's teardown (``ptbsite.gunicorn_hooks``).
"""
from __future__ import annotations

import os
import subprocess
import sys

from django.conf import settings
from django.core.management import call_command
from django.core.management.base import BaseCommand, CommandError

from ptbsite import pagecache, warehouse


# The settings the server runs with unless set: DEBUG off, one DuckDB thread per query (settings.py says why).
SERVER_ENV = {"DJANGO_DEBUG": "0", "PTB_DUCKDB_THREADS": "1"}


class Command(BaseCommand):
    help = "Run the production server: gunicorn with several worker processes on the configured warehouse."

    def add_arguments(self, parser):
        parser.add_argument("--workers", type=int, default=3, help="worker processes (default 3)")
        parser.add_argument("--threads", type=int, default=24,
                            help="threads per worker process (default 24; PTB_MAX_INFLIGHT of them compute pages)")
        parser.add_argument("--backlog", type=int, default=256,
                            help="connections the kernel holds before the workers accept them (default 256)")
        parser.add_argument("--bind", default="127.0.0.1:8000", help="HOST:PORT (default 127.0.0.1:8000)")
        parser.add_argument("--timeout", type=int, default=60, help="seconds before a silent worker is restarted")
        parser.add_argument("--no-preload", dest="preload", action="store_false",
                            help="import the app in each worker after the fork, not once in gunicorn's master")
        parser.add_argument("--reap-every", type=float, default=30.0,
                            help="seconds between runs of the stale-job reaper started beside the server")

    def handle(self, *args, workers: int, threads: int, backlog: int, bind: str, timeout: int, reap_every: float,
               preload: bool = True, **options):
        env = {**SERVER_ENV, **os.environ}
        if env != dict(os.environ) and sys.argv[1:2] == ["serve"]:
            # Run this command under the workers' settings too, so that the pages it computes into the cache below
            # are the workers' pages (DEBUG off) under the workers' keys (the code's fingerprint covers PTB_ and
            # DJANGO_ settings: ptbsite.codeprint): started again with them.
            os.execve(sys.executable, [sys.executable, *sys.argv], env)
        spec = warehouse.parse_spec(warehouse.warehouse_spec())
        if not spec.is_ducklake and workers > 1:
            raise CommandError(f"the warehouse is a plain DuckDB file ({spec.catalog}), which one process at a time "
                               "may open: use --workers 1, or a DuckLake PTB_WAREHOUSE (see README, Settings)")
        call_command("collectstatic", interactive=False, verbosity=0)  # WhiteNoise serves STATIC_ROOT
        # The site's own database (jobs, challenges, accounts): a host pointed at a warehouse another host built
        # starts on a data folder of its own, where nothing else has migrated it (the job reaper died on it).
        call_command("migrate", interactive=False, verbosity=0)
        applied = warehouse.migrate_now()
        if applied:
            self.stdout.write(f"warehouse: applied {', '.join(applied)}")
        # Cached pages are keyed by the code's fingerprint too (ptbsite.codeprint): a restart with the same code keeps
        # them, so no version bump here (it made every restart, and every host sharing the cache, start cold).
        # Compute the most visited pages now (hits when cached already), so the first visitors get hits (PTB_PAGE_WARM)
        warmed = pagecache.warm()
        warehouse.close_connections()  # nothing of this process's warehouse instance may outlive the exec
        if warmed:
            failed = [f"{path} ({status})" for path, status, _ in warmed if status != 200]
            self.stdout.write(f"page cache: {len(warmed) - len(failed)} pages computed in "
                              f"{sum(s for _, _, s in warmed):.1f} s" + (f"; failed: {', '.join(failed)}" if failed else ""))
        self.stdout.write(f"Serving on http://{bind}/ with {workers} worker(s) of {threads} threads; "
                          f"warehouse {warehouse.describe()}")
        sys.stdout.flush()
        # Stale rerun jobs are ended by a reaper beside the server, never by a page read; it exits with gunicorn
        # (which takes over this process id).
        subprocess.Popen([sys.executable, "manage.py", "reap_jobs", "--every", str(reap_every), "--parent",
                          str(os.getpid())], cwd=settings.BASE_DIR, env=env, stdout=subprocess.DEVNULL)
        # --preload: gunicorn's master imports the app (ptbsite.wsgi, which then freezes the collector's view of what
        # it imported) and forks the workers from it, so they share those pages instead of each importing its own
        # copy: 3 workers at K=90 held 280 MB of PSS in all against 330 (bench/web_memory.py). The master opens no
        # warehouse, database or thread: each worker opens its own warehouse instance on its first request (they
        # are keyed by process id, ptbsite.warehouse.connections).
        argv = [sys.executable, "-m", "gunicorn", "ptbsite.wsgi:application", "--workers", str(workers),
                "--worker-class", "gthread", "--threads", str(threads), "--backlog", str(backlog),
                "--bind", bind, "--timeout", str(timeout), "--graceful-timeout", "10", "--log-level", "warning",
                "--config", "python:ptbsite.gunicorn_hooks",
                *(["--preload"] if preload else [])]
        os.execve(sys.executable, argv, env)
