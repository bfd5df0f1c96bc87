"""Django's file-based cache with an atomic ``add``, for the page cache's compute lock (``ptbsite.pagecache``).

Django's ``FileBasedCache.add`` is "``has_key``, then ``set``": two processes that miss the same page at once both
find no lock and both take it, so each of ``serve``'s workers computed the page of a new version (on the K=90 warehouse, a
run page computed twice at 3.5-3.9 s each under load, while the other requests waited on the stale page). Here
the entry is written to a temporary file and linked to its name with ``os.link``, which fails if the name exists:
one process wins. An expired entry under the name is removed (``has_key`` does) and the link tried again.
"""
from __future__ import annotations

import os
import tempfile
from typing import Any

from django.core.cache.backends.base import DEFAULT_TIMEOUT
from django.core.cache.backends.filebased import FileBasedCache


class AtomicAddFileBasedCache(FileBasedCache):
    """``django.core.cache.backends.filebased.FileBasedCache`` whose :meth:`add` is atomic across processes on one
    machine (POSIX ``link(2)``); every other method is Django's."""

    def add(self, key: str, value: Any, timeout: Any = DEFAULT_TIMEOUT, version: int | None = None) -> bool:
        """Store ``value`` under ``key`` unless a live entry is there; True when this call stored it."""
        self._createdir()
        fname = self._key_to_file(key, version)
        self._cull()
        fd, tmp_path = tempfile.mkstemp(dir=self._dir)
        try:
            with open(fd, "wb") as f:
                self._write_content(f, timeout, value)
            for _ in range(3):
                try:
                    os.link(tmp_path, fname)
                    return True
                except FileExistsError:
                    if self.has_key(key, version):  # a live entry: another process won (an expired one is removed)
                        return False
            return False
        finally:
            os.remove(tmp_path)
