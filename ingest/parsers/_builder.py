"""Shared machinery of the format modules: building numbered steps, JSON lines, rendering helpers.

Conventions every format module follows (spec section 2):

* A line that does not start with ``{`` is plain text (CUDA checks, CLI stderr, wrapper echoes): consecutive such
  lines become ONE ``text`` step (joined with ``"\\n"``; ``line``/``time`` of the first); a blank line ends the
  run and is not a step.
* A line that starts with ``{`` but is not valid JSON is a :class:`ParseProblem` and its own ``text`` step; the
  rest of the trace still parses. Valid JSON that is not an object is plain text. A line nested deeper than
  ``ptbsite.jsontext.MAX_JSON_DEPTH`` is not parsed: a problem, and kept as a ``text`` step.
* A line split by an event written into its middle (Claude Code writes a ``rate_limit_event`` asynchronously:
  ``{A-first-half{B}\n A-second-half}``, anthropics/claude-code issue 49640) gives back both events: the
  injected one B, and A rejoined from its halves; both halves are reported as problems with their line numbers.
  When the halves do not rejoin, each half is a problem and a ``text`` step.
* ``tokens_in`` counts every prompt token the model read, cached or not; ``tokens_out`` every generated token,
  reasoning included.
"""
from __future__ import annotations

import json
import shlex
from collections.abc import Hashable, Iterable, Iterator
from datetime import datetime, timezone
from typing import Any, TypeVar

from traces.steps import ParsedTrace, ParseProblem, Step, StepKind

from ptbsite.jsontext import TooDeep, loads

from .framing import Line

STREAM_WINDOW = 128  # steps a TraceBuilder holds back (an event may still change them)
MAX_HELD = 16384  # steps a TraceBuilder holds at most while an event may still change the oldest (then released)
RECENT = 1024  # keys a format module remembers (call ids -> tool names, message ids -> usage): the last set
MAX_INJECTED_TRIES = 64  # candidate start columns tried when looking for an event written into a broken line


K = TypeVar("K")
V = TypeVar("V")


class Recent(dict[K, V]):
    """A dict of the last ``limit`` (:data:`RECENT`) keys set, what a format module remembers of earlier events
    (a call's tool name for its result, a message's first step for its usage): setting one more drops the key set
    longest ago, so memory stays bounded whatever the trace's length. An event that refers to a key dropped so
    (more than ``limit`` keys later) finds nothing, as if it were the first."""

    def __init__(self, limit: int = RECENT) -> None:
        super().__init__()
        self.limit = limit

    def put(self, key: K, value: V) -> tuple[K, V] | None:
        """Set ``key`` (now the most recent); returns the ``(key, value)`` dropped, if one was."""
        self.pop(key, None)
        super().__setitem__(key, value)
        if len(self) > self.limit:
            oldest = next(iter(self))
            return oldest, self.pop(oldest)
        return None

    def __setitem__(self, key: K, value: V) -> None:
        self.put(key, value)


