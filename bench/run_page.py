"""The run page's cost against its trace's length, side by side in one run (issue 18).

Usage: .venv/bin/python bench/run_page.py [--repeat 10] [--mb 72] [--work DIR] [--kind file|ducklake]

Builds ``make_demo_results --runs 4 --seed 7`` (a ~200-step run and the ~42,882-step long run) and, from the long
run, a ~60,000-step Claude Code trace (``bench/benchlib.py``'s ``build_big``: the trace repeated with fresh ids and
shifted times to ``--mb`` MB, stored under the long run's id, so it replaces it on the second ingest). For the
200-step run (the anchor), the long run and the 60k run it prints, in-process with Django's test client (server
time, no network; median and p95 of ``--repeat`` requests, ms):

- the run page: bytes, time, and their ratio to the 200-step run's;
- the timeline figure the page loads after first paint (``/runs/<id>/timeline.json``): bytes and time;
- the first and the last steps page (``/runs/<id>/steps?after=``), and their ratio;
- a search as the page sends it (htmx ``#trace-results`` partial) for a rare word and a common one, and the
  whole run page with ``?q=`` (the no-script path).
"""
from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "ptbsite.settings")
os.environ.setdefault("PTB_PAGE_CACHE", "0")  # time the pages computed, not served from the page cache

from benchlib import build_big, demo_tree, long_run_dir, timed  # noqa: E402 (bench/benchlib.py)

HTMX = {"HTTP_HX_REQUEST": "true", "HTTP_HX_TARGET": "trace-results"}


def _timed(fn, repeat: int) -> tuple[float, float, int]:
    """(median ms, p95 ms, bytes) of ``repeat`` GETs by ``fn`` after one warm-up GET (whose bytes are counted)."""
    size = len(fn().content)
    return (*timed(fn, repeat), size)


def measure(client, run, repeat: int) -> dict[str, tuple[float, float, int]]:
    """Every figure of one run (module doc); keys are the rows' labels."""
    base = f"/runs/{run.id}/"
    last_after = max(-1, run.step_count - 51)
    return {
        "run page": _timed(lambda: client.get(base), repeat),
        "timeline.json": _timed(lambda: client.get(base + "timeline.json"), repeat),
        "steps first": _timed(lambda: client.get(base + "steps?after=-1"), repeat),
        "steps last": _timed(lambda: client.get(base + f"steps?after={last_after}"), repeat),
        "search rare (htmx)": _timed(lambda: client.get(base + "?q=omitted-api-key", **HTMX), repeat),
        "search common (htmx)": _timed(lambda: client.get(base + "?q=import", **HTMX), repeat),
        "run page ?q=import": _timed(lambda: client.get(base + "?q=import"), repeat),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=10)
    parser.add_argument("--mb", type=float, default=72.0, help="size of the ~60k-step trace (MB)")
    parser.add_argument("--work", type=Path, help="work folder (default: a new temporary folder)")
    parser.add_argument("--kind", choices=("file", "ducklake"), default="file")
    args = parser.parse_args()
    work = args.work or Path(tempfile.mkdtemp(prefix="ptb-bench-runpage-"))
    work.mkdir(parents=True, exist_ok=True)
    os.environ["PTB_WAREHOUSE"] = (str(work / "warehouse.duckdb") if args.kind == "file"
                                   else f"ducklake:sqlite:{work / 'catalog.sqlite'}?data={work / 'lake'}")
    os.environ["PTB_DATA_DIR"] = str(work)
    import django

    django.setup()
    from django.core.management import call_command
    from django.test import Client

    from leaderboard.services import import_published
    from traces import selectors
    from ingest.tree import ingest_tree

    call_command("migrate", verbosity=0)
    import_published()
    demo_root, big_root = work / "demo", work / f"big-{args.mb:g}"
    demo_tree(demo_root)
    if not (big_root / "SYNTHETIC").exists():
        build_big(long_run_dir(demo_root), big_root, args.mb)
    ingest_tree(root=demo_root)
    runs, _ = selectors.list_runs(limit=1000)
    small = min((r for r in runs if r.step_count >= 150), key=lambda r: abs(r.step_count - 200))
    long_run = max(runs, key=lambda r: r.step_count)
    client = Client()
    results = [(small, measure(client, small, args.repeat)), (long_run, measure(client, long_run, args.repeat))]
    ingest_tree(root=big_root)  # the same run id, now ~60k steps
    big = selectors.get_run(long_run.id)
    assert big is not None and big.step_count > long_run.step_count
    results += [(big, measure(client, big, args.repeat)), (small, measure(client, small, args.repeat))]
    anchor = results[0][1]
    print(f"warehouse: {args.kind}; load average {os.getloadavg()[0]:.2f} {os.getloadavg()[1]:.2f}; "
          f"ms are median / p95 of {args.repeat}")
    print(f"{'run':>18} {'steps':>6} {'what':>22} {'bytes':>10} {'ms p50 / p95':>17} {'bytes x':>8} {'ms x':>6}")
    for run, figures in results:
        for what, (p50, p95, size) in figures.items():
            print(f"{run.id:>18} {run.step_count:>6} {what:>22} {size:>10,} {p50:>8.1f} / {p95:<7.1f} "
                  f"{size / anchor[what][2]:>7.2f}x {p50 / anchor[what][0]:>5.2f}x")
        first, last = figures["steps first"][0], figures["steps last"][0]
        print(f"{'':>18} {'':>6} {'first / last steps':>22} {'':>10} {first / last:>17.2f}x")


if __name__ == "__main__":
    main()
