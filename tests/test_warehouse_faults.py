"""Faults: the data folder unwritable, the catalog down, the warehouse locked, the broker down, a writer killed in
the middle of a run, a disk-full error while storing one run. DuckLake with a SQLite catalog unless named."""
from __future__ import annotations

import errno
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from django.test import Client, RequestFactory

from ptbsite import warehouse
from ptbsite.unavailable import BrokerUnavailable, ServiceUnavailableMiddleware
from traces import layout, selectors
from ingest.tree import ingest_tree

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def agent_tree(tmp_path_factory: pytest.TempPathFactory):
    """(DemoReport, run ids) of a generated tree of 12 agent runs (baseline dirs removed to keep it quick)."""
    from demo.tree import make_demo_results

    root = tmp_path_factory.mktemp("faults") / "results"
    report = make_demo_results(root=root, runs=12, seed=5, long_run=False)
    for path in root.iterdir():
        if path.is_dir() and path.name.startswith("baseline"):
            shutil.rmtree(path)
    return report


@pytest.fixture
def lake(tmp_path: Path, settings) -> Path:
    """An empty DuckLake warehouse (SQLite catalog) in the test's folder; returns the folder."""
    settings.PTB_WAREHOUSE = f"ducklake:sqlite:{tmp_path / 'catalog.sqlite'}?data={tmp_path / 'data'}"
    warehouse.reset_migration_cache()
    return tmp_path


def _run_id(demo) -> str:
    return layout.run_id(*demo.run_dir.split("/"))


def _stored_steps(run_id: str, trace: str = "%") -> int:
    with warehouse.connect() as con:
        return con.execute("SELECT count(*) FROM steps WHERE run_id = ? AND trace LIKE ?", [run_id, trace]).fetchone()[0]


def _chattr(flag: str, folder: Path) -> None:
    for path in [folder, *(p for p in folder.rglob("*") if p.is_dir())]:
        subprocess.run(["chattr", flag, str(path)], check=True, capture_output=True)


def test_unwritable_data_folder_fails_each_run_cleanly_and_pages_still_read(lake, agent_tree, settings):
    from leaderboard.services import import_published

    import_published()  # 728 cells: written to Parquet files in the data folder
    data = lake / "data"
    if os.geteuid() == 0:
        # chmod does not stop root; the immutable attribute does (ext4, xfs, tmpfs...). Not simulated.
        try:
            _chattr("+i", data)
        except (OSError, subprocess.CalledProcessError) as exc:
            pytest.skip(f"chattr +i unsupported here ({exc}); root ignores chmod, so nothing makes the folder unwritable")
    else:
        for path in [data, *(p for p in data.rglob("*") if p.is_dir())]:
            path.chmod(0o555)
    try:
        report = ingest_tree(root=agent_tree.root)
        leaderboard_page = Client().get("/")
    finally:
        if os.geteuid() == 0:
            _chattr("-i", data)
    assert report.stored == 0 and report.failed == len(agent_tree.runs)
    for demo in agent_tree.runs:
        assert any(demo.run_dir.split("/")[1] in p and "not stored" in p for p in report.problems), demo.run_dir
        assert selectors.get_run(_run_id(demo)) is None
    assert leaderboard_page.status_code == 200
    assert ingest_tree(root=agent_tree.root).stored == len(agent_tree.runs)  # writable again: everything goes in


def test_catalog_down_answers_503_with_a_clear_message(tmp_path, settings):
    with socket_closed_port() as port:
        settings.PTB_WAREHOUSE = f"ducklake:postgres:host=127.0.0.1 port={port} user=postgres dbname=ptb?data={tmp_path}"
        warehouse.reset_migration_cache()
        started = time.monotonic()
        page = Client().get("/")
        api = Client().get("/api/runs")
    assert time.monotonic() - started < 10
    assert page.status_code == 503 and page["Retry-After"]
    assert b"is unavailable: its catalog is unreachable" in page.content
    assert b"Connection refused" in page.content
    assert api.status_code == 503 and "catalog is unreachable" in api.json()["detail"]


