"""What a per-run read costs with the per-run tables in ingest order and laid out by run (``ptbsite.warehouse.layout``),
side by side in one run, at each warehouse given (issue 24: pages of one run whose cost grows with the runs).

Usage: .venv/bin/python bench/run_layout.py --lake DIR [--lake DIR ...] [--runs 12] [--repeat 7]

Each ``--lake`` is a DuckLake warehouse folder on a SQLite catalog (``catalog.sqlite`` and ``data/``, as
``bench/scale.py`` leaves them: ``lake-k9-x0.05``, ``lake-k90-x0.05``), which is not changed: it is copied into a
temporary folder (the copy's catalog given the copy's data path) and then, on the copy:

1. **ingest order**: steps, monitor and phases rewritten as an ingest leaves them after a compaction, one file whose
   rows are grouped by run in an order unrelated to the run ids (sorted by ``hash(run_id)``; an ingest stores runs
   in the order its readers finish them and the ids are hashes), in row groups of DuckDB's default 122,880 rows;
2. **laid out**: the same copy compacted by ``warehouse.compact()`` (``layout.LAYOUTS``: sorted by run in row groups
   of ``layout.ROW_GROUP_ROWS``, files of consecutive runs).

Timed on each, on one cursor of the project's connection (one DuckDB thread), for ``--runs`` runs spread over the
ids (every n-th of the steps table's runs): the statements of one run a page sends (a steps page's 200 steps with
their text, a run's monitor samples, its phases), one read of 32 runs' steps as the export's read ahead sends it
(``run_id = ANY(?)``), and the anchor ``SELECT 1``. Printed: per statement and lake, the median over the runs of
the minimum CPU ms of ``--repeat`` executions (``time.thread_time``: DuckDB runs the query in the calling thread
with one thread), in both layouts and their ratio; each lake's row groups and data files per table. The rows read
are checked equal in both layouts, as sets (rows tied in a statement's order may come in either order; the bench
raises otherwise).
"""
from __future__ import annotations

import argparse
import os
import shutil
import sqlite3
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "ptbsite.settings")
os.environ["PTB_DUCKDB_THREADS"] = "1"

STATEMENTS = {
    "steps page (200 steps of a run, with text)":
        "SELECT idx, time, elapsed_s, kind, tool, left(input, 2000), left(output, 2000), is_error, tokens_in, "
        "tokens_out, line, suspicious FROM steps WHERE run_id = ? AND trace = 'agent' ORDER BY idx LIMIT 200",
    "monitor samples of a run": "SELECT t_s, gpu_util, gpu_mem_mib FROM monitor WHERE run_id = ? ORDER BY t_s",
    "phases of a run": "SELECT phase, start_s, end_s, step_from, step_to FROM phases WHERE run_id = ? ORDER BY start_s",
    "32 runs' steps (read ahead)":
        "SELECT run_id, idx, kind, length(output) FROM steps WHERE run_id = ANY(?::VARCHAR[]) ORDER BY run_id, idx",
    "anchor: SELECT 1": "SELECT 1",
}
DEFAULT_ROW_GROUP = 122_880  # DuckDB's Parquet row group, rows


def copy_lake(lake: Path, into: Path) -> str:
    """A copy of the warehouse folder ``lake`` under ``into``, its catalog's data path set to the copy; its spec."""
    copy = into / lake.name
    shutil.copytree(lake, copy)
    with sqlite3.connect(copy / "catalog.sqlite") as db:
        db.execute("UPDATE ducklake_metadata SET value = ? WHERE key = 'data_path' AND scope IS NULL",
                   [str(copy / "data") + "/"])
    return f"ducklake:sqlite:{copy / 'catalog.sqlite'}?data={copy / 'data'}"


def ingest_order(spec: str) -> None:
    """Rewrite the layout tables as an ingest leaves them (module docstring, 1)."""
    from ptbsite import warehouse
    from ptbsite.warehouse import layout

    for table in layout.LAYOUTS:
        scattered = layout.Layout(table.table, ("hash(run_id)", *table.sort[1:]), DEFAULT_ROW_GROUP)
        with warehouse.transaction() as con:
            layout.apply(con, scattered, batch_rows=10**12)  # one range: every run in one file


