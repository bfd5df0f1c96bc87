"""Line framing common to every scaffold's raw trace (spec section 2.1).

A raw ``solve_out.txt`` is a sequence of physical lines, each optionally prefixed with the wall-clock time at
which the harness read it: ``[YYYY-MM-DDTHH:MM:SSZ] `` (UTC, second resolution). This module splits a trace into
framed lines ``(line_no, time, text)``: ``line_no`` 1-based, ``time`` a timezone-aware UTC datetime or None,
``text`` the line without prefix and without its line ending.
"""
from __future__ import annotations

import re
from collections import deque
from collections.abc import Iterable, Iterator
from itertools import chain
from dataclasses import dataclass
from datetime import datetime, timezone


from ptbsite.jsontext import TooDeep, loads

from .utf8 import decode as decode  # framing decodes bytes; the trace's blocks are decoded there too (ingest.blocks)

Line = tuple[int, datetime | None, str]


# Anchored and fixed-width: cannot backtrack.
_PREFIX = re.compile(r"\[(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2}):(\d{2})Z\] ")
_PREFIX_LEN = 23


def parse_prefix(raw: str) -> tuple[datetime | None, str]:
    """Split one physical line into ``(time, text)`` (spec 2.1 step 1).

    ``raw`` has no line ending. ``time`` is the UTC datetime of a leading ``[YYYY-MM-DDTHH:MM:SSZ] `` prefix
    (timezone-aware), else None and ``text`` is ``raw`` unchanged. A prefix with an impossible date (month 13) is
    not a prefix. Raises nothing.
    """
    if not raw.startswith("[") or len(raw) < _PREFIX_LEN:
        return None, raw
    m = _PREFIX.match(raw)
    if m is None:
        return None, raw
    try:
        year, month, day, hour, minute, second = map(int, m.groups())
        time = datetime(year, month, day, hour, minute, second, tzinfo=timezone.utc)
    except ValueError:
        return None, raw
    return time, raw[_PREFIX_LEN:]


@dataclass
class Framed:
    """A framed trace: ``lines`` as :func:`frame_lines` gives them; ``cut_line``: the number of a trailing line
    cut off mid-event (dropped from ``lines``), else None; ``replaced``: undecodable byte sequences replaced by
    U+FFFD while decoding bytes (0 for text input)."""

    lines: list[Line]
    cut_line: int | None = None
    replaced: int = 0


def frame_trace(source: str | bytes | Iterable[str]) -> Framed:
    """Frame a raw trace (:func:`frame_lines`) and say what framing dropped or repaired (:class:`Framed`): the
    lines a :class:`LineFramer` gives for it (the one framing, whole text or pieces)."""
    replaced = 0
    pieces: Iterable[str]
    if isinstance(source, bytes):
        text, replaced = decode(source)
        pieces = [text]
    elif isinstance(source, str):
        pieces = [source]
    else:
        pieces = source
    framer = LineFramer()
    lines = list(framer.lines(pieces))
    return Framed(lines, framer.cut_line, replaced)


def frame_lines(source: str | bytes | Iterable[str]) -> list[Line]:
    """Split a raw trace into framed lines ``[(line_no, time, text), ...]`` (spec 2.1).

    ``source`` is the whole file as text (bytes are decoded as UTF-8, undecodable bytes replaced), or an iterable
    of lines as read from a text file (each keeping its ``"\\n"``). Lines are split on ``"\\n"`` only (a ``"\\r"``
    before it is dropped) so that U+2028 and other exotic separators inside JSON strings never split an event.

    Trailing partial line: a trace killed at the time limit can end mid-line. When the file does not end in
    ``"\\n"`` and its last line starts with ``{`` but is not valid JSON, that line is a cut-off event and is
    dropped. A last unterminated line that is valid JSON or plain text is complete enough to keep (a process that
    prints ``Terminated`` without newline, a final event flushed without its newline).

    Time of a line: its prefix; consecutive lines usually share a second, so parsed prefixes are cached.
    :func:`frame_trace` also reports the dropped line. Raises nothing.
    """
    return frame_trace(source).lines


