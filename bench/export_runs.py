"""The static export's cost per run at the real shape, on a sample of runs, with and without the comparisons' memo
(issue 24: "export_static of the K=90 site: <= 0.3 CPU s per run in all, <= 20 files per run").

Usage: PTB_WAREHOUSE=SPEC .venv/bin/python bench/export_runs.py [--runs 12] [--out DIR]

On an ingested warehouse (e.g. ``make_demo_results DIR --methods 90 --seed 7 --no-long-run --trace-scale 0.05``,
ingested and compacted), every run read once as the export reads them (the runs list's one query, timed apart),
then the files of the first ``--runs`` runs by id (each run's pages, step pages, JSON twins, ``jump.json`` and the
comparisons its page links to: ``export.exporter.Exporter.write_runs``, in its threads) written twice into fresh
folders, in turn: without the memo (each comparison reads both runs, their sides and first steps: the export
before this change) and with it (a run's peers from the one read, each run's side of a comparison and its first
steps read once per export: ``traces.selectors.compare_pages_memo``). Printed: CPU seconds of this process per
run (``time.process_time``: the threads included; the machine is shared) beside wall, files per run (the site
pages and the search index not included: a full export adds ~1-2 Pagefind fragments per run and its site pages),
and the ratio. The sample's runs are the same both times; the second pass's runs find the warehouse's caches warm,
so the order is: without, with, without again (the first is a warm-up, not printed).
"""
from __future__ import annotations

import argparse
import contextlib
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "ptbsite.settings")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=12)
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    import django

    django.setup()
    from export.exporter import Exporter
    from ptbsite import warehouse
    from traces import selectors

    out = args.out or Path(tempfile.mkdtemp(prefix="export-runs-"))
    with warehouse.connect():
        cpu, wall = time.process_time(), time.perf_counter()
        everything = {r.id: r for r in selectors.list_runs(limit=None)[0]}
        owns, peers = selectors.run_fingerprint_parts()
        print(f"{len(owns)} runs read once: {time.process_time() - cpu:.2f} CPU s, {time.perf_counter() - wall:.2f} "
              f"wall s; peers per run {sum(map(len, peers.values())) / len(peers):.1f}", flush=True)
        sample = sorted(owns)[:args.runs]
        figures = {}
        for label, memo in (("warm-up", False), ("without the memo", False), ("with the memo", True),
                            ("without the memo, again", False)):
            folder = out / label.replace(" ", "-").replace(",", "")
            shutil.rmtree(folder, ignore_errors=True)
            exporter = Exporter(folder)
            cpu, wall = time.process_time(), time.perf_counter()
            if memo:
                exporter.write_runs(sample, everything, None, peers)
            else:
                with _no_memo(selectors):
                    exporter.write_runs(sample, {r: everything[r] for r in sample})
            spent, took = time.process_time() - cpu, time.perf_counter() - wall
            files = sum(1 for p in folder.rglob("*") if p.is_file())
            if label != "warm-up":
                figures[label] = spent
                print(f"{label:>24}: {spent / len(sample):.3f} CPU s per run, {took / len(sample):.3f} wall s per run;"
                      f" {files / len(sample):.1f} files per run ({len(list((folder / 'compare').glob('*')))} "
                      f"comparisons)", flush=True)
    before = min(figures["without the memo"], figures["without the memo, again"])
    print(f"with / without (the better of the two): {figures['with the memo'] / before:.2f}x; target <= 0.3 CPU s per "
          f"run in all, <= 20 files per run with the search")
    if args.out is None:
        shutil.rmtree(out, ignore_errors=True)


def _no_memo(selectors):
    """The export as before the memo: ``compare_pages_memo`` a no-op for the block."""
    from unittest import mock

    from export import exporter

    return mock.patch.object(exporter.runs, "compare_pages_memo", lambda memo: contextlib.nullcontext())


if __name__ == "__main__":
    main()
