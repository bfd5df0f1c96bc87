"""Line framing common to every scaffold's raw trace (spec section 2.1).

A raw ``solve_out.txt`` is a sequence of physical lines, each optionally prefixed with the wall-clock time at
which the harness read it: ``[YYYY-MM-DDTHH:MM:SSZ] `` (UTC, second resolution). This module splits a trace into
framed lines ``(line_no, time, text)``: ``line_no`` 1-based, ``time`` a timezone-aware UTC datetime or None,
``text`` the line without prefix and without its line ending.
"""
from __future__ import annotations

import json
import re
from collections.abc import Iterable
from datetime import datetime, timezone

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
        time = datetime(*map(int, m.groups()), tzinfo=timezone.utc)  # type: ignore[misc]
    except ValueError:
        return None, raw
    return time, raw[_PREFIX_LEN:]


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
    Raises nothing.
    """
    if isinstance(source, bytes):
        text = source.decode("utf-8", errors="replace")
    elif isinstance(source, str):
        text = source
    else:
        text = "".join(source)
    if not text:
        return []
    raws = text.split("\n")
    if raws[-1] == "":
        raws.pop()  # the file ends in "\n": no partial line
    elif _is_cut_off_event(raws[-1]):
        raws.pop()

    lines: list[Line] = []
    cache: dict[str, datetime | None] = {}
    for no, raw in enumerate(raws, 1):
        if raw.endswith("\r"):
            raw = raw[:-1]
        if raw.startswith("[") and len(raw) >= _PREFIX_LEN:
            head = raw[:_PREFIX_LEN]
            if head not in cache:
                cache[head] = parse_prefix(head)[0]
            time = cache[head]
            lines.append((no, time, raw[_PREFIX_LEN:] if time is not None else raw))
        else:
            lines.append((no, None, raw))
    return lines


def _is_cut_off_event(raw: str) -> bool:
    """True when an unterminated last line is a JSON event cut off mid-way."""
    text = parse_prefix(raw.rstrip("\r"))[1].strip()
    if not text.startswith("{"):
        return False
    try:
        json.loads(text)
    except ValueError:
        return True
    return False
