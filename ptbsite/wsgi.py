"""WSGI entry point (gunicorn ptbsite.wsgi)."""
import gc
import importlib.abc
import os
import sys
from collections.abc import Sequence
from importlib.machinery import ModuleSpec
from types import ModuleType

# DuckDB's Python client (1.5) imports pandas the first time it binds a query parameter whenever pandas is importable:
# ~125 MB of RSS in every web worker. No page uses pandas (it is not a requirement of the site; inspect-ai brings it
# for the workers), so a web worker refuses to import it and DuckDB takes plain Python values (bench/web_memory.py).
# Jinja2 likewise: django-ninja imports django.test (for a signal), whose utilities import Jinja2 when it is
# installed (inspect-ai brings it); the site's templates are Django's, so it would only hold ~1.5 MB of RSS in every
# web process (bench/web_memory.py, bench/RESULTS.md, issue 24).
# A finder that raises ImportError, not a `sys.modules["pandas"] = None` mark: Cython modules read that None as the
# module, and pyarrow's pandas check then fails every Arrow table a web worker writes (a judge re-run's or a rerun's
# results, traces.records.arrow_table: tests/test_wsgi.py). A package some other code of this process imported
# already (a test run's) is left to it.
_REFUSED = tuple(name for name in ("pandas", "jinja2") if name not in sys.modules)


class _Refused(importlib.abc.MetaPathFinder):
    """Refuses the packages of ``_REFUSED`` and their submodules, as if they were not installed."""

    def find_spec(self, fullname: str, path: Sequence[str] | None = None,
                  target: ModuleType | None = None) -> ModuleSpec | None:
        if fullname.partition(".")[0] in _REFUSED:
            raise ModuleNotFoundError(f"No module named {fullname!r} (a web worker does without it)", name=fullname)
        return None


if _REFUSED:
    sys.meta_path.insert(0, _Refused())

from django.core.wsgi import get_wsgi_application  # noqa: E402 (after the refused packages' rule)

from django.urls import resolve, reverse  # noqa: E402

from ptbsite import codeprint  # noqa: E402

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "ptbsite.settings")
application = get_wsgi_application()

# What a worker's first request did lazily, done here instead (once in gunicorn's master under `serve --preload`,
# shared by the forked workers): importing the URLconf (every app's views, ninja's API and its pydantic schemas:
# ~0.2 CPU s, which made each worker's first request wait ~0.4-0.7 s under load, the 8-client p99 of `/` in
# bench/load.sh) and building its reverse lookups.
resolve("/")
reverse("leaderboard:index")

# The code's fingerprint in every page cache key (~0.2 CPU s: every project file and installed package read),
# computed here, once in gunicorn's master under `serve --preload`, not by each worker's first request (which
# made every first request of a worker wait ~1-3 s under load: bench/load.sh's 8-client p99 of `/`).
codeprint.serving_code()

# What the import made lives as long as the process: moved out of the cyclic collector's generations, so that its
# passes never write to those objects. In gunicorn's master (`serve` preloads the app) that keeps the pages the
# forked workers share from being copied into each: 3 workers' PSS at K=90 280 MB in all with it, 323 without
# (bench/web_memory.py, bench/RESULTS.md, issue 24).
gc.collect()
gc.freeze()
