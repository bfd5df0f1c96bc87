"""OpenCode ``run --format json`` traces (spec section 2.5).

Every event carries ``type``, ``timestamp`` (epoch milliseconds), ``sessionID`` and ``part`` (or ``error``).
Mapping to steps:

* ``text`` -> ``assistant`` (part.text); ``reasoning`` -> ``thinking``. OpenCode can emit the same part again
  as it grows (same ``part.id``): one step per part id, updated in place, the last snapshot wins.
* ``tool_use`` -> ``tool_call`` (tool, input = ``state.input.command`` or the input as compact JSON, call_id =
  callID; time = ``state.time.start``) and, once the status is ``completed`` or ``error``, ``tool_result``
  (output = ``state.output``, else ``state.error``; is_error when status is ``error``; time =
  ``state.time.end``; no result while the status is ``pending`` or ``running``). One tool call per call id
  (else part id): a call re-emitted (pending, running, completed) updates its steps.
* ``step_finish`` -> ``system`` (output: reason) carrying that step's cost and tokens; run cost and tokens = sum
  over step_finish (``tokens_in = input + cache.read + cache.write``, ``tokens_out = output + reasoning``).
  A ``step_start`` with no ``step_finish`` before the next ``step_start`` is a problem at its line; at the end
  of the trace it makes the trace ``incomplete``.
* Compaction (anomalyco/opencode issues 42238, 13838: ``run --format json`` emits the compaction's internals as
  ordinary ``text`` events): a ``compaction`` event or part is a ``system`` step labelled ``compaction``; the
  injected prompts (``What did we do so far?``, ``Continue if you have next steps, ...``, or any part marked
  ``synthetic``) are ``text`` steps labelled ``compaction prompt`` (``synthetic prompt`` for other synthetic
  parts); the text that follows a compaction marker or its prompt until the step finishes (or a part marked
  ``summary`` / of a message in mode ``compaction``) is a ``system`` step labelled ``compaction summary``: none
  of them is an agent message.
* ``error`` -> ``text`` with is_error (``error.data.message``, else ``error.name``).
* ``step_start`` is a marker without content: no step. Unknown events -> ``system`` with compact JSON, counted
  in ``unknown_events``.

Time: the line prefix, else the times inside the event (epoch ms).
"""
from __future__ import annotations

from collections.abc import Generator, Iterable
from datetime import datetime
from typing import Any

from traces.steps import ParsedTrace, Step, StepKind

from ._builder import (TraceBuilder, add_tokens, as_text, compact, epoch_ms_time, int_or_none, json_events, tool_input,
                       usd)
from .framing import Line

COMPACTION_PROMPT = "What did we do so far?"
CONTINUE_PROMPT = "Continue if you have next steps, or stop and ask for clarification if you are unsure how to proceed."
_UNFINISHED = ("pending", "running")


def _dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def parse(lines: Iterable[Line], source: str) -> Generator[Step, None, ParsedTrace]:
    """Parse framed lines of an OpenCode JSON trace (spec 2.5): a generator of its steps, in order, that returns
    the :class:`ParsedTrace` (totals, problems; ``steps`` empty). A part's step is held until its step finishes,
    a call's until it has its result, as a later snapshot changes them.

    ``lines`` as produced by :func:`ingest.parsers.framing.frame_lines`. Raises nothing.
    """
    b = TraceBuilder("opencode", source)
    parts: dict[str, Step] = {}  # part id -> its text / thinking step
    calls: dict[str, tuple[Step, Step | None]] = {}  # call id -> (tool_call, tool_result)
    open_step: int | None = None  # line of a step_start without its step_finish
    compacting = False  # inside a compaction: text is its summary, not the agent's
    for no, prefix_time, event in json_events(lines, b):
        time = prefix_time or epoch_ms_time(event.get("timestamp"))
        etype = event.get("type")
        part = _dict(event.get("part"))
        if etype == "compaction" or part.get("type") == "compaction":
            compacting = True
            b.add("system", no, time, label="compaction",
                  output="context compacted" + (" (auto)" if part.get("auto") or event.get("auto") else ""),
                  input=compact(part or event))
        elif etype in ("text", "reasoning"):
            compacting = _text_part(b, no, time, etype, part, parts, compacting)
        elif etype == "tool_use":
            _tool_use(b, no, time, prefix_time, part, calls)
        elif etype == "step_start":
            if open_step is not None:
                b.problem(open_step, "this step has no step_finish (the next step started at line "
                                     f"{no})")
            open_step = no
        elif etype == "step_finish":
            open_step = None
            compacting = False
            b.settle(*parts.values())
            _forget_released(b, parts, calls)
            _step_finish(b, no, time, part)
        elif etype == "error":
            error = _dict(event.get("error"))
            data = _dict(error.get("data"))
            b.add("text", no, time, output=as_text(data.get("message") or error.get("name")) or compact(event),
                  is_error=True)
        else:
            b.unknown(etype)
            b.add("system", no, time, output=compact(event))
        yield from b.released()  # between events: the steps that can no longer change
    if open_step is not None:
        b.problem(open_step, "the last step has no step_finish")
        b.incomplete(f"the last step (line {open_step}) has no step_finish")
    yield from b.finish()
    return b.trace


