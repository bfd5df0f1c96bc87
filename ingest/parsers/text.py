"""Generic plain-text fallback for traces in no known format (spec section 2.1).

Every run of consecutive non-blank lines becomes one ``text`` step (lines joined with ``"\\n"``; line and time
of the run's first line); blank lines separate runs and are not steps. Nothing is a problem.
"""
from __future__ import annotations

from collections.abc import Iterable

from traces.steps import ParsedTrace

from ._builder import TraceBuilder
from .framing import Line


def parse(lines: Iterable[Line], source: str) -> ParsedTrace:
    """Parse framed lines as plain text into a :class:`ParsedTrace` of ``text`` steps. Raises nothing."""
    b = TraceBuilder("text", source)
    for no, time, text in lines:
        b.text_line(no, time, text)
    return b.finish()
