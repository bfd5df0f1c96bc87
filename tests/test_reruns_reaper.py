"""Stale-job reaping beside the server: ``manage.py serve`` starts ``reap_jobs --every N``, which ends a running job
whose worker went silent without any page being read, and exits with the server."""
from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.test_serve_concurrency import ROOT, _free_port, _manage

pytestmark = pytest.mark.slow


def _reapers(parent: int) -> list[int]:
    found = []
    for proc in Path("/proc").iterdir():
        try:
            cmd = (proc / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if b"reap_jobs" in cmd and str(parent).encode() in cmd:
            found.append(int(proc.name))
    return found


def test_serve_starts_a_reaper_that_ends_stale_jobs_and_exits_with_it(tmp_path: Path) -> None:
    env = {**os.environ, "PTB_DATA_DIR": str(tmp_path), "PTB_WAREHOUSE": str(tmp_path / "warehouse.duckdb"),
           "DJANGO_STATIC_ROOT": str(tmp_path / "static"), "PTB_JOB_STALE_SECONDS": "1", "PYTHONUNBUFFERED": "1"}
    env.pop("DATABASE_URL", None)
    assert _manage(env, "migrate", "--noinput", "-v0").returncode == 0
    db = sqlite3.connect(tmp_path / "django.sqlite3")
    db.execute("INSERT INTO evaluator_rerunjob (kind, queue, run_dir, run_id, benchmark, checkpoint, dataset_path, "
               "provider, status, cancel_requested, reason, samples_done, attempts, worker_host, celery_task_id, log, "
               "created_at, started_at, heartbeat_at, eval_log, evaluation_id) VALUES ('evaluation', 'celery', '', "
               "'r', 'gsm8k', '/x', '', 'auto', 'running', 0, '', 0, 1, 'gpu9', 't', '', datetime('now', '-1 hour'), "
               "datetime('now', '-1 hour'), datetime('now', '-1 hour'), '', '')")
    db.commit()
    server = subprocess.Popen([sys.executable, "manage.py", "serve", "--workers", "1", "--bind",
                               f"127.0.0.1:{_free_port()}", "--reap-every", "1"], cwd=ROOT, env=env,
                              stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 60
        while True:
            status, reason = db.execute("SELECT status, reason FROM evaluator_rerunjob").fetchone()
            if status != "running" or time.monotonic() > deadline:
                break
            time.sleep(0.5)
        assert status == "failed" and reason.startswith("worker lost: no heartbeat since") and "(host gpu9)" in reason
        assert len(_reapers(server.pid)) == 1
    finally:
        server.send_signal(signal.SIGTERM)
        server.wait(timeout=30)
    deadline = time.monotonic() + 10
    while _reapers(server.pid) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert _reapers(server.pid) == []  # the reaper left with the server