class TraceBuilder:
    """Appends consecutively indexed steps to a :class:`ParsedTrace`, merging runs (text lines, deltas), and hands
    them out as a stream: every format module is a generator of steps (``ingest.parsers.stream_trace``).

    Between events the format module yields :meth:`released`: the steps more than ``window``
    (:data:`STREAM_WINDOW`) steps old, in order, dropped from ``trace.steps``, which holds the last steps only
    (:meth:`step_at` finds a step by index while it is held; :attr:`count` counts them all); :meth:`finish` gives
    the rest. A step an event may still change (a codex item not completed, an OpenCode part or call still
    growing) is :meth:`hold`-ed until :meth:`settle`: no step from it on is released, unless :data:`MAX_HELD` steps
    are held (memory stays bounded; a later change to a step released so is a problem, not applied). A usage that
    comes after its step was released is kept in ``trace.late_usage`` (:meth:`late_usage`).
    """

    def __init__(self, fmt: str, source: str, window: int | None = None) -> None:
        self.trace = ParsedTrace(format=fmt)
        self.source = source
        self.window = max(1, STREAM_WINDOW if window is None else window)
        self.flushed = 0
        self._open: set[int] = set()  # indexes of held steps an event may still change
        self._run_key: Hashable | None = None
        self._run_step: Step | None = None
        self._run_parts: list[str] = []
        self._run_sep = ""

    def add(self, kind: StepKind, line: int | None, time: datetime | None, **fields: Any) -> Step:
        """Close any open run and append one step; ``fields`` are :class:`Step` fields (``tool`` and ``call_id``
        taken from the event as they are: anything but a string or a number becomes None)."""
        self.close_run()
        step = Step(index=self.flushed + len(self.trace.steps), kind=kind, time=time, line=line, **_labels(fields))
        self.trace.steps.append(step)
        return step

    def extend(self, key: Hashable, kind: StepKind, line: int | None, time: datetime | None, chunk: str,
               sep: str = "", **fields: Any) -> Step:
        """Append ``chunk`` to the open run with the same ``key``, else start a new run step of ``kind`` with
        ``fields`` (later chunks only add text). Used for deltas (``sep=""``) and plain-text lines (``"\n"``)."""
        if self._run_key != key or self._run_step is None:
            step = self.add(kind, line, time, **fields)
            self._run_key, self._run_step, self._run_parts, self._run_sep = key, step, [chunk], sep
        else:
            self._run_parts.append(chunk)
        return self._run_step

    def update(self, step: Step, **fields: Any) -> None:
        """Overwrite fields of an earlier step with a newer version of its event (same rules as :meth:`add`). A step
        released already (held past :data:`MAX_HELD`) is not changed: a problem at its line says so."""
        if step.index < self.flushed:
            self.problem(step.line or 0, f"a later version of this event came after its step {step.index} was "
                                         f"handed on ({MAX_HELD} steps held at most): not applied")
            return
        for name, value in _labels(fields).items():
            setattr(step, name, value)

    def hold(self, *steps: Step | None) -> None:
        """Keep ``steps`` (and every step after them) from being released: an event may still change them."""
        self._open.update(s.index for s in steps if s is not None and s.index >= self.flushed)

    def settle(self, *steps: Step | None) -> None:
        """``steps`` will not change any more (:meth:`hold`)."""
        self._open.difference_update(s.index for s in steps if s is not None)

    @property
    def run_key(self) -> Hashable | None:
        """Key of the run still open (the last step is that run), else None."""
        return self._run_key

    def close_run(self) -> None:
        """Write the open run's joined text into its step's ``output``."""
        if self._run_step is not None:
            self._run_step.output = self._run_sep.join(self._run_parts)
        self._run_key, self._run_step, self._run_parts = None, None, []

    def replace_run(self, text: str) -> None:
        """Close the open run with ``text`` as its whole output (a full message after its own deltas)."""
        self._run_parts, self._run_sep = [text], ""
        self.close_run()

    def text_line(self, line: int, time: datetime | None, text: str) -> None:
        """A plain-text line: extends the open text run; a blank line closes it."""
        if text.strip():
            self.extend("text", "text", line, time, text, sep="\n")
        elif self._run_key == "text":
            self.close_run()

    def problem(self, line: int, message: str) -> None:
        """Record a :class:`ParseProblem` at ``line`` of this source."""
        self.trace.problems.append(ParseProblem(self.source, line, message))

    def unknown(self, name: Any) -> None:
        """Count one event (or item) of a type this format has no rendering for (``ParsedTrace.unknown_events``)."""
        key = name if isinstance(name, str) else "(no type)" if name is None else compact(name)[:80]
        self.trace.unknown_events[key] = self.trace.unknown_events.get(key, 0) + 1

    def incomplete(self, reason: str) -> None:
        """Mark the trace incomplete (``ParsedTrace.incomplete``); the first reason given is kept."""
        if self.trace.incomplete is None:
            self.trace.incomplete = reason

    @property
    def count(self) -> int:
        """Steps added so far, released or not."""
        return self.flushed + len(self.trace.steps)

    def released(self) -> list[Step]:
        """Between two events: the steps older than ``window`` (none before the first held one, unless
        :data:`MAX_HELD` are held), in order, dropped from ``trace.steps``; the format module yields them."""
        steps = self.trace.steps
        if len(steps) <= 2 * self.window:
            return []
        n = len(steps) - self.window
        if self._open and len(steps) <= MAX_HELD:
            n = min(n, min(self._open) - self.flushed)
        if n <= 0:
            return []
        old = steps[:n]
        del steps[:n]
        self.flushed += n
        if self._open and min(self._open) < self.flushed:
            self._open = {i for i in self._open if i >= self.flushed}
        return old

    def step_at(self, index: int) -> Step | None:
        """The step ``index`` while it is held, else None (released)."""
        i = index - self.flushed
        return self.trace.steps[i] if 0 <= i < len(self.trace.steps) else None

    def late_usage(self, index: int, tokens: tuple[int | None, int | None]) -> None:
        """Set a step's ``(tokens_in, tokens_out)``; for a step already released, the change is kept in
        ``trace.late_usage`` for the caller to apply to what it stored."""
        step = self.step_at(index)
        if step is None:
            self.trace.late_usage[index] = tokens
        else:
            step.tokens_in, step.tokens_out = tokens

    def finish(self) -> list[Step]:
        """Close the open run; the steps still held, in order (``trace.steps`` is then empty). The format module
        yields them and returns :attr:`trace`."""
        self.close_run()
        steps, self.trace.steps = self.trace.steps, []
        self.flushed += len(steps)
        self._open.clear()
        return steps


