"""``manage.py serve`` on a host of its own (a fresh data folder, a DuckLake warehouse another host built) starts,
serves, and stops cleanly: the site's database is migrated by ``serve`` itself (the stale-job reaper beside the
server died on the missing ``evaluator_rerunjob`` table before), and no worker aborts on the way out (each worker
that had served a page was "sent SIGABRT" by its own DuckDB teardown before ``ptbsite.gunicorn_hooks``). Started
again with the same code, it answers the pages the first start computed from the page cache (before, each start
bumped the warehouse version, so every restart began cold: ``ptbsite.codeprint``)."""
from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DEADLINE = 180


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _env(data: Path, spec: str) -> dict[str, str]:
    env = {**os.environ, "PTB_DATA_DIR": str(data), "PTB_WAREHOUSE": spec, "DJANGO_SETTINGS_MODULE": "ptbsite.settings",
           "DJANGO_STATIC_ROOT": str(data / "static"), "PYTHONUNBUFFERED": "1"}
    env.pop("DATABASE_URL", None)
    return env


def _manage(env: dict[str, str], *args: str) -> None:
    done = subprocess.run([sys.executable, "manage.py", *args], cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=DEADLINE)
    assert done.returncode == 0, done.stderr


def test_a_second_host_serves_a_shared_warehouse_and_stops_without_a_crash(tmp_path: Path):
    from demo.tree import make_demo_results

    spec = f"ducklake:sqlite:{tmp_path / 'lake' / 'catalog.sqlite'}?data={tmp_path / 'lake' / 'data'}"
    first = _env(tmp_path / "host1", spec)
    tree = make_demo_results(root=tmp_path / "tree", runs=6, seed=3, long_run=False)
    _manage(first, "migrate", "--noinput", "-v0")
    _manage(first, "ingest", str(tree.root), "--quiet")

    second = tmp_path / "host2"  # nothing here: no site database, no cache, no static files
    first_log, first_states = _serve(second, spec, tmp_path / "serve-1.log", ("/runs/?latest=1", "/judges/"))
    assert first_states["/runs/?latest=1"][0] == "miss", first_states  # not among the pages warmed at start
    assert first_states["/"][0] == "hit", first_states  # warmed by serve, under the workers' settings and keys
    assert (second / "django.sqlite3").is_file(), sorted(p.name for p in second.iterdir())
    _, again = _serve(second, spec, tmp_path / "serve-2.log", ("/runs/?latest=1", "/judges/"))
    assert again["/runs/?latest=1"][0] == "hit", again  # computed by the first start, same code: still cached
    assert again["/judges/"][0] == "hit", again


def _serve(data: Path, spec: str, log: Path, pages: tuple[str, ...]) -> tuple[str, dict[str, list[str]]]:
    """Start ``serve --workers 2`` on ``data``, GET ``pages`` three times each and the usual public pages, stop it with
    SIGTERM; assert it exited 0 with nothing crashed in its log. Returns (log text, {page: X-Page-Cache states})."""
    port = _free_port()
    states: dict[str, list[str]] = {}
    with log.open("w") as out:
        server = subprocess.Popen([sys.executable, "manage.py", "serve", "--workers", "2", "--bind", f"127.0.0.1:{port}",
                                   "--reap-every", "1"], cwd=ROOT, env=_env(data, spec), stdout=out,
                                  stderr=subprocess.STDOUT)
    try:
        base = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + DEADLINE
        while True:
            try:
                with urllib.request.urlopen(base + "/api/runs?limit=1", timeout=30) as response:
                    assert response.status == 200
                break
            except OSError:
                assert server.poll() is None, log.read_text()
                assert time.monotonic() < deadline, log.read_text()
                time.sleep(0.5)
        for path in (*pages, "/", "/runs/", "/analysis/", "/api/leaderboard"):
            for _ in range(3):  # several requests, so that both workers are likely to have served one
                with urllib.request.urlopen(base + path, timeout=60) as response:
                    assert response.status == 200, path
                    states.setdefault(path, []).append(response.headers.get("X-Page-Cache", ""))
        time.sleep(2.5)  # the reaper has run (every 1 s) against the site's database of this host
    finally:
        server.send_signal(signal.SIGTERM)
        code = server.wait(timeout=60)
    text = log.read_text()
    assert code == 0, text
    for sign in ("Traceback", "no such table", "SIGABRT", "SIGSEGV", "terminate called", "exited with code"):
        assert sign not in text, text
    assert "Serving on" in text
    return text, states
