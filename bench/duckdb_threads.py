"""Pages computed on DuckLake with DuckDB's default threads against one thread (PTB_DUCKDB_THREADS=1, what `serve`
gives its workers), in-process (Django's test client, page cache off), median of 7 requests after a warm-up (ms).

Usage, on the same warehouse (bench/benchlib.py's demo tree, built and ingested by the first call):

    .venv/bin/python bench/duckdb_threads.py [WORK]
    PTB_DUCKDB_THREADS=1 .venv/bin/python bench/duckdb_threads.py [WORK]
"""
from __future__ import annotations

import os
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "bench")]
os.chdir(ROOT)
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "ptbsite.settings")
os.environ["PTB_PAGE_CACHE"] = "0"


def main() -> None:
    work = Path(sys.argv[1] if len(sys.argv) > 1 else "/tmp/ptb-bench-threads")
    work.mkdir(parents=True, exist_ok=True)
    os.environ["PTB_WAREHOUSE"] = f"ducklake:sqlite:{work}/catalog.sqlite?data={work}/lake"
    os.environ["PTB_DATA_DIR"] = str(work)
    import django

    django.setup()
    from django.core.management import call_command
    from django.test import Client

    from traces import selectors

    if not (work / "done").exists():
        from benchlib import demo_tree

        from leaderboard.services import import_published
        from ingest.tree import ingest_tree

        call_command("migrate", verbosity=0)
        import_published()
        demo_tree(work / "demo")
        ingest_tree(root=work / "demo")
        (work / "done").touch()
    runs, _ = selectors.list_runs(limit=1000)
    long_run = max(runs, key=lambda r: r.step_count)
    client = Client()
    threads = os.environ.get("PTB_DUCKDB_THREADS", "default")
    for path in (f"/runs/{long_run.id}/", f"/runs/{long_run.id}/steps?after=19000", "/",
                 f"/runs/{long_run.id}/steps?q=tokenizer"):
        client.get(path)
        times = []
        for _ in range(7):
            started = time.perf_counter()
            assert client.get(path).status_code == 200
            times.append((time.perf_counter() - started) * 1000)
        print(f"threads={threads} {path} {statistics.median(times):.0f} ms")


if __name__ == "__main__":
    main()
