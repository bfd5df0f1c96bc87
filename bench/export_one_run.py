"""The static export's increments on a site already exported: nothing changed, and one run's files changed
(issue 24: "after one run changes, the re-export costs <= 2x that run's own share plus the changed global pages").

    .venv/bin/python bench/export_one_run.py --warehouse SPEC|FILE --site DIR [--out DIR]

``--site``: a folder ``export_static`` (or ``bench/export_scale.py``) wrote from that warehouse with this code (the
code fingerprint differs otherwise, and every page would be rendered again: the bench stops). ``--warehouse``: a
DuckLake spec ``ducklake:sqlite:CATALOG?data=DIR`` whose catalog is copied (the data folder is shared: the bench's
writes add files to it that the original catalog never reads), or a plain DuckDB file, copied (the same code
without DuckLake's catalog work per table scanned: the counterfactual of issue 24's one-run figure). Copies the site and the catalog into ``--out``
(one round per process: the catalog stays attached for the process's life; run it again for another), exports
with nothing changed twice, then changes one run as ``bench/export_scale.py`` does (its
content hash and one agent step, to values new to the catalog: the run of median step count) and exports again
(the first run rendered in the process: cold, as a new ``export_static``), then the same for the next run by step
count (warm, as ``bench/export_scale.py`` measures it after a whole export). Prints for each
export the CPU seconds of this process and of the children it waited for (the pagefind binary), the site pages'
part (their sources' digests), wall time and the files written; and once, the CPU the process spent before the
first export (the interpreter and ``django.setup()``: ``manage.py export_static`` pays it too, the benches'
figures leave it out).
"""
from __future__ import annotations

import argparse
import os
import resource
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "ptbsite.settings")

from benchlib import change_run, copy_for_export, cpu, median_runs, mtimes  # noqa: E402 (bench/benchlib.py, beside this script)
OUT = Path(__file__).resolve().parent / "out" / "export_one_run"


def children_cpu() -> float:
    """CPU seconds of this process's children that have been waited for (the pagefind binary)."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--warehouse", required=True,
                        help="ducklake:sqlite:CATALOG?data=DIR (the catalog is copied) or a DuckDB file (copied)")
    parser.add_argument("--site", type=Path, required=True, help="a site exported from it with this code")
    parser.add_argument("--out", type=Path, default=OUT, help="work folder (emptied first)")
    args = parser.parse_args()
    site = copy_for_export(args.warehouse, args.site, args.out)
    import django

    django.setup()
    print(f"before the first export (interpreter, django.setup()): {cpu():.2f} CPU s", flush=True)

    from export.exporter import export_site
    from ptbsite import warehouse

    def timed(label: str):
        before = mtimes(site)
        started, cpu_started, children_started = time.monotonic(), cpu(), children_cpu()
        report = export_site(site)
        seconds = cpu() - cpu_started
        written = sorted(n for n, m in mtimes(site).items() if before.get(n) != m)
        print(f"{label}: {seconds:.3f} CPU s (site pages {report.site_pages_cpu:.3f}, pagefind "
              f"{children_cpu() - children_started:.3f}), "
              f"{time.monotonic() - started:.2f} s wall; {report.runs_written} runs written; {len(written)} files "
              f"written{': ' if written else ''}{', '.join(written[:4])}{' ...' if len(written) > 4 else ''}",
              flush=True)
        return report

    for n in (1, 2):
        report = timed(f"nothing changed ({n})")
        if report.runs_written or report.site_pages:
            sys.exit(f"the site in {args.site} was not exported from this warehouse with this code: {report}")
    with warehouse.connect() as con:
        runs = median_runs(con)
    for run_id, label in zip(runs, ("first in this process: templates, lexers and the first query's imports "
                                    "cold, as in a new export_static", "warm, as export_scale.py measures it")):
        with warehouse.connect() as con:
            # values new to a site this bench (or export_scale.py) changed before, the same from the same catalog
            # (the files of two code versions' rounds compare byte for byte): the catalog's snapshot id; in a plain
            # DuckDB file, how many runs such rounds changed
            snapshot = con.execute(
                f"SELECT id FROM ducklake_current_snapshot('{warehouse.ALIAS}')" if "ducklake:" in args.warehouse
                else "SELECT 'file-' || count(*) FROM runs WHERE content_hash LIKE 'bench-%'").fetchone()
            assert snapshot is not None
            change_run(con, run_id, f"bench-{snapshot[0]}")
        timed(f"run {run_id} changed ({label})")

if __name__ == "__main__":
    main()
