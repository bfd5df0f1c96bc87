"""What one DuckLake statement costs, planned anew (as every ``execute`` of DuckDB's Python API plans it) and
prepared once, side by side in one run (issue 24: the export's and the pages' fixed cost per statement).

Usage: .venv/bin/python bench/statement_cost.py --warehouse SPEC [--repeat 50]

Printed, CPU ms per statement (``time.process_time``, mean of ``--repeat`` after one warm-up), on one cursor of the
project's own connection (``warehouse.connect``: DuckLake's extensions loaded offline, one DuckDB thread):

- the anchor, ``SELECT 1`` (no table);
- ``SELECT 1 FROM runs WHERE id = ?`` with a parameter, outside a transaction (autocommit) and inside one
  (``BEGIN`` ... ``ROLLBACK``, as ``warehouse.snapshot`` reads);
- the same statement ``PREPARE``d once and run by ``EXECUTE`` with the id as a literal, both ways, with a
  different existing id each time and with one id that matches no run (which DuckLake answers from its files'
  statistics without reading them);
- on DuckLake, a statement over ``runs`` and one over ``steps`` inside the transaction beside the same over
  ``read_parquet`` of the table's live files (``ducklake_list_files``) with the same filter: DuckLake's catalog
  work per table scanned (issue 24's one-run re-export);
- the run read (``traces.selectors.get_run``'s one statement over runs, methods, evaluations, verdicts and
  overrides, its SQL captured from ``fetch_dicts``) both ways, inside a transaction;
- each figure's ratio to the anchor.

Then a check, on a scratch DuckLake warehouse in a temporary folder (``migrate``d): a statement prepared before
rows are committed by another cursor counts them at its next ``EXECUTE`` (a prepared statement reads the latest
snapshot, inlined rows and Parquet files alike). It raises if not.
"""
from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "ptbsite.settings")
os.environ["PTB_DUCKDB_THREADS"] = "1"


def per_call(fn: Callable[[int], object], repeat: int) -> float:
    """Mean CPU ms of ``fn(i)`` over ``repeat`` calls, after one warm-up call."""
    fn(0)
    started = time.process_time()
    for i in range(repeat):
        fn(i)
    return 1000 * (time.process_time() - started) / repeat


def literal(text: str) -> str:
    """``text`` as a SQL string literal (DuckDB: quotes doubled, no backslash escapes)."""
    return "'" + text.replace("'", "''") + "'"


