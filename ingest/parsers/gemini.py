"""Gemini CLI ``--output-format stream-json`` traces, plus the older API-log shape (spec section 2.4).

Stream-json events to steps:

* ``init`` -> ``system`` (input: compact JSON of model and session_id); sets the trace's model.
* ``message`` -> ``assistant`` (role assistant) or ``text`` (role user); consecutive ``delta: true`` fragments of
  the same role form one step.
* ``tool_use`` -> ``tool_call`` (tool_name, input = ``parameters.command`` or parameters as compact JSON,
  call_id = tool_id); ``tool_result`` -> ``tool_result`` paired by tool_id (output, else the error message;
  is_error when status is not ``success``, or without status when an error is given).
* ``error`` -> ``text`` with is_error; ``result`` -> ``result`` (output: status; tokens of ``stats``); run
  totals from the last ``result``; a stream-json trace without one is ``incomplete``. Unknown events ->
  ``system`` with compact JSON, counted in ``unknown_events``.

API-log objects (``method`` + ``response``: a chunk or a list of chunks) -> per part: ``text`` -> ``assistant``
(``thinking`` when ``thought: true``), ``functionCall`` -> ``tool_call``, ``functionResponse`` ->
``tool_result``; a response's last ``usageMetadata`` is attributed to its first step and summed into the run
totals (``tokens_out = candidatesTokenCount + thoughtsTokenCount``).

Time: the line prefix, else the event's ISO ``timestamp``.
"""
from __future__ import annotations

from collections.abc import Generator, Iterable
from datetime import datetime
from typing import Any

from traces.steps import ParsedTrace, Step, StepKind

from ._builder import (Recent, TraceBuilder, add_tokens, as_list, as_text, compact, int_or_none, iso_time, json_events,
                       tool_input)
from .framing import Line


def parse(lines: Iterable[Line], source: str) -> Generator[Step, None, ParsedTrace]:
    """Parse framed lines of a Gemini CLI trace (spec 2.4): a generator of its steps, in order, that returns the
    :class:`ParsedTrace` (totals, problems; ``steps`` empty).

    ``lines`` as produced by :func:`ingest.parsers.framing.frame_lines`. Raises nothing.
    """
    b = TraceBuilder("gemini", source)
    tools: Recent[str, str] = Recent()  # tool_id -> tool_name
    last_stats: dict[str, Any] | None = None
    streaming = False  # a stream-json trace (not the API-log shape): it should end with a result event
    for no, time, event in json_events(lines, b):
        time = time or iso_time(event.get("timestamp"))
        etype = event.get("type")
        if etype == "message":
            kind: StepKind = "assistant" if event.get("role") == "assistant" else "text"
            if event.get("delta"):
                b.extend(("delta", event.get("role")), kind, no, time, as_text(event.get("content")))
            else:
                b.add(kind, no, time, output=as_text(event.get("content")))
        elif etype == "tool_use":
            call_id, name = event.get("tool_id"), event.get("tool_name")
            if isinstance(call_id, str) and isinstance(name, str):
                tools[call_id] = name
            b.add("tool_call", no, time, tool=name, input=tool_input(event.get("parameters")), call_id=call_id)
        elif etype == "tool_result":
            call_id, error = event.get("tool_id"), event.get("error")
            output = as_text(event.get("output")) or as_text(error.get("message") if isinstance(error, dict) else error)
            b.add("tool_result", no, time, tool=tools.get(call_id) if isinstance(call_id, str) else None,
                  output=output, is_error=_failed(event.get("status"), error), call_id=call_id)
        elif etype == "error":
            b.add("text", no, time, output=as_text(event.get("message")) or compact(event), is_error=True)
        elif etype == "result":
            stats = value if isinstance(value := event.get("stats"), dict) else {}
            last_stats = stats
            b.add("result", no, time, output=as_text(event.get("status")),
                  is_error=_failed(event.get("status"), event.get("error")),
                  tokens_in=int_or_none(stats.get("input_tokens")), tokens_out=int_or_none(stats.get("output_tokens")))
        elif etype == "init":
            if isinstance(event.get("model"), str):
                b.trace.model = event["model"]
            b.add("system", no, time, output="init",
                  input=compact({k: event[k] for k in ("model", "session_id") if k in event}))
        elif "response" in event and "method" in event:
            _api_response(b, no, time, event["response"])
        else:
            b.unknown(etype)
            b.add("system", no, time, output=compact(event))
        streaming = streaming or etype in ("init", "message", "tool_use", "tool_result")
        yield from b.released()  # between events: the steps that can no longer change
    if streaming and last_stats is None:
        b.incomplete("no final result event")
    yield from b.finish()
    trace = b.trace
    if last_stats is not None:
        trace.tokens_in = int_or_none(last_stats.get("input_tokens"))
        trace.tokens_out = int_or_none(last_stats.get("output_tokens"))
        trace.tokens_total = int_or_none(last_stats.get("total_tokens"))
    return trace


def _api_response(b: TraceBuilder, no: int, time: datetime | None, response: Any) -> None:
    """Steps of one API-log response (a chunk or a list of chunks); usage once per response."""
    chunks = response if isinstance(response, list) else [response]
    steps: list[Step] = []
    usage: dict[str, Any] | None = None
    for chunk in chunks:
        if not isinstance(chunk, dict):
            continue
        usage = value if isinstance(value := chunk.get("usageMetadata"), dict) else usage
        for candidate in as_list(chunk.get("candidates")):
            content = candidate.get("content") if isinstance(candidate, dict) else None
            for part in as_list(content.get("parts")) if isinstance(content, dict) else []:
                step = _api_part(b, no, time, part) if isinstance(part, dict) else None
                if step is not None:
                    steps.append(step)
    if usage is None:
        return
    tokens_in = int_or_none(usage.get("promptTokenCount"))
    tokens_out = add_tokens(int_or_none(usage.get("candidatesTokenCount")),
                            int_or_none(usage.get("thoughtsTokenCount")))
    if steps:
        steps[0].tokens_in, steps[0].tokens_out = tokens_in, tokens_out
    b.trace.tokens_in = add_tokens(b.trace.tokens_in, tokens_in)
    b.trace.tokens_out = add_tokens(b.trace.tokens_out, tokens_out)


def _api_part(b: TraceBuilder, no: int, time: datetime | None, part: dict[str, Any]) -> Step | None:
    if isinstance(part.get("text"), str):
        kind: StepKind = "thinking" if part.get("thought") else "assistant"
        return b.extend(("part", kind, no), kind, no, time, part["text"])
    if isinstance(part.get("functionCall"), dict):
        call = part["functionCall"]
        return b.add("tool_call", no, time, tool=call.get("name"), input=tool_input(call.get("args")),
                     call_id=call.get("id"))
    if isinstance(part.get("functionResponse"), dict):
        reply = part["functionResponse"]
        body = reply.get("response")
        output = body.get("output", body) if isinstance(body, dict) else body
        return b.add("tool_result", no, time, tool=reply.get("name"), output=as_text(output), call_id=reply.get("id"))
    return None  # inlineData, thoughtSignature: nothing to show


def _failed(status: Any, error: Any) -> bool:
    """A tool result or run failed: a status other than ``success``, or no status but an error."""
    return status != "success" if status is not None else bool(error)
