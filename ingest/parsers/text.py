"""Generic plain-text fallback for traces in no known format (spec section 2.1).

Every run of consecutive non-blank lines becomes one ``text`` step (lines joined with ``"\\n"``; line and time
of the run's first line); blank lines separate runs and are not steps. Nothing is a problem.
"""
from __future__ import annotations

from collections.abc import Generator, Iterable

from traces.steps import ParsedTrace, Step

from ._builder import TraceBuilder
from .framing import Line


def parse(lines: Iterable[Line], source: str) -> Generator[Step, None, ParsedTrace]:
    """Parse framed lines as plain text: a generator of its ``text`` steps, in order, that returns the
    :class:`ParsedTrace` (``steps`` empty). Raises nothing."""
    b = TraceBuilder("text", source)
    for no, time, text in lines:
        b.text_line(no, time, text)
        yield from b.released()  # between events: the steps that can no longer change
    yield from b.finish()
    return b.trace
