"""The process-wide DuckDB settings every warehouse instance gets (ptbsite.warehouse.connections._configure):
``PTB_DUCKDB_THREADS`` and ``PTB_DUCKDB_ALLOCATOR_BACKGROUND_THREADS`` (DuckDB's ``allocator_background_threads``),
read back from DuckDB on a DuckLake and a plain-file warehouse; and what the allocator setting is for: the pages a
query freed go back to the system while the process is idle (issue 24, bench/RESULTS.md). A DuckLake instance over a
local data folder has DuckDB's external file cache off (the files are in the system's page cache), one over object
storage keeps it (connections._attach)."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from ptbsite import warehouse

ROOT = Path(__file__).resolve().parent.parent


def _settings_seen() -> tuple[bool, int]:
    with warehouse.connect() as con:
        row = con.execute("SELECT current_setting('allocator_background_threads'), "
                          "current_setting('threads')").fetchone()
    assert row is not None
    return row[0], row[1]


@pytest.mark.parametrize("on", [True, False])
def test_a_ducklake_instance_gets_the_settings(tmp_path: Path, settings, on: bool) -> None:
    settings.PTB_WAREHOUSE = f"ducklake:sqlite:{tmp_path / 'catalog.sqlite'}?data={tmp_path / 'data'}"
    settings.PTB_DUCKDB_THREADS = 1
    settings.PTB_DUCKDB_ALLOCATOR_BACKGROUND_THREADS = on
    try:
        assert _settings_seen() == (on, 1)
    finally:
        warehouse.close_connections()


def test_a_local_ducklake_instance_does_without_the_external_file_cache(tmp_path: Path, settings) -> None:
    settings.PTB_WAREHOUSE = f"ducklake:sqlite:{tmp_path / 'catalog.sqlite'}?data={tmp_path / 'data'}"
    try:
        with warehouse.connect() as con:
            assert con.execute("SELECT current_setting('enable_external_file_cache')").fetchone() == (False,)
    finally:
        warehouse.close_connections()


def test_a_plain_file_instance_gets_the_settings(fresh_warehouse: Path, settings) -> None:
    # One in-memory instance per process holds every plain file (connections._file_cursor): made with the defaults.
    assert settings.PTB_DUCKDB_ALLOCATOR_BACKGROUND_THREADS
    assert _settings_seen()[0] is True


# In a process of its own (the allocator is the process's): a query that allocates ~75 MB in DuckDB and frees it,
# through the warehouse's own connection, then RssAnon polled for up to SECONDS.
CODE = """
import os, sys, time
import django
django.setup()
from ptbsite import warehouse
SECONDS = float(sys.argv[1])
def anon():
    return [int(l.split()[1]) / 1024 for l in open("/proc/self/status") if l.startswith("RssAnon:")][0]
with warehouse.connect() as con:
    before = anon()
    con.execute("SELECT count(DISTINCT s) FROM (SELECT repeat('x', 200) || i::VARCHAR AS s FROM range(300000) t(i))").fetchall()
    peak = anon()
deadline = time.monotonic() + SECONDS
while time.monotonic() < deadline and anon() > before + 10:
    time.sleep(0.1)
print(round(before), round(peak), round(anon()))
"""


@pytest.mark.parametrize("on", ["1", "0"])
def test_freed_pages_go_back_while_idle(tmp_path: Path, on: str) -> None:
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "ptbsite.settings", "PTB_DATA_DIR": str(tmp_path),
           "PTB_WAREHOUSE": str(tmp_path / "w.duckdb"), "PTB_DUCKDB_THREADS": "1",
           "PTB_DUCKDB_ALLOCATOR_BACKGROUND_THREADS": on}
    out = subprocess.run([sys.executable, "-c", CODE, "6" if on == "1" else "3"], env=env, cwd=ROOT,
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    before, peak, idle = map(int, out.stdout.split()[-3:])
    assert peak - before > 40, (before, peak)  # the query did allocate in DuckDB
    if on == "1":
        assert idle - before <= 10, (before, peak, idle)  # given back within seconds
    else:
        assert peak - idle < 10, (before, peak, idle)  # DuckDB's default: kept
