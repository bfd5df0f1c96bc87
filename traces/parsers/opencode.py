"""OpenCode ``run --format json`` traces (spec section 2.5).

Every event carries ``type``, ``timestamp`` (epoch milliseconds), ``sessionID`` and ``part`` (or ``error``).
Mapping to steps:

* ``text`` -> ``assistant`` (part.text); ``reasoning`` -> ``thinking``.
* ``tool_use`` (one event per finished call) -> ``tool_call`` (tool, input = ``state.input.command`` or the
  input as compact JSON, call_id = callID; time = ``state.time.start``) then ``tool_result`` (output =
  ``state.output``, else ``state.error``; is_error when status is ``error``; time = ``state.time.end``).
* ``step_finish`` -> ``system`` (output: reason) carrying that step's cost and tokens; run cost and tokens = sum
  over step_finish (``tokens_in = input + cache.read + cache.write``, ``tokens_out = output + reasoning``).
* ``error`` -> ``text`` with is_error (``error.data.message``, else ``error.name``).
* ``step_start`` is a marker without content: no step. Unknown events -> ``system`` with compact JSON.

Time: the line prefix, else the times inside the event (epoch ms).
"""
from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime
from typing import Any

from traces.steps import ParsedTrace

from ._builder import (TraceBuilder, add_tokens, as_text, compact, epoch_ms_time, int_or_none, json_events, tool_input,
                       usd)
from .framing import Line


def parse(lines: Iterable[Line], source: str) -> ParsedTrace:
    """Parse framed lines of an OpenCode JSON trace into a :class:`ParsedTrace` (spec 2.5).

    ``lines`` as produced by :func:`traces.parsers.framing.frame_lines`. Raises nothing.
    """
    b = TraceBuilder("opencode", source)
    for no, prefix_time, event in json_events(lines, b):
        time = prefix_time or epoch_ms_time(event.get("timestamp"))
        etype = event.get("type")
        part = event.get("part") if isinstance(event.get("part"), dict) else {}
        if etype in ("text", "reasoning"):
            b.add("assistant" if etype == "text" else "thinking", no, time, output=as_text(part.get("text")))
        elif etype == "tool_use":
            state = part.get("state") if isinstance(part.get("state"), dict) else {}
            times = state.get("time") if isinstance(state.get("time"), dict) else {}
            tool, call_id = part.get("tool"), part.get("callID")
            b.add("tool_call", no, prefix_time or epoch_ms_time(times.get("start")) or time, tool=tool,
                  input=tool_input(state.get("input")), call_id=call_id)
            b.add("tool_result", no, prefix_time or epoch_ms_time(times.get("end")) or time, tool=tool,
                  output=as_text(state.get("output")) or as_text(state.get("error")),
                  is_error=state.get("status") == "error", call_id=call_id)
        elif etype == "step_finish":
            _step_finish(b, no, time, part)
        elif etype == "error":
            error = event.get("error") if isinstance(event.get("error"), dict) else {}
            data = error.get("data") if isinstance(error.get("data"), dict) else {}
            b.add("text", no, time, output=as_text(data.get("message") or error.get("name")) or compact(event),
                  is_error=True)
        elif etype != "step_start":
            b.add("system", no, time, output=compact(event))
    return b.finish()


def _step_finish(b: TraceBuilder, no: int, time: datetime | None, part: dict[str, Any]) -> None:
    tokens = part.get("tokens") if isinstance(part.get("tokens"), dict) else {}
    cache = tokens.get("cache") if isinstance(tokens.get("cache"), dict) else {}
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
