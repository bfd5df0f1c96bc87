"""What a page-cache hit costs in-process against a static file, side by side in one run (issue 18).

Usage: .venv/bin/python bench/page_hit.py [--work DIR] [--requests 2000]

On a fresh data folder with the published leaderboard imported, calls Django's WSGI application directly (no
server, no network) ``--requests`` times for each of ``/api/leaderboard`` and ``/`` (after one request stores
them in the page cache) and for a static file (WhiteNoise), and prints microseconds per request and the ratio of
each page to the static file; then the part of a hit that builds the page cache's key from the view's declared
inputs (ptbsite.pagecache.declared_inputs, cut_to_inputs, cache_key), timed alone in the same run.
"""
from __future__ import annotations

import argparse
import io
import os
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "ptbsite.settings")
os.environ["DJANGO_DEBUG"] = "0"
os.environ["PTB_PAGE_CACHE"] = "1"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--work", type=Path, default=None)
    parser.add_argument("--requests", type=int, default=2000)
    args = parser.parse_args()
    work = args.work or Path(tempfile.mkdtemp(prefix="ptb-bench-hit-"))
    os.environ["PTB_DATA_DIR"] = str(work)
    import django

    django.setup()
    from django.core.management import call_command
    from django.core.wsgi import get_wsgi_application

    call_command("migrate", verbosity=0, interactive=False)
    call_command("import_published")
    app = get_wsgi_application()

    def get(path: str) -> tuple[str, int]:
        environ = {"REQUEST_METHOD": "GET", "PATH_INFO": path, "QUERY_STRING": "", "SERVER_NAME": "127.0.0.1",
                   "SERVER_PORT": "8000", "HTTP_HOST": "127.0.0.1:8000", "wsgi.input": io.BytesIO(),
                   "wsgi.url_scheme": "http", "SERVER_PROTOCOL": "HTTP/1.1", "wsgi.errors": sys.stderr}
        status: list[str] = []
        body = b"".join(app(environ, lambda s, headers, exc=None: status.append(s)))
        return status[0], len(body)

    static = "/static/css/site.css"
    timings = {}
    for path in (static, "/api/leaderboard", "/"):
        status, size = get(path)  # computes and stores the page
        assert status.startswith("200"), (path, status)
        started = time.perf_counter()
        for _ in range(args.requests):
            get(path)
        timings[path] = ((time.perf_counter() - started) / args.requests * 1e6, size)
    # The part of a hit that builds the key from the view's declared inputs (issue 25): resolving the path to its
    # view, cutting the request to the declared inputs, hashing the key.
    from django.test import RequestFactory

    from ptbsite import pagecache

    factory = RequestFactory()
    started = time.perf_counter()
    for _ in range(args.requests):
        request = factory.get("/runs/some-run/?q=loss&limit=100&utm_source=x", HTTP_HX_REQUEST="true",
                              HTTP_HX_TARGET="trace-results")
        inputs = pagecache.declared_inputs(request)
        assert inputs is not None
        pagecache.cut_to_inputs(request, inputs)
        pagecache.cache_key(request, "token", inputs)
    key_us = (time.perf_counter() - started) / args.requests * 1e6
    print(f"load average {os.getloadavg()[0]:.2f}; {args.requests} requests each, in-process")
    for path, (us, size) in timings.items():
        print(f"{path:>24} {size:>8,} B {us:>8.0f} us/request {us / timings[static][0]:>6.2f}x the static file")
    print(f"{'key from declared inputs':>24} {'':>10} {key_us:>8.0f} us/request {key_us / timings[static][0]:>6.2f}x "
          f"the static file (part of each hit above; RequestFactory included)")


if __name__ == "__main__":
    main()
