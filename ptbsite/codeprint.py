"""A fingerprint of the code that renders the site's pages, for the page cache's keys (``ptbsite.pagecache``).

A cached page is valid for one warehouse version *and* one version of the code, settings and packages that
computed it. Keying pages by both lets a server restart with the same code keep every cached page (before, ``serve``
bumped the warehouse version at each start, so every restart, and with a shared cache every other host too,
computed every page again), while new code gets keys of its own (and a host still on the old code keeps serving
its own pages during a rolling deploy).
"""
from __future__ import annotations

import functools
import hashlib
import os
import sys
from collections.abc import Iterable
from importlib import metadata
from pathlib import Path

# What a page's bytes depend on besides the warehouse and the request: the apps' code, the templates, the static
# files their pages name (hashed names, versions), the suite files (display names) and the published facts read
# at render time.
RENDERING_FOLDERS = ("ptbsite", "leaderboard", "traces", "evaluator", "templates", "static", "suites",
                     "data/published", "data/reported")
SUFFIXES = frozenset((".py", ".html", ".js", ".css", ".json", ".sql", ".txt", ".svg"))
ENV_PREFIXES = ("PTB_", "DJANGO_")


def code_fingerprint(root: Path, folders: Iterable[str] = RENDERING_FOLDERS, *,
                     environ: dict[str, str] | None = None) -> str:
    """sha256 hex digest over: each file under ``root``/``folder`` with a suffix in :data:`SUFFIXES` (its path
    relative to ``root`` and its bytes, in sorted order; ``__pycache__`` skipped), the environment variables
    whose names start with :data:`ENV_PREFIXES` (``environ``, default ``os.environ``: they are the site's
    settings), the Python version, and the name and version of every installed distribution (a new Django or
    Pygments can change a page's bytes). ~10-50 ms of CPU for this project."""
    digest = hashlib.sha256()
    for folder in folders:
        for path in sorted((root / folder).rglob("*")):
            if path.suffix in SUFFIXES and "__pycache__" not in path.parts and path.is_file():
                digest.update(str(path.relative_to(root)).encode() + b"\0" + path.read_bytes() + b"\0")
    env = os.environ if environ is None else environ
    for name in sorted(k for k in env if k.startswith(ENV_PREFIXES)):
        digest.update(f"{name}={env[name]}\0".encode())
    digest.update(sys.version.encode())
    packages = sorted(f"{d.metadata['Name']}=={d.version}" for d in metadata.distributions() if d.metadata["Name"])
    digest.update("\n".join(packages).encode())
    return digest.hexdigest()


@functools.cache
def serving_code() -> str:
    """:func:`code_fingerprint` of this project (``settings.BASE_DIR``), computed once per process (in ``serve``'s
    gunicorn master, which imports the app before forking the workers); the first 16 hex digits."""
    from django.conf import settings

    return code_fingerprint(Path(settings.BASE_DIR))[:16]
