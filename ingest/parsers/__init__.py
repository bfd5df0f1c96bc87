"""Parsers of raw agent and judge traces: one module per format behind :func:`parse_trace` (spec section 2).

Formats (module: id): ``claude_code``, ``codex_exec``, ``codex_protocol``, ``codex_text``, ``gemini``,
``opencode``, ``text`` (fallback). Each format module is a generator of steps,
``parse(lines, source) -> Generator[Step, None, ParsedTrace]`` (the trace's totals and problems its return
value); adding a scaffold means adding one such module and one entry in :data:`PARSERS` (and a rule in
``detect``). One streaming path: every trace is pulled through :func:`stream_trace`, line by line.
"""
from __future__ import annotations

import logging
import re
from collections.abc import Callable, Generator, Iterable
from itertools import chain, islice

from traces.steps import ParsedTrace, ParseProblem, Step

from . import claude_code, codex_exec, codex_protocol, codex_text, gemini, opencode, text
from .detect import FAR_WINDOW, detect_lines
from .framing import HeldLines, Line, LineFramer, frame_lines
from .utf8 import decode

log = logging.getLogger(__name__)

__all__ = ["PARSERS", "StopReading", "collect", "detect_format", "parse_trace", "storable", "stream_trace"]

PARSERS: dict[str, Callable[[Iterable[Line], str], Generator[Step, None, ParsedTrace]]] = {
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
    trace = collect(stream_trace(pieces, source=source, scaffold=scaffold))
    trace.replaced_chars += replaced
    return trace


def collect(stream: Generator[Step, None, ParsedTrace]) -> ParsedTrace:
    """The trace a generator of steps returns (:func:`stream_trace`, a format module of :data:`PARSERS`), with
    its steps collected in ``steps`` and its ``late_usage`` set on them (then empty): the whole trace in memory,
    for tests and small texts; the ingest pulls the steps one by one instead."""
    steps: list[Step] = []
    while True:
        try:
            steps.append(next(stream))
        except StopIteration as stop:
            trace: ParsedTrace = stop.value
            break
    for index, (tokens_in, tokens_out) in trace.late_usage.items():  # set on steps already collected
        steps[index].tokens_in, steps[index].tokens_out = tokens_in, tokens_out
    trace.steps, trace.late_usage = steps, {}
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


def stream_trace(pieces: Iterable[str], *, source: str = "solve_out.txt",
                 scaffold: str | None = None) -> Generator[Step, None, ParsedTrace]:
    """Parse the concatenated ``pieces`` (text, e.g. a file read in blocks, pulled as they are needed): a generator
    of the trace's steps in order (``steps[i].index == i``), each made storable, that returns the
    :class:`ParsedTrace` (totals, problems, ``late_usage``; its ``steps`` empty). The one way a trace is parsed
    (:func:`parse_trace` collects the steps).

    Every format module is itself a generator of steps (``PARSERS``) that holds at most a window of recent steps
    (``_builder.TraceBuilder``), so memory is bounded by that window, not by the trace; a usage set on a step
    already yielded is in ``late_usage``. Should the format's parser fail, the lines from the one after the last
    step yielded are parsed as plain text (all of them when none was), with a problem naming the failure: nothing
    yielded is taken back. :class:`StopReading` raised by ``pieces`` passes through.
    """
    framer = LineFramer()
    lines = framer.lines(pieces)
    head = list(islice(lines, FAR_WINDOW))
    fmt = detect_lines(head, scaffold)
    held = HeldLines(chain(head, lines))
    replaced = handed = 0
    parser = PARSERS[fmt](held, source)
    while True:
        try:
            step = next(parser)
        except StopIteration as stop:
            trace: ParsedTrace = stop.value
            break
        except StopReading:
            raise
        except Exception as exc:  # noqa: BLE001 - last line of defence, see parse_trace's docstring
            log.exception("the %s parser failed on %s", fmt, source)
            trace = yield from _as_text(held, fmt, source, exc, handed)
            break
        replaced += _make_step_storable(step)
        handed += 1
        held.settle(step.line)
        yield step
    _cut_off(trace, framer.cut_line, source)
    trace.replaced_chars += replaced + _make_storable(trace)
    return trace


def _as_text(held: HeldLines, fmt: str, source: str, exc: Exception,
             handed: int) -> Generator[Step, None, ParsedTrace]:
    """The rest of a trace whose ``fmt`` parser failed (``held.rest()``: from the line after the last step handed
    on) parsed as plain text, its steps numbered on from ``handed`` and made storable, with a problem at its first
    line saying that the parser failed."""
    lines = held.rest()
    first = next(lines, None)
    parser = text.parse(chain([first], lines) if first is not None else (), source)
    replaced = 0
    while True:
        try:
            step = next(parser)
        except StopIteration as stop:
            trace: ParsedTrace = stop.value
            break
        step.index += handed
        replaced += _make_step_storable(step)
        yield step
    trace.replaced_chars += replaced
    trace.problems.insert(0, ParseProblem(source, first[0] if first else 1,
                                          f"the {fmt} parser failed ({type(exc).__name__}: {str(exc)[:200]}): the "
                                          "trace is shown as plain text" + (" from this line on" if first and
                                                                            first[0] > 1 else "")))
    return trace


_UNSTORABLE = re.compile("[\ud800-\udfff\x00]")
NUL_SHOWN = "\u2400"  # SYMBOL FOR NULL: a NUL kept visible


def _fix(match: re.Match[str]) -> str:
    return NUL_SHOWN if match.group() == "\x00" else "\ufffd"


def storable(value: str) -> tuple[str, int]:
    """``(value, lone surrogates replaced)``: lone UTF-16 surrogates (which UTF-8 cannot encode) -> U+FFFD,
    NUL -> U+2400 (shown, not counted). Raises nothing."""
    if "\x00" not in value:
        if value.isascii():  # (a flag of the string: no scan)
            return value, 0
        try:  # UTF-8 refuses exactly the lone surrogates: one C pass, ~3x cheaper than the search below
            value.encode("utf-8")
        except UnicodeEncodeError:
            pass
        else:
            return value, 0
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
