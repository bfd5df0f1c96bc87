"""A trace file's text as the parsers pull it: blocks read, decoded and redacted, one at a time.

The bottom of the ingest's one streaming path (tree walker -> ``ingest.reader`` -> ``ingest.parsers`` ->
``traces.services``' writer, which pulls): the parsers pull framed lines (``parsers.framing``), which pull the
pieces of text a :class:`TraceText` yields. Blocks of ``block`` bytes (``ingest.reader.READ_BLOCK``) are read and
cut at their last newline, decoded (invalid UTF-8 -> U+FFFD, counted), redacted (``redaction.StreamRedactor``,
exact across blocks) and, for the agent's trace, scanned for residual key prefixes and API-limit markers. Memory:
a block and the line it ends inside (at most ``max_line`` bytes, else :class:`ReadLimit`).
"""
from __future__ import annotations

import re
import time
from collections.abc import Iterator
from pathlib import Path

import re2
from django.conf import settings

from .files import RefusedFile, RunFiles, open_regular
from .parsers import StopReading
from .parsers.utf8 import decode
from .redaction import Redactor, ResidualScanner, StreamRedactor
from .state import API_LIMIT_MARKERS

_MARKER_TAIL = max(map(len, API_LIMIT_MARKERS))
_MARKERS = re2.compile("|".join(map(re.escape, API_LIMIT_MARKERS)))


class RunIngestError(RuntimeError):
    """One run could not be stored; the message names its directory."""


class ReadLimit(RunIngestError, StopReading):
    """Reading a run's trace went over a limit (time, line length): the run is not stored; the message names its
    directory and the limit."""


class TraceText:
    """The text of one trace file of a run, as redacted pieces (iterate it once; module docstring).

    ``files``: the run's readable entries (a file refused when opened is absent: its refusal goes to
    ``files.problems``); ``scan``: the agent's trace (residual key prefixes and API-limit markers looked for);
    ``deadline``: ``time.monotonic()`` past which reading stops (:class:`ReadLimit`), checked between blocks.

    After iterating: :attr:`replaced` (undecodable byte sequences), :attr:`secrets` (values redacted),
    :attr:`markers` (the API-limit markers found), :attr:`warnings` (residual key prefixes; scanned only).
    """

    def __init__(self, path: Path, files: RunFiles, redactor: Redactor, *, scan: bool, block: int, max_line: int,
                 deadline: float | None = None) -> None:
        self.path, self.files, self.block, self.max_line, self.deadline = path, files, block, max_line, deadline
        self._redactor = StreamRedactor(redactor)
        self._residual = ResidualScanner() if scan else None
        self.replaced = 0
        self.markers: set[str] = set()
        self._tail = ""

    @property
    def secrets(self) -> int:
        """Values redacted so far."""
        return self._redactor.secrets

    @property
    def warnings(self) -> list[str]:
        """Residual key prefixes found (the agent's trace), else none."""
        return self._residual.warnings if self._residual is not None else []

    def __iter__(self) -> Iterator[str]:
        """The pieces of redacted text, in order, each ending in a newline but the last.

        Raises:
            ReadLimit: reading went past ``deadline`` or met a line over ``max_line`` bytes.
        """
        try:
            handle = open_regular(self.path, self.files.root)
        except RefusedFile as exc:  # changed since the run's entries were examined: absent, as RunFiles reads
            self.files.problems.append(str(exc))
            return
        with handle:
            held = b""
            while data := handle.read(self.block):
                if self.deadline is not None and time.monotonic() > self.deadline:
                    raise ReadLimit(f"{self.files.run_dir}: not stored: reading it took longer than "
                                    f"PTB_INGEST_RUN_SECONDS ({settings.PTB_INGEST_RUN_SECONDS:g} s)")
                data = held + data
                cut = data.rfind(b"\n") + 1
                held = data[cut:]
                if len(held) > self.max_line:  # bounded memory: a file without newlines is not a trace
                    raise ReadLimit(f"{self.files.run_dir}: not stored: {self.path.name} has a line longer than "
                                    f"{self.max_line:,} bytes")
                if cut:
                    yield self._cleaned(data[:cut], False)
            yield self._cleaned(held, True)

    def _cleaned(self, data: bytes, final: bool) -> str:
        """One block decoded, redacted and scanned."""
        text, replaced = decode(data)
        self.replaced += replaced
        redacted = self._redactor.feed(text, final=final)
        if self._residual is not None:
            self._residual.feed(redacted, final=final)
            seen = self._tail + redacted
            if _MARKERS.search(seen) is not None:  # one RE2 pass; which ones, only when there is one
                self.markers.update(m for m in API_LIMIT_MARKERS if m in seen)
            self._tail = seen[-_MARKER_TAIL:]
        return redacted
