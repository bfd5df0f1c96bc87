"""One writer at a time on a SQLite catalog (ptbsite.warehouse.writers): writers in other processes queue instead
of failing each other's commits, a writer held up too long gets WarehouseUnavailable naming the lock, and a
killed holder's lock is released by the kernel."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from ptbsite import warehouse
from ptbsite.warehouse import writers

ROOT = Path(__file__).resolve().parent.parent

# A writer process: N units, each inserting one row and holding its transaction open HOLD seconds before COMMIT;
# prints how many times its units ran (a unit redone after a failed commit runs twice).
WRITER = """
import sys, time
import django
django.setup()
from ptbsite import warehouse
name, count, hold, pause = sys.argv[1], int(sys.argv[2]), float(sys.argv[3]), float(sys.argv[4])
ran = 0
for i in range(count):
    def work(con, i=i):
        global ran
        ran += 1
        con.execute("INSERT INTO writer_probe VALUES (?, ?)", [name, i])
        time.sleep(hold)
    warehouse.run_in_transaction(work)
    time.sleep(pause)
print(ran, flush=True)
"""

# Takes the writer lock, says so, and holds it until killed.
HOLDER = """
import time
import django
django.setup()
from ptbsite.warehouse import writers, warehouse_spec
with writers.one_writer(warehouse_spec()):
    print("held", flush=True)
    time.sleep(600)
"""


@pytest.fixture
def lake_env(tmp_path: Path, settings) -> dict[str, str]:
    """A DuckLake warehouse (SQLite catalog) in the test's folder with a ``writer_probe`` table; the environment
    of processes writing to it."""
    spec = f"ducklake:sqlite:{tmp_path / 'catalog.sqlite'}?data={tmp_path / 'data'}"
    settings.PTB_WAREHOUSE = spec
    warehouse.reset_migration_cache()
    warehouse.run_in_transaction(lambda con: con.execute("CREATE TABLE writer_probe (writer VARCHAR, i INTEGER)"))
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "ptbsite.settings", "PTB_WAREHOUSE": spec,
           "PTB_DATA_DIR": str(tmp_path), "PTB_WAREHOUSE_RETRY_SECONDS": "30"}
    env.pop("DATABASE_URL", None)
    return env


def _start(env: dict[str, str], script: str, *args: str) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-c", script, *args], cwd=ROOT, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)


def test_writers_in_two_processes_queue_and_no_unit_runs_twice(lake_env):
    # A long unit (0.4 s between BEGIN and COMMIT) and a stream of short ones started while it is open: without the
    # lock, every short commit inside a long unit fails the long one's commit ("database is locked") and it runs
    # again (checked against the code before the lock: the long writer's units ran more than 4 times).
    long = _start(lake_env, WRITER, "long", "4", "0.4", "0.01")
    short = _start(lake_env, WRITER, "short", "30", "0.01", "0.03")
    outputs = {name: process.communicate(timeout=120) for name, process in (("long", long), ("short", short))}
    for name, process in (("long", long), ("short", short)):
        assert process.returncode == 0, outputs[name][1]
    assert int(outputs["long"][0]) == 4, outputs["long"]
    assert int(outputs["short"][0]) == 30, outputs["short"]
    with warehouse.connect() as con:
        stored = con.execute("SELECT writer, count(*), count(DISTINCT i) FROM writer_probe GROUP BY writer "
                             "ORDER BY writer").fetchall()
    assert stored == [("long", 4, 4), ("short", 30, 30)]


def test_a_writer_held_up_too_long_is_told_which_lock_and_a_killed_holder_frees_it(lake_env, settings):
    holder = _start(lake_env, HOLDER)
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        settings.PTB_WAREHOUSE_RETRY_SECONDS = 0.5
        started = time.monotonic()
        with pytest.raises(warehouse.WarehouseUnavailable) as caught:
            warehouse.run_in_transaction(lambda con: con.execute("INSERT INTO writer_probe VALUES ('late', 0)"))
        assert 0.5 <= time.monotonic() - started < 5
        path = writers.lock_path(warehouse.warehouse_spec())
        assert path is not None and path.endswith("catalog.sqlite.writer-lock")
        assert f"another writer held {path} for 0.5 s" in str(caught.value)
    finally:
        os.kill(holder.pid, signal.SIGKILL)
        holder.wait(timeout=30)
    settings.PTB_WAREHOUSE_RETRY_SECONDS = 10
    warehouse.run_in_transaction(lambda con: con.execute("INSERT INTO writer_probe VALUES ('after', 1)"))
    with warehouse.connect() as con:
        assert con.execute("SELECT writer, i FROM writer_probe").fetchall() == [("after", 1)]


def test_only_a_sqlite_catalog_is_locked_here(tmp_path):
    assert writers.lock_path(f"ducklake:sqlite:{tmp_path / 'c.sqlite'}?data={tmp_path / 'd'}") == \
        f"{tmp_path / 'c.sqlite'}.writer-lock"
    assert writers.lock_path(str(tmp_path / "warehouse.duckdb")) is None
    assert writers.lock_path(f"ducklake:postgres:dbname=ptb?data={tmp_path / 'd'}") is None
