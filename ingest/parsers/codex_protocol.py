"""Legacy codex JSON protocol traces: ``{"id": "<n>", "msg": {"type": ...}}`` lines (spec 2.3, format 2).

Mapping of ``msg.type`` to steps:

* ``agent_message`` / ``agent_message_delta`` -> ``assistant``; ``agent_reasoning`` (and ``_raw_content``) and
  their ``_delta`` forms -> ``thinking``. Consecutive deltas of the same type form one step; a full message that
  directly follows deltas of its kind replaces their concatenation instead of repeating it.
* ``user_message`` -> ``text``.
* ``exec_command_begin`` -> ``tool_call`` (tool ``shell``, input = argv joined); ``exec_command_end`` ->
  ``tool_result`` paired by ``call_id`` (output = stdout + stderr, else the collected
  ``exec_command_output_delta`` chunks; is_error on non-zero exit code). Output deltas are not steps.
* ``mcp_tool_call_begin``/``_end`` -> ``tool_call``/``tool_result`` (tool ``server.tool``);
  ``patch_apply_begin``/``_end`` -> ``tool_call``/``tool_result`` (tool ``apply_patch``).
* ``task_complete`` / ``turn_complete`` -> ``result`` (output = ``last_agent_message``).
* ``error`` and ``turn_aborted`` -> ``text`` with is_error; ``warning`` -> ``text``.
* ``token_count`` -> no step, folded into run totals: the last cumulative total (``session`` or
  ``info.total_token_usage``) when present, else the sum of per-turn counts (``turn`` or flat fields).
* ``session_configured`` -> ``system`` (sets ``model``); ``task_started``/``turn_started`` are markers: no step;
  one not followed by its ``task_complete``/``turn_complete`` makes the trace ``incomplete``.
  A config line without ``msg`` and unknown types -> ``system`` with compact JSON (unknown types counted in
  ``unknown_events``).
"""
from __future__ import annotations

from collections.abc import Generator, Iterable
from datetime import datetime
from typing import Any

from traces.steps import ParsedTrace, Step, StepKind

from ._builder import Recent, TraceBuilder, add_tokens, as_text, compact, int_or_none, json_events, tool_input
from .framing import Line

_DELTAS: dict[str, tuple[str, StepKind]] = {
    "agent_message_delta": ("agent_message", "assistant"),
    "agent_reasoning_delta": ("agent_reasoning", "thinking"),
    "agent_reasoning_raw_content_delta": ("agent_reasoning_raw_content", "thinking"),
}
_FULL: dict[str, tuple[str, StepKind]] = {"agent_message": ("message", "assistant"), "agent_reasoning": ("text", "thinking"),
         "agent_reasoning_raw_content": ("text", "thinking")}
_SESSION_KEYS = ("session_id", "model", "model_provider_id", "cwd", "approval_policy", "sandbox_policy")


def parse(lines: Iterable[Line], source: str) -> Generator[Step, None, ParsedTrace]:
    """Parse framed lines of a legacy codex protocol trace (spec 2.3 format 2): a generator of its steps, in
    order, that returns the :class:`ParsedTrace` (totals, problems; ``steps`` empty).

    ``lines`` as produced by :func:`ingest.parsers.framing.frame_lines`. Raises nothing.
    """
    b = TraceBuilder("codex_protocol", source)
    tools: Recent[str, str] = Recent()  # call_id -> tool of the begin event
    chunks: dict[str, list[str]] = {}  # call_id -> streamed output
    cumulative: tuple[int | None, int | None] | None = None
    open_task: int | None = None  # line of a task_started not yet completed
    for no, time, event in json_events(lines, b):
        msg = event.get("msg")
        if not isinstance(msg, dict):
            if isinstance(event.get("model"), str):
                b.trace.model = event["model"]
            b.add("system", no, time, output=compact(event))
            continue
        mtype = msg.get("type") if isinstance(msg.get("type"), str) else None
        if mtype == "token_count":
            totals = _token_totals(msg)
            if totals[0] == "cumulative":
                cumulative = totals[1]
            else:
                b.trace.tokens_in = add_tokens(b.trace.tokens_in, totals[1][0])
                b.trace.tokens_out = add_tokens(b.trace.tokens_out, totals[1][1])
        elif mtype == "exec_command_output_delta":
            chunks.setdefault(str(msg.get("call_id")), []).append(_chunk_text(msg.get("chunk")))
        elif mtype in ("task_started", "turn_started"):
            open_task = no
        else:
            if mtype in ("task_complete", "turn_complete"):
                open_task = None
            _event(b, no, time, mtype, msg, tools, chunks)
        yield from b.released()  # between events: the steps that can no longer change
    if open_task is not None:
        b.incomplete(f"the task started at line {open_task} has no task_complete")
    yield from b.finish()
    trace = b.trace
    if cumulative is not None:
        trace.tokens_in, trace.tokens_out = cumulative
    return trace


