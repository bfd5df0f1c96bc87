#!/usr/bin/env bash
# Time the static export on a generated tree: make_demo_results(RUNS runs) -> ingest -> export_static, then an
# incremental re-export (no change), then one run changed (a rerun's evaluation added) and exported again, then
# that run's files changed (its content hash, as a re-ingest stores it: the search index is rebuilt).
#
#   bench/export.sh [RUNS] [SEED]      (default 1000 runs, seed 7; everything under bench/out/export/)
#
# Prints each step's wall and CPU time and the exporter's report (runs written/unchanged, files, MB, seconds).
set -euo pipefail
cd "$(dirname "$0")/.."
RUNS=${1:-1000}
SEED=${2:-7}
OUT=bench/out/export
PY=${PYTHON:-.venv/bin/python}
[ -x "$PY" ] || PY=python3
rm -rf "$OUT"
mkdir -p "$OUT"
export PTB_WAREHOUSE="$OUT/warehouse.duckdb"

"$PY" - "$RUNS" "$SEED" "$OUT" <<'PY'
import os
import resource
import sys
import time
from pathlib import Path

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "ptbsite.settings")
import django

django.setup()
import duckdb

from export.exporter import export_site
from leaderboard.services import import_published
from demo.tree import make_demo_results
from ingest.tree import ingest_tree

runs, seed, out = int(sys.argv[1]), int(sys.argv[2]), Path(sys.argv[3])


def cpu():
    """CPU seconds (user + system) of this process and of its children it has waited for (ingest's readers, the
    pagefind binary): on a shared machine a steadier figure than wall time."""
    return sum(getattr(resource.getrusage(who), f) for who in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN)
               for f in ("ru_utime", "ru_stime"))


def timed(label, call, show=str):
    started, cpu_started = time.monotonic(), cpu()
    result = call()
    print(f"{label}: {time.monotonic() - started:.1f} s ({cpu() - cpu_started:.1f} s CPU): {show(result)}", flush=True)
    return result


timed("import_published", import_published)
tree = timed("make_demo_results", lambda: make_demo_results(root=out / "tree", runs=runs, seed=seed, long_run=False),
             lambda r: f"{len(r.runs)} runs, {r.files_written} files, {r.bytes_written / 1e6:.0f} MB")
timed("ingest_tree", lambda: ingest_tree(root=tree.root))
timed("export (full)", lambda: export_site(out / "site"))
timed("export (nothing changed)", lambda: export_site(out / "site"))
con = duckdb.connect(os.environ["PTB_WAREHOUSE"])
run_id = con.execute("SELECT min(id) FROM runs WHERE method <> 'baseline'").fetchone()[0]
con.execute("INSERT INTO evaluations VALUES ('bench-rerun', ?, 'rerun', 0.5, '{}', '{}', TIMESTAMP '2031-01-01')",
            [run_id])
con.close()
timed("export (one run changed)", lambda: export_site(out / "site"))
con = duckdb.connect(os.environ["PTB_WAREHOUSE"])
con.execute("UPDATE runs SET content_hash = 'bench-reingested' WHERE id = ?", [run_id])  # as if its files changed
con.close()
timed("export (one run's files changed)", lambda: export_site(out / "site"))
PY
