"""Parsers of raw agent and judge traces: one module per format behind :func:`parse_trace` (spec section 2).

Formats (module: id): ``claude_code``, ``codex_exec``, ``codex_protocol``, ``codex_text``, ``gemini``,
``opencode``, ``text`` (fallback). Adding a scaffold means adding one module with
``parse(lines, source) -> ParsedTrace`` and one entry in :data:`PARSERS` (and a rule in ``detect``).
"""
from __future__ import annotations

from collections.abc import Callable, Iterable
from itertools import islice

from traces.steps import ParsedTrace

from . import claude_code, codex_exec, codex_protocol, codex_text, gemini, opencode, text
from .detect import FAR_WINDOW, detect_lines
from .framing import Line, frame_lines

__all__ = ["PARSERS", "detect_format", "parse_trace"]

PARSERS: dict[str, Callable[[Iterable[Line], str], ParsedTrace]] = {
    "claude_code": claude_code.parse,
    "codex_exec": codex_exec.parse,
    "codex_protocol": codex_protocol.parse,
    "codex_text": codex_text.parse,
    "gemini": gemini.parse,
    "opencode": opencode.parse,
    "text": text.parse,
}


def parse_trace(text_or_lines: str | bytes | Iterable[str], *, source: str = "solve_out.txt",
                scaffold: str | None = None) -> ParsedTrace:
    """Parse one raw trace file into typed steps (spec 2.1-2.5).

    ``text_or_lines``: the whole file (str, or bytes decoded as UTF-8 with replacement), or its lines as read
    from a text file (each keeping its ``"\\n"``). ``source``: the file name used in :class:`ParseProblem`
    records. ``scaffold``: the agent folder name (``claude``, ``codexhigh``, ``opencode``, ...), a hint that
    only breaks ties in detection.

    Returns a :class:`ParsedTrace` whose ``steps[i].index == i``, with run totals (tokens, USD) when the trace
    carries them and broken lines listed in ``problems``. Never raises on bad content (a trace is data: nothing
    in it is executed); a trailing line cut off at the time limit is dropped.
    """
    lines = frame_lines(text_or_lines)
    return PARSERS[detect_lines(lines, scaffold)](lines, source)


def detect_format(text_or_lines: str | bytes | Iterable[str], *, scaffold: str | None = None) -> str:
    """The format id of a raw trace: a key of :data:`PARSERS` (rules in :mod:`traces.parsers.detect`).

    Accepts what :func:`parse_trace` accepts; only the first ``FAR_WINDOW`` lines are read. Raises nothing.
    """
    if isinstance(text_or_lines, bytes):
        head = text_or_lines.split(b"\n", FAR_WINDOW)[:FAR_WINDOW]
        return detect_lines(frame_lines(b"\n".join(head) + b"\n"), scaffold)
    if isinstance(text_or_lines, str):
        head_text = text_or_lines.split("\n", FAR_WINDOW)[:FAR_WINDOW]
        return detect_lines(frame_lines("\n".join(head_text) + "\n"), scaffold)
    return detect_lines(frame_lines(islice(text_or_lines, FAR_WINDOW)), scaffold)
