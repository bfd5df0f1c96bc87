"""The warehouse version: a token that changes on every committed write, readable without opening the warehouse.

Pages computed from the warehouse are cached per version (``ptbsite.pagecache``). Every write goes through
:func:`ptbsite.warehouse.transaction` (units of work, ``run_in_transaction``) or applies migrations; both call
:func:`bump` after their COMMIT, so whichever process wrote (a web worker, ``manage.py ingest``,
``import_published``, a worker's result through the API, a judge re-run), the next request of every process sees
a new version.

The version is published in two places, and :func:`current` reads both (the cache's copy only where the cache
may span machines, :func:`shares_machines`):

- a small file next to the warehouse (``<file>.version`` beside a plain DuckDB file or a SQLite catalog; for a
  PostgreSQL catalog ``warehouse-<hash>.version`` in its data folder), replaced by an atomic rename: every process
  that opens this warehouse on this machine sees it, whatever its cache settings;
- an entry in the page cache (``caches["pages"]``, file-based under the data folder or Redis with
  ``PTB_CACHE_URL``): web servers on other machines that share the cache see it.

A bump writes a fresh random token, so two writers never produce the same version, and an entry evicted from the
cache only means a new token (the pages are recomputed once), never a stale page.
"""
from __future__ import annotations

import functools
import hashlib
import logging
import os
import secrets
import time
from dataclasses import dataclass
from pathlib import Path

from django.conf import settings
from django.core.cache import caches

from .spec import parse_spec, warehouse_spec

log = logging.getLogger("ptbsite.warehouse")

CACHE_ALIAS = "pages"  # settings.CACHES entry holding cached pages and the version's cache copy


@dataclass(frozen=True)
class Version:
    """The warehouse version: ``token`` (text, opaque; changes on every write) and ``at`` (Unix seconds of the
    last bump seen in the version file; 0.0 when it has never been bumped here)."""

    token: str
    at: float


@functools.lru_cache(maxsize=64)
def _digest(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def version_path(text: str | None = None) -> Path:
    """The version file of the warehouse ``text`` (default: the configured one): beside the DuckDB file or the
    SQLite catalog, or in the data folder of a PostgreSQL catalog (in ``settings.DATA_DIR`` for ``:memory:`` and
    for a data folder in object storage: that machine's own file, the other machines learning of a write from the
    version's copy in the shared page cache, which such a deployment needs: ``check_shared_cache``)."""
    text = text or warehouse_spec()
    spec = parse_spec(text)
    if spec.data_in_object_storage:
        return Path(settings.DATA_DIR) / f"warehouse-{_digest(text)}.version"
    if spec.kind == "ducklake-postgres":
        assert spec.data is not None
        return Path(spec.data) / f"warehouse-{_digest(text)}.version"
    if spec.catalog == ":memory:":
        return Path(settings.DATA_DIR) / f"warehouse-{_digest(text)}.version"
    return Path(spec.catalog + ".version")


def _cache_key(text: str) -> str:
    return f"ptb:warehouse-version:{_digest(text)}"


def _write_file(path: Path, token: str, at: float) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_name(f".{path.name}.{os.getpid()}.{secrets.token_hex(4)}")
    temporary.write_text(f"{token} {at:.6f}\n")
    os.replace(temporary, path)  # atomic: a reader sees the old version or the new one, never half a file


def _read_file(path: Path) -> tuple[str, float] | None:
    try:
        token, at = path.read_text().split()
        return token, float(at)
    except (OSError, ValueError):
        return None


def bump(text: str | None = None) -> None:
    """Publish a new version of the warehouse ``text`` (default: the configured one), after a COMMIT.

    Never raises: the write it follows is committed already. A version that cannot be published (a read-only
    folder, the cache server down) is logged as a warning; cached pages then live until
    ``PTB_PAGE_CACHE_SECONDS``.
    """
    text = text or warehouse_spec()
    token, at = secrets.token_hex(8), time.time()
    try:
        _write_file(version_path(text), token, at)
    except OSError as exc:
        log.warning("warehouse: could not publish the new version to its file: %s", exc)
    try:
        caches[CACHE_ALIAS].set(_cache_key(text), token, timeout=None)
    except Exception as exc:  # any cache backend's error (redis.ConnectionError, OSError, ...)
        log.warning("warehouse: could not publish the new version to the page cache: %s", exc)


def current(text: str | None = None) -> Version:
    """The version of the warehouse ``text`` (default: the configured one), without opening it: the version
    file's token and the page cache's, joined. Either missing is created with a fresh token (a warehouse never
    written through this code, an evicted cache entry), so that pages cached for another content never match.

    Raises:
        whatever the page cache raises when its server is down (the caller then serves without the cache).
    """
    text = text or warehouse_spec()
    path = version_path(text)
    found = _read_file(path)
    if found is None:
        try:
            _write_file(path, secrets.token_hex(8), time.time())
        except OSError:
            pass
        found = _read_file(path) or ("nofile", 0.0)
    shared = ""
    cache = caches[CACHE_ALIAS]
    if shares_machines(cache):
        key = _cache_key(text)
        shared = cache.get(key)
        if shared is None:
            cache.add(key, secrets.token_hex(8), timeout=None)  # first comer wins; the others read its token
            shared = cache.get(key, "")
    return Version(token=f"{_digest(text)}.{found[0]}.{shared}", at=found[1])


def shares_machines(cache) -> bool:
    """Whether the page cache may be shared by several machines (Redis, Memcached: anything but files and local
    memory), so that the version's copy in it is read: a file-based cache lives on this machine, where the version
    file already tells every process."""
    from django.core.cache.backends.filebased import FileBasedCache
    from django.core.cache.backends.locmem import LocMemCache

    return not isinstance(cache, (FileBasedCache, LocMemCache))
