"""One demo trace writer per scaffold, each beside the parser it feeds (``ingest/parsers/<scaffold>.py``):
:func:`render_trace` renders a planned episode (``demo.episode``) as the raw ``solve_out.txt`` of one format."""
from __future__ import annotations

import random
from datetime import datetime, timezone

from demo.episode import Action
from demo.writers.base import TraceEnding, TraceInfo, TraceWriter
from demo.writers.claude_code import ClaudeWriter
from demo.writers.codex import CodexExecWriter, CodexProtocolWriter, CodexTextWriter
from demo.writers.gemini import GeminiWriter
from demo.writers.opencode import OpenCodeWriter

TRACE_FORMATS: tuple[str, ...] = (
    "claude_code", "codex_exec", "codex_protocol", "codex_text", "gemini", "opencode",
)

_WRITERS: dict[str, type[TraceWriter]] = {
    w.format: w for w in (ClaudeWriter, CodexExecWriter, CodexProtocolWriter, CodexTextWriter, GeminiWriter,
                          OpenCodeWriter)
}

CUDA_OK = ("✓ CUDA available with 1 device(s) (expected 1)\n  GPU 0: NVIDIA H100 80GB HBM3 (85.0 GB)\n"
           "  ✓ GPU 0 is idle\n✓ H100 detected (1 GPU(s))\n  ✓ GPU 0: writing a cuda tensor works")
CUDA_FAIL = ("❌ CUDA not available: torch.cuda.is_available() returned False\n"
             "❌ CUDA check failed, not starting the agent")


def render_trace(*, trace_format: str, rng: random.Random, start: datetime, seconds: float, timestamped: bool,
                 model: str, prompt: str, actions: list[Action], ending: TraceEnding, cuda_ok: bool = True,
                 agent: str = "", echo_key: str | None = None, break_at: int | None = None) -> TraceInfo:
    """Render ``solve_out.txt`` for one run in the scaffold's raw format (spec 2.2-2.5, framing 2.1).

    Args:
        trace_format: one of TRACE_FORMATS.
        start: UTC start of the container (CUDA checks); ``seconds``: agent wall time the actions are
            rescaled to.
        timestamped: prefix every line with ``[YYYY-MM-DDTHH:MM:SSZ] `` (runs since 2026-04-04).
        ending: ``normal`` (final message, result/turn-completed events), ``api_limit`` (usage-limit message
            then stop), ``killed`` (no closing events, last line cut without newline).
        cuda_ok: False writes only the failing CUDA check lines (the agent never starts).
        agent: agent folder name; ``claude_non_api*`` renders subscription auth (no API key, rate-limit events).
        echo_key: codex wrapper echoes ``openai <key>`` / ``codex <key>`` (codex_exec only).
        break_at: truncate the N-th "breakable" event (tool results, reasoning) to make one broken JSON line.
    """
    writer = _WRITERS[trace_format](rng=rng, start=start.replace(tzinfo=timezone.utc).timestamp(),
                                    timestamped=timestamped, model=model, prompt=prompt, break_at=break_at)
    if isinstance(writer, CodexExecWriter):
        writer.echo_key = echo_key
    if isinstance(writer, ClaudeWriter):
        writer.subscription = "non_api" in agent
    if not cuda_ok:
        writer.text(CUDA_FAIL)
        return writer.info()
    writer.text(CUDA_OK)
    writer.advance(20)
    total = sum(a.seconds for a in actions) or 1.0
    scale = max(seconds - 25, 1.0) / total
    for a in actions:
        a.seconds *= scale
    writer.render(actions, ending=ending)
    return writer.info()
