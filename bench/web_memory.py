"""What a web process holds: its RSS after every public page once, which heavy packages it imported, and what each
import costs in a fresh interpreter (issue 24).

Usage: .venv/bin/python bench/web_memory.py [--warehouse SPEC]

1. Per package (django, celery, the Celery app, plotly, plotly.graph_objects, pandas, pyarrow, duckdb, numpy, ...):
   a fresh interpreter imports it alone; printed: RSS grown (MB, ``VmRSS`` of ``/proc/self/status``) and CPU ms.
2. A fresh interpreter loads the site as a web worker does (``ptbsite.wsgi``, ``DJANGO_DEBUG=0`` as ``serve`` runs
   it), page cache off, GETs every public page and JSON twin of ``bench/scale.py``'s list (listed by another
   interpreter, so that listing them does not count) once through Django's test client (the same request path as
   gunicorn's worker), then prints its RSS, split into private memory (``RssAnon``) and mapped files (``RssFile``),
   right after the last page and at rest (``--rest`` s idle, default 2: DuckDB's allocator thread returns the pages
   its queries freed within ~1 s, ``PTB_DUCKDB_ALLOCATOR_BACKGROUND_THREADS``), and which of the heavy packages it imported (``sys.modules``), and its PSS and USS (psutil's ``memory_full_info``,
   from ``/proc/<pid>/smaps``: PSS counts each shared page divided by the processes mapping it, USS only the pages
   this process alone maps), and at rest the 8 mappings holding most resident memory (``/proc/self/smaps``: each
   library or extension file, ``[heap]``, ``[anon]``). ``--warehouse``: a ``PTB_WAREHOUSE`` spec to read (default: bench/scale.py's K=9
   warehouse in /tmp/ptb-bench-scale).
3. ``--workers N`` (default 3; 0 skips it): N forked worker processes, as gunicorn's master forks them, each GETting
   every page and twin once, measured (RSS, PSS, USS, MB) while all of them are alive, ``--rest`` s after the last
   worker's last page, three times: the app imported in
   each worker after the fork (``serve``'s gunicorn without ``--preload``) and imported once in the parent before
   the fork (``--preload``), and that with ``gc.freeze()`` after the import (the objects imported moved out of the
   collector's generations, whose bookkeeping writes would copy their pages). The parent's own PSS is printed beside
   them (gunicorn's master holds the same); "PSS of all" is the workers' and the parent's together.
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

_FULL = ("(lambda m: {'rss': m.rss / 2**20, 'pss': m.pss / 2**20, 'uss': m.uss / 2**20})"
         "(__import__('psutil').Process(PID).memory_full_info())")
_STATUS = "{k: int(l.split()[1]) / 1024 for l in open('/proc/self/status') for k in ('RssAnon', 'RssFile') if l.startswith(k + ':')}"

_SERVE = f"""
import collections, json, os, sys, time

def resident_by_mapping():
    # kB resident per mapped file ("[anon]" for anonymous mappings), from /proc/self/smaps
    kb, name = collections.Counter(), None
    for line in open("/proc/self/smaps"):
        parts = line.split()
        if len(parts) >= 5 and parts[0].count("-") == 1 and ":" not in parts[0]:
            name = parts[5] if len(parts) > 5 else "[anon]"
        elif parts[0] == "Rss:":
            kb[name] += int(parts[1])
    return kb
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
full = {_FULL.replace("PID", "")}
after_mb, after_split = {_RSS}, {_STATUS}
time.sleep(float(sys.argv[3]))  # at rest: what the process holds once its idle threads have run
print(json.dumps({{"full": full, "loaded_mb": started, "loaded_split": started_split, "after_mb": after_mb,
                  "after_split": after_split, "rest_mb": {_RSS}, "rest_split": {_STATUS},
                  "rest_full": {_FULL.replace("PID", "")},
                  "rest_maps": resident_by_mapping().most_common(8),
                  "pages": len(urls), "imported": [m for m in heavy if sys.modules.get(m) is not None]}}))
"""

# N workers forked from one parent, with the app imported before (preload) or after the fork; measured while all live.
_FORK = f"""
import json, os, sys, time
sys.path.insert(0, {str(ROOT)!r})
{_ENV}
import psutil
workers, mode, urls = int(sys.argv[2]), sys.argv[3], json.loads(sys.argv[4])
if mode in ("preload", "freeze"):
    from ptbsite.wsgi import application  # noqa: F401 (gunicorn --preload: the master imports the app)
if mode == "freeze":
    import gc; gc.collect(); gc.freeze()  # the imported objects out of the collector's reach: fewer copied pages
children = []
for _ in range(workers):
    ready_r, ready_w = os.pipe()
    go_r, go_w = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(ready_r); os.close(go_w)
        try:
            from ptbsite.wsgi import application  # noqa: F401,F811 (a no-op with preload)
            from django.test import Client
            client = Client()
            for url in urls:
                assert client.get(url).status_code == 200, url
        except BaseException:
            import traceback; traceback.print_exc(); os._exit(1)
        os.write(ready_w, b"1"); os.read(go_r, 1)  # stay alive until the parent measured every worker
        os._exit(0)
    os.close(ready_w); os.close(go_r)
    children.append((pid, ready_r, go_w))
