"""Where a one-run re-export's warehouse statements go, by caller (issue 24: "after one run changes, the
re-export costs <= 2x that run's own share"), on DuckLake or on a plain DuckDB file of the same rows.

    .venv/bin/python bench/export_statements.py --warehouse SPEC|FILE --site DIR [--out DIR]

``--warehouse`` and ``--site`` as ``bench/export_one_run.py`` takes them (a DuckLake spec
``ducklake:sqlite:CATALOG?data=DIR`` whose catalog is copied, or a DuckDB file, copied; a site exported from it
with this code), copied into ``--out``. Exports with nothing changed twice, changes the two runs of median step
count as ``export_one_run.py`` does (one agent step's text and the run's content hash) and exports after each; the
second (warm) export is traced: every statement run on a cursor ``ptbsite.warehouse.connections._open`` gave (the
seam its docstring names for configuring the engine) is timed in the calling thread's CPU (``time.thread_time``:
execute and fetch), with the first function of this project outside ``ptbsite/warehouse`` above it on the stack.
Prints the warm export's CPU (this process; the pagefind binary is a child and not in it), the statements' count
and CPU, then the CPU by caller and the 25 dearest statements. Run it on the DuckLake warehouse and on a plain
DuckDB file of the same tree (``ingest_tree`` into ``PTB_WAREHOUSE=FILE.duckdb``) to see DuckLake's catalog work
per table scanned beside the same statements without it.
"""
from __future__ import annotations

import argparse
import collections
import os
import sys
import time
import traceback
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "ptbsite.settings")
from benchlib import change_run, copy_for_export, median_runs  # noqa: E402 (bench/benchlib.py)

OUT = Path(__file__).resolve().parent / "out" / "export_statements"

LOG: list[list[Any]] = []  # [CPU s, statement, caller] of the traced export
TRACING = [False]


class TimedCursor:
    """A DuckDB cursor whose ``execute`` and fetches are timed into :data:`LOG` while :data:`TRACING`."""

    def __init__(self, cursor: Any) -> None:
        self._cursor = cursor
        self._last: list[Any] | None = None

    def execute(self, sql: str, *args: Any, **kwargs: Any) -> TimedCursor:
        """Run ``sql`` on the cursor; logged with its caller (module docstring)."""
        started = time.thread_time()
        self._cursor.execute(sql, *args, **kwargs)
        spent = time.thread_time() - started
        if TRACING[0]:
            ours = [f for f in traceback.extract_stack(limit=16)[:-1]
                    if str(ROOT) in f.filename and "ptbsite/warehouse" not in f.filename]
            caller = f"{Path(ours[-1].filename).relative_to(ROOT)}:{ours[-1].name}" if ours else "?"
            self._last = [spent, " ".join(sql.split())[:100], caller]
            LOG.append(self._last)
        return self

    def _fetch(self, name: str, *args: Any) -> Any:
        started = time.thread_time()
        result = getattr(self._cursor, name)(*args)
        if TRACING[0] and self._last is not None:
            self._last[0] += time.thread_time() - started
        return result

    def fetchall(self) -> Any:
        """The cursor's ``fetchall``, timed with the statement."""
        return self._fetch("fetchall")

    def fetchone(self) -> Any:
        """The cursor's ``fetchone``, timed with the statement."""
        return self._fetch("fetchone")

    def fetchmany(self, *args: Any) -> Any:
        """The cursor's ``fetchmany``, timed with the statement."""
        return self._fetch("fetchmany", *args)

    def to_arrow_table(self, *args: Any) -> Any:
        """The cursor's ``to_arrow_table``, timed with the statement."""
        return self._fetch("to_arrow_table", *args)

    def fetch_arrow_table(self, *args: Any) -> Any:
        """The cursor's ``fetch_arrow_table``, timed with the statement."""
        return self._fetch("fetch_arrow_table", *args)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._cursor, name)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--warehouse", required=True, help="ducklake:sqlite:CATALOG?data=DIR or a DuckDB file")
    parser.add_argument("--site", type=Path, required=True, help="a site exported from it with this code")
    parser.add_argument("--out", type=Path, default=OUT, help="work folder (emptied first)")
    args = parser.parse_args()
    site = copy_for_export(args.warehouse, args.site, args.out)
    import django

    django.setup()
    from export.exporter import export_site
    from ptbsite import warehouse
    from ptbsite.warehouse import connections

    opened = connections._open

    def timed_open(text: str) -> Any:
        cursor = opened(text)  # an idle cursor handed out again is already wrapped
        return cursor if isinstance(cursor, TimedCursor) else TimedCursor(cursor)

    connections._open = timed_open  # the seam _open's docstring names
    for _ in (1, 2):
        report = export_site(site)
        if report.runs_written or report.site_pages:
            sys.exit(f"the site in {args.site} was not exported from this warehouse with this code: {report}")
    with warehouse.connect() as con:
        runs = median_runs(con)
    spent = 0.0
    for n, run_id in enumerate(runs):
        with warehouse.connect() as con:
            change_run(con, run_id, f"statements-{n}-{time.time_ns()}")
        LOG.clear()
        TRACING[0] = n == 1
        started = time.process_time()
        export_site(site)
        spent = time.process_time() - started
        TRACING[0] = False
    print(f"{os.environ['PTB_WAREHOUSE']}: warm one-run export {spent:.3f} CPU s (this process); {len(LOG)} "
          f"statements, {sum(entry[0] for entry in LOG):.3f} CPU s in them")
    by_caller: dict[str, list[float]] = collections.defaultdict(lambda: [0, 0.0])
    for cpu_s, _, caller in LOG:
        by_caller[caller][0] += 1
        by_caller[caller][1] += cpu_s
    print("| caller | statements | CPU ms |\n|---|---:|---:|")
    for caller, (count, cpu_s) in sorted(by_caller.items(), key=lambda item: -item[1][1]):
        print(f"| {caller} | {count:.0f} | {cpu_s * 1000:.1f} |")
    print("\nthe dearest statements, CPU ms:")
    for cpu_s, sql, caller in sorted(LOG, key=lambda entry: -entry[0])[:25]:
        print(f"{cpu_s * 1000:6.1f}  {caller:48s} {sql}")


if __name__ == "__main__":
    main()