def test_a_locked_file_answers_503_after_the_retries(tmp_path, settings):
    path = tmp_path / "locked.duckdb"
    holder = subprocess.Popen([sys.executable, "-c", "import duckdb, sys, time; c = duckdb.connect(sys.argv[1]); "
                               "print('held', flush=True); time.sleep(60)", str(path)], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "held"
        settings.PTB_WAREHOUSE = str(path)
        settings.PTB_WAREHOUSE_RETRY_SECONDS = 0.5
        warehouse.reset_migration_cache()
        page = Client().get("/runs/")
    finally:
        holder.kill()
        holder.wait()
    assert page.status_code == 503
    assert b"is unavailable: it stayed locked" in page.content


def test_broker_down_pages_browse_and_queueing_answers_503(use_published, settings):
    from ptbsite.celery import app, broker_available

    with socket_closed_port() as port:
        previous = app.conf.broker_url
        app.conf.broker_url = f"redis://127.0.0.1:{port}/0"
        try:
            started = time.monotonic()
            assert broker_available(timeout=1.0) is False
            assert time.monotonic() - started < 5
            assert Client().get("/").status_code == 200
            assert Client().get("/runs/").status_code == 200
        finally:
            app.conf.broker_url = previous
    # The path a rerun view takes when broker_available() is False (the rerun views live in evaluator/).
    request = RequestFactory().post("/runs/x/rerun")
    response = ServiceUnavailableMiddleware(lambda r: None).process_exception(
        request, BrokerUnavailable("The job queue is unreachable; reruns cannot be queued now."))
    assert response.status_code == 503 and b"reruns cannot be queued now" in response.content


KILLED_WRITER = """
import os, sys, time, django
os.environ["DJANGO_SETTINGS_MODULE"] = "ptbsite.settings"
django.setup()
from traces import services
real = services.insert_records
def slow_insert_records(con, cls, rows, **kw):
    real(con, cls, rows, **kw)
    if cls.TABLE == "evaluations":  # after runs, steps and verdicts, before COMMIT
        print("in transaction", flush=True)
        time.sleep(120)
services.insert_records = slow_insert_records
from ingest.tree import ingest_tree
ingest_tree(root=sys.argv[1])
"""


def test_a_writer_killed_mid_run_leaves_nothing_half_stored(lake, agent_tree, settings):
    victim = next(d for d in agent_tree.runs if d.accuracy is not None)
    one = lake / "one"
    shutil.copytree(agent_tree.root / victim.run_dir, one / victim.run_dir)
    env = {**os.environ, "PTB_WAREHOUSE": settings.PTB_WAREHOUSE, "PTB_DATA_DIR": str(lake)}
    writer = subprocess.Popen([sys.executable, "-c", KILLED_WRITER, str(one)], cwd=ROOT, env=env,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        line = writer.stdout.readline()
        assert line.strip() == "in transaction", writer.stderr.read()
        os.kill(writer.pid, signal.SIGKILL)
    finally:
        writer.wait(timeout=30)
    assert selectors.get_run(_run_id(victim)) is None
    assert _stored_steps(_run_id(victim)) == 0
    assert selectors.evaluations(_run_id(victim)) == []
    report = ingest_tree(root=one)  # the catalog is intact: the run goes in whole afterwards
    assert (report.stored, report.failed) == (1, 0)
    assert _stored_steps(_run_id(victim), "agent") == selectors.get_run(_run_id(victim)).step_count > 0


def test_disk_full_while_storing_one_run(lake, agent_tree, monkeypatch):
    """Simulated: OSError(ENOSPC) raised from inside the run's transaction (after its run and step rows)."""
    from traces import services

    victim = next(d for d in agent_tree.runs if d.steps_planned)
    victim_id = _run_id(victim)
    real = services.insert_records

    def full_disk(con, cls, rows, **kwargs):
        if cls.TABLE == "verdicts" and con.execute("SELECT count(*) FROM runs WHERE id = ?",
                                                   [victim_id]).fetchone()[0]:
            raise OSError(errno.ENOSPC, "No space left on device")
        return real(con, cls, rows, **kwargs)

    monkeypatch.setattr(services, "insert_records", full_disk)
    report = ingest_tree(root=agent_tree.root)
    assert (report.stored, report.failed) == (len(agent_tree.runs) - 1, 1)
    problem = next(p for p in report.problems if "not stored" in p)
    assert victim.run_dir.split("/")[1] in problem and "No space left on device" in problem
    assert selectors.get_run(victim_id) is None and _stored_steps(victim_id) == 0
    for demo in agent_tree.runs:
        if demo is not victim:
            assert selectors.get_run(_run_id(demo)) is not None, demo.run_dir
    monkeypatch.setattr(services, "insert_records", real)
    assert ingest_tree(root=agent_tree.root).stored == 1


class socket_closed_port:
    """A loopback port nothing listens on (bound, then closed), as a context manager yielding the port."""

    def __enter__(self) -> int:
        import socket

        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            return s.getsockname()[1]

    def __exit__(self, *exc) -> None:
        return None
