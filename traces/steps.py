"""The typed records of a trace, shared by the parsers, the ingest, the API schemas and the templates.

A *step* is one event of an agent's (or a judge's) trace after grouping: one assistant message block, one
tool call, one tool result, one plain-text line, ... Every scaffold parser (``ingest/parsers/``) yields these.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Literal, get_args

StepKind = Literal["system", "assistant", "thinking", "tool_call", "tool_result", "result", "text"]
STEP_KINDS: tuple[StepKind, ...] = get_args(StepKind)
KindFilter = Literal[StepKind, ""]  # a step kind, or "" for all (a form's unset field)


@dataclass(slots=True)
class Step:
    """One step of a trace.

    Fields:
        index: 0-based position in the trace, consecutive, after grouping (deltas merged, split messages joined).
        kind: one of STEP_KINDS.
        time: wall-clock time (UTC, timezone-aware) from the line's ``[YYYY-MM-DDTHH:MM:SSZ] `` prefix, else from
            the event itself (ISO timestamp, epoch ms), else None.
        tool: tool name for tool_call / tool_result steps (``Bash``, ``shell``, ``bash``, ``run_shell_command``...).
        input: what went in: a tool call's command (shell) or its arguments as compact JSON; a system step's
            configuration summary. None for other kinds.
        output: what came out: assistant text, thinking text, tool output, the final result text, a plain-text
            line. May be "".
        is_error: the tool result or event reports an error (non-zero exit code, ``is_error``, status error).
        call_id: pairs a tool_call with its tool_result (``toolu_...``, codex ``call_id``/``item.id``, ...).
        tokens_in / tokens_out: usage attributed to this step (counted once per API message), else None.
        cost_usd: cost in US dollars attributed to this step (OpenCode step_finish, Claude result), else None.
        line: 1-based line number in the source file of the event that started the step.
        label: what a typed event is when its kind alone does not say it (``rate limit``, ``api retry``,
            ``task started``, ``compaction summary``, ...), shown beside the kind; None for ordinary steps.
    """

    index: int
    kind: StepKind
    time: datetime | None = None
    tool: str | None = None
    input: str | None = None
    output: str = ""
    is_error: bool = False
    call_id: str | None = None
    tokens_in: int | None = None
    tokens_out: int | None = None
    cost_usd: float | None = None
    line: int | None = None
    label: str | None = None


@dataclass(slots=True)
class ParseProblem:
    """A line that could not be understood: where, and why. Reported, never fatal for the run."""

    file: str
    line: int
    message: str

    def __str__(self) -> str:
        return f"{self.file}:{self.line}: {self.message}"


@dataclass(slots=True)
class ParsedTrace:
    """A whole parsed trace.

    Fields:
        format: detected format id (``claude_code``, ``codex_exec``, ``codex_protocol``, ``codex_text``,
            ``gemini``, ``opencode``, ``text``).
        steps: the steps in order, ``steps[i].index == i``.
        tokens_in / tokens_out: run totals (tokens) when the trace carries usage, else None.
        tokens_total: the run's total token count as the trace itself reports it (codex plain text
            ``tokens used``, Gemini ``stats.total_tokens``), else None. Added because plain-text codex reports
            only this total, which cannot be split into in / out.
        cost_usd: run total in US dollars when the trace carries it, else None.
        model: the model id the trace names (init event, banner), else None.
        problems: broken lines (file, line number, message); the rest of the trace still parsed.
        incomplete: why the trace is damaged or unfinished (no final result or summary event, the last line cut
            off mid-event, a step without its closing event), else None. A run with an incomplete trace still
            counts when it was scored.
        unknown_events: event (or item) types the parser has no rendering for -> how many it met; each was
            kept as a ``system`` step holding the event as compact JSON.
        replaced_chars: characters that could not be stored and were replaced by U+FFFD: invalid UTF-8 byte
            sequences and lone UTF-16 surrogates (JSON ``"\\ud83d"``, an emoji cut in half).
        late_usage: a trace read as a stream only (``ingest.parsers.stream_trace``): step index ->
            ``(tokens_in, tokens_out)`` set after the step was handed on (a message's usage repeated far later).
    """

    format: str
    steps: list[Step] = field(default_factory=list)
    tokens_in: int | None = None
    tokens_out: int | None = None
    tokens_total: int | None = None
    cost_usd: float | None = None
    model: str | None = None
    problems: list[ParseProblem] = field(default_factory=list)
    incomplete: str | None = None
    unknown_events: dict[str, int] = field(default_factory=dict)
    replaced_chars: int = 0
    late_usage: dict[int, tuple[int | None, int | None]] = field(default_factory=dict)
