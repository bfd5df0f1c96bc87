"""Ingest throughput and step-page latency on a generated tree (issue: runs and the trace viewer).

Usage: .venv/bin/python bench/ingest_and_pages.py [--runs 40] [--seed 7] [--repeat 20]

Generates a results tree with a ~10 h, 20,000+ step, ~50 MB Claude Code run, ingests it into a fresh warehouse
file, and prints MB/s and steps/s of the ingest, then the median and p95 latency (ms) of the first and a deep page
of steps (50 steps, keyset ``after``) for a ~200-step run and the long run: through the selector, through the
JSON API and through the HTML partial that htmx loads; then the whole run page of both runs.
"""
from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "ptbsite.settings")
os.environ.setdefault("PTB_PAGE_CACHE", "0")  # time the pages computed, not served from the page cache
from benchlib import timed as _timed  # noqa: E402 (bench/benchlib.py, beside this script)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=40)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--repeat", type=int, default=20)
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="ptb-bench-"))
    os.environ["PTB_WAREHOUSE"] = str(work / "warehouse.duckdb")
    os.environ["PTB_DATA_DIR"] = str(work)
    import django

    django.setup()
    from django.core.management import call_command
    from django.test import Client

    from leaderboard.services import import_published
    from traces import selectors
    from demo.tree import make_demo_results
    from ingest.tree import ingest_tree

    call_command("migrate", verbosity=0)
    import_published()
    started = time.perf_counter()
    report = make_demo_results(root=work / "results", runs=args.runs, seed=args.seed, long_run=True)
    print(f"generated {len(report.runs)} runs, {report.bytes_written / 1e6:.1f} MB in {time.perf_counter() - started:.1f} s")
    started = time.perf_counter()
    ingest = ingest_tree(root=work / "results")
    seconds = time.perf_counter() - started
    print(f"ingest: {ingest.stored} runs, {ingest.steps} steps, {ingest.bytes_read / 1e6:.1f} MB of traces in "
          f"{seconds:.1f} s -> {ingest.bytes_read / 1e6 / seconds:.1f} MB/s, {ingest.steps / seconds:,.0f} steps/s")

    runs, _ = selectors.list_runs(limit=1000)
    long_run = max(runs, key=lambda r: r.step_count)
    small = min((r for r in runs if r.step_count >= 150), key=lambda r: abs(r.step_count - 200))
    client = Client()
    print(f"{'run':>12} {'steps':>6} {'page':>6} {'selector ms (p50/p95)':>22} {'API ms':>16} {'HTML partial ms':>17}")
    for run in (small, long_run):
        for label, after in (("first", -1), ("deep", run.step_count - 60)):
            sel = _timed(lambda: selectors.steps_page(run.id, after=after, limit=50, budget_hours=10), args.repeat)
            api = _timed(lambda: client.get(f"/api/runs/{run.id}/steps?after={after}&limit=50"), args.repeat)
            html = _timed(lambda: client.get(f"/runs/{run.id}/steps?after={after}"), args.repeat)
            print(f"{run.id:>12} {run.step_count:>6} {label:>6} {sel[0]:>10.1f} / {sel[1]:<9.1f} "
                  f"{api[0]:>7.1f} / {api[1]:<6.1f} {html[0]:>8.1f} / {html[1]:<6.1f}")
    for run in (small, long_run):  # the whole run page: header, judge panel, facets, timeline, first steps
        page = _timed(lambda: client.get(f"/runs/{run.id}/"), args.repeat)
        size = len(client.get(f"/runs/{run.id}/").content)
        print(f"run page {run.id} ({run.step_count} steps): p50 {page[0]:.1f} ms, p95 {page[1]:.1f} ms, {size / 1e3:.0f} KB")


if __name__ == "__main__":
    main()
