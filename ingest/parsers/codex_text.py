"""Plain-text codex transcripts: ``codex exec`` without ``--json`` (spec section 2.3, format 1).

Shape: a banner (``OpenAI Codex vX``, dashes, ``key: value`` lines, dashes), then blocks introduced by a line
holding only the block kind, command results (``succeeded in 23ms:`` / ``exited N in 5ms:``), and
``tokens used`` followed by a number with thousands separators. Very old codex put its own
``[YYYY-MM-DDTHH:MM:SS] `` prefix (no ``Z``) before headers, and ``exec <command>`` on one line.

Mapping to steps (the text of a block is its lines joined with ``"\\n"``, surrounding blank lines trimmed):

* banner -> ``system`` (output: the ``OpenAI Codex v...`` line; input: the ``key: value`` lines); ``model:``
  sets the trace's model;
* ``user`` / ``User instructions:`` -> ``text``; ``thinking`` -> ``thinking``; ``codex`` -> ``assistant``;
  ``file update`` -> ``tool_call`` (tool ``apply_patch``);
* ``exec`` -> ``tool_call`` (tool ``shell``, input = the command lines), then the result line starts a
  ``tool_result`` (output = the lines after it; is_error when ``exited N`` with N != 0);
* ``tokens used`` -> ``result`` (output: the number as printed); the numbers are summed into the trace's
  ``tokens_total`` (one per ``codex exec`` process: each ``resume`` prints its own);
* lines outside any block (noise such as ``Reading additional input from stdin...``) -> ``text`` runs.

A session (from its banner) that never prints ``tokens used`` makes the trace ``incomplete``.
"""
from __future__ import annotations

import re
from collections.abc import Generator, Iterable
from datetime import datetime, timezone

from ptbsite.query import ascii_int
from traces.steps import ParsedTrace, Step, StepKind

from ._builder import TraceBuilder, add_tokens
from .framing import Line

_HEADERS: dict[str, tuple[StepKind, str | None]] = {
    "user": ("text", None), "User instructions:": ("text", None), "thinking": ("thinking", None),
    "codex": ("assistant", None), "exec": ("tool_call", "shell"), "file update": ("tool_call", "apply_patch"),
    "file update:": ("tool_call", "apply_patch"), "tokens used": ("result", None),
}
_OLD_PREFIX = re.compile(r"\[(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2}):(\d{2})\] ")
_EXEC_RESULT = re.compile(r"(?:^|\s)(succeeded|exited (-?\d+)) in [0-9.]+\s*m?s:?$")
_TOKENS_INLINE = re.compile(r"tokens used:\s*([\d,]+)$")


class _Block:
    """The block being read: its kind, where it started, its lines."""

    def __init__(self, kind: StepKind, tool: str | None, line: int, time: datetime | None) -> None:
        self.kind, self.tool, self.line, self.time = kind, tool, line, time
        self.lines: list[str] = []
        self.is_error = False

    def text(self) -> str:
        return "\n".join(self.lines).strip("\n")


