"""What `manage.py serve`'s processes hold after every public page and twin, read from /proc (issue 24).

Usage: .venv/bin/python bench/serve_memory.py --warehouse SPEC [--workers 3] [--clients 4] [--repeat 6] [--rest 2]
       [-- SERVE ARGS]

Starts ``manage.py serve --workers N`` (its defaults otherwise: 24 threads, ``--preload``; pass ``-- --no-preload``
to compare) on a free port with the page cache off (``PTB_PAGE_CACHE=0 PTB_PAGE_WARM=0``: every GET computes its
page), GETs each URL of ``bench/scale.py``'s ``pages()`` (listed by another interpreter) ``--repeat`` times from
``--clients`` threads (a 503 of the overload guard is retried after 1 s), so that every worker has served most
pages, then prints each gunicorn process' RSS, PSS and USS (MB, psutil ``memory_full_info``: PSS divides each shared
page among the processes mapping it, USS counts the pages only that process maps) and the PSS of all of them. The
job reaper ``serve`` starts beside gunicorn is not counted. The processes are read ``--rest`` seconds (default 2)
after the last GET: a server at rest, once DuckDB's allocator thread has returned the pages its queries freed
(``PTB_DUCKDB_ALLOCATOR_BACKGROUND_THREADS``; ``--rest 0`` reads them at once). ``serve`` migrates the warehouse (and may write its version file):
give it a copy.
"""
from __future__ import annotations

import argparse
import concurrent.futures
import json
import os
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
_URLS = f"""
import json, sys
sys.path.insert(0, {str(ROOT)!r}); sys.path.insert(0, {str(ROOT / 'bench')!r})
from ptbsite.wsgi import application  # noqa: F401
import scale
print(json.dumps(scale.pages()))
"""


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def main() -> None:
    import psutil

    parser = argparse.ArgumentParser(description="memory of manage.py serve's processes (module docstring)")
    parser.add_argument("--warehouse", required=True, help="a PTB_WAREHOUSE spec (a copy: serve migrates it)")
    parser.add_argument("--workers", type=int, default=3)
    parser.add_argument("--clients", type=int, default=4)
    parser.add_argument("--repeat", type=int, default=6)
    parser.add_argument("--rest", type=float, default=2.0,
                        help="seconds idle after the last GET before reading the processes (default 2)")
    parser.add_argument("serve_args", nargs="*", help="more arguments for manage.py serve (after --)")
    args = parser.parse_args()
    env = {**os.environ, "PTB_PAGE_CACHE": "0", "PTB_PAGE_WARM": "0", "PTB_WAREHOUSE": args.warehouse}
    listed = subprocess.run([sys.executable, "-c", _URLS], env=env, capture_output=True, text=True, cwd=ROOT)
    if listed.returncode:
        sys.exit(listed.stderr[-3000:])
    urls = json.loads(listed.stdout.strip().splitlines()[-1])
    port = _free_port()
    server = subprocess.Popen([sys.executable, "manage.py", "serve", "--workers", str(args.workers), "--bind",
                               f"127.0.0.1:{port}", *args.serve_args], cwd=ROOT, env=env, stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL)
    base = f"http://127.0.0.1:{port}"

    def get(url: str) -> int:
        for _ in range(30):
            try:
                with urllib.request.urlopen(base + url, timeout=300) as response:
                    response.read()
                    return response.status
            except urllib.error.HTTPError as exc:
                if exc.code != 503:
                    return exc.code
                time.sleep(1)
        return 503

    try:
        for _ in range(600):
            try:
                urllib.request.urlopen(base + "/favicon.ico", timeout=5).read()
                break
            except (urllib.error.URLError, ConnectionError, TimeoutError):
                time.sleep(0.5)
        started = time.monotonic()
        with concurrent.futures.ThreadPoolExecutor(args.clients) as pool:
            codes = list(pool.map(get, urls * args.repeat))
        if set(codes) != {200}:
            sys.exit(f"not every GET answered 200: {sorted(set(codes))}")
        elapsed = time.monotonic() - started
        time.sleep(args.rest)
        master = psutil.Process(server.pid)
        processes = [master, *(c for c in master.children() if "reap_jobs" not in " ".join(c.cmdline()))]
        print(f"serve --workers {args.workers} {' '.join(args.serve_args)}: {len(codes)} GETs of {len(urls)} pages "
              f"in {elapsed:.0f} s, read {args.rest:g} s after the last\n\n| process | RSS MB | PSS MB | USS MB |\n|---|---:|---:|---:|")
        total = 0.0
        for process in processes:
            info = process.memory_full_info()
            total += info.pss / 2**20
            print(f"| {'master' if process is master else 'worker'} {process.pid} | {info.rss / 2**20:.0f} | "
                  f"{info.pss / 2**20:.0f} | {info.uss / 2**20:.0f} |")
        print(f"\nPSS of all: {total:.0f} MB")
    finally:
        for child in psutil.Process(server.pid).children(recursive=True):
            child.terminate()
        server.terminate()
        server.wait(30)


if __name__ == "__main__":
    main()
