"""The search of every trace against ripgrep over the raw trace files, side by side in one run (issue 27).

Usage:
    .venv/bin/python bench/search_all.py RESULTS_DIR [--work DIR] [--repeat 5] [--rare W] [--common W] [--phrase P]
    .venv/bin/python bench/search_all.py --runs 40 [--seed 7]      # a tree from make_demo_results first

Ingests the results tree into a fresh DuckDB warehouse under ``--work`` (kept between runs: an unchanged tree is
not ingested again), then for a rare word, a common word and a two-word phrase (chosen from the stored word index
unless given: the rare one a word of 6+ letters in the fewest runs, at least 1; the common one the word in the
most runs; the phrase two adjacent words of a stored step found in several runs) prints, warm (median of
``--repeat`` after one warm-up):

- ours: ``GET /search/?q=`` in-process (Django's test client, page cache off, one DuckDB thread as served:
  ``PTB_DUCKDB_THREADS=1`` unless set): the first page of grouped
  results (20 runs with their counts and excerpts), wall ms and CPU ms of this process, and its bytes; and
  ``sel``: its selector alone on a warehouse held open (the part that depends on the tree);
- rg: ``rg -c -i -F <query>`` over the agent trace files of every ingested run (the files named in
  ``runs.trace_file``), wall ms and CPU ms of the child;
- their ratios (wall, and ``cpu/rg``: the page's CPU against rg's), and the recall against rg: the runs whose raw trace file rg counts the query in that our search
  lists (every page), and the runs we list that rg does not (text rg cannot see as written: JSON escapes).
"""
from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "ptbsite.settings")
os.environ.setdefault("PTB_PAGE_CACHE", "0")
# One DuckDB thread, as `serve` runs its workers (ptbsite/management/commands/serve.py; bench/scale.py does the
# same); PTB_DUCKDB_THREADS=0 on the command line measures DuckDB's default (one thread per core).
os.environ.setdefault("PTB_DUCKDB_THREADS", "1")

from benchlib import Timing, timed_cpu  # noqa: E402 (bench/benchlib.py, beside this script)


def _ours(client, q: str, repeat: int) -> tuple[Timing, int]:
    """(timing, bytes) of ``GET /search/?q=`` (the first page of grouped results, as a browser gets it: warehouse
    opened for the request, page cache off), after one warm-up."""
    size = len(client.get("/search/", {"q": q}).content)
    return timed_cpu(lambda: client.get("/search/", {"q": q}), repeat, warmup=0), size


def _selector(search_page, q: str, repeat: int) -> Timing:
    """Timing of the page's selector alone on a warehouse held open (no request, no template, no open and close
    of the warehouse file), after one warm-up."""
    from ptbsite.warehouse import connections

    with connections.hold_open():
        return timed_cpu(lambda: search_page(q, limit=20, with_options=True), repeat)


def _rg(q: str, files: list[str], repeat: int) -> tuple[Timing, set[str]]:
    """(timing, with the child's CPU; the files with a count) of ``rg -c -i -F q files``, after one warm-up."""
    found: set[str] = set()

    def run() -> None:
        out = subprocess.run(["rg", "-c", "-i", "-F", "--no-messages", "--with-filename", "--", q, *files],
                             capture_output=True, text=True, check=False)
        if out.returncode not in (0, 1):
            raise SystemExit(f"rg failed: {out.stderr}")
        found.clear()
        found.update(line.rsplit(":", 1)[0] for line in out.stdout.splitlines() if line)

    return timed_cpu(run, repeat, children=True), found


