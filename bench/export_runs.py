"""The static export's cost per run at the real shape, on a sample of runs (issue 24: "export_static of the K=90 site:
<= 0.3 CPU s per run in all, <= 20 files per run").

Usage: PTB_WAREHOUSE=SPEC .venv/bin/python bench/export_runs.py [--runs 12] [--out DIR]

On an ingested warehouse (e.g. ``make_demo_results DIR --methods 90 --seed 7 --no-long-run --trace-scale 0.05``,
ingested and compacted), every run read once as the export reads them (the runs list's one query, timed apart),
then the files of the first ``--runs`` runs by id (each run's page, step pages, JSON twins, ``jump.json`` and its
comparison side file ``compare.json``: ``export.exporter.Exporter.write_runs``, in its threads, the peers its page
lists from the one read) written into fresh folders: a warm-up, then measured. Printed: CPU seconds of this process
per run (``time.process_time``: the threads included; the machine is shared) beside wall, of them the side files'
(``Exporter.compare_side``, thread CPU) and each declaration's pages (``Exporter.export_pages``, thread CPU: DuckDB's own
threads not counted), and files per run (the site pages and the search index not included: a
full export adds ~1-2 Pagefind fragments per run and its site pages). Then the search index of the same runs
(``Exporter.search_bundles``: Pagefind's base bundle of them), a warm-up and a measured pass: CPU per run of this
process (reading every step whole, making the records) and of the pagefind binary. Until branch i24c2 the export wrote one
comparison page per peer instead of the side file (~13 per run); that code's figures come from running this bench
at that commit.
"""
from __future__ import annotations

import argparse
import os
import resource
import shutil
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "ptbsite.settings")


def _children_cpu() -> float:
    """CPU seconds of this process's children that have exited (the pagefind binary)."""
    used = resource.getrusage(resource.RUSAGE_CHILDREN)
    return used.ru_utime + used.ru_stime


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=12)
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    import django

    django.setup()
    from export import exporter as exporter_module
    from export.exporter import Exporter
    from ptbsite import warehouse
    from traces import selectors

    out = args.out or Path(tempfile.mkdtemp(prefix="export-runs-"))
    side_cpu = [0.0]
    original = getattr(Exporter, "compare_side", None)

    def timed_side(self, run_id, pages):
        started = time.thread_time()
        try:
            return original(self, run_id, pages)  # type: ignore[misc]
        finally:
            side_cpu[0] += time.thread_time() - started

    if hasattr(Exporter, "compare_side"):  # absent before branch i24c2: the bench also runs at that code
        Exporter.compare_side = timed_side  # type: ignore[method-assign]
    by_page: dict[str, float] = {}
    pages_of = Exporter.export_pages

    def timed_pages(self, name, declared, pages, run):
        started = time.thread_time()
        try:
            return pages_of(self, name, declared, pages, run)
        finally:
            by_page[name] = by_page.get(name, 0.0) + time.thread_time() - started

    Exporter.export_pages = timed_pages  # type: ignore[method-assign]
    with warehouse.connect():
        cpu, wall = time.process_time(), time.perf_counter()
        everything = {r.id: r for r in selectors.list_runs(limit=None)[0]}
        parts = selectors.run_fingerprint_parts()
        owns, peers = parts.owns, parts.peers
        print(f"{len(owns)} runs read once: {time.process_time() - cpu:.2f} CPU s, {time.perf_counter() - wall:.2f} "
              f"wall s; peers per run {sum(map(len, peers.values())) / len(peers):.1f}", flush=True)
        sample = sorted(owns)[:args.runs]
        for label in ("warm-up", "measured"):
            folder = out / label
            shutil.rmtree(folder, ignore_errors=True)
            exporter = Exporter(folder)
            side_cpu[0] = 0.0
            by_page.clear()
            cpu, wall = time.process_time(), time.perf_counter()
            exporter.write_runs(sample, everything, None, peers)
            spent, took = time.process_time() - cpu, time.perf_counter() - wall
            files = sum(1 for p in folder.rglob("*") if p.is_file())
            pairs = sum(1 for p in (folder / "compare").glob("*")) if (folder / "compare").is_dir() else 0
            print(f"{label:>9}: {spent / len(sample):.3f} CPU s per run ({side_cpu[0] / len(sample):.3f} of it the "
                  f"side file), {took / len(sample):.3f} wall s per run; {files / len(sample):.1f} files per run "
                  f"({pairs} comparison folders)", flush=True)
            print("           thread CPU s per run by page: " + ", ".join(
                f"{name} {seconds / len(sample):.3f}" for name, seconds in sorted(by_page.items(), key=lambda x: -x[1])),
                flush=True)
        # The search index of the sample (Pagefind's base bundle of these runs), as the export builds it: the reads
        # and records in this process, the pagefind binary a child process (its CPU counted once it exits).
        for label in ("search warm-up", "search"):
            folder = out / label.replace(" ", "-")
            shutil.rmtree(folder, ignore_errors=True)
            folder.mkdir(parents=True)
            exporter = Exporter(folder)
            reading = getattr(exporter_module, "export_reads", warehouse.connect)  # since i24e2: one DuckDB thread
            own, kids, wall = time.process_time(), _children_cpu(), time.perf_counter()
            with reading():
                counts = exporter.search_bundles(sample, everything, delta=False)
            own, kids = time.process_time() - own, _children_cpu() - kids
            print(f"{label:>16}: {(own + kids) / len(sample):.3f} CPU s per run ({own / len(sample):.3f} reading the "
                  f"steps and making the records, {kids / len(sample):.3f} the pagefind binary), "
                  f"{(time.perf_counter() - wall) / len(sample):.3f} wall s per run; {sum(counts.values())} steps "
                  f"with a word, {sum(1 for p in folder.rglob('*') if p.is_file()) / len(sample):.1f} files per run",
                  flush=True)
    print("target <= 0.3 CPU s per run in all, <= 20 files per run with the search")
    if args.out is None:
        shutil.rmtree(out, ignore_errors=True)


if __name__ == "__main__":
    main()
