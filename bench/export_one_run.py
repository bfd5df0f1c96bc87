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
import shutil
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "ptbsite.settings")

from benchlib import cpu, mtimes  # noqa: E402 (bench/benchlib.py, beside this script)
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
    out = args.out
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir(parents=True)
    if args.warehouse.startswith("ducklake:sqlite:"):
        catalog, _, data = args.warehouse.removeprefix("ducklake:sqlite:").partition("?data=")
        shutil.copy(catalog, out / "catalog.sqlite")
        os.environ["PTB_WAREHOUSE"] = f"ducklake:sqlite:{out / 'catalog.sqlite'}?data={data}"
    else:
        shutil.copy(args.warehouse, out / "warehouse.duckdb")
        os.environ["PTB_WAREHOUSE"] = str(out / "warehouse.duckdb")
    site = out / "site"
    shutil.copytree(args.site, site)
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
        rows = con.execute(
            "SELECT s.run_id FROM steps s JOIN runs r ON r.id = s.run_id WHERE r.method NOT LIKE 'baseline%' "
            "AND s.trace = 'agent' GROUP BY s.run_id ORDER BY count(*), s.run_id LIMIT 2 OFFSET "
            "(SELECT count(DISTINCT id) / 2 FROM runs WHERE method NOT LIKE 'baseline%')").fetchall()
    assert len(rows) == 2, "fewer than two runs with steps"
    for (run_id,), label in zip(rows, ("first in this process: templates, lexers and the first query's imports "
                                       "cold, as in a new export_static", "warm, as export_scale.py measures it")):
        with warehouse.connect() as con:  # direct SQL, as a test's: the version token is not bumped
            first = con.execute("SELECT min(idx) FROM steps WHERE run_id = ? AND trace = 'agent'", [run_id]).fetchone()
            assert first is not None
            # values new to a site this bench (or export_scale.py) changed before, the same from the same catalog
            # (the files of two code versions' rounds compare byte for byte): the catalog's snapshot id; in a plain
            # DuckDB file, how many runs such rounds changed
            snapshot = con.execute(
                f"SELECT id FROM ducklake_current_snapshot('{warehouse.ALIAS}')" if "ducklake:" in args.warehouse
                else "SELECT 'file-' || count(*) FROM runs WHERE content_hash LIKE 'bench-%'").fetchone()
            assert snapshot is not None
            nonce = f"bench-{snapshot[0]}"
            con.execute("UPDATE steps SET output = ? WHERE run_id = ? AND trace = 'agent' AND idx = ?",
                        [f"bench changed text {nonce}", run_id, first[0]])
            con.execute("UPDATE runs SET content_hash = ? WHERE id = ?", [nonce, run_id])
        timed(f"run {run_id} changed ({label})")

if __name__ == "__main__":
    main()
