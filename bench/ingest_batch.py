"""Batched ingest against one run per transaction, side by side in one run (issue 24: the per-run fixed cost).

Usage: .venv/bin/python bench/ingest_batch.py [--runs 200] [--seed 7] [--kind ducklake|file] [--work DIR]

One generated tree (``make_demo_results --runs R --seed S --no-long-run``), ingested by fresh ``manage.py ingest
ROOT --quiet`` processes into fresh warehouses (DuckLake with a SQLite catalog by default, what ``make serve``
uses), in turn: ``PTB_INGEST_BATCH_RUNS=1`` (one transaction per run: the ingest before batching) and the default
(32 runs a transaction, ``traces.services.write_runs``); and the floor, the ingest of an empty tree (start-up:
interpreter, Django, duckdb and pyarrow, the warehouse opened). Each process's CPU seconds (user + system, its
reaped reading processes included: ``os.wait4``) beside its wall time; the machine is shared, so CPU is the figure
to read. Printed: per ingest, CPU s and wall s; CPU s per run above the floor; the difference between the two per
run, which is the fixed cost per run that batching removed.
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))
import ingest_process as ingest_bench  # noqa: E402 (bench/ingest_process.py: its fresh-warehouse and timed-ingest helpers)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=200)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--kind", choices=("ducklake", "file"), default="ducklake")
    parser.add_argument("--work", type=Path)
    args = parser.parse_args()
    ingest_bench.KIND = args.kind
    work = args.work or Path(tempfile.mkdtemp(prefix="ingest-batch-"))
    tree = work / "tree"
    if not tree.exists():
        subprocess.run([sys.executable, "manage.py", "make_demo_results", str(tree), "--runs", str(args.runs),
                        "--seed", str(args.seed), "--no-long-run"], cwd=ROOT, check=True, stdout=subprocess.DEVNULL)
    empty = work / "empty"
    empty.mkdir(exist_ok=True)
    runs = sum(1 for p in tree.glob("*/*") if p.is_dir() and not p.parent.name.startswith(("_", ".")))
    figures = {}
    for name, batch in (("floor", "32"), ("one-per-transaction", "1"), ("batched", "32")):
        os.environ["PTB_INGEST_BATCH_RUNS"] = batch
        wall, rss, summary, cpu = ingest_bench.timed_ingest(work, name, empty if name == "floor" else tree)
        figures[name] = cpu
        print(f"{name:>20}: {cpu:7.2f} CPU s  {wall:7.2f} wall s  {rss:6.0f} MB peak  | {summary}")
    floor = figures["floor"]
    per = {name: (figures[name] - floor) / runs for name in ("one-per-transaction", "batched")}
    print(f"{runs} run dirs, warehouse {args.kind}; CPU s per run above the start-up floor ({floor:.2f} s): "
          f"one per transaction {per['one-per-transaction']:.3f}, batched {per['batched']:.3f} "
          f"(ratio {per['batched'] / per['one-per-transaction']:.2f}); fixed cost removed per run: "
          f"{per['one-per-transaction'] - per['batched']:.3f} CPU s")


if __name__ == "__main__":
    main()
