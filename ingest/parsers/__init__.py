"""Parsers of raw agent and judge traces: one module per format behind :func:`parse_trace` (spec section 2).

Formats (module: id): ``claude_code``, ``codex_exec``, ``codex_protocol``, ``codex_text``, ``gemini``,
``opencode``, ``text`` (fallback). Adding a scaffold means adding one module with
``parse(lines, source) -> ParsedTrace`` and one entry in :data:`PARSERS` (and a rule in ``detect``).
"""
from __future__ import annotations

import logging
import re
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from itertools import chain, islice

from traces.steps import ParsedTrace, ParseProblem, Step

from . import claude_code, codex_exec, codex_protocol, codex_text, gemini, opencode, text
from .detect import FAR_WINDOW, detect_lines
from .framing import Line, LineFramer, decode, frame_lines

log = logging.getLogger(__name__)

__all__ = ["PARSERS", "StopReading", "detect_format", "parse_trace", "storable", "stream_trace"]

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
    """Parse one raw trace file into typed steps (spec 2.1-2.5): :func:`stream_trace` of it, its steps collected.

    ``text_or_lines``: the whole file (str, or bytes decoded as UTF-8 with replacement), or its lines as read
    from a text file (each keeping its ``"\\n"``). ``source``: the file name used in :class:`ParseProblem`
    records. ``scaffold``: the agent folder name (``claude``, ``codexhigh``, ``opencode``, ...), a hint that
    only breaks ties in detection.

    Returns a :class:`ParsedTrace` whose ``steps[i].index == i``, with run totals (tokens, USD) when the trace
    carries them and broken lines listed in ``problems``. A trailing line cut off at the time limit is dropped,
    reported as a problem, and makes the trace ``incomplete``. Every string of the result can be stored: lone
    surrogates become U+FFFD (counted in ``replaced_chars`` with undecodable bytes) and NUL characters become the
    visible U+2400 (``␀``).

    Never raises on content (a trace is data: nothing in it is executed): should a format module fail on some
    input all the same, the trace from there on is parsed as plain text with a problem naming the failure
    (:func:`stream_trace`; the failure is logged; tests/test_parsers_properties.py fuzzes every format to keep
    that path unused).
    """
    replaced = 0
    pieces: Iterable[str]
    if isinstance(text_or_lines, bytes):
        decoded, replaced = decode(text_or_lines)
        pieces = [decoded]
    elif isinstance(text_or_lines, str):
        pieces = [text_or_lines]
    else:
        pieces = text_or_lines
    steps: list[Step] = []
    trace = stream_trace(pieces, on_step=steps.append, source=source, scaffold=scaffold)
    for index, (tokens_in, tokens_out) in trace.late_usage.items():  # set on steps already collected
        steps[index].tokens_in, steps[index].tokens_out = tokens_in, tokens_out
    trace.steps, trace.late_usage = steps, {}
    trace.replaced_chars += replaced
    return trace


def _parse_lines(lines: list[Line], fmt: str, source: str) -> ParsedTrace:
    """``PARSERS[fmt](lines)``, else (the parser failed) the lines as plain text with a problem saying so."""
    try:
        return PARSERS[fmt](lines, source)
    except Exception as exc:  # noqa: BLE001 - last line of defence, see parse_trace's docstring
        log.exception("the %s parser failed on %s", fmt, source)
        return _as_text(lines, fmt, source, exc)


def _as_text(lines: list[Line], fmt: str, source: str, exc: Exception) -> ParsedTrace:
    """``lines`` parsed as plain text, with a problem at the first saying that the ``fmt`` parser failed."""
    trace = text.parse(lines, source)
    trace.problems.insert(0, ParseProblem(source, lines[0][0] if lines else 1,
                                          f"the {fmt} parser failed ({type(exc).__name__}: {str(exc)[:200]}): the "
                                          "trace is shown as plain text" + (" from this line on" if lines and
                                                                            lines[0][0] > 1 else "")))
    return trace


def _cut_off(trace: ParsedTrace, cut_line: int | None, source: str) -> None:
    if cut_line is not None:
        trace.problems.append(ParseProblem(source, cut_line, "the trace ends inside this event (cut off, "
                                                             "e.g. killed at the time limit): dropped"))
        trace.incomplete = trace.incomplete or "the last line is cut off mid-event"


class StopReading(RuntimeError):
    """Raised by the pieces :func:`stream_trace` reads to stop reading altogether (a limit of the caller's, e.g.
    the ingest's time or line length): it passes through :func:`stream_trace` as it is, never taken for a
    parser's failure (which falls back to plain text)."""


STREAMED_FORMATS = {"claude_code": claude_code.parse}  # formats whose steps are final a window of steps later