def _event(b: TraceBuilder, no: int, time: datetime | None, mtype: Any, msg: dict[str, Any],
           tools: Recent[str, str], chunks: dict[str, list[str]]) -> None:
    call_id = msg.get("call_id")
    if mtype in _DELTAS:
        full_type, kind = _DELTAS[mtype]
        b.extend(full_type, kind, no, time, as_text(msg.get("delta")))
    elif mtype in _FULL:
        key, kind = _FULL[mtype]
        if b.run_key == mtype:  # the full text of the deltas just streamed
            b.replace_run(as_text(msg.get(key)))
        else:
            b.add(kind, no, time, output=as_text(msg.get(key)))
    elif mtype == "user_message":
        b.add("text", no, time, output=as_text(msg.get("message")))
    elif mtype == "exec_command_begin":
        tools[str(call_id)] = "shell"
        b.add("tool_call", no, time, tool="shell", input=tool_input(msg.get("command")), call_id=call_id)
    elif mtype == "exec_command_end":
        output = as_text(msg.get("stdout")) + as_text(msg.get("stderr"))
        output = output or "".join(chunks.pop(str(call_id), []))
        exit_code = int_or_none(msg.get("exit_code"))
        b.add("tool_result", no, time, tool=tools.get(str(call_id), "shell"), output=output,
              is_error=exit_code is not None and exit_code != 0, call_id=call_id)
    elif mtype in ("mcp_tool_call_begin", "mcp_tool_call_end"):
        call = value if isinstance(value := msg.get("invocation"), dict) else msg
        tool = f"{call.get('server', call.get('server_name'))}.{call.get('tool', call.get('tool_name'))}"
        if mtype == "mcp_tool_call_begin":
            tools[str(call_id)] = tool
            b.add("tool_call", no, time, tool=tool, input=tool_input(call.get("arguments")), call_id=call_id)
        else:
            result = msg.get("result")
            failed = isinstance(result, dict) and ("Err" in result or bool(result.get("is_error")))
            b.add("tool_result", no, time, tool=tools.get(str(call_id), tool), output=as_text(result),
                  is_error=failed, call_id=call_id)
    elif mtype == "patch_apply_begin":
        tools[str(call_id)] = "apply_patch"
        patch = msg.get("patch", msg.get("changes"))
        b.add("tool_call", no, time, tool="apply_patch", input=patch if isinstance(patch, str) else compact(patch),
              call_id=call_id)
    elif mtype == "patch_apply_end":
        output = as_text(msg.get("stdout")) + as_text(msg.get("stderr")) or as_text(msg.get("error"))
        b.add("tool_result", no, time, tool="apply_patch", output=output, is_error=msg.get("success") is False,
              call_id=call_id)
    elif mtype in ("task_complete", "turn_complete"):
        b.add("result", no, time, output=as_text(msg.get("last_agent_message")))
    elif mtype in ("error", "turn_aborted"):
        b.add("text", no, time, output=as_text(msg.get("message", msg.get("reason"))), is_error=True)
    elif mtype == "warning":
        b.add("text", no, time, output=as_text(msg.get("message")))
    elif mtype == "session_configured":
        if isinstance(msg.get("model"), str):
            b.trace.model = msg["model"]
        b.add("system", no, time, output="session_configured",
              input=compact({k: msg[k] for k in _SESSION_KEYS if k in msg}))
    else:
        b.unknown(mtype)
        b.add("system", no, time, output=compact(msg))


def _token_totals(msg: dict[str, Any]) -> tuple[str, tuple[int | None, int | None]]:
    """``("cumulative" | "turn", (tokens_in, tokens_out))`` of a ``token_count`` message."""
    info = value if isinstance(value := msg.get("info"), dict) else {}
    for kind, usage in (("cumulative", msg.get("session")), ("cumulative", info.get("total_token_usage")),
                        ("turn", msg.get("turn")), ("turn", msg)):
        if isinstance(usage, dict) and ("input_tokens" in usage or "output_tokens" in usage):
            return kind, (int_or_none(usage.get("input_tokens")), int_or_none(usage.get("output_tokens")))
    return "turn", (None, None)


def _chunk_text(chunk: Any) -> str:
    """An output chunk: text as is, a list of byte values decoded as UTF-8."""
    if isinstance(chunk, list) and all(isinstance(c, int) and 0 <= c < 256 for c in chunk):
        return bytes(chunk).decode("utf-8", errors="replace")
    return as_text(chunk)
