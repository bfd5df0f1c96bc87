"""Claude Code ``--output-format stream-json`` traces (spec section 2.2).

Agents ``claude``, ``claude_non_api*``, ``glm5``, ``qwen3max``. Mapping of events to steps:

* ``system`` ``init`` -> ``system`` (input: compact JSON of model, cwd, permissionMode, apiKeySource,
  claude_code_version, session_id; output ``"init"``); sets the trace's ``model``.
* ``assistant`` content blocks -> ``assistant`` (text), ``thinking`` (thinking text, often ""), ``tool_call``
  (tool name, input = Bash command or arguments as compact JSON, call_id = ``toolu_...``; a call with a
  ``command`` (Bash, Monitor, ...) keeps the rest of its input in the ``label``: its ``description`` and its
  settings, e.g. ``list files · timeout: 600000; run_in_background: true``). One API message is
  split over several lines repeating ``message.id`` and ``usage``: usage is attributed once, to the first step
  of that message (the latest line's usage wins).
* ``user`` content -> ``tool_result`` (paired to its tool_call by ``tool_use_id``; tool name from the call) or
  ``text`` (injected user text). Time from ``timestamp`` when the line has no prefix.
* ``result`` -> ``result`` (output: the final text, "" when it has none; label: the subtype, e.g. ``success``,
  ``error_max_turns``; is_error; cost and usage). Run totals come from
  the LAST result event; without any, tokens are summed over messages and cost is unknown, and the trace is
  ``incomplete`` ("no final result event").
* Typed events -> ``system`` steps with a ``label`` and a readable output (input: the event as compact JSON):
  ``rate_limit_event`` (label ``rate limit``: status, limit type, reset time), and the ``system`` subtypes
  ``api_retry`` (``api retry``: attempt of max, delay, error), ``task_started`` / ``task_progress`` /
  ``task_updated`` / ``task_notification`` (background tasks: ``task started`` ..., with task id, description,
  status, summary), ``compact_boundary`` (``compaction``: trigger, tokens before), ``status``, ``hook_started`` /
  ``hook_response``.
* Anything else (unknown event types, other ``system`` subtypes, unknown content blocks) -> ``system`` with the
  event as compact JSON, counted in ``unknown_events``.

Usage: ``tokens_in = input_tokens + cache_creation_input_tokens + cache_read_input_tokens``,
``tokens_out = output_tokens``.
"""
from __future__ import annotations

from collections.abc import Generator, Iterable
from datetime import datetime
from typing import Any

from traces.steps import ParsedTrace, Step

from ._builder import (Recent, TraceBuilder, add_tokens, as_list, as_text, compact, epoch_ms_time, int_or_none,
                       iso_time, json_events, tool_input, usd)
from .framing import Line

_INIT_KEYS = ("model", "cwd", "permissionMode", "apiKeySource", "claude_code_version", "session_id")
# system subtype -> (label, keys shown in the readable output, in order)
_SYSTEM_TYPES: dict[str, tuple[str, tuple[str, ...]]] = {
    "api_retry": ("api retry", ("attempt", "max_retries", "retry_delay_ms", "error_status", "error")),
    "task_started": ("task started", ("task_id", "task_type", "description", "tool_use_id")),
    "task_progress": ("task progress", ("task_id", "description", "last_tool_name")),
    "task_updated": ("task updated", ("task_id", "status", "description", "patch")),
    "task_notification": ("task notification", ("task_id", "status", "summary", "output_file")),
    "compact_boundary": ("compaction", ("compact_metadata",)),
    "status": ("status", ("status",)),
    "hook_started": ("hook", ("hook_name", "hook_event")),
    "hook_response": ("hook", ("hook_name", "hook_event", "exit_code", "outcome")),
}
_RATE_LIMIT_KEYS = ("status", "rateLimitType", "utilization", "resetsAt", "isUsingOverage", "overageStatus")


def usage_tokens(usage: Any) -> tuple[int | None, int | None]:
    """``(tokens_in, tokens_out)`` in tokens of an Anthropic ``usage`` object (spec 2.2): input counts
    ``input_tokens`` + cache writes + cache reads; a missing field is skipped, all missing gives None. Raises
    nothing."""
    if not isinstance(usage, dict):
        return None, None
    parts = [int_or_none(usage.get(k)) for k in
             ("input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens")]
    known = [p for p in parts if p is not None]
    return (sum(known) if known else None), int_or_none(usage.get("output_tokens"))


