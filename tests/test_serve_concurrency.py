"""The production server with several worker processes while an ingest and a stream of evaluation results write
to the same DuckLake warehouse (SQLite catalog): no request fails, everything is stored exactly once, and a run
is visible with all its steps or not at all."""
from __future__ import annotations

import json
import os
import random
import shutil
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from collections import Counter
from pathlib import Path

import pytest

from ptbsite import warehouse
from traces import layout
from traces.services import add_evaluation

ROOT = Path(__file__).resolve().parent.parent
RESULTS = 30      # evaluation results streamed while the ingest runs
READ_SECONDS = 8  # readers go on at least this long after both writers finished (bounded by DEADLINE)
DEADLINE = 240


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _agent_tree(root: Path, seed: int):
    """A generated tree of 12 agent runs (the baseline dirs, identical in every tree, removed)."""
    from demo.tree import make_demo_results

    report = make_demo_results(root=root, runs=12, seed=seed, long_run=False)
    for path in root.iterdir():
        if path.is_dir() and path.name.startswith("baseline"):
            shutil.rmtree(path)
    return report, {layout.run_id(*r.run_dir.split("/")) for r in report.runs}


def _get(base: str, path: str) -> tuple[int, bytes]:
    try:
        with urllib.request.urlopen(base + path, timeout=60) as response:
            return response.status, response.read()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read()


def _manage(env: dict, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "manage.py", *args], cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=DEADLINE)


@pytest.fixture
def lake_env(tmp_path: Path, settings):
    """Environment of the server and ingest processes: their own data dir, a DuckLake (SQLite catalog) warehouse."""
    spec = f"ducklake:sqlite:{tmp_path / 'lake' / 'catalog.sqlite'}?data={tmp_path / 'lake' / 'data'}"
    env = {**os.environ, "PTB_DATA_DIR": str(tmp_path), "PTB_WAREHOUSE": spec, "DJANGO_SETTINGS_MODULE": "ptbsite.settings",
           "DJANGO_STATIC_ROOT": str(tmp_path / "static"), "PYTHONUNBUFFERED": "1"}
    env.pop("DATABASE_URL", None)
    settings.PTB_WAREHOUSE = spec
    warehouse.reset_migration_cache()
    return env


def test_three_workers_serve_while_runs_and_results_arrive(lake_env, tmp_path):
    first, first_ids = _agent_tree(tmp_path / "first", seed=1)
    _, second_ids = _agent_tree(tmp_path / "second", seed=2)
    for args in (("migrate", "--noinput", "-v0"), ("import_published",), ("ingest", str(first.root), "--quiet")):
        done = _manage(lake_env, *args)
        assert done.returncode == 0, done.stderr
    scored = sorted(layout.run_id(*r.run_dir.split("/")) for r in first.runs if r.accuracy is not None)

    port = _free_port()
    base = f"http://127.0.0.1:{port}"
    server = subprocess.Popen([sys.executable, "manage.py", "serve", "--workers", "3", "--bind", f"127.0.0.1:{port}"],
                              cwd=ROOT, env=lake_env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        started = time.monotonic()
        while True:
            assert server.poll() is None, server.stdout.read()
            try:
                if _get(base, "/api/runs?limit=1")[0] == 200:
                    break
            except OSError:
                pass
            assert time.monotonic() - started < 60, "the server did not start"
            time.sleep(0.3)

        failures: list[str] = []
        checked_runs: Counter = Counter()
        requests = Counter()
        writers_done = threading.Event()

        def expect(path: str, status: int = 200) -> bytes:
            code, body = _get(base, path)
            requests[path.split("?")[0].rstrip("/").rsplit("/", 1)[-1] if "/runs/" in path else path] += 1
            if code != status:
                failures.append(f"{path}: {code} {body[:300]!r}")
            return body

        def reader(seed: int) -> None:
            rng = random.Random(seed)
            stop_at = None
            while time.monotonic() - started < DEADLINE:
                if writers_done.is_set():
                    stop_at = stop_at or time.monotonic() + READ_SECONDS
                    if time.monotonic() > stop_at:
                        return
                expect("/")
                expect("/runs/")
                listed = json.loads(expect("/api/runs?limit=500") or b'{"runs": []}')["runs"]
                expect("/api/runs/no-such-run", 404)
                if not listed:
                    continue
                run_id = rng.choice(listed)["id"]
                detail = json.loads(expect(f"/api/runs/{run_id}"))
                expect(f"/runs/{run_id}/")
                steps, after, total = 0, -1, None
                while after is not None:
                    page = json.loads(expect(f"/api/runs/{run_id}/steps?after={after}&limit=500"))
                    steps += len(page["steps"])
                    total, after = page["total"], page["next"]
                expect(f"/runs/{run_id}/steps?after={max(detail['step_count'] - 20, -1)}")
                if not steps == total == detail["step_count"]:
                    failures.append(f"run {run_id}: step_count {detail['step_count']}, {steps} steps served")
                checked_runs[run_id] += 1

        readers = [threading.Thread(target=reader, args=(i,)) for i in range(3)]
        for thread in readers:
            thread.start()
        ingest = subprocess.Popen([sys.executable, "manage.py", "ingest", str(tmp_path / "second"), "--quiet"],
                                  cwd=ROOT, env=lake_env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        rng = random.Random(0)
        for i in range(RESULTS):
            add_evaluation(run_id=rng.choice(scored), accuracy=rng.random(), metrics={"accuracy": 0.5},
                           provenance={"stream": i}, evaluation_id=f"stream-{i}")
        out, err = ingest.communicate(timeout=DEADLINE)
        writers_done.set()
        for thread in readers:
            thread.join()
        assert ingest.returncode == 0, err
        assert ", 0 failed" in out, out + err
    finally:
        server.terminate()
        server.wait(timeout=30)

    assert not failures, failures[:10]
    assert sum(requests.values()) > 50 and len(checked_runs) > 5, (requests, checked_runs)
    with warehouse.connect() as con:
        ids = Counter(r[0] for r in con.execute("SELECT id FROM runs").fetchall())
        results = Counter(r[0] for r in con.execute(
            "SELECT id FROM evaluations WHERE id LIKE 'stream-%'").fetchall())
    assert set(ids) == first_ids | second_ids and set(ids.values()) == {1}
    assert results == Counter(f"stream-{i}" for i in range(RESULTS))
