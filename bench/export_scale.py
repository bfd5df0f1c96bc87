"""The static export's cost per run, its files per run and its increments (issue 24's targets), on a demo tree.

    .venv/bin/python bench/export_scale.py [--runs N] [--seed S] [--warehouse FILE|SPEC] [--out DIR]

Builds ``make_demo_results --runs N --no-long-run`` under ``--out`` (default bench/out/export_scale/) and ingests it
(or uses the ingested ``--warehouse``, copied: a DuckDB file, or a DuckLake spec ``ducklake:sqlite:CATALOG?data=DIR``
whose catalog is copied and whose data folder is shared, e.g. the K=90 warehouse ``bench/ingest_scale.py`` leaves), then
exports: whole; again with nothing changed; with every site page rendered again (the manifest's record of their
inputs dropped: the anchor for "the changed global pages"); and with one run's files
changed (its content hash and one step, as a re-ingest stores them). Prints for each the CPU seconds (this process
and the children it waited for: the pagefind binary) beside wall time, the files written, and the targets: <= 0.3
CPU s per run, <= 20 files per run (search included), one run changed <= 2x its share plus the site pages, and
nothing else written, an unchanged re-export <= 5 CPU s.
"""
from __future__ import annotations

import argparse
import os
import shutil
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "ptbsite.settings")

from benchlib import cpu, mtimes  # noqa: E402 (bench/benchlib.py, beside this script)
OUT = Path(__file__).resolve().parent / "out" / "export_scale"


def run_of(name: str) -> str | None:
    """The run whose files hold ``name`` (relative to the site: ``runs/<id>/...``, ``api/runs/<id>[/....|.json]``,
    ``compare/<id>-<other>/...``, ``pagefind/delta/<id>/...``), None for the site's own files (a cell's file,
    ``cells/<suite>/<benchmark>/<base model>.json``, included: every run of the cell shares it)."""
    parts = name.split("/")
    if parts[0] == "runs" and len(parts) > 2:
        return parts[1]
    if parts[:2] == ["api", "runs"] and len(parts) > 2:
        return parts[2].removesuffix(".json")
    if parts[0] == "compare" and len(parts) > 2:
        return parts[1].split("-")[0]
    if parts[:2] == ["pagefind", "delta"] and len(parts) > 3:
        return parts[2]
    return None


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=100)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--warehouse", help="an ingested warehouse to copy instead of building one: a DuckDB file "
                                            "or a DuckLake spec ducklake:sqlite:CATALOG?data=DIR")
    parser.add_argument("--out", type=Path, default=OUT, help="work folder (emptied first)")
    args = parser.parse_args()
    out = args.out
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir(parents=True)
    os.environ["PTB_WAREHOUSE"] = str(out / "warehouse.duckdb")
    os.environ["PTB_DATA_DIR"] = str(out / "data")
    (out / "data").mkdir()
    if args.warehouse and args.warehouse.startswith("ducklake:sqlite:"):
        # The catalog is copied; the data folder is shared (the catalog names it; the bench's writes add files to
        # it that the original catalog never reads, and nothing here deletes a file).
        catalog, _, data = args.warehouse.removeprefix("ducklake:sqlite:").partition("?data=")
        shutil.copy(catalog, out / "catalog.sqlite")
        os.environ["PTB_WAREHOUSE"] = f"ducklake:sqlite:{out / 'catalog.sqlite'}?data={data}"
    elif args.warehouse:
        shutil.copy(args.warehouse, out / "warehouse.duckdb")
    import django

    django.setup()

    from export.exporter import export_site
    from ptbsite import warehouse
    from traces import selectors

    if not args.warehouse:
        from demo.tree import make_demo_results
        from leaderboard.services import import_published
        from ingest.tree import ingest_tree

        import_published()
        tree = make_demo_results(root=out / "tree", runs=args.runs, seed=args.seed, long_run=False)
        print(ingest_tree(root=tree.root), flush=True)
    site = out / "site"

    def timed(label: str):
        started, cpu_started = time.monotonic(), cpu()
        report = export_site(site, progress=lambda line: print(f"  {line}", flush=True))
        seconds = cpu() - cpu_started
        print(f"{label}: {time.monotonic() - started:.1f} s wall, {seconds:.2f} s CPU; {report}", flush=True)
        return report, seconds

    full, full_cpu = timed("full export")
    runs = full.runs_written
    steps = sum(r.step_count for r in selectors.list_runs(limit=None)[0])
    per_run_files = full.files / runs
    print(f"  {runs} runs, {steps} steps: {full_cpu / runs:.3f} CPU s per run (target <= 0.3), "
          f"{per_run_files:.1f} files per run, site pages and search included (target <= 20)")
    _, unchanged_cpu = timed("nothing changed")
    print(f"  unchanged re-export {unchanged_cpu:.2f} CPU s (target <= 5)")
    # Every site page's inputs changed: the manifest's record of them dropped (the anchor for "the changed global
    # pages"; a version token bump alone no longer renders a site page: each renders when what it reads changed).
    import json

    from export.exporter import MANIFEST
    manifest = json.loads((site / MANIFEST).read_text())
    manifest["pages"] = {}
    (site / MANIFEST).write_text(json.dumps(manifest))
    warehouse.version.bump()
    _, site_cpu = timed("every site page rendered (the manifest's site pages dropped, version token bumped)")

    # the run of median step count (its share of the export is then about the mean share)
    with warehouse.connect() as con:  # direct SQL, as a test's: the version token is not bumped
        row = con.execute(
            "SELECT s.run_id, min(s.idx), count(*) AS n FROM steps s JOIN runs r ON r.id = s.run_id "
            "WHERE r.method NOT LIKE 'baseline%' AND s.trace = 'agent' GROUP BY s.run_id ORDER BY n, s.run_id "
            "LIMIT 1 OFFSET (SELECT count(DISTINCT id) / 2 FROM runs WHERE method NOT LIKE 'baseline%')").fetchone()
        assert row is not None, "no run with steps"
        run_id, step, run_steps = row
        con.execute("UPDATE steps SET output = 'bench changed text' WHERE run_id = ? AND trace = 'agent' AND idx = ?",
                    [run_id, step])
        con.execute("UPDATE runs SET content_hash = 'bench-reingested' WHERE id = ?", [run_id])
    before = mtimes(site)
    changed, changed_cpu = timed("one run's files changed")
    after = mtimes(site)
    written = sorted(n for n, m in after.items() if before.get(n) != m)
    owner = {n: run_of(n) for n in written}
    own_files = [n for n in written if owner[n] == run_id]
    other_runs = [n for n in written if owner[n] not in (None, run_id)]
    others = sorted({run for n in other_runs if (run := owner[n]) is not None})
    share = full_cpu / runs
    own = changed_cpu - changed.site_pages_cpu
    print(f"  one run changed: {changed_cpu:.2f} CPU s = the site pages {changed.site_pages_cpu:.2f} (measured in that "
          f"export; {site_cpu:.2f} in the export above) + {own:.2f} for the run and its search index = "
          f"{own / share:.2f}x its share of the full export ({share:.3f} s; target <= 2x; "
          f"{own / ((full_cpu - full.site_pages_cpu) / runs):.2f}x the share without the site pages); files written: "
          f"{len(own_files)} of the run; {len(other_runs)} of {len(others)} other runs (target 0: "
          f"{', '.join(other_runs[:6])}{' ...' if len(other_runs) > 6 else ''}); "
          f"{len(written) - len(own_files) - len(other_runs)} of the site: "
          f"{', '.join(n for n in written if owner[n] is None)}")

if __name__ == "__main__":
    main()