def parse(lines: Iterable[Line], source: str) -> Generator[Step, None, ParsedTrace]:
    """Parse framed lines of a Claude Code stream-json trace (spec 2.2): a generator of its steps, in order, that
    returns the :class:`ParsedTrace` (totals, problems; ``steps`` empty).

    ``lines`` as produced by :func:`ingest.parsers.framing.frame_lines`; ``source`` names the file in
    problems. At most a window of recent steps is held (``TraceBuilder``); a message's usage set on a step
    already yielded is in ``late_usage``. Raises nothing: broken lines become problems plus text steps.
    """
    b = TraceBuilder("claude_code", source)
    first_step_of: Recent[str, int] = Recent()  # message.id -> index of the step carrying that message's usage
    usage_of = _Usage()  # message.id -> its (last) usage
    tool_names: Recent[str, str] = Recent()
    last_result: dict[str, Any] | None = None
    for no, time, event in json_events(lines, b):
        kind = event.get("type")
        message = event.get("message")
        if kind == "assistant" and isinstance(message, dict):
            _assistant(b, no, time, message, first_step_of, usage_of, tool_names)
        elif kind == "user" and isinstance(message, dict):
            _user(b, no, time or iso_time(event.get("timestamp")), message, tool_names)
        elif kind == "result":
            last_result = event
            tokens_in, tokens_out = usage_tokens(event.get("usage"))
            subtype = event.get("subtype")
            b.add("result", no, time, output=as_text(event.get("result")),
                  label=subtype if isinstance(subtype, str) and subtype else None,
                  is_error=bool(event.get("is_error")), tokens_in=tokens_in, tokens_out=tokens_out,
                  cost_usd=usd(event.get("total_cost_usd")))
        elif kind == "system" and event.get("subtype") == "init":
            b.trace.model = event.get("model") if isinstance(event.get("model"), str) else None
            b.add("system", no, time, output="init",
                  input=compact({k: event[k] for k in _INIT_KEYS if k in event}))
        elif kind == "system" and isinstance(event.get("subtype"), str) and event["subtype"] in _SYSTEM_TYPES:
            label, keys = _SYSTEM_TYPES[event["subtype"]]
            b.add("system", no, time, label=label, output=_summary(event, keys) or label, input=compact(event))
        elif kind == "rate_limit_event":
            info = value if isinstance(value := event.get("rate_limit_info"), dict) else {}
            b.add("system", no, time, label="rate limit", output=_summary(info, _RATE_LIMIT_KEYS) or "rate limit",
                  input=compact(event))
        else:
            b.unknown(f"system {event.get('subtype')}" if kind == "system" else kind)
            b.add("system", no, time, output=compact(event))
        yield from b.released()  # between events: the steps that can no longer change
    if last_result is None and b.count:
        b.incomplete("no final result event")
    yield from b.finish()
    trace = b.trace
    if last_result is not None:
        trace.tokens_in, trace.tokens_out = usage_tokens(last_result.get("usage"))
        trace.cost_usd = usd(last_result.get("total_cost_usd"))
    else:
        trace.tokens_in = add_tokens(usage_of.dropped_in, _sum(t[0] for t in usage_of.values()))
        trace.tokens_out = add_tokens(usage_of.dropped_out, _sum(t[1] for t in usage_of.values()))
    return trace


def _assistant(b: TraceBuilder, no: int, time: datetime | None, message: dict[str, Any],
               first_step_of: Recent[str, int], usage_of: _Usage, tool_names: Recent[str, str]) -> None:
    content = message.get("content")
    blocks = [{"type": "text", "text": content}] if isinstance(content, str) else as_list(content)
    steps: list[Step] = []
    for block in blocks:
        btype = block.get("type") if isinstance(block, dict) else None
        if btype == "text":
            steps.append(b.add("assistant", no, time, output=as_text(block.get("text"))))
        elif btype == "thinking":
            steps.append(b.add("thinking", no, time, output=as_text(block.get("thinking"))))
        elif btype == "tool_use":
            call_id, name = block.get("id"), block.get("name")
            if isinstance(call_id, str) and isinstance(name, str):
                tool_names[call_id] = name
            steps.append(b.add("tool_call", no, time, tool=name, input=tool_input(block.get("input")),
                               call_id=call_id, label=call_label(block.get("input"))))
        else:
            b.unknown(f"assistant block {block.get('type') if isinstance(block, dict) else type(block).__name__}")
            steps.append(b.add("system", no, time, output=compact(block)))
    msg_id = message.get("id")
    if "usage" not in message or not steps:
        return
    tokens = usage_tokens(message["usage"])
    if isinstance(msg_id, str):
        usage_of.record(msg_id, tokens)
        first = first_step_of.get(msg_id)
        if first is None:
            first = first_step_of[msg_id] = steps[0].index
        b.late_usage(first, tokens)
    else:
        steps[0].tokens_in, steps[0].tokens_out = tokens