def _forget_released(b: TraceBuilder, parts: dict[str, Step], calls: dict[str, tuple[Step, Step | None]]) -> None:
    """Drop the parts and finished calls whose steps were released (memory stays bounded by the steps held): a
    later snapshot of one is then a new part or call."""
    for key in [key for key, step in parts.items() if step.index < b.flushed]:
        del parts[key]
    for key in [key for key, (call, result) in calls.items()
                if result is not None and call.index < b.flushed and result.index < b.flushed]:
        del calls[key]


def _text_part(b: TraceBuilder, no: int, time: datetime | None, etype: str, part: dict[str, Any],
               parts: dict[str, Step], compacting: bool) -> bool:
    """Add or update the step of a text / reasoning part; returns whether a compaction is still under way."""
    text = as_text(part.get("text"))
    kind: StepKind = "assistant" if etype == "text" else "thinking"
    label: str | None = None
    stripped = text.strip()
    if stripped in (COMPACTION_PROMPT, CONTINUE_PROMPT):
        kind, label = "text", "compaction prompt"
        compacting = stripped == COMPACTION_PROMPT
    elif part.get("synthetic") is True:
        kind, label = "text", "synthetic prompt"
    elif compacting or part.get("summary") is True or part.get("mode") == "compaction" \
            or part.get("agent") == "compaction":
        kind, label = "system", "compaction summary"
    part_id = part.get("id")
    known = parts.get(part_id) if isinstance(part_id, str) else None
    if known is not None:
        b.update(known, output=text, label=label, kind=kind)
    else:
        step = b.add(kind, no, time, output=text, label=label)
        if isinstance(part_id, str):
            parts[part_id] = step
            b.hold(step)
    return compacting


def _tool_use(b: TraceBuilder, no: int, time: datetime | None, prefix_time: datetime | None, part: dict[str, Any],
              calls: dict[str, tuple[Step, Step | None]]) -> None:
    """Add or update the tool_call (and, once finished, tool_result) of one call id."""
    state = _dict(part.get("state"))
    times = _dict(state.get("time"))
    tool, call_id = part.get("tool"), part.get("callID")
    key = call_id if isinstance(call_id, str) else part.get("id") if isinstance(part.get("id"), str) else None
    call_fields = {"tool": tool, "input": tool_input(state.get("input")), "call_id": call_id}
    known_call, known_result = calls.get(key, (None, None)) if key is not None else (None, None)
    if known_call is None:
        known_call = b.add("tool_call", no, prefix_time or epoch_ms_time(times.get("start")) or time, **call_fields)
    else:
        b.update(known_call, **{k: v for k, v in call_fields.items() if v is not None})
    if state.get("status") not in _UNFINISHED:
        result_fields = {"tool": tool, "output": as_text(state.get("output")) or as_text(state.get("error")),
                         "is_error": state.get("status") == "error", "call_id": call_id}
        if known_result is None:
            known_result = b.add("tool_result", no, prefix_time or epoch_ms_time(times.get("end")) or time,
                                 **result_fields)
        else:
            b.update(known_result, **result_fields)
    if key is not None:
        calls[key] = (known_call, known_result)
        (b.hold if known_result is None else b.settle)(known_call, known_result)


def _step_finish(b: TraceBuilder, no: int, time: datetime | None, part: dict[str, Any]) -> None:
    tokens = _dict(part.get("tokens"))
    cache = _dict(tokens.get("cache"))
    tokens_in = None
    for value in (tokens.get("input"), cache.get("read"), cache.get("write")):
        tokens_in = add_tokens(tokens_in, int_or_none(value))
    tokens_out = add_tokens(int_or_none(tokens.get("output")), int_or_none(tokens.get("reasoning")))
    cost_usd = usd(part.get("cost"))
    b.add("system", no, time, output=as_text(part.get("reason")), tokens_in=tokens_in, tokens_out=tokens_out,
          cost_usd=cost_usd)
    trace = b.trace
    trace.tokens_in = add_tokens(trace.tokens_in, tokens_in)
    trace.tokens_out = add_tokens(trace.tokens_out, tokens_out)
    if cost_usd is not None:
        trace.cost_usd = cost_usd if trace.cost_usd is None else trace.cost_usd + cost_usd