def shape(spec: str) -> str:
    """Row groups and live data files per layout table, e.g. "steps 3 groups/1 file"."""
    from ptbsite import warehouse
    from ptbsite.warehouse import layout

    parts = []
    with warehouse.connect() as con:
        for table in layout.LAYOUTS:
            files = [r[0] for r in con.execute(f"SELECT data_file FROM ducklake_list_files('wh', '{table.table}')")
                     .fetchall()]
            row = con.execute("SELECT count(DISTINCT (file_name, row_group_id)) FROM parquet_metadata(?)",
                              [files]).fetchone() if files else None
            groups = row[0] if row else 0
            parts.append(f"{table.table} {groups} groups/{len(files)} files")
    return ", ".join(parts)


def measure(runs: list[str], repeat: int) -> tuple[dict[str, float], dict[str, list]]:
    """{statement: median over ``runs`` of the min CPU ms of ``repeat`` executions}, and the rows each read."""
    from ptbsite import warehouse

    cost: dict[str, float] = {}
    rows: dict[str, list] = {}
    with warehouse.connect() as con:
        con.execute("BEGIN TRANSACTION")  # one snapshot, as a page's read unit
        for name, sql in STATEMENTS.items():
            per_run = []
            params_of: list[list] = ([[]] if "?" not in sql else
                         [[runs[i:i + 32]] for i in range(0, len(runs), 32)] if "ANY" in sql else [[r] for r in runs])
            for params in params_of:
                con.execute(sql, params).fetchall()  # warm: the files' footers cached
                best = float("inf")
                for _ in range(repeat):
                    started = time.thread_time()
                    got = con.execute(sql, params).fetchall()
                    best = min(best, 1000 * (time.thread_time() - started))
                per_run.append(best)
                rows.setdefault(name, []).append(sorted(got, key=repr))  # rows equal in a tie's order apart
            cost[name] = statistics.median(per_run)
        con.execute("ROLLBACK")
    return cost, rows


def main() -> None:
    parser = argparse.ArgumentParser(description="per-run reads, ingest order against laid out (module docstring)")
    parser.add_argument("--lake", type=Path, action="append", required=True)
    parser.add_argument("--runs", type=int, default=12)
    parser.add_argument("--repeat", type=int, default=7)
    args = parser.parse_args()
    import django

    django.setup()
    from django.conf import settings

    from ptbsite import warehouse
    from ptbsite.warehouse import connections

    results = {}
    with tempfile.TemporaryDirectory(prefix="run-layout-") as scratch:
        for lake in args.lake:
            spec = copy_lake(lake, Path(scratch))
            settings.PTB_WAREHOUSE = spec
            warehouse.reset_migration_cache()
            with warehouse.connect() as con:
                ids = [r[0] for r in con.execute("SELECT DISTINCT run_id FROM steps ORDER BY run_id").fetchall()]
            step = max(1, len(ids) // max(1, args.runs))
            runs = ids[::step][:max(args.runs, 32)]
            ingest_order(spec)
            before_shape = shape(spec)
            before, rows_before = measure(runs, args.repeat)
            done = warehouse.compact()
            after_shape = shape(spec)
            after, rows_after = measure(runs, args.repeat)
            if rows_before != rows_after:
                raise SystemExit(f"{lake}: the rows read differ between the layouts")
            results[lake.name] = (len(ids), before, after, before_shape, after_shape, done.rows_laid_out)
            connections.close_connections()
    for name, (n, _, _, before_shape, after_shape, laid) in results.items():
        print(f"{name}: {n} runs with steps; ingest order: {before_shape}; laid out ({laid:,} rows rewritten): "
              f"{after_shape}")
    print("\nmedian over the runs of the min CPU ms of each statement (one DuckDB thread)\n")
    print("| statement | lake | ingest order | laid out | laid out / ingest order |\n|---|---|---:|---:|---:|")
    for statement in STATEMENTS:
        for name, (_, before, after, *_) in results.items():
            print(f"| {statement} | {name} | {before[statement]:.1f} | {after[statement]:.1f} | "
                  f"{after[statement] / before[statement]:.2f} |")
    if len(results) == 2:
        (small, (_, sb, sa, *_)), (large, (_, gb, ga, *_)) = results.items()
        print(f"\n| statement | {large} / {small}, ingest order | laid out |\n|---|---:|---:|")
        for statement in STATEMENTS:
            print(f"| {statement} | {gb[statement] / sb[statement]:.2f} | {ga[statement] / sa[statement]:.2f} |")


if __name__ == "__main__":
    main()