for pid, ready_r, _ in children:
    assert os.read(ready_r, 1) == b"1", "a worker failed"
time.sleep(float(sys.argv[5]))  # the workers at rest
full = lambda pid: {_FULL.replace("PID", "pid")}
print(json.dumps({{"workers": [full(pid) for pid, _, _ in children], "parent": full(os.getpid())}}))
for pid, _, go_w in children:
    os.write(go_w, b"1"); os.waitpid(pid, 0)
"""


def main() -> None:
    parser = argparse.ArgumentParser(description="memory of a web process (see the module docstring)")
    lake = Path("/tmp/ptb-bench-scale/lake-k9-x0.05")
    parser.add_argument("--warehouse", default=f"ducklake:sqlite:{lake / 'catalog.sqlite'}?data={lake / 'data'}")
    parser.add_argument("--workers", type=int, default=3, help="forked workers to measure (0: skip)")
    parser.add_argument("--skip-imports", action="store_true", help="skip the per-package import table")
    parser.add_argument("--rest", type=float, default=2.0,
                        help="seconds idle after the pages before the 'at rest' figures (default 2)")
    args = parser.parse_args()
    py = sys.executable
    print("| import alone | RSS MB | CPU ms |\n|---|---:|---:|")
    for name in () if args.skip_imports else ("django", "celery", "ptbsite.celery (the app)", "plotly", "plotly.graph_objects", "numpy", "pandas",
                 "pyarrow", "duckdb", "ninja", "pydantic", "kombu.exceptions", "pygments"):
        out = subprocess.run([py, "-c", _IMPORT, name], capture_output=True, text=True, check=True, cwd=ROOT)
        mb, ms = out.stdout.split()
        print(f"| `{name}` | {mb} | {ms} |")
    listed = subprocess.run([py, "-c", _URLS, args.warehouse], capture_output=True, text=True, cwd=ROOT)
    if listed.returncode:
        sys.exit(listed.stderr[-3000:])
    urls = listed.stdout.strip().splitlines()[-1]
    out = subprocess.run([py, "-c", _SERVE, args.warehouse, urls, str(args.rest)], capture_output=True, text=True, cwd=ROOT)
    if out.returncode:
        sys.exit(out.stderr[-3000:])
    found = json.loads(out.stdout.strip().splitlines()[-1])
    print(f"\nweb process: {found['loaded_mb']:.0f} MB RSS with the site loaded (ptbsite.wsgi), "
          f"{found['after_mb']:.0f} MB after {found['pages']} pages and twins once each")
    print(f"  at rest ({args.rest:g} s idle after the last page): {found['rest_mb']:.0f} MB RSS; PSS "
          f"{found['rest_full']['pss']:.0f}, USS {found['rest_full']['uss']:.0f} MB")
    for when in ("loaded", "after", "rest"):
        split = found[f"{when}_split"]
        print(f"  {when}: {split['RssAnon']:.0f} MB private (RssAnon), {split['RssFile']:.0f} MB mapped files (RssFile: "
              "the duckdb module and its extensions' code, shared with every process that maps them)")
    print(f"  after: RSS {found['full']['rss']:.0f}, PSS {found['full']['pss']:.0f}, USS {found['full']['uss']:.0f} MB "
          "(psutil memory_full_info, the process alone)")
    print("  at rest, resident MB by mapping (the 8 largest): " + ", ".join(
        f"{Path(name).name} {kb / 1024:.1f}" for name, kb in found["rest_maps"]))
    print("heavy packages imported: " + (", ".join(found["imported"]) or "none"))
    if not args.workers:
        return
    print(f"\n{args.workers} forked workers, each after every page once (MB; all alive when measured, "
          f"{args.rest:g} s after the last worker's last page)\n"
          "| app imported | worker RSS | worker PSS | worker USS | parent PSS | PSS of all |\n|---|---|---|---|---:|---:|")
    modes = {"after": "in each worker, after the fork", "preload": "in the parent, before the fork (--preload)",
             "freeze": "in the parent, then gc.freeze(), before the fork"}
    for mode, title in modes.items():
        out = subprocess.run([py, "-c", _FORK, args.warehouse, str(args.workers), mode, urls, str(args.rest)],
                             capture_output=True, text=True, cwd=ROOT)
        if out.returncode:
            sys.exit(out.stderr[-3000:])
        got = json.loads(out.stdout.strip().splitlines()[-1])
        row = [" / ".join(f"{w[k]:.0f}" for w in got["workers"]) for k in ("rss", "pss", "uss")]
        total = sum(w["pss"] for w in got["workers"]) + got["parent"]["pss"]
        print(f"| {title} | "
              f"{' | '.join(row)} | {got['parent']['pss']:.0f} | {total:.0f} |")


if __name__ == "__main__":
    main()