def _pick(con, args) -> dict[str, str]:
    """The three queries (module docstring), from the stored word index unless given."""
    picks = {}
    common = con.execute("SELECT word FROM step_words WHERE length(word) >= 3 AND regexp_full_match(word, '[a-z]+') "
                         "GROUP BY word ORDER BY count(DISTINCT run_id) DESC, word LIMIT 1").fetchone()
    rare = con.execute("SELECT word FROM step_words WHERE regexp_full_match(word, '[a-z]{6,20}') GROUP BY word "
                       "ORDER BY count(DISTINCT run_id), sum(len(steps)), word LIMIT 1").fetchone()
    picks["rare"] = args.rare or (rare[0] if rare else "zzzz")
    picks["common"] = args.common or (common[0] if common else "the")
    if args.phrase:
        picks["phrase"] = args.phrase
    else:
        # The most frequent pair of adjacent lower-case words (4+ letters) in a sample of stored step texts.
        pairs: Counter[str] = Counter()
        for (text,) in con.execute("SELECT output FROM steps USING SAMPLE 2000 ROWS (reservoir, 7)").fetchall():
            pairs.update(m[0] for m in re.finditer(r"(?<![A-Za-z])[a-z]{4,} [a-z]{4,}(?![A-Za-z])", text or ""))
        picks["phrase"] = pairs.most_common(1)[0][0] if pairs else "pip install"
    return picks


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("tree", type=Path, nargs="?", help="a results tree (default: generate one with --runs)")
    parser.add_argument("--runs", type=int, default=40, help="make_demo_results --runs when no tree is given")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--long-run", action="store_true", help="with --runs: the demo's ~42,882-step run too")
    parser.add_argument("--work", type=Path, help="work folder (default: a new temporary folder)")
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--rare")
    parser.add_argument("--common")
    parser.add_argument("--phrase", help="two words, searched as one quoted phrase")
    args = parser.parse_args()
    work = args.work or Path(tempfile.mkdtemp(prefix="ptb-bench-search-"))
    work.mkdir(parents=True, exist_ok=True)
    os.environ["PTB_WAREHOUSE"] = str(work / "warehouse.duckdb")
    os.environ["PTB_DATA_DIR"] = str(work)
    import django

    django.setup()
    from django.core.management import call_command
    from django.test import Client

    from ptbsite import warehouse
    from ingest.tree import ingest_tree
    from traces.selectors.search import search_page

    tree = args.tree
    if tree is None:
        from demo.tree import make_demo_results

        tree = work / "demo"
        if not (tree / "SYNTHETIC").exists():
            make_demo_results(root=tree, runs=args.runs, seed=args.seed, long_run=args.long_run)
    tree = tree.resolve()
    call_command("migrate", verbosity=0)
    started = time.perf_counter()
    report = ingest_tree(root=tree)
    print(f"tree {tree}: {report.stored} runs stored, {report.unchanged} unchanged, {report.failed} failed "
          f"({time.perf_counter() - started:.1f} s)")
    with warehouse.connect() as con:
        rows = con.execute("SELECT id, method, run_dir, trace_file FROM runs WHERE trace_file IS NOT NULL").fetchall()
        words = con.execute("SELECT count(*), count(DISTINCT word) FROM step_words").fetchone() or (0, 0)
        picks = _pick(con, args)
    files = {}
    for run_id, method, run_dir, trace_file in rows:
        path = tree / method / run_dir / trace_file
        if path.is_file():
            files[str(path)] = run_id
    size = sum(Path(f).stat().st_size for f in files)
    print(f"{len(files)} agent trace files, {size / 1e6:.1f} MB; step_words: {words[0]:,} rows, {words[1]:,} words; "
          f"load average {os.getloadavg()[0]:.2f}; DuckDB threads {os.environ['PTB_DUCKDB_THREADS'] or 'default'}; "
          f"ms are medians of {args.repeat}, warm")
    print(f"{'query':>8} {'text':>22} {'page ms':>8} {'cpu':>6} {'bytes':>7} {'sel ms':>7} {'cpu':>6} {'rg ms':>7} "
          f"{'cpu':>6} {'page/rg':>8} {'sel/rg':>7} {'cpu/rg':>8} {'rg runs':>7} {'recall':>7} {'ours only':>9}")
    for label, q in picks.items():
        query = f'"{q}"' if label == "phrase" else q
        page, size_ours = _ours(Client(), query, args.repeat)
        sel = _selector(search_page, query, args.repeat)
        rg, hit_files = _rg(q, list(files), args.repeat)
        listed, after = set(), None
        while True:  # every page, for the recall
            found = search_page(query, limit=100, after=after)
            listed |= {r.run.id for r in found.runs}
            after = found.next
            if after is None:
                break
        rg_runs = {files[f] for f in hit_files}
        recall = len(rg_runs & listed) / len(rg_runs) if rg_runs else 1.0
        print(f"{label:>8} {query[:22]:>22} {page.wall:>8.1f} {page.cpu:>6.1f} {size_ours:>7,} {sel.wall:>7.1f} "
              f"{sel.cpu:>6.1f} {rg.wall:>7.1f} {rg.cpu:>6.1f} {page.wall / rg.wall:>7.2f}x {sel.wall / rg.wall:>6.2f}x "
              f"{page.cpu / rg.cpu:>7.2f}x {len(rg_runs):>7} {recall:>7.3f} {len(listed - rg_runs):>9}")
        missed = sorted(rg_runs - listed)
        if missed:
            print(f"{'':>8} missed: {', '.join(missed[:5])}")


if __name__ == "__main__":
    main()
