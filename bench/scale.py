"""Every public page and JSON twin, and the ingest, at the demo's size (K=9 method dirs) and the real benchmark's
(K=90), side by side in one run (issue 24).

Usage: .venv/bin/python bench/scale.py [--small 9] [--large 90] [--trace-scale 0.05] [--repeat 3] [--work DIR] [--listed]

1. ``make_demo_results --methods K --seed 7 --no-long-run --trace-scale X`` for both K into the work folder, unless
   there already (28 x K latest runs, ~4 % superseded retries, traces drawn from the real size distribution times X:
   X=1 is ~0.6 MB median and ~1.5 GB of traces at K=90, too much for a shared 2-core machine; X=0.05 keeps each
   trace at its one-training-cycle floor, ~45 KB median).
2. A fresh DuckLake warehouse per K (SQLite catalog, the embedded default): ``migrate``, ``import_published`` both
   suites, ``manage.py ingest`` of the tree on all cores, ``compact_warehouse`` (as ``make setup``). Printed: the ingest's CPU seconds (this process and its
   reaped worker processes, ``resource.getrusage``) per run. A warehouse already in the work folder is reused
   (its ingest figures read back from ``ingest.json``), so a second run of the bench costs only the pages.
3. In one process, page cache off (``PTB_PAGE_CACHE=0``), one DuckDB thread (``PTB_DUCKDB_THREADS=1``), ``DJANGO_DEBUG=0``
   unless set (as ``manage.py serve`` runs the site), Django's test
   client GETs each public page and twin on K=9 and K=90 in turn, ``--repeat`` rounds after a warm-up round; before
   each GET the in-process memos that a new warehouse version would empty are emptied (``warehouse.memo.forget``),
   so each figure is a cache miss. Printed: median CPU ms (``time.process_time``) and wall ms per page and K, the
   CPU ratio K=large / K=small of the medians and of the minimums (each K's least disturbed GET: on a shared
   machine the steadier of the two), and each response body's size (kB) at both K with their ratio (what the page must
   render: a page whose output grows with the runs costs more to render in proportion). The run pages are of the
   latest run whose trace has the step count nearest 200.
   ``/api/runs?latest=true&limit=500`` is a page of 252 runs at K=9 (every latest run) and 500 at K=90; the same
   URL at ``limit=200`` is a page of 200 at both.
   A last table: the ``/api/analysis`` twin right after ``/analysis/`` of the same version (the shared memo hit).

``--listed``: the suite file lists the tree's invented configurations (``demo.tree.invented_agent_groups``: past
the published method dirs, K=90 has 35 dirs of 12 configurations that the real suite file does not name, so each
is a leaderboard row of its own, where upstream's agent map would group a configuration's ``_runN`` repeats). The
bench writes a copy of ``suites/`` into the work folder with those agents added to ``posttrainbench.json``'s
``agent_groups``, reads every suite from it (ingest and pages; ``ptbsite.suites.SUITES_DIR``), and ingests a K
with such configurations into a warehouse of its own (``lake-k90-x0.05-listed``); the tree is the same.

The export is not timed here: at ~2.4 CPU s per run today it would take ~1.7 CPU-hours at K=90 (bench/export.sh).
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "ptbsite.settings")
os.environ["PTB_PAGE_CACHE"] = "0"  # time the pages computed, not served from the page cache
os.environ["PTB_PAGE_WARM"] = "0"
os.environ["PTB_DUCKDB_THREADS"] = "1"
os.environ.setdefault("DJANGO_DEBUG", "0")  # as `manage.py serve` runs the site (DEBUG on renders templates slower)


def cpu_with_children() -> float:
    """CPU seconds (user + system) of this process and of its children that have been waited for."""
    own, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime


def use(settings, spec: str) -> None:
    from ptbsite import warehouse

    settings.PTB_WAREHOUSE = spec
    warehouse.reset_migration_cache()


def list_invented(work: Path, k: int) -> bool:
    """Read suites from a copy of ``suites/`` in ``work`` whose ``posttrainbench.json`` lists the invented
    configurations of K method dirs in its ``agent_groups`` (``--listed``); False, and nothing changed, when K has
    none. The real suite files are not touched."""
    from demo.tree import invented_agent_groups
    from leaderboard import services
    from ptbsite import suites

    groups = invented_agent_groups(k)
    if not groups:
        return False
    folder = work / f"suites-listed-k{k}"
    folder.mkdir(exist_ok=True)
    for path in sorted((ROOT / "suites").glob("*.json")):
        raw = json.loads(path.read_text())
        if path.stem == "posttrainbench":
            raw["agent_groups"] = [*raw.get("agent_groups", []), *groups]
        text = json.dumps(raw, indent=1) + "\n"
        if not (folder / path.name).exists() or (folder / path.name).read_text() != text:
            (folder / path.name).write_text(text)
    suites.SUITES_DIR = services.SUITES_DIR = folder
    suites._cached.cache_clear()
    return True


def build(settings, work: Path, k: int, scale: float, listed: bool = False) -> tuple[str, dict]:
    """The tree and the warehouse of K method dirs (made once per work folder); returns (spec, ingest figures).
    ``listed``: the suites read list the tree's invented configurations (:func:`list_invented`), and a K that has
    some gets a warehouse of its own."""
    from django.core.management import call_command

    from demo.tree import make_demo_results
    from ptbsite import warehouse

    tree = work / f"tree-k{k}-x{scale:g}"
    if not (tree / "SYNTHETIC").exists():
        started = time.perf_counter()
        report = make_demo_results(root=tree, methods=k, seed=7, long_run=False, trace_scale=scale)
        print(f"K={k}: wrote {len(report.runs)} runs ({sum(r.is_latest for r in report.runs)} latest), "
              f"{report.bytes_written / 1e6:.0f} MB in {time.perf_counter() - started:.0f} s", flush=True)
    lake = work / f"lake-k{k}-x{scale:g}{'-listed' if listed and list_invented(work, k) else ''}"
    spec = f"ducklake:sqlite:{lake / 'catalog.sqlite'}?data={lake / 'data'}"
    marker = lake / "ingest.json"
    use(settings, spec)
    call_command("migrate", "--noinput", verbosity=0)
    if marker.exists():
        return spec, json.loads(marker.read_text())
    call_command("import_published")
    call_command("import_published", "--suite", "frogsgame")
    from ingest.tree import ingest_tree

    cpu, wall = cpu_with_children(), time.perf_counter()
    ingested = ingest_tree(root=tree)
    figures = {"runs": ingested.stored, "cpu_s": cpu_with_children() - cpu, "wall_s": time.perf_counter() - wall,
               "mb": ingested.bytes_read / 1e6}
    compacted = warehouse.compact()  # as ``make setup`` does after its ingest (compact_warehouse, default keep)
    figures["compact_s"] = compacted.seconds
    marker.write_text(json.dumps(figures))
    return spec, figures


def pages() -> list[str]:
    """Every public page and JSON twin of the current warehouse (runs pages of the latest run nearest 200 steps)."""
    from leaderboard import plots  # noqa: F401 (the plots pages' URLs below are theirs)
    from traces.selectors import list_runs

    runs = [r for r in list_runs(limit=None, latest_only=True)[0] if r.step_count]
    run = min(runs, key=lambda r: (abs(r.step_count - 200), r.id))
    first = list_runs(limit=50)[1]
    deep = list_runs(limit=None)[0]
    deep_after = deep[len(deep) // 2].id
    plot_pages = ["time-vs-score", "usage-vs-score", "time-spent", "per-benchmark", "budget-and-effort"]
    return ["/", "/?source=runs", "/?source=all", "/runs/", "/runs/?latest=1", "/analysis/", "/analysis/calibration.json",
            "/plots/",
            *[f"/plots/{p}/" for p in plot_pages],
            f"/runs/{run.id}/", f"/runs/{run.id}/steps", f"/runs/{run.id}/timeline.json",
            "/api/leaderboard", "/api/leaderboard?source=runs", "/api/runs", f"/api/runs?after={first}",
            f"/api/runs?limit=50&after={deep_after}", "/api/runs?latest=true&limit=500",
            "/api/runs?latest=true&limit=200",  # 200 rows at both K (limit=500: K=9's 252 latest runs against 500)
            f"/api/runs/{run.id}", f"/api/runs/{run.id}/steps", f"/api/runs/{run.id}/facets",
            f"/api/runs/{run.id}/timeline",
            "/api/analysis", *[f"/api/plots/{p}" for p in plot_pages]]


def label(url: str) -> str:
    """The URL with the run id and cursors replaced, so both warehouses' rows line up."""
    import re

    url = re.sub(r"/runs/[^/?]+(/|$)", r"/runs/RUN\1", url)
    url = re.sub(r"/runs/RUN$", "/runs/RUN", url)
    return re.sub(r"after=[^&]+", "after=CURSOR", url)