def _user(b: TraceBuilder, no: int, time: datetime | None, message: dict[str, Any],
          tool_names: Recent[str, str]) -> None:
    content = message.get("content")
    if isinstance(content, str):
        b.add("text", no, time, output=content)
        return
    for block in as_list(content):
        if isinstance(block, dict) and block.get("type") == "tool_result":
            call_id = block.get("tool_use_id")
            b.add("tool_result", no, time, tool=tool_names.get(call_id) if isinstance(call_id, str) else None,
                  output=as_text(block.get("content")), is_error=bool(block.get("is_error")), call_id=call_id)
        elif isinstance(block, dict) and block.get("type") == "text":
            b.add("text", no, time, output=as_text(block.get("text")))
        else:
            b.unknown(f"user block {block.get('type') if isinstance(block, dict) else type(block).__name__}")
            b.add("system", no, time, output=compact(block))


# Keys of a tool call's input that are not the agent's description or settings of the call.
_NOT_SETTINGS = ("command", "description", "caller")


def call_label(args: Any) -> str | None:
    """The label of a tool call whose input is reduced to its ``command`` (``_builder.tool_input``): what the
    rest of the input says, so nothing the agent wrote is lost: the ``description`` (Claude Code's Bash writes
    one with every call, spec 2.2), then `` · `` and the call's settings as ``key: value`` pairs (``timeout``,
    ``run_in_background``, Monitor's ``timeout_ms`` and ``persistent``, ...; values as compact JSON). None for an
    input without a command (its whole JSON is the step's input) or with nothing besides it. Raises nothing."""
    if not isinstance(args, dict) or not isinstance(args.get("command"), (str, list)):
        return None
    description = args.get("description")
    settings = {k: v for k, v in args.items() if k not in _NOT_SETTINGS}
    parts = [description.strip()] if isinstance(description, str) and description.strip() else []
    if settings:
        parts.append(_summary(settings, tuple(settings)))
    return " · ".join(p for p in parts if p) or None


def _summary(values: dict[str, Any], keys: tuple[str, ...]) -> str:
    """``key: value`` pairs of the ``keys`` present in ``values``, joined with ``"; "``; epoch-second
    ``resetsAt`` shown as UTC time. Raises nothing."""
    parts = []
    for key in keys:
        value = values.get(key)
        if value is None or value == "":
            continue
        if key == "resetsAt" and isinstance(value, (int, float)) and not isinstance(value, bool):
            moment = epoch_ms_time(value * 1000)
            value = moment.strftime("%Y-%m-%d %H:%M UTC") if moment else value
        parts.append(f"{key}: {value if isinstance(value, str) else compact(value)}")
    return "; ".join(parts)


class _Usage(Recent[str, tuple[int | None, int | None]]):
    """The last usage of each recent message (``Recent``), and the sums of those dropped (a run's totals without a
    result event: the sum over messages)."""

    def __init__(self) -> None:
        super().__init__()
        self.dropped_in: int | None = None
        self.dropped_out: int | None = None

    def record(self, msg_id: str, tokens: tuple[int | None, int | None]) -> None:
        """The message's usage, as its latest line says."""
        dropped = self.put(msg_id, tokens)
        if dropped is not None:
            self.dropped_in = add_tokens(self.dropped_in, dropped[1][0])
            self.dropped_out = add_tokens(self.dropped_out, dropped[1][1])


def _sum(values: Iterable[int | None]) -> int | None:
    known = [v for v in values if v is not None]
    return sum(known) if known else None
