"""The compare page's cost against its traces' lengths, side by side in one run (issue 27).

Usage: .venv/bin/python bench/compare.py [--repeat 10] [--steps 60000] [--work DIR]

Builds ``make_demo_results --runs 4 --seed 7`` and, from its long Claude Code run, two ~``--steps``-step runs and
two ~200-step runs (``bench/benchlib.py``'s ``build_big``: the trace repeated with fresh ids and shifted times,
four run directories of one method, so four run ids of one cell), ingests them into a fresh warehouse and prints,
in-process with Django's test client (server time, no network, page cache off; median and p95 of ``--repeat``
requests after one warm-up):

- ``/compare/?runs=<big a>,<big b>`` against ``/compare/?runs=<small a>,<small b>``: bytes, ms and their ratios;
- the same for ``/api/compare`` and for the next page of aligned steps from the middle of the big traces
  (``?after=`` the cursors of the step at half the steps, as htmx asks for it).
"""
from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "ptbsite.settings")
os.environ.setdefault("PTB_PAGE_CACHE", "0")

from benchlib import build_big, demo_tree, long_run_dir, timed  # noqa: E402 (bench/benchlib.py)

MORE = {"HTTP_HX_REQUEST": "true", "HTTP_HX_TARGET": "compare-more"}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=10)
    parser.add_argument("--steps", type=int, default=60_000)
    parser.add_argument("--work", type=Path, help="work folder (default: a new temporary folder)")
    args = parser.parse_args()
    work = args.work or Path(tempfile.mkdtemp(prefix="ptb-bench-compare-"))
    work.mkdir(parents=True, exist_ok=True)
    os.environ["PTB_WAREHOUSE"] = str(work / "warehouse.duckdb")
    os.environ["PTB_DATA_DIR"] = str(work)
    import django

    django.setup()
    from django.core.management import call_command
    from django.test import Client

    from traces import layout, selectors
    from ingest.tree import ingest_tree

    call_command("migrate", verbosity=0)
    demo = demo_tree(work / "demo")
    long_run = long_run_dir(demo)
    tree = work / f"compare-{args.steps}"
    names = {"big a": (args.steps, "_9000001"), "big b": (args.steps, "_9000002"),
             "small a": (200, "_9000003"), "small b": (200, "_9000004")}
    stem = long_run.name.rsplit("_", 1)[0]
    ids = {}
    for label, (lines, suffix) in names.items():
        name = stem + suffix
        if not (tree / long_run.parent.name / name / "solve_out.txt").exists():
            build_big(long_run, tree, lines=lines, run_name=name)
        ids[label] = layout.run_id(long_run.parent.name, name)
    report = ingest_tree(root=tree)
    print(f"ingested {report.stored} runs ({report.unchanged} unchanged, {report.failed} failed)")
    runs = {}
    for label, run_id in ids.items():
        found = selectors.get_run(run_id)
        if found is None:
            raise SystemExit(f"run {label} ({run_id}) was not ingested")
        runs[label] = found
    client = Client()

    def measure(path: str, **headers) -> tuple[float, float, int]:
        size = len(client.get(path, **headers).content)
        return (*timed(lambda: client.get(path, **headers), args.repeat), size)

    rows = []
    for pair in (("small a", "small b"), ("big a", "big b")):
        a, b = (runs[p] for p in pair)
        both = f"{a.id},{b.id}"
        mid_a, mid_b = a.step_count // 2, b.step_count // 2
        rows.append((pair, {
            "compare page": measure(f"/compare/?runs={both}"),
            "api/compare": measure(f"/api/compare?runs={both}"),
            "more steps (htmx)": measure(f"/compare/?runs={both}&after={mid_a},{mid_b}", **MORE),
        }))
    anchor = rows[0][1]
    print(f"load average {os.getloadavg()[0]:.2f}; ms are median / p95 of {args.repeat}")
    print(f"{'runs':>18} {'steps':>13} {'what':>18} {'bytes':>9} {'ms p50 / p95':>17} {'bytes x':>8} {'ms x':>6}")
    for pair, figures in rows:
        steps = "/".join(str(runs[p].step_count) for p in pair)
        for what, (p50, p95, size) in figures.items():
            print(f"{' + '.join(pair):>18} {steps:>13} {what:>18} {size:>9,} {p50:>8.1f} / {p95:<7.1f} "
                  f"{size / anchor[what][2]:>7.2f}x {p50 / anchor[what][0]:>5.2f}x")


if __name__ == "__main__":
    main()
