"""A search of a ~60,000-step trace with the word index against the scan, side by side in one run (issue 18).

Usage: .venv/bin/python bench/search.py [--mb 72] [--repeat 5] [--work DIR] [--kind file|ducklake]

Builds ``make_demo_results --runs 4 --seed 7`` and, from its long Claude Code run, a ~60,000-step trace
(``bench/ingest_process.py``'s ``build_big``: the trace repeated with fresh ids and shifted times to ``--mb`` MB), ingests
it into a fresh warehouse (``--kind``; the page cache off), and for each query prints, in-process (server time,
no network; median of ``--repeat`` calls after one warm-up call, ms):

- the matches (``read_matches``, at most ``MATCH_COUNT_CAP + 1``: what a search page counts), with the word
  index and with the scan (``use_index=False``), and their ratio scan / index;
- the search as the run page sends it (``/runs/<id>/?q=`` with ``HX-Request``, the ``#trace-results``
  partial) with the index, and with the scan (``traces.search_index.lookup`` replaced, for that timing only, by
  one that says the run has no index), and their ratio.

The queries: a rare word, a word in every other step (capped count), a phrase with punctuation, a word part, a
phrase deep in the trace's longest step (the last 24 characters of its last line, found at run time), a non-ASCII word and a
phrase that are in no step, and ``->`` (no word: both columns scan).
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "ptbsite.settings")
os.environ["PTB_PAGE_CACHE"] = "0"  # every request computes its page

HTMX = {"HTTP_HX_REQUEST": "true", "HTTP_HX_TARGET": "trace-results"}
QUERIES = [
    ("rare word", "argparse"),
    ("common word (capped)", "learning_rate"),
    ("phrase, punctuation", "add_argument("),
    ("part of words", "okenize"),
    ("end of the longest step", None),  # found at run time
    ("non-ASCII, absent", "naïve"),
    ("phrase, absent", "zebra quasar"),
    ("no word (scan both)", "->"),
]


def _median_ms(fn: Callable[[], Any], repeat: int) -> tuple[float, Any]:
    """(median ms of ``repeat`` calls of ``fn`` after one warm-up call, the last call's result)."""
    result = fn()
    samples = []
    for _ in range(repeat):
        start = time.perf_counter()
        result = fn()
        samples.append(1000 * (time.perf_counter() - start))
    return statistics.median(samples), result


def deep_phrase(con, run_id: str) -> str:
    """The last 24 characters of the last line of the longest output of the run's agent trace (stripped)."""
    text = con.execute("SELECT output FROM steps WHERE run_id = ? AND trace = 'agent' ORDER BY strlen(output) DESC "
                       "LIMIT 1", [run_id]).fetchone()[0]
    return [line for line in text.splitlines() if line.strip()][-1].strip()[-24:]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mb", type=float, default=72.0, help="size of the ~60k-step trace (MB)")
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--work", type=Path, help="work folder (default: a new temporary folder)")
    parser.add_argument("--kind", choices=("file", "ducklake"), default="file")
    args = parser.parse_args()
    work = args.work or Path(tempfile.mkdtemp(prefix="ptb-bench-search-"))
    work.mkdir(parents=True, exist_ok=True)
    store = work / f"search-{args.kind}"
    if store.exists():
        import shutil

        shutil.rmtree(store)
    store.mkdir()
    os.environ["PTB_WAREHOUSE"] = (str(store / "warehouse.duckdb") if args.kind == "file"
                                   else f"ducklake:sqlite:{store / 'catalog.sqlite'}?data={store / 'lake'}")
    os.environ["PTB_DATA_DIR"] = str(store)
    import django

    django.setup()
    from django.core.management import call_command
    from django.test import Client

    from ingest_process import build_big  # bench/ingest_process.py, beside this file (bench/ is on sys.path as the script's folder)
    from demo.tree import make_demo_results
    from ptbsite import warehouse
    from traces import search_index, selectors
    from ingest.tree import ingest_tree
    from traces.selectors.steps import MATCH_COUNT_CAP, read_matches

    call_command("migrate", verbosity=0)
    demo_root, big_root = work / "demo", work / f"big-{args.mb:g}"
    if not (demo_root / "SYNTHETIC").exists():
        make_demo_results(root=demo_root, runs=4, seed=7, long_run=True)
    if not (big_root / "SYNTHETIC").exists():
        long_dir = max(demo_root.glob("*/*/solve_out.txt"), key=lambda p: p.stat().st_size).parent
        build_big(long_dir, big_root, args.mb)
    started = time.perf_counter()
    report = ingest_tree(root=big_root)
    ingest_s = time.perf_counter() - started
    run = max(selectors.list_runs(limit=None)[0], key=lambda r: r.step_count)
    client = Client()
    lookup = search_index.lookup
    with warehouse.connect() as con:
        chars, rows = con.execute(
            "SELECT sum(length(output) + length(coalesce(input, ''))), (SELECT count(*) FROM step_words WHERE "
            "run_id = $run) FROM steps WHERE run_id = $run AND trace = 'agent'", {"run": run.id}).fetchall()[0]
        queries = [(label, q or deep_phrase(con, run.id)) for label, q in QUERIES]
    print(f"warehouse: {args.kind}; run {run.id}: {run.step_count:,} steps, {chars / 1e6:.1f} M characters, "
          f"{rows:,} word rows; ingest {ingest_s:.1f} s ({report}); load average {os.getloadavg()[0]:.2f}; "
          f"ms are medians of {args.repeat}")
    print(f"{'query':>26} {'text':>16} {'matches':>8} {'index ms':>9} {'scan ms':>9} {'scan/index':>10} "
          f"{'partial index ms':>17} {'partial scan ms':>16} {'scan/index':>10}")
    for label, q in queries:
        with warehouse.connect() as con:
            fast, hits = _median_ms(lambda: read_matches(con, run.id, q=q, limit=MATCH_COUNT_CAP + 1), args.repeat)
            slow, scanned = _median_ms(
                lambda: read_matches(con, run.id, q=q, limit=MATCH_COUNT_CAP + 1, use_index=False), args.repeat)
        assert hits == scanned, f"{q!r}: the index and the scan disagree"
        url = f"/runs/{run.id}/"
        page_fast, response = _median_ms(lambda: client.get(url, {"q": q}, **HTMX), args.repeat)
        assert response.status_code == 200
        search_index.lookup = lambda *args: None
        try:
            page_slow, _ = _median_ms(lambda: client.get(url, {"q": q}, **HTMX), args.repeat)
        finally:
            search_index.lookup = lookup
        count = f"{min(len(hits), MATCH_COUNT_CAP):,}{'+' if len(hits) > MATCH_COUNT_CAP else ''}"
        print(f"{label:>26} {q[:16]:>16} {count:>8} {fast:>9.1f} {slow:>9.1f} {slow / fast:>9.1f}x "
              f"{page_fast:>17.1f} {page_slow:>16.1f} {page_slow / page_fast:>9.1f}x", flush=True)


if __name__ == "__main__":
    main()
