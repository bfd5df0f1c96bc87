"""What a web process holds: its RSS after every public page once, which heavy packages it imported, and what each
import costs in a fresh interpreter (issue 24).

Usage: .venv/bin/python bench/web_memory.py [--warehouse SPEC]

1. Per package (django, celery, the Celery app, plotly, plotly.graph_objects, pandas, pyarrow, duckdb, numpy, ...):
   a fresh interpreter imports it alone; printed: RSS grown (MB, ``VmRSS`` of ``/proc/self/status``) and CPU ms.
2. A fresh interpreter loads the site as a web worker does (``ptbsite.wsgi``, ``DJANGO_DEBUG=0`` as ``serve`` runs
   it), page cache off, GETs every public page and JSON twin of ``bench/scale.py``'s list (listed by another
   interpreter, so that listing them does not count) once through Django's test client (the same request path as
   gunicorn's worker), then prints its RSS, split into private memory (``RssAnon``) and mapped files (``RssFile``),
   and which of the heavy packages it imported (``sys.modules``). ``--warehouse``:
   a ``PTB_WAREHOUSE`` spec to read (default: bench/scale.py's K=9 warehouse in /tmp/ptb-bench-scale).
"""
from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
HEAVY = ("celery", "celery.worker", "kombu", "plotly", "plotly.graph_objects", "plotly.express", "pandas", "numpy",
         "pyarrow", "duckdb", "inspect_ai", "tqdm")
_RSS = "int([l for l in open('/proc/self/status') if l.startswith('VmRSS')][0].split()[1]) / 1024"

_IMPORT = f"""
import importlib, time, os, sys
sys.path.insert(0, {str(ROOT)!r})
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "ptbsite.settings")
before, cpu = {_RSS}, time.process_time()
name = sys.argv[1]
if name == "ptbsite.celery (the app)":
    import django; django.setup(); before, cpu = {_RSS}, time.process_time()
    from ptbsite.celery import app; app.loader.import_default_modules()
else:
    importlib.import_module(name)
print(round({_RSS} - before, 1), round(1000 * (time.process_time() - cpu)))
"""

_ENV = ('os.environ["PTB_PAGE_CACHE"] = "0"; os.environ["PTB_PAGE_WARM"] = "0"; os.environ["PTB_DUCKDB_THREADS"] = "1"; '
        'os.environ["DJANGO_DEBUG"] = "0"; os.environ["PTB_WAREHOUSE"] = sys.argv[1]')

# The URLs are listed by another interpreter: listing them reads every run (bench/scale.py's pages()), which would
# leave its own objects and allocator pages in the process measured.
_URLS = f"""
import json, os, sys
sys.path.insert(0, {str(ROOT)!r}); sys.path.insert(0, {str(ROOT / 'bench')!r})
{_ENV}
from ptbsite.wsgi import application
import scale
print(json.dumps(scale.pages()))
"""

_STATUS = "{k: int(l.split()[1]) / 1024 for l in open('/proc/self/status') for k in ('RssAnon', 'RssFile') if l.startswith(k + ':')}"

_SERVE = f"""
import json, os, sys, time
sys.path.insert(0, {str(ROOT)!r})
{_ENV}
from ptbsite.wsgi import application  # what gunicorn's worker loads
started, started_split = {_RSS}, {_STATUS}
from django.test import Client
client = Client()
urls = json.loads(sys.argv[2])
for url in urls:
    assert client.get(url).status_code == 200, url
heavy = {list(HEAVY)!r}
print(json.dumps({{"loaded_mb": started, "loaded_split": started_split, "after_mb": {_RSS}, "after_split": {_STATUS},
                  "pages": len(urls), "imported": [m for m in heavy if sys.modules.get(m) is not None]}}))
"""


def main() -> None:
    parser = argparse.ArgumentParser(description="memory of a web process (see the module docstring)")
    lake = Path("/tmp/ptb-bench-scale/lake-k9-x0.05")
    parser.add_argument("--warehouse", default=f"ducklake:sqlite:{lake / 'catalog.sqlite'}?data={lake / 'data'}")
    args = parser.parse_args()
    py = sys.executable
    print("| import alone | RSS MB | CPU ms |\n|---|---:|---:|")
    for name in ("django", "celery", "ptbsite.celery (the app)", "plotly", "plotly.graph_objects", "numpy", "pandas",
                 "pyarrow", "duckdb", "ninja", "pydantic"):
        out = subprocess.run([py, "-c", _IMPORT, name], capture_output=True, text=True, check=True, cwd=ROOT)
        mb, ms = out.stdout.split()
        print(f"| `{name}` | {mb} | {ms} |")
    listed = subprocess.run([py, "-c", _URLS, args.warehouse], capture_output=True, text=True, cwd=ROOT)
    if listed.returncode:
        sys.exit(listed.stderr[-3000:])
    urls = listed.stdout.strip().splitlines()[-1]
    out = subprocess.run([py, "-c", _SERVE, args.warehouse, urls], capture_output=True, text=True, cwd=ROOT)
    if out.returncode:
        sys.exit(out.stderr[-3000:])
    found = json.loads(out.stdout.strip().splitlines()[-1])
    print(f"\nweb process: {found['loaded_mb']:.0f} MB RSS with the site loaded (ptbsite.wsgi), "
          f"{found['after_mb']:.0f} MB after {found['pages']} pages and twins once each")
    for when in ("loaded", "after"):
        split = found[f"{when}_split"]
        print(f"  {when}: {split['RssAnon']:.0f} MB private (RssAnon), {split['RssFile']:.0f} MB mapped files (RssFile: "
              "the duckdb module and its extensions' code, shared with every process that maps them)")
    print("heavy packages imported: " + (", ".join(found["imported"]) or "none"))


if __name__ == "__main__":
    main()