def main() -> None:
    parser = argparse.ArgumentParser(description="a DuckLake statement planned anew and prepared (module docstring)")
    parser.add_argument("--warehouse", required=True, help="a PTB_WAREHOUSE spec (e.g. ducklake:sqlite:...?data=...)")
    parser.add_argument("--repeat", type=int, default=50)
    args = parser.parse_args()
    os.environ["PTB_WAREHOUSE"] = args.warehouse
    import django

    django.setup()
    from django.conf import settings

    from ptbsite import warehouse
    from traces import selectors
    from traces.selectors import runs as run_selectors

    with warehouse.connect() as con:
        ids = [row[0] for row in con.execute("SELECT id FROM runs ORDER BY id LIMIT 40").fetchall()]
    assert ids, "the warehouse has no runs"
    captured: list[str] = []
    fetch = run_selectors.fetch_dicts

    def capture(con, sql, params=()):
        captured.append(sql)
        return fetch(con, sql, params)

    run_selectors.fetch_dicts = capture
    try:
        selectors.get_run(ids[0])
    finally:
        run_selectors.fetch_dicts = fetch
    run_sql = captured[-1]
    small = "SELECT 1 FROM runs WHERE id = ?"
    rows: list[tuple[str, float]] = []
    with warehouse.connect() as con:
        def run(sql: str, params: list | None = None) -> None:
            con.execute(sql, params or []).fetchall()

        rows.append(("anchor: SELECT 1", per_call(lambda i: run("SELECT 1"), args.repeat)))
        con.execute(f"PREPARE small AS {small.replace('?', '$1')}")
        con.execute(f"PREPARE whole AS {run_sql.replace('?', '$1')}")
        for where in ("autocommit", "in a transaction"):
            if where != "autocommit":
                con.execute("BEGIN")
            rows.append((f"`{small}`, {where}",
                         per_call(lambda i: run(small, [ids[i % len(ids)]]), args.repeat)))
            rows.append((f"the same prepared, EXECUTE, {where}",
                         per_call(lambda i: run(f"EXECUTE small({literal(ids[i % len(ids)])})"), args.repeat)))
            rows.append((f"the same prepared, EXECUTE, an id of no run, {where}",
                         per_call(lambda i: run(f"EXECUTE small({literal('no such run')})"), args.repeat)))
        if warehouse.ALIAS in {r[0] for r in con.execute("SELECT database_name FROM duckdb_databases()").fetchall()}:
            # The same scans without DuckLake's catalog work: read_parquet of the table's live files (DuckLake's
            # own list of them), the same filter. (Rows inlined in the catalog or deleted are not in these files:
            # a compacted warehouse holds neither.)
            for table, where_sql in (("runs", "SELECT 1 FROM {} WHERE id = ?"),
                                     ("steps", "SELECT count(*) FROM {} WHERE run_id = ?")):
                files = [r[0] for r in con.execute(
                    f"SELECT data_file FROM ducklake_list_files('{warehouse.ALIAS}', '{table}')").fetchall()]
                rows.append((f"`{where_sql.format(table)}`, in a transaction",
                             per_call(lambda i: run(where_sql.format(table), [ids[i % len(ids)]]), args.repeat)))
                rows.append((f"the same over `read_parquet` of its {len(files)} live files (no catalog)",
                             per_call(lambda i: run(where_sql.format(f"read_parquet({files!r})"),
                                                    [ids[i % len(ids)]]), args.repeat)))
        rows.append(("get_run's statement, in a transaction",
                     per_call(lambda i: run(run_sql, [ids[i % len(ids)]]), max(5, args.repeat // 5))))
        rows.append(("the same prepared, EXECUTE, in a transaction",
                     per_call(lambda i: run(f"EXECUTE whole({literal(ids[i % len(ids)])})"), max(5, args.repeat // 5))))
        con.execute("ROLLBACK")
        con.execute("DEALLOCATE small")
        con.execute("DEALLOCATE whole")
    anchor = rows[0][1]
    print(f"warehouse {args.warehouse}; CPU ms per statement, mean of {args.repeat} (get_run's: of "
          f"{max(5, args.repeat // 5)}), one DuckDB thread\n")
    print("| statement | CPU ms | x anchor |\n|---|---:|---:|")
    for name, ms in rows:
        print(f"| {name} | {ms:.2f} | {ms / anchor:.1f} |")

    with tempfile.TemporaryDirectory() as scratch:
        settings.PTB_WAREHOUSE = f"ducklake:sqlite:{scratch}/catalog.sqlite?data={scratch}/data"
        warehouse.reset_migration_cache()
        with warehouse.transaction() as con:
            warehouse.migrate(con)
        count = "SELECT count(*) FROM phases WHERE run_id = 'a'"
        with warehouse.connect() as reader:
            reader.execute(f"PREPARE counted AS {count}")
            def counted() -> int:
                row = reader.execute("EXECUTE counted").fetchone()
                assert row is not None
                return int(row[0])

            seen = [counted()]
            for rows_added in (1, 5000):  # inlined, then written to a Parquet file
                with warehouse.transaction() as writer:
                    writer.execute("INSERT INTO phases SELECT 'a', 'train', 0, 1, 0, 1 FROM range(?)", [rows_added])
                seen.append(counted())
            reader.execute("DEALLOCATE counted")
        if seen != [0, 1, 5001]:
            raise SystemExit(f"a prepared statement did not see later commits: counted {seen}, expected [0, 1, 5001]")
        print(f"\nprepared before two commits (1 row, then 5,000), it counted {seen}: it reads the latest snapshot")


if __name__ == "__main__":
    main()