def main() -> None:
    parser = argparse.ArgumentParser(description="pages and ingest at K=9 and K=90 method dirs (module docstring)")
    parser.add_argument("--small", type=int, default=9)
    parser.add_argument("--large", type=int, default=90)
    parser.add_argument("--trace-scale", type=float, default=0.05)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--work", type=Path, default=Path("/tmp/ptb-bench-scale"))
    parser.add_argument("--listed", action="store_true",
                        help="the suite file lists the tree's invented configurations (module docstring)")
    args = parser.parse_args()
    import django

    django.setup()
    from django.conf import settings
    from django.test import Client

    from ptbsite import warehouse

    args.work.mkdir(parents=True, exist_ok=True)
    sizes = (args.small, args.large)
    if args.listed:  # one suites folder for both K: the larger K's invented configurations (the smaller has fewer)
        list_invented(args.work, args.large)
    built = {k: build(settings, args.work, k, args.trace_scale, args.listed) for k in sizes}
    print(f"\ntrace scale {args.trace_scale:g}; ingest on all cores (CPU of this process and its workers)\n")
    print("| K | runs stored | MB of traces | ingest CPU s | CPU s per run | wall s |\n|---:|---:|---:|---:|---:|---:|")
    for k in sizes:
        f = built[k][1]
        print(f"| {k} | {f['runs']} | {f['mb']:.0f} | {f['cpu_s']:.0f} | {f['cpu_s'] / max(1, f['runs']):.3f} "
              f"| {f['wall_s']:.0f} |")
    a, b = (built[k][1] for k in sizes)
    print(f"\nper-run ingest CPU ratio K={args.large}/K={args.small}: "
          f"{(b['cpu_s'] / b['runs']) / (a['cpu_s'] / a['runs']):.2f}")

    client = Client()
    urls: dict[int, list[str]] = {}
    for k in sizes:
        use(settings, built[k][0])
        urls[k] = pages()
    cpu: dict[tuple[int, str], list[float]] = {}
    wall: dict[tuple[int, str], list[float]] = {}
    size: dict[tuple[int, str], int] = {}  # body bytes (the same each round)
    for round_ in range(args.repeat + 1):
        for k in sizes:
            use(settings, built[k][0])
            for url in urls[k]:
                warehouse.memo.forget()
                c, w = time.process_time(), time.perf_counter()
                response = client.get(url)
                c, w = 1000 * (time.process_time() - c), 1000 * (time.perf_counter() - w)
                assert response.status_code == 200, (k, url, response.status_code)
                if round_:
                    cpu.setdefault((k, label(url)), []).append(c)
                    wall.setdefault((k, label(url)), []).append(w)
                    size[(k, label(url))] = len(response.content)
    s, g = sizes
    print(f"\nmedian (and minimum) of {args.repeat} GETs each, computed (page cache off, memos emptied), one DuckDB "
          "thread\n")
    print(f"| page | K={s} CPU ms | K={g} CPU ms | CPU ratio | min ratio | K={s} wall ms | K={g} wall ms | K={s} KB | "
          f"K={g} KB | bytes ratio |\n|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    worst = worst_min = 0.0
    for url in urls[s]:
        key = label(url)
        cs, cg = statistics.median(cpu[(s, key)]), statistics.median(cpu[(g, key)])
        least = min(cpu[(g, key)]) / min(cpu[(s, key)])  # the least disturbed GET of each: the steadier ratio
        worst, worst_min = max(worst, cg / cs), max(worst_min, least)
        print(f"| `{key}` | {cs:.0f} | {cg:.0f} | {cg / cs:.2f} | {least:.2f} | "
              f"{statistics.median(wall[(s, key)]):.0f} | {statistics.median(wall[(g, key)]):.0f} | "
              f"{size[(s, key)] / 1e3:.1f} | {size[(g, key)] / 1e3:.1f} | {size[(g, key)] / size[(s, key)]:.2f} |")
    print(f"\nworst CPU ratio: {worst:.2f} (of the medians), {worst_min:.2f} (of the minimums)")
    print(f"\n/api/analysis right after /analysis/ of the same warehouse version (memo kept), K={g}, CPU ms\n")
    use(settings, built[g][0])
    warehouse.memo.forget()
    client.get("/analysis/")
    for url in [u for u in urls[g] if u.startswith("/api/analysis")]:
        c = time.process_time()
        assert client.get(url).status_code == 200
        print(f"| `{url}` | {1000 * (time.process_time() - c):.0f} |")


if __name__ == "__main__":
    main()
