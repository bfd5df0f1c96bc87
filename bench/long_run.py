"""The demo's long run page against a 200-step run page of the same site, side by side (issue 29).

Usage: .venv/bin/python bench/long_run.py [--rounds 5] [--workers 3] [--work DIR]

1. **The site**: ``make_demo_results --runs 40 --seed 7`` (what ``make setup`` ingests: its long Claude Code run has
   42,882 steps) ingested into a fresh data folder (``bench/viewer.py``'s ``ingest_site``: DuckLake with a SQLite
   catalog, the published results), served by ``manage.py serve --workers N`` with ``PTB_PAGE_CACHE=0`` (every page
   computed). The anchor is the run of that site with a timeline whose step count is nearest 200.
2. **Cold browser, median of ``--rounds`` alternating rounds** (long, anchor, anchor, long, ...), each page in a new
   Chromium context (empty cache), viewport 1280x900, after every worker served both pages and their timeline
   JSON (``viewer.warm_up``). Measured with ``performance.now()`` (ms since navigation start), polled every animation
   frame: *first steps*, the first step of ``#steps`` laid out with a box; *timeline drawn*, the run page's
   timeline figure drawn (``data-drawn="true"``, set by static/js/plots.js after plotly draws it); then the *DOM
   size*: ``document.documentElement.outerHTML.length`` (characters; the pages are ASCII but for a few symbols)
   and the number of elements, with the timeline's own share.
3. **The static export's run page**: the bytes of each run's ``index.html`` as ``export_static`` renders it (the
   view called through ``export.exporter.Exporter.fetch``, the export's own path, links not yet made relative: a
   few bytes off), which inlines the timeline figure.

Prints one markdown table: anchor, long run, ratio long / anchor; the load average and the server's CPU seconds.
Target (issue 29): first steps within 1.2x of the anchor's, the long run's DOM after its timeline is drawn
<= 300 KB. Needs playwright and psutil (requirements-dev.txt).
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from benchlib import ROOT  # noqa: E402 (bench/benchlib.py)
from viewer import Server, ingest_site, site_env, start_ours, warm_up  # noqa: E402 (bench/viewer.py)

DEMO_RUNS, DEMO_SEED = 40, 7  # make setup's demo tree
VIEWPORT = {"width": 1280, "height": 900}
FIRST_STEP = ("() => { const s = document.querySelector('#steps li.step'); "
              "return s && s.getBoundingClientRect().height > 0 ? performance.now() : null; }")
DRAWN = ("() => { const f = [...document.querySelectorAll('[data-figure-src], [data-figure]')]; "
         "return f.length && f.every(e => e.dataset.drawn === 'true') ? performance.now() : null; }")
DOM = ("() => ({dom: document.documentElement.outerHTML.length, elements: document.querySelectorAll('*').length, "
       "timeline: (document.getElementById('timeline') || {outerHTML: ''}).outerHTML.length})")


def _json(url: str):
    with urllib.request.urlopen(url, timeout=120) as answer:
        return json.load(answer)


def pick_runs(base: str) -> tuple[dict, dict]:
    """(the anchor: the run with a timeline nearest 200 steps, the run with the most steps) from ``/api/runs``."""
    runs = _json(base + "/api/runs?limit=500")["runs"]
    longest = max(runs, key=lambda r: r["step_count"])
    for run in sorted(runs, key=lambda r: abs(r["step_count"] - 200)):
        if _json(f"{base}/api/runs/{run['id']}/timeline")["phases"]:
            return run, longest
    raise SystemExit("no run with a timeline")


def measure(browser, url: str) -> dict[str, float]:
    """One cold open of ``url``: first steps ms, timeline drawn ms, DOM characters, elements, timeline characters."""
    context = browser.new_context(viewport=VIEWPORT)
    try:
        page = context.new_page()
        page.goto(url, wait_until="commit")
        first = page.wait_for_function(FIRST_STEP, polling="raf", timeout=180_000).json_value()
        drawn = page.wait_for_function(DRAWN, polling="raf", timeout=180_000).json_value()
        return {"first steps ms": first, "timeline drawn ms": drawn, **page.evaluate(DOM)}
    finally:
        context.close()


def exported_bytes(data_dir: Path, run_ids: list[str]) -> dict[str, int]:
    """{run id: bytes of its exported index.html}, rendered in a child process on the bench's data folder."""
    code = ("import json, sys\nfrom pathlib import Path\nfrom export.exporter import Exporter, STEPS_PER_PAGE\n"
            "e = Exporter(Path(sys.argv[1]))\n"
            "print(json.dumps({r: len(e.fetch(f'/runs/{r}/?limit={STEPS_PER_PAGE}')) for r in sys.argv[2:]}))")
    out = subprocess.run([sys.executable, "manage.py", "shell", "-c",
                          f"import sys; sys.argv = ['x', {str(data_dir / 'export')!r}, *{run_ids!r}]\n" + code],
                         cwd=ROOT, env=site_env(data_dir), check=True, capture_output=True, text=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5, help="alternating timed rounds (median)")
    parser.add_argument("--workers", type=int, default=3, help="the server's worker processes (serve's default: 3)")
    parser.add_argument("--work", type=Path, help="work folder, kept (default: a temporary folder, removed after)")
    args = parser.parse_args()
    work = (args.work or Path(tempfile.mkdtemp(prefix="ptb-bench-long-run-"))).resolve()
    work.mkdir(parents=True, exist_ok=True)
    import psutil
    from playwright.sync_api import sync_playwright

    tree, data = work / "demo", work / "site"
    if not (tree / "SYNTHETIC").exists():
        subprocess.run([sys.executable, "manage.py", "make_demo_results", str(tree), "--runs", str(DEMO_RUNS),
                        "--seed", str(DEMO_SEED)], cwd=ROOT, env=site_env(work / "bench-process"), check=True,
                       stdout=subprocess.DEVNULL)
    ingest_s = ingest_site(tree, data)
    server: Server = start_ours(data, work, args.workers)
    try:
        anchor, long = pick_runs(server.url)
        urls = {"anchor": f"{server.url}/runs/{anchor['id']}/", "long": f"{server.url}/runs/{long['id']}/"}
        warm_up([(u + suffix, {}) for u in urls.values() for suffix in ("", "timeline.json")], times=3 * args.workers)
        family = [psutil.Process(server.proc.pid), *psutil.Process(server.proc.pid).children(recursive=True)]
        cpu_before = sum(sum(p.cpu_times()[:2]) for p in family)
        started = time.monotonic()
        samples: dict[str, dict[str, list[float]]] = {"anchor": {}, "long": {}}
        with sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path="/usr/bin/chromium", headless=True,
                                         args=["--no-sandbox", "--disable-gpu"])
            for rnd in range(-1, args.rounds):  # round -1 warms the browser up (not counted)
                for side in (("long", "anchor") if rnd % 2 == 0 else ("anchor", "long")):
                    got = measure(browser, urls[side])
                    print(f"  {'warm-up' if rnd < 0 else f'round {rnd + 1}'} {side}: "
                          + ", ".join(f"{k} {v:,.0f}" for k, v in got.items()), flush=True)
                    if rnd >= 0:
                        for k, v in got.items():
                            samples[side].setdefault(k, []).append(v)
            browser.close()
        wall = time.monotonic() - started
        cpu = sum(sum(p.cpu_times()[:2]) for p in family if p.is_running()) - cpu_before
    finally:
        server.stop()
    exported = exported_bytes(data, [anchor["id"], long["id"]])
    if args.work is None:
        shutil.rmtree(work, ignore_errors=True)
    load = os.getloadavg()
    print(f"\nanchor {anchor['id']} ({anchor['step_count']:,} steps), long run {long['id']} "
          f"({long['step_count']:,} steps); ingest {ingest_s:.1f} s; medians of {args.rounds} alternating rounds, a "
          f"cold browser context each; server CPU {cpu:.1f} s over {wall:.1f} s of rounds; load average "
          f"{load[0]:.2f} {load[1]:.2f} {load[2]:.2f}\n")
    print(f"| measure | {anchor['step_count']:,}-step run | {long['step_count']:,}-step run | long / anchor |")
    print("|---|---:|---:|---:|")
    for key, unit in (("first steps ms", 1), ("timeline drawn ms", 1), ("dom", 1000), ("timeline", 1000),
                      ("elements", 1)):
        a, b = statistics.median(samples["anchor"][key]), statistics.median(samples["long"][key])
        label = {"dom": "DOM after the timeline is drawn, KB", "timeline": "the timeline's DOM, KB"}.get(key, key)
        print(f"| {label} | {a / unit:,.0f} | {b / unit:,.0f} | {b / a:.2f} |")
    a, b = exported[anchor["id"]], exported[long["id"]]
    print(f"| exported index.html, KB | {a / 1000:,.0f} | {b / 1000:,.0f} | {b / a:.2f} |")


if __name__ == "__main__":
    main()