def stream_trace(pieces: Iterable[str], *, on_step: Callable[[Step], None], source: str = "solve_out.txt",
                 scaffold: str | None = None) -> ParsedTrace:
    """Parse the concatenated ``pieces`` (text, e.g. a file read in blocks) with every step handed to ``on_step``
    in order, made storable, instead of kept: the result's ``steps`` is empty. The one way a trace is parsed
    (:func:`parse_trace` collects the steps).

    A Claude Code trace (:data:`STREAMED_FORMATS`) is parsed as it is read: at most a window of recent steps is
    held, and a usage set on a step already handed on is in ``late_usage``; other formats are parsed whole,
    then handed on. Should the format's parser fail, the lines from the one after the last step handed on are
    parsed as plain text (all of them when none was), with a problem naming the failure: nothing handed on is
    taken back.
    """
    framer = LineFramer()

    def framed() -> Iterator[Line]:
        for piece in pieces:
            yield from framer.feed(piece)
        yield from framer.finish()

    lines = framed()
    head = list(islice(lines, FAR_WINDOW))
    fmt = detect_lines(head, scaffold)
    replaced = 0
    handed = 0
    unsettled: deque[Line] = deque()  # the lines read after the last step handed on began (a streamed format)

    def hand_on(step: Step) -> None:
        nonlocal replaced, handed
        replaced += _make_step_storable(step)
        handed += 1
        on_step(step)
        while unsettled and step.line is not None and unsettled[0][0] <= step.line:
            unsettled.popleft()

    unread = chain(head, lines)

    def tracked() -> Iterator[Line]:
        for line in unread:
            unsettled.append(line)
            yield line

    if fmt in STREAMED_FORMATS:
        try:
            trace = STREAMED_FORMATS[fmt](tracked(), source, sink=hand_on)
        except StopReading:
            raise
        except Exception as exc:  # noqa: BLE001 - as _parse_lines, keeping the steps handed on
            log.exception("the %s parser failed on %s", fmt, source)
            trace = _as_text(list(unsettled) + list(unread), fmt, source, exc)
            for step in trace.steps:
                step.index += handed
    else:
        trace = _parse_lines(head + list(lines), fmt, source)
    if trace.steps:
        steps, trace.steps = trace.steps, []
        for step in steps:
            hand_on(step)
    _cut_off(trace, framer.cut_line, source)
    trace.replaced_chars += replaced + _make_storable(trace)
    return trace


_UNSTORABLE = re.compile("[\ud800-\udfff\x00]")
NUL_SHOWN = "\u2400"  # SYMBOL FOR NULL: a NUL kept visible


def _fix(match: re.Match[str]) -> str:
    return NUL_SHOWN if match.group() == "\x00" else "\ufffd"


def storable(value: str) -> tuple[str, int]:
    """``(value, lone surrogates replaced)``: lone UTF-16 surrogates (which UTF-8 cannot encode) -> U+FFFD,
    NUL -> U+2400 (shown, not counted). Raises nothing."""
    if _UNSTORABLE.search(value) is None:
        return value, 0
    fixed = _UNSTORABLE.sub(_fix, value)
    return fixed, sum(1 for c in value if "\ud800" <= c <= "\udfff")


def _make_step_storable(step: Step) -> int:
    """Make every string of ``step`` storable in place (:func:`storable`); returns the surrogates replaced."""
    replaced = 0
    for name in ("tool", "input", "output", "call_id", "label"):
        value = getattr(step, name)
        if value:
            fixed, n = storable(value)
            if fixed is not value:
                setattr(step, name, fixed)
                replaced += n
    return replaced


def _make_storable(trace: ParsedTrace) -> int:
    """Make every string of ``trace`` storable in place (:func:`storable`); returns the surrogates replaced."""
    replaced = sum(_make_step_storable(step) for step in trace.steps)
    if trace.model:
        trace.model, n = storable(trace.model)
        replaced += n
    for problem in trace.problems:
        problem.message, n = storable(problem.message)
        replaced += n
    return replaced


def detect_format(text_or_lines: str | bytes | Iterable[str], *, scaffold: str | None = None) -> str:
    """The format id of a raw trace: a key of :data:`PARSERS` (rules in :mod:`ingest.parsers.detect`).

    Accepts what :func:`parse_trace` accepts; only the first ``FAR_WINDOW`` lines are read. Raises nothing.
    """
    if isinstance(text_or_lines, bytes):
        head = text_or_lines.split(b"\n", FAR_WINDOW)[:FAR_WINDOW]
        return detect_lines(frame_lines(b"\n".join(head) + b"\n"), scaffold)
    if isinstance(text_or_lines, str):
        head_text = text_or_lines.split("\n", FAR_WINDOW)[:FAR_WINDOW]
        return detect_lines(frame_lines("\n".join(head_text) + "\n"), scaffold)
    return detect_lines(frame_lines(islice(text_or_lines, FAR_WINDOW)), scaffold)