def _is_cut_off_event(raw: str) -> bool:
    """True when an unterminated last line is a JSON event cut off mid-way."""
    text = parse_prefix(raw.rstrip("\r"))[1].strip()
    if not text.startswith("{"):
        return False
    try:
        loads(text)
    except TooDeep:
        return False  # complete, only too deep to parse: kept (and reported) as text
    except ValueError:
        return True
    return False


class LineFramer:
    """:func:`frame_trace` over text that arrives in pieces: :meth:`feed` returns the framed lines each piece
    completes, :meth:`finish` the last ones; :attr:`cut_line` is then what ``frame_trace`` reports. The lines
    are those ``frame_trace`` gives for the concatenated pieces, numbered alike."""

    def __init__(self) -> None:
        self.cut_line: int | None = None
        self._partial = ""
        self._no = 0
        self._cache: dict[str, datetime | None] = {}

    def _frame(self, raw: str) -> Line:
        self._no += 1
        if raw.endswith("\r"):
            raw = raw[:-1]
        if raw.startswith("[") and len(raw) >= _PREFIX_LEN:
            head = raw[:_PREFIX_LEN]
            if head not in self._cache:
                if len(self._cache) > 4096:
                    self._cache.clear()
                self._cache[head] = parse_prefix(head)[0]
            time = self._cache[head]
            return (self._no, time, raw[_PREFIX_LEN:] if time is not None else raw)
        return (self._no, None, raw)

    def feed(self, piece: str) -> list[Line]:
        """The lines ``piece`` completes. Raises nothing."""
        raws = (self._partial + piece).split("\n")
        self._partial = raws.pop()
        # _frame of each, a line without a prefix framed here (most lines of a text trace; no call per line)
        frame = self._frame
        out: list[Line] = []
        append = out.append
        for raw in raws:
            if raw[:1] == "[" or raw[-1:] == "\r":
                append(frame(raw))
            else:
                self._no += 1
                append((self._no, None, raw))
        return out

    def finish(self) -> list[Line]:
        """The last line when the text does not end in ``"\\n"`` (none when it is a cut-off event). Raises nothing."""
        raw, self._partial = self._partial, ""
        if raw == "":
            return []
        if _is_cut_off_event(raw):
            self.cut_line = self._no + 1
            return []
        return [self._frame(raw)]

    def lines(self, pieces: Iterable[str]) -> Iterator[Line]:
        """The framed lines of the concatenated ``pieces``, pulled from them as they are needed (:meth:`feed`,
        then :meth:`finish`). Raises what iterating ``pieces`` raises."""
        for piece in pieces:
            yield from self.feed(piece)
        yield from self.finish()


class HeldLines:
    """The framed lines a format parser reads, remembering those read since the last step handed on began
    (:meth:`settle`): should the parser fail, they and the lines not read yet are the rest of the trace
    (:meth:`rest`, ``ingest.parsers.stream_trace``). Holds as many lines as the parser's held steps span."""

    def __init__(self, lines: Iterable[Line]) -> None:
        self._lines = iter(lines)
        self._read: deque[Line] = deque()

    def __iter__(self) -> Iterator[Line]:
        return self

    def __next__(self) -> Line:
        line = next(self._lines)
        self._read.append(line)
        return line

    def settle(self, line_no: int | None) -> None:
        """A step that began at line ``line_no`` was handed on: the lines up to it are let go."""
        if line_no is None:
            return
        read = self._read
        while read and read[0][0] <= line_no:
            read.popleft()

    def rest(self) -> Iterator[Line]:
        """The lines read since the last step handed on began, then those not read yet."""
        held, self._read = list(self._read), deque()
        return chain(held, self._lines)