def _labels(fields: dict[str, Any]) -> dict[str, Any]:
    """``fields`` with ``tool``/``call_id`` made ``str | None`` (event content is untrusted in shape too)."""
    for name in ("tool", "call_id"):
        value = fields.get(name)
        if value is not None and not isinstance(value, str):
            is_number = isinstance(value, (int, float)) and not isinstance(value, bool)
            fields[name] = str(value) if is_number else None
    return fields


def json_events(lines: Iterable[Line], b: TraceBuilder) -> Iterator[tuple[int, datetime | None, dict[str, Any]]]:
    """Yield ``(line_no, time, event)`` for each JSON-object line; other lines go to ``b`` as text or problems.
    The format module yields ``b.released()`` between events.

    Broken lines are repaired where the damage has a known shape (module docstring): an event injected into the
    middle of another, or an event broken over two lines; what cannot be repaired is a problem and a text step.
    """
    it = iter(lines)
    peeked: Line | None = None
    while True:
        if peeked is not None:
            no, time, text = peeked
            peeked = None
        else:
            try:
                no, time, text = next(it)
            except StopIteration:
                return
        if text[:1] != "{":
            stripped = text.lstrip()
            if stripped[:1] != "{":
                b.text_line(no, time, text)
                continue
            text = stripped
        try:
            event = loads(text)
        except TooDeep as exc:
            b.problem(no, f"{exc}: kept as text")
            b.add("text", no, time, output=text)
            continue
        except ValueError as exc:
            following = next(it, None)
            recovered, consumed = _repair(b, no, time, text, exc, following)
            if not consumed:
                peeked = following
            yield from recovered
            continue
        if isinstance(event, dict):
            yield no, time, event
        else:
            b.text_line(no, time, text)


def _object(text: str) -> dict[str, Any] | None:
    """``text`` as a JSON object, else None (invalid, too deep, or not an object)."""
    try:
        value = loads(text)
    except ValueError:
        return None
    return value if isinstance(value, dict) else None


def _repair(b: TraceBuilder, no: int, time: datetime | None, text: str, exc: ValueError, following: Line | None
            ) -> tuple[list[tuple[int, datetime | None, dict[str, Any]]], bool]:
    """Events recovered from broken line ``no`` (and maybe the line after it), and whether that next line was
    used. Problems and text steps for whatever is not recovered."""
    injected_at, injected = 0, None
    start = 1
    for _ in range(MAX_INJECTED_TRIES):
        start = text.find('{"', start)
        if start < 0:
            break
        injected = _object(text[start:])
        if injected is not None:
            injected_at = start
            break
        start += 1
    head = text[:injected_at] if injected is not None else text
    # without a following line, nxt_no is never read (tail_like and rejoined need one)
    nxt_no, nxt_time, nxt_text = following if following is not None else (no, None, "")
    tail_like = following is not None and not nxt_text.lstrip().startswith("{") and nxt_text.rstrip().endswith("}")
    rejoined = _object(head + nxt_text) if following is not None and not nxt_text.lstrip().startswith("{") else None
    if injected is not None:
        if rejoined is not None:
            b.problem(no, f"an event was written into the middle of this line's event (column {injected_at + 1}); "
                          f"the injected event is kept and the split event rejoined with line {nxt_no}")
            b.problem(nxt_no, f"second half of the event split at line {no}: rejoined")
            return [(no, time, rejoined), (no, time, injected)], True
        b.problem(no, f"first half of an event split by an event written into it at column {injected_at + 1}: "
                      "kept as text; the injected event is kept")
        b.add("text", no, time, output=head)
        if tail_like:
            b.problem(nxt_no, f"second half of the event split at line {no}: kept as text")
            b.add("text", nxt_no, nxt_time, output=nxt_text)
            return [(no, time, injected)], True
        return [(no, time, injected)], False
    if rejoined is not None:
        b.problem(no, f"an event broken over lines {no}-{nxt_no}: rejoined")
        b.problem(nxt_no, f"second half of the event broken at line {no}: rejoined")
        return [(no, time, rejoined)], True
    b.problem(no, f"broken JSON line: {exc}")
    b.add("text", no, time, output=text)
    if tail_like:
        b.problem(nxt_no, f"looks like the rest of the broken event on line {no}: kept as text")
        b.add("text", nxt_no, nxt_time, output=nxt_text)
        return [], True
    return [], False