def parse(lines: Iterable[Line], source: str) -> Generator[Step, None, ParsedTrace]:
    """Parse framed lines of a plain-text codex transcript (spec 2.3 format 1): a generator of its steps, in
    order, that returns the :class:`ParsedTrace` (totals, problems; ``steps`` empty).

    ``lines`` as produced by :func:`ingest.parsers.framing.frame_lines`. Raises nothing.
    """
    b = TraceBuilder("codex_text", source)
    block: _Block | None = None
    banner: list[str] | None = None  # key: value lines while inside the banner
    session_line: int | None = None  # line of the last banner
    session_done = False  # that session printed its tokens used
    steps = b.trace.steps
    for no, time, text in lines:
        # (per line: what is asked only of a line that can answer yes; _old_prefix and the tokens rule need a
        # line starting with "[" and with "tokens used:")
        time, text, old = _old_prefix(time, text) if text[:1] == "[" else (time, text, False)
        stripped = text.strip()
        if banner is not None:
            if stripped and set(stripped) == {"-"}:
                if banner:  # the closing dashes
                    _close_banner(b, banner)
                    banner = None
                continue
            if stripped not in _HEADERS:
                if stripped:
                    banner.append(stripped)
                    if stripped.startswith("model:"):
                        b.trace.model = stripped[len("model:"):].strip()
                continue
            _close_banner(b, banner)  # a banner cut short: the block header still counts
            banner = None
        header = _HEADERS.get(stripped)
        if header is None and old and stripped.startswith("exec "):
            header = _HEADERS["exec"]
        tokens = _TOKENS_INLINE.match(stripped) if stripped.startswith("tokens used:") else None
        in_exec = block is not None and block.kind == "tool_call" and block.tool == "shell"
        result = _EXEC_RESULT.search(stripped) if in_exec else None
        codex = stripped.startswith("OpenAI Codex v")
        if codex or header or tokens or result:
            if result and block is not None and not block.lines:  # old one-line form: "<command> succeeded in 5ms:"
                block.lines.append(stripped[:result.start()].strip())
            _flush(b, block)
            block = None
        if codex:
            b.add("system", no, time, output=stripped)
            banner = []
            session_line, session_done = no, False
        elif tokens:
            session_done = True
            _tokens_used(b, no, time, tokens.group(1))
        elif header:
            block = _Block(header[0], header[1], no, time)
            if stripped.startswith("exec "):
                block.lines.append(stripped[len("exec "):])
        elif result:
            block = _Block("tool_result", "shell", no, time)
            block.is_error = result.group(2) is not None and int(result.group(2)) != 0
        elif block is None:
            b.text_line(no, time, text)
        elif block.kind == "result":  # the number after "tokens used"
            if stripped:
                session_done = True
                _tokens_used(b, block.line, block.time, stripped)
                block = None
        else:
            block.lines.append(text)
        if len(steps) > 2 * b.window:  # (b.released() gives none before: most lines add no step)
            yield from b.released()  # between events: the steps that can no longer change
    if block is not None and block.kind == "result":
        session_done = True  # "tokens used" was the last line: its number is missing, not the session's end
    _flush(b, block)
    if session_line is not None and not session_done:
        b.incomplete(f"the session started at line {session_line} never printed tokens used")
    yield from b.finish()
    return b.trace


def _close_banner(b: TraceBuilder, banner: list[str]) -> None:
    """The banner's ``key: value`` lines become the input of its system step (the last step)."""
    b.trace.steps[-1].input = "\n".join(banner) or None


def _flush(b: TraceBuilder, block: _Block | None) -> None:
    """Write a finished block as a step (a ``tokens used`` block has already written its own)."""
    if block is not None and block.kind != "result":
        fields = {"input": block.text()} if block.kind == "tool_call" else {"output": block.text()}
        b.add(block.kind, block.line, block.time, tool=block.tool, is_error=block.is_error, **fields)
    return None


def _old_prefix(time: datetime | None, text: str) -> tuple[datetime | None, str, bool]:
    """Strip very old codex's own ``[YYYY-MM-DDTHH:MM:SS] `` prefix: ``(time, text, had_it)``; UTC assumed."""
    if not text.startswith("[") or not (m := _OLD_PREFIX.match(text)):
        return time, text, False
    try:
        year, month, day, hour, minute, second = map(int, m.groups())
        own = datetime(year, month, day, hour, minute, second, tzinfo=timezone.utc)
    except ValueError:
        return time, text, False
    return time or own, text[m.end():], True


def _tokens_used(b: TraceBuilder, line: int, time: datetime | None, number: str) -> None:
    """A ``tokens used`` count: a result step, added to the trace's ``tokens_total``."""
    b.add("result", line, time, output=number)
    b.trace.tokens_total = add_tokens(b.trace.tokens_total, _int(number))


def _int(number: str) -> int | None:
    digits = number.replace(",", "").replace("_", "")
    return ascii_int(digits)
