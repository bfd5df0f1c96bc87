"""The compare page's cost against its traces' lengths, side by side in one run (issue 27).

Usage: .venv/bin/python bench/compare.py [--repeat 10] [--steps 60000] [--work DIR]

Builds ``make_demo_results --runs 4 --seed 7`` and, from its long Claude Code run, two ~``--steps``-step runs and
two ~200-step runs (``bench/benchlib.py``'s ``build_big``: the trace repeated with fresh ids and shifted times,
four run directories of one method, so four run ids of one cell), ingests them into a fresh warehouse and prints,
in-process with Django's test client (server time, no network, page cache off; median and p95 of ``--repeat``
requests after one warm-up, CPU ms of this process beside; ``bench/benchlib.py``'s ``timed_cpu``):

- ``/compare/?runs=<big a>,<big b>`` against ``/compare/?runs=<small a>,<small b>``: bytes, ms and their ratios;
- the same for ``/api/compare`` and for the next page of aligned steps from the middle of the big traces
  (``?after=`` the cursors of the step at half the steps, as htmx asks for it).

With ``--browser``: the first steps in a cold browser, compare page against run page (issue 27's second target).
``manage.py serve --workers 1`` (gunicorn; one process, as a plain DuckDB file allows) on the same warehouse, page
cache off, every URL fetched twice first; then ``--rounds`` rounds of headless Chromium (``/usr/bin/chromium``,
Playwright), each measure in a new browser context (empty cache), viewport 1280x900, the pages in turn: the run
page of ``big a`` and ``/compare/?runs=<big a>,<big b>``, and the same for the small runs. A script added before
any page script looks in every animation frame for the first step's text (:data:`FIRST_TEXT`, the harness's
first line, in step 0 of every run) and notes ``performance.now()`` (ms since navigation start) once it is drawn
(a range over it with a box of some area) as many times as the page has columns: once under ``#steps`` (run
page), twice under ``#compare-rows`` (both columns of the compare page). Prints the medians and the ratio
compare / run page for each size.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "ptbsite.settings")
os.environ.setdefault("PTB_PAGE_CACHE", "0")

from benchlib import (  # noqa: E402 (bench/benchlib.py)
    ROOT, Timing, build_big, demo_tree, free_port, long_run_dir, timed_cpu)

MORE = {"HTTP_HX_REQUEST": "true", "HTTP_HX_TARGET": "compare-more"}
FIRST_TEXT = "CUDA available"  # the harness's first line: step 0 of every run built from the demo's long run
VIEWPORT = {"width": 1280, "height": 900}
TIMEOUT_S = 120.0

# Runs before any page script: every animation frame, count the drawn occurrences of __bench.target under
# __bench.root and note the time once there are __bench.count of them.
WATCH_JS = """
window.__bench = Object.assign({seen: null}, window.__benchWatch);
(function () {
  function drawn(node, at, length) {
    const range = document.createRange();
    range.setStart(node, at);
    range.setEnd(node, at + length);
    for (const r of range.getClientRects()) {
      if (r.width > 0 && r.height > 0 && getComputedStyle(node.parentElement).visibility !== "hidden") return true;
    }
    return false;
  }
  function check() {
    const b = window.__bench;
    const root = document.body && document.querySelector(b.root);
    if (b.seen === null && root) {
      const walker = document.createTreeWalker(root, NodeFilter.SHOW_TEXT);
      let node, found = 0;
      while ((node = walker.nextNode())) {
        const at = node.nodeValue.indexOf(b.target);
        if (at >= 0 && drawn(node, at, b.target.length)) found += 1;
      }
      if (found >= b.count) b.seen = performance.now();
    }
    if (b.seen === null) requestAnimationFrame(check);
  }
  requestAnimationFrame(check);
})();
"""


def first_steps_ms(browser, url: str, root: str, count: int) -> float:
    """ms from navigation start to :data:`FIRST_TEXT` drawn ``count`` times under ``root``, in a new context."""
    context = browser.new_context(viewport=VIEWPORT)
    try:
        page = context.new_page()
        watch = {"target": FIRST_TEXT, "root": root, "count": count}
        page.add_init_script(f"window.__benchWatch = {json.dumps(watch)};" + WATCH_JS)
        page.goto(url, wait_until="commit")
        page.wait_for_function("window.__bench && window.__bench.seen !== null", timeout=TIMEOUT_S * 1000,
                               polling=50)
        return page.evaluate("window.__bench.seen")
    finally:
        context.close()


def browser_rounds(work: Path, pairs: dict[str, tuple[str, str]], rounds: int) -> None:
    """Serve the warehouse and print the cold-browser first-steps medians (module docstring, ``--browser``).
    ``pairs``: {size label: (run id a, run id b)}."""
    from playwright.sync_api import sync_playwright

    port = free_port()
    env = {**os.environ, "PTB_PAGE_CACHE": "0", "DJANGO_DEBUG": "0", "PYTHONUNBUFFERED": "1"}
    log = work / f"serve-{port}.log"
    server = subprocess.Popen([sys.executable, "manage.py", "serve", "--workers", "1", "--bind",
                               f"127.0.0.1:{port}"], cwd=ROOT, env=env, stdout=log.open("wb"),
                              stderr=subprocess.STDOUT)
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 120
        while True:
            try:
                with urllib.request.urlopen(base + "/api/runs", timeout=10):
                    break
            except OSError:
                if server.poll() is not None or time.monotonic() > deadline:
                    raise SystemExit(f"the server did not start; see {log}") from None
                time.sleep(0.3)
        pages = {}
        for label, (a, b) in pairs.items():
            pages[(label, "run page")] = (f"{base}/runs/{a}/", "#steps", 1)
            pages[(label, "compare page")] = (f"{base}/compare/?runs={a},{b}", "#compare-rows", 2)
        for _ in range(2):
            for url, _, _ in pages.values():
                with urllib.request.urlopen(url, timeout=120) as answer:
                    answer.read()
        samples: dict[tuple[str, str], list[float]] = {k: [] for k in pages}
        with sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path="/usr/bin/chromium", headless=True)
            try:
                for _ in range(rounds):
                    for key, (url, root, count) in pages.items():
                        samples[key].append(first_steps_ms(browser, url, root, count))
            finally:
                browser.close()
    finally:
        server.terminate()
        server.wait(timeout=30)
    print(f"cold browser, first steps drawn (ms since navigation start, median of {rounds}; load average "
          f"{os.getloadavg()[0]:.2f})")
    print(f"{'runs':>8} {'run page ms':>12} {'compare page ms':>16} {'compare / run':>14}   samples run | compare")
    for label in pairs:
        run, both = samples[(label, "run page")], samples[(label, "compare page")]
        print(f"{label:>8} {statistics.median(run):>12.0f} {statistics.median(both):>16.0f} "
              f"{statistics.median(both) / statistics.median(run):>13.2f}x   "
              f"{' '.join(f'{x:.0f}' for x in run)} | {' '.join(f'{x:.0f}' for x in both)}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=10)
    parser.add_argument("--steps", type=int, default=60_000)
    parser.add_argument("--work", type=Path, help="work folder (default: a new temporary folder)")
    parser.add_argument("--browser", action="store_true", help="also the first steps in a cold browser")
    parser.add_argument("--rounds", type=int, default=5, help="browser rounds (with --browser)")
    args = parser.parse_args()
    work = args.work or Path(tempfile.mkdtemp(prefix="ptb-bench-compare-"))
    work.mkdir(parents=True, exist_ok=True)
    os.environ["PTB_WAREHOUSE"] = str(work / "warehouse.duckdb")
    os.environ["PTB_DATA_DIR"] = str(work)
    import django

    django.setup()
    from django.core.management import call_command
    from django.test import Client

    from ptbsite import warehouse
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

    def measure(path: str, **headers) -> tuple[Timing, int]:
        size = len(client.get(path, **headers).content)  # the warm-up
        return timed_cpu(lambda: client.get(path, **headers), args.repeat, warmup=0), size

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
    print(f"load average {os.getloadavg()[0]:.2f}; ms are median / p95 of {args.repeat} (CPU: median, this process)")
    print(f"{'runs':>18} {'steps':>13} {'what':>18} {'bytes':>9} {'ms p50 / p95':>17} {'cpu ms':>7} {'bytes x':>8} "
          f"{'ms x':>6} {'cpu x':>6}")
    for pair, figures in rows:
        steps = "/".join(str(runs[p].step_count) for p in pair)
        for what, (t, size) in figures.items():
            base, base_size = anchor[what]
            print(f"{' + '.join(pair):>18} {steps:>13} {what:>18} {size:>9,} {t.wall:>8.1f} / {t.wall_p95:<7.1f} "
                  f"{t.cpu:>7.1f} {size / base_size:>7.2f}x {t.wall / base.wall:>5.2f}x {t.cpu / base.cpu:>5.2f}x")
    if args.browser:
        warehouse.close_connections()
        browser_rounds(work, {"big": (runs["big a"].id, runs["big b"].id),
                              "small": (runs["small a"].id, runs["small b"].id)}, args.rounds)


if __name__ == "__main__":
    main()