def as_list(value: Any) -> list[Any]:
    """``value`` if it is a list, ``[]`` for None, else ``[value]`` (a single block where a list was expected)."""
    if isinstance(value, list):
        return value
    return [] if value is None else [value]


def compact(value: Any) -> str:
    """Compact JSON of ``value`` (no spaces, non-ASCII kept) for generic renderings."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=str)


def tool_input(args: Any) -> str | None:
    """A tool call's input: the shell command when ``args`` carries one, else ``args`` as compact JSON.

    ``args`` is a dict (``{"command": "ls"}``), an argv list (quoted with ``shlex.join``, never run), a string,
    or None.
    """
    if args is None:
        return None
    if isinstance(args, str):
        return args
    if isinstance(args, dict) and isinstance(args.get("command"), (str, list)):
        args = args["command"]
    if isinstance(args, list) and all(isinstance(a, str) for a in args):
        return shlex.join(args)
    if isinstance(args, str):
        return args
    return compact(args)


def as_text(value: Any) -> str:
    """Tool output as text: strings as is, ``[{type: text, text}]`` blocks joined, images as ``[image]``, a
    ``tool_reference`` block (ToolSearch's result) as ``tool loaded: <tool_name>``; other blocks as compact JSON."""
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    if isinstance(value, list):
        parts = []
        for block in value:
            if isinstance(block, dict) and block.get("type") == "text":
                parts.append(str(block.get("text", "")))
            elif isinstance(block, dict) and block.get("type") == "image":
                parts.append("[image]")
            elif isinstance(block, dict) and block.get("type") == "tool_reference":
                # a ToolSearch result names the tools it loaded (Anthropic's ToolReferenceBlock: {type, tool_name})
                parts.append(f"tool loaded: {block.get('tool_name') or '(unnamed)'}")
            else:
                parts.append(block if isinstance(block, str) else compact(block))
        return "\n".join(parts)
    return compact(value)


def iso_time(value: Any) -> datetime | None:
    """An ISO-8601 timestamp (``2026-04-05T10:00:00.123Z``) as an aware UTC datetime, else None."""
    if not isinstance(value, str) or not value:
        return None
    try:
        time = datetime.fromisoformat(value.replace("Z", "+00:00") if value.endswith("Z") else value)
    except ValueError:
        return None
    return time.replace(tzinfo=timezone.utc) if time.tzinfo is None else time.astimezone(timezone.utc)


def epoch_ms_time(value: Any) -> datetime | None:
    """Epoch milliseconds (int or float) as an aware UTC datetime, else None."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    try:
        return datetime.fromtimestamp(value / 1000, tz=timezone.utc)
    except (OverflowError, OSError, ValueError):
        return None


def int_or_none(value: Any) -> int | None:
    """``value`` when it is an int (not a bool), else None."""
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def usd(value: Any) -> float | None:
    """A cost in US dollars as float when ``value`` is a number (not a bool), else None."""
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def add_tokens(total: int | None, value: int | None) -> int | None:
    """Sum where either side may be unknown (None + None = None)."""
    if value is None:
        return total
    return value if total is None else total + value
