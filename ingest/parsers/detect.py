"""Which raw trace format a file is in (spec sections 2.1-2.5).

Each of the first :data:`WINDOW` framed lines votes for at most one format:

* a line starting ``{"type":"thread.started"`` (or any ``thread.*`` / ``turn.*`` / ``item.*`` event, or the
  older ``session.created``) -> ``codex_exec``, which wins outright (spec 2.3: judge and codex traces carry a few other JSON lines of stderr);
* ``{"id": .., "msg": {..}}`` -> ``codex_protocol``;
* ``sessionID`` with ``part`` or ``error`` -> ``opencode``;
* ``system``/``init``, or ``assistant``/``user`` with a ``message`` object -> ``claude_code``;
* ``init`` with ``session_id``, ``message`` with ``role``, ``tool_use`` with ``tool_name``, or an API-log
  object (``method`` + ``response``) -> ``gemini``;
* a line starting ``OpenAI Codex v`` (the banner) -> ``codex_text``.

The format with most votes wins; a tie goes to the scaffold hint, then to the first voted. Without any vote in
the window the search goes on up to :data:`FAR_WINDOW` lines (long stderr noise before the first event); still
none: ``codex_text`` when the scaffold hint is a codex agent, else ``text``. Content always beats the hint.
"""
from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

from ptbsite.jsontext import loads

from .framing import Line

WINDOW = 200
FAR_WINDOW = 5000

_HINTS = (("claude", "claude_code"), ("glm", "claude_code"), ("qwen", "claude_code"), ("codex", "codex_exec"),
          ("gemini", "gemini"), ("opencode", "opencode"), ("kimi", "opencode"))


def scaffold_format(scaffold: str | None) -> str | None:
    """The format a scaffold (agent folder name such as ``claude_non_api``, ``codexhigh``, ``glm5``) usually
    writes (spec 2.2-2.5), else None. Case-insensitive prefix match; raises nothing."""
    name = (scaffold or "").lower()
    return next((fmt for prefix, fmt in _HINTS if name.startswith(prefix)), None)


def classify_line(text: str) -> str | None:
    """The format id one prefix-stripped line votes for (rules in the module docstring, spec 2.2-2.5), else None
    (plain text, broken or unrecognised JSON). Raises nothing."""
    if text.startswith("OpenAI Codex v"):
        return "codex_text"
    if not text.startswith("{"):
        return None
    if text.startswith('{"type":"thread.started"'):
        return "codex_exec"
    try:
        event = loads(text)
    except ValueError:  # broken, or nested too deep to parse
        return None
    if not isinstance(event, dict):
        return None
    etype = event.get("type")
    if isinstance(etype, str) and (etype.startswith(("thread.", "turn.", "item.")) or etype == "session.created"):
        return "codex_exec"
    if "id" in event and isinstance(event.get("msg"), dict):
        return "codex_protocol"
    if "sessionID" in event and ("part" in event or "error" in event):
        return "opencode"
    if (etype == "system" and event.get("subtype") == "init") or (
            etype in ("assistant", "user") and isinstance(event.get("message"), dict)):
        return "claude_code"
    if ((etype == "init" and "session_id" in event) or (etype == "message" and "role" in event)
            or (etype == "tool_use" and "tool_name" in event) or ("method" in event and "response" in event)):
        return "gemini"
    return None


def detect_lines(lines: Sequence[Line], scaffold: str | None = None) -> str:
    """Format id of framed lines ``[(line_no, time, text), ...]`` (rules in the module docstring, spec 2.1-2.5).
    Reads at most ``FAR_WINDOW`` lines; raises nothing."""
    hint = scaffold_format(scaffold)
    votes: Counter[str] = Counter()
    for i, (_, _, text) in enumerate(lines):
        if i >= FAR_WINDOW or (i >= WINDOW and votes):
            break
        fmt = classify_line(text)
        if fmt == "codex_exec":
            return fmt
        if fmt is not None:
            votes[fmt] += 1
    if not votes:
        return "codex_text" if hint == "codex_exec" else "text"
    best = max(votes.values())
    leaders = [fmt for fmt, count in votes.items() if count == best]  # Counter keeps first-seen order
    return hint if hint in leaders else leaders[0]
