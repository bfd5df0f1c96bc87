"""What the ingest may read of a results tree: regular files and directories inside the results root, no more.

A results tree is untrusted input (it is copied from the clusters that ran the agents, and an agent wrote most of
it). The ingest reads only:

* entries inside the results root: a symbolic link whose target (resolved, links followed) is outside the root is
  refused, file or directory, method directory, run directory or any file of a run;
* regular files and directories: a FIFO, a socket or a device is refused without being opened (opening a FIFO
  for reading blocks until a writer comes; a device can be endless);
* files of at most ``settings.PTB_MAX_TRACE_BYTES`` bytes (default 2,000,000,000): a larger file is not read.

Each refusal is a problem string ``"<path relative to the root>: <why>: refused"`` that the ingest reports (the
run's problems, or the tree's for a method or run directory); a refused file is then treated as absent. Files
are opened with :func:`open_regular`, which checks the opened descriptor again (``fstat``), so a file swapped for
a FIFO between the check and the open is refused all the same.
"""
from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from pathlib import Path
from typing import BinaryIO

from django.conf import settings

_KINDS = ((stat.S_ISFIFO, "a FIFO (named pipe)"), (stat.S_ISSOCK, "a socket"), (stat.S_ISCHR, "a character device"),
          (stat.S_ISBLK, "a block device"))


class RefusedFile(OSError):
    """A file the ingest must not read; the message is the problem naming it (module docstring)."""


def max_bytes() -> int:
    """The largest file the ingest reads, in bytes (``settings.PTB_MAX_TRACE_BYTES``)."""
    return int(settings.PTB_MAX_TRACE_BYTES)


def shown(path: Path, root: Path) -> str:
    """``path`` relative to ``root`` when it is under it (as the tree names it, links not followed), else as is."""
    try:
        return str(Path(os.path.abspath(path)).relative_to(os.path.abspath(root)))
    except ValueError:
        return str(path)


def refusal(path: Path, root: Path, *, size_limit: bool = True) -> str | None:
    """Why the ingest must not read ``path`` (a directory or a file of the tree under ``root``), as a problem
    string naming it; None when it may (or when it does not exist: the caller treats it as absent).

    Refused: a symbolic link (at any level below ``root``) whose target is outside ``root``; a broken link; a
    FIFO, socket or device; with ``size_limit``, a regular file over :func:`max_bytes`. Nothing is opened (an
    ``O_PATH`` descriptor, which reads nothing, may name it: :func:`real_path`).
    """
    try:
        own = os.lstat(path)
    except FileNotFoundError:
        return None
    except OSError as exc:
        return f"{shown(path, root)}: cannot be examined ({exc.strerror}): refused"
    real_root = real_path(root)
    real = real_path(path)
    if real != real_root and not real.startswith(real_root.rstrip(os.sep) + os.sep):
        what = "a symbolic link" if stat.S_ISLNK(own.st_mode) else "reached through a symbolic link"
        return f"{shown(path, root)}: {what} to a path outside the results root: refused"
    try:
        info = own if not stat.S_ISLNK(own.st_mode) else os.stat(path)
    except OSError:
        return f"{shown(path, root)}: a broken symbolic link: refused"
    for test, kind in _KINDS:
        if test(info.st_mode):
            return f"{shown(path, root)}: {kind}, not a regular file: refused (never opened)"
    if size_limit and stat.S_ISREG(info.st_mode) and info.st_size > max_bytes():
        return (f"{shown(path, root)}: {info.st_size:,} bytes, over the {max_bytes():,} bytes the ingest reads "
                f"(PTB_MAX_TRACE_BYTES): refused")
    return None


_PROC_FD = "/proc/self/fd/"
_O_PATH = getattr(os, "O_PATH", 0)


def real_path(path: Path | str) -> str:
    """``os.path.realpath(path)`` (symbolic links resolved, absolute), asked of the kernel where it can say it:
    the path of an ``O_PATH`` descriptor of ``path`` (which opens nothing: no FIFO waited on, no device touched)
    as ``/proc/self/fd`` reads it, three system calls where ``realpath`` makes one ``lstat`` per component in
    Python. A path that does not resolve (absent, a broken link), a deleted or unreachable one, or a system
    without ``/proc``: ``os.path.realpath``'s answer. Raises nothing but what ``realpath`` raises."""
    if _O_PATH:
        try:
            fd = os.open(path, _O_PATH | os.O_CLOEXEC)
        except OSError:
            return os.path.realpath(path)
        try:
            real = os.readlink(f"{_PROC_FD}{fd}")
        except OSError:
            real = ""
        finally:
            os.close(fd)
        if real.startswith("/") and not real.endswith(" (deleted)"):
            return real
    return os.path.realpath(path)


def open_regular(path: Path, root: Path) -> BinaryIO:
    """``path`` opened for reading in binary, after :func:`refusal` allowed it; the opened descriptor is checked
    again (a regular file, within the size limit), so a file replaced between the check and the open is refused.

    Raises:
        RefusedFile: the message names the file and why (module docstring). OSError: it could not be opened.
    """
    problem = refusal(path, root)
    if problem is not None:
        raise RefusedFile(problem)
    # O_NONBLOCK: should a FIFO appear at this path after the check, opening it does not wait for a writer.
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise RefusedFile(f"{shown(path, root)}: not a regular file when opened: refused")
        if info.st_size > max_bytes():
            raise RefusedFile(f"{shown(path, root)}: {info.st_size:,} bytes, over the {max_bytes():,} bytes the "
                              f"ingest reads (PTB_MAX_TRACE_BYTES): refused")
        os.set_blocking(fd, True)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def read_blocks(path: Path, root: Path, size: int) -> Iterator[bytes]:
    """The bytes of ``path`` (opened with :func:`open_regular`) in blocks of ``size`` bytes, read as they are
    pulled. Raises as :func:`open_regular` does (at the first block)."""
    with open_regular(path, root) as handle:
        while block := handle.read(size):
            yield block


class RunFiles:
    """The entries of one run directory the ingest may read, examined once (:func:`refusal`): ``problems`` lists
    every refused one, in name order; :meth:`ok` says whether a path of the run may be read."""

    def __init__(self, run_dir: Path, root: Path) -> None:
        self.run_dir = run_dir
        self.root = root
        self.problems: list[str] = []
        self._refused: set[str] = set()
        for entry in sorted(os.scandir(run_dir), key=lambda e: e.name):
            problem = refusal(Path(entry.path), root)
            if problem is not None:
                self._refused.add(entry.name)
                self.problems.append(problem)

    def ok(self, path: Path) -> bool:
        """Whether ``path`` (a top-level entry of the run, or below one) may be read; a refused path below the top
        level is added to :attr:`problems` once."""
        relative = path.relative_to(self.run_dir)
        if relative.parts and relative.parts[0] in self._refused:
            return False
        if len(relative.parts) > 1:
            problem = refusal(path, self.root)
            if problem is not None:
                if problem not in self.problems:
                    self.problems.append(problem)
                return False
        return True

    def is_file(self, path: Path) -> bool:
        """A readable regular file (links inside the root followed)."""
        return self.ok(path) and path.is_file()

    def is_dir(self, path: Path) -> bool:
        """A readable directory (links inside the root followed)."""
        return self.ok(path) and path.is_dir()

    def read_bytes(self, path: Path) -> bytes | None:
        """The file's bytes, or None when it is absent, not a regular file or refused (the refusal recorded)."""
        if not self.is_file(path):
            return None
        try:
            with open_regular(path, self.root) as handle:
                return handle.read()
        except RefusedFile as exc:
            self.problems.append(str(exc))
            return None
