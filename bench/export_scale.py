"""The static export's cost per run, its files per run and its increments (issue 24's targets), on a demo tree.

    .venv/bin/python bench/export_scale.py [--runs N] [--seed S] [--warehouse FILE]

Builds ``make_demo_results --runs N --no-long-run`` under bench/out/export_scale/ and ingests it (or uses the
ingested ``--warehouse``, copied), then exports: whole; again with nothing changed; with only the site pages' inputs
changed (the warehouse's version token bumped: the anchor for "the changed global pages"); and with one run's files
changed (its content hash and one step, as a re-ingest stores them). Prints for each the CPU seconds (this process
and the children it waited for: the pagefind binary) beside wall time, the files written, and the targets: <= 0.3
CPU s per run, <= 20 files per run (search included), one run changed <= 2x its share plus the site pages, and
nothing else written, an unchanged re-export <= 5 CPU s.
"""
from __future__ import annotations

import argparse
import os
import resource
import shutil
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "ptbsite.settings")
OUT = Path(__file__).resolve().parent / "out" / "export_scale"


def cpu() -> float:
    return sum(getattr(resource.getrusage(who), f) for who in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN)
               for f in ("ru_utime", "ru_stime"))


def mtimes(outdir: Path) -> dict[str, int]:
    return {p.relative_to(outdir).as_posix(): p.stat().st_mtime_ns for p in outdir.rglob("*") if p.is_file()}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=100)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--warehouse", type=Path, help="an ingested warehouse to copy instead of building one")
    args = parser.parse_args()
    shutil.rmtree(OUT, ignore_errors=True)
    OUT.mkdir(parents=True)
    os.environ["PTB_WAREHOUSE"] = str(OUT / "warehouse.duckdb")
    import django

    django.setup()
    import duckdb

    from export.exporter import export_site
    from ptbsite import warehouse
    from traces import selectors

    if args.warehouse:
        shutil.copy(args.warehouse, OUT / "warehouse.duckdb")
    else:
        from demo.tree import make_demo_results
        from leaderboard.services import import_published
        from ingest.tree import ingest_tree

        import_published()
        tree = make_demo_results(root=OUT / "tree", runs=args.runs, seed=args.seed, long_run=False)
        print(ingest_tree(root=tree.root), flush=True)
    site = OUT / "site"

    def timed(label: str):
        started, cpu_started = time.monotonic(), cpu()
        report = export_site(site)
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
    warehouse.version.bump()
    _, site_cpu = timed("site pages' inputs changed (version token bumped)")

    con = duckdb.connect(os.environ["PTB_WAREHOUSE"])
    # the run of median step count (its share of the export is then about the mean share)
    row = con.execute(
        "SELECT s.run_id, min(s.idx), count(*) AS n FROM steps s JOIN runs r ON r.id = s.run_id "
        "WHERE r.method NOT LIKE 'baseline%' AND s.trace = 'agent' GROUP BY s.run_id ORDER BY n, s.run_id "
        "LIMIT 1 OFFSET (SELECT count(DISTINCT id) / 2 FROM runs WHERE method NOT LIKE 'baseline%')").fetchone()
    assert row is not None, "no run with steps"
    run_id, step, run_steps = row
    con.execute("UPDATE steps SET output = 'bench changed text' WHERE run_id = ? AND idx = ?", [run_id, step])
    con.execute("UPDATE runs SET content_hash = 'bench-reingested' WHERE id = ?", [run_id])
    con.close()
    before = mtimes(site)
    changed, changed_cpu = timed("one run's files changed")
    after = mtimes(site)
    written = sorted(n for n, m in after.items() if before.get(n) != m)
    own_files = [n for n in written if f"/{run_id}/" in f"/{n}" or n == f"api/runs/{run_id}.json"]
    other_runs = [n for n in written if n not in own_files and n.startswith(("runs/", "api/runs/", "pagefind/delta/"))
                  and n != "runs/index.html"]
    share = full_cpu / runs
    own = changed_cpu - changed.site_pages_cpu
    print(f"  one run changed: {changed_cpu:.2f} CPU s = the site pages {changed.site_pages_cpu:.2f} (measured in that "
          f"export; {site_cpu:.2f} in the export above) + {own:.2f} for the run and its search index = "
          f"{own / share:.2f}x its share of the full export ({share:.3f} s; target <= 2x; "
          f"{own / ((full_cpu - full.site_pages_cpu) / runs):.2f}x the share without the site pages); files written: "
          f"{len(own_files)} of the run, {len(written) - len(own_files)} others ({', '.join(sorted(set(written) - set(own_files)))}"
          f"; {len(other_runs)} of other runs: target 0)")

if __name__ == "__main__":
    main()
