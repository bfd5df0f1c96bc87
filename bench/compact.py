"""Pages on a compacted DuckLake warehouse against the same warehouse as the ingest left it, side by side in one run.

Usage: .venv/bin/python bench/compact.py [--runs 600] [--repeat 7] [--work DIR]

1. ``make_demo_results --runs N --seed 7`` without its long run (N agent runs plus the baselines) into the work
   folder, unless it is there already.
2. Four fresh DuckLake warehouses with SQLite catalogs (the embedded default), ``migrate`` and ``import_published``
   both suites, ``manage.py ingest`` of the tree into each: A, B, C and D hold the same rows, from the same commits.
3. ``ptbsite.warehouse.compact`` on B with ``keep_seconds=0`` (``compact_warehouse --keep 0``: inlined rows
   flushed, everything old removed; nothing else reads it) and on C with the default (``compact_warehouse`` as
   it runs beside a serving site: files merged and rewritten, inlined rows and every file kept), and on D with the
   default and then ``ducklake_flush_inlined_data`` alone (C plus the flush, no snapshot expired: which of keep
   0's two extra steps makes B faster than C). Printed: live
   files (what the current snapshot reads) and files on disk before and after, and the seconds each took.
4. In one process, with the page cache off (``PTB_PAGE_CACHE=0``: every page computed), Django's test client GETs
   each page of the list below on A, B, C and D in turn, ``--repeat`` rounds after one warm-up round
   (``settings.PTB_WAREHOUSE`` switched between them; each keeps its own attached DuckLake instance). Printed:
   the median ms of each page on A (the anchor), B, C and D, and their ratios to A.
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "ptbsite.settings")
os.environ["PTB_PAGE_CACHE"] = "0"  # time the pages computed, not served from the page cache
os.environ["PTB_PAGE_WARM"] = "0"


def lake_spec(folder: Path) -> str:
    return f"ducklake:sqlite:{folder / 'catalog.sqlite'}?data={folder / 'data'}"


def use(settings, spec: str) -> None:
    from ptbsite import warehouse

    settings.PTB_WAREHOUSE = spec
    warehouse.reset_migration_cache()


def fill(settings, spec: str, tree: Path) -> float:
    """migrate, import_published (both suites) and ingest ``tree`` into ``spec``; returns the ingest's seconds."""
    from django.core.management import call_command

    use(settings, spec)
    call_command("migrate", "--noinput", verbosity=0)
    call_command("import_published")
    call_command("import_published", "--suite", "frogsgame")
    started = time.perf_counter()
    call_command("ingest", str(tree), "--quiet")
    return time.perf_counter() - started


def pages() -> list[str]:
    """The pages timed: the leaderboard, the runs list, the analysis page, a median-length run's page and its
    last steps page, the runs API."""
    from traces.selectors import list_runs

    runs = sorted(list_runs(limit=None)[0], key=lambda r: r.step_count)
    run = runs[len(runs) // 2]
    return ["/", "/runs/", "/analysis/", f"/runs/{run.id}/", f"/runs/{run.id}/steps?after={max(0, run.step_count - 60)}",
            "/api/runs?limit=100"]


def main() -> None:
    parser = argparse.ArgumentParser(description="pages on a compacted warehouse (see the module docstring)")
    parser.add_argument("--runs", type=int, default=600)
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--work", type=Path, help="work folder (default: a new temporary folder)")
    args = parser.parse_args()
    import django

    django.setup()
    from django.conf import settings
    from django.test import Client

    from demo.tree import make_demo_results
    from ptbsite import warehouse

    work = args.work or Path(tempfile.mkdtemp(prefix="ptb-bench-compact-"))
    tree = work / f"tree-{args.runs}"
    if not (tree / "SYNTHETIC").exists():
        make_demo_results(root=tree, runs=args.runs, seed=7, long_run=False)
    stamp = time.strftime("%H%M%S")
    lakes = {name: lake_spec(work / f"{name.lower()}-{stamp}") for name in "ABCD"}
    seconds = {name: fill(settings, spec, tree) for name, spec in lakes.items()}
    print(f"tree: {tree} ({args.runs} agent runs + baselines); ingest "
          + ", ".join(f"{name} {s:.1f} s" for name, s in seconds.items()))
    for name, keep in (("B", 0.0), ("C", None), ("D", None)):
        use(settings, lakes[name])
        done = warehouse.compact(keep_seconds=keep)
        if name == "D":
            with warehouse.connect() as con:
                flushed = sum(int(r[2] or 0) for r in con.execute(
                    f"SELECT * FROM ducklake_flush_inlined_data('{warehouse.ALIAS}')").fetchall())
            print(f"flush D: {flushed} inlined rows flushed")
        label = "the default keep" if keep is None else f"keep {keep:g}"
        print(f"compact {name} ({label}): live files {done.live_files_before} -> "
              f"{done.live_files_after}, files on disk {done.disk_files_before} -> {done.disk_files_after}, "
              f"{done.rows_flushed} inlined rows flushed, {done.snapshots_expired} snapshots expired, "
              f"in {done.seconds:.1f} s")

    client = Client()
    use(settings, lakes["A"])
    urls = pages()
    samples: dict[tuple[str, str], list[float]] = {}
    for round_ in range(args.repeat + 1):
        for name, spec in lakes.items():
            use(settings, spec)
            for url in urls:
                started = time.perf_counter()
                response = client.get(url)
                elapsed = 1000 * (time.perf_counter() - started)
                assert response.status_code == 200, (name, url, response.status_code)
                if round_:  # round 0 warms both
                    samples.setdefault((name, url), []).append(elapsed)
    print(f"\nmedian ms of {args.repeat} GETs each, page cache off; A as ingested (anchor), B compacted with "
          "keep 0, C with the default keep, D as C then inlined rows flushed\n")
    print("| page | A ms | B ms | C ms | D ms | B / A | C / A | D / A |\n|---|---:|---:|---:|---:|---:|---:|---:|")
    for url in urls:
        ms = {n: statistics.median(samples[(n, url)]) for n in lakes}
        print(f"| `{url}` | " + " | ".join(f"{ms[n]:.1f}" for n in "ABCD") + " | "
              + " | ".join(f"{ms[n] / ms['A']:.2f}" for n in "BCD") + " |")


if __name__ == "__main__":
    main()
