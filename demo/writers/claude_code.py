"""Demo traces in Claude Code's ``--output-format stream-json`` (fed to ingest/parsers/claude_code.py)."""
from __future__ import annotations

from typing import Any

from demo.episode import CWD, Action, fake_uuid, rand_chars
from demo.writers.base import TraceEnding, TraceWriter, describe_command


class ClaudeWriter(TraceWriter):
    """Claude Code ``--output-format stream-json`` (spec 2.2): one API message split over several ``assistant``
    lines sharing ``message.id`` and ``usage``; ``user`` tool_result events; final ``result`` event(s)."""

    format = "claude_code"
    subscription = False  # claude_non_api*: logged in with a subscription, not an API key

    def begin(self) -> None:
        self.session = fake_uuid(self.rng)
        self.turns = 0
        self.cost = 0.0
        self.totals = {"input_tokens": 0, "output_tokens": 0, "cache_read_input_tokens": 0,
                       "cache_creation_input_tokens": 0}
        self.context = 18000
        self.emit({"type": "system", "subtype": "init", "cwd": CWD, "session_id": self.session,
                   "tools": ["Task", "Bash", "Glob", "Grep", "Read", "Edit", "Write", "TodoWrite", "WebFetch",
                             "WebSearch", "TaskOutput", "TaskStop"],
                   "mcp_servers": [], "model": self.model, "permissionMode": "bypassPermissions",
                   "slash_commands": ["compact", "context", "cost", "init", "review"],
                   "apiKeySource": "none" if self.subscription else "ANTHROPIC_API_KEY",
                   "claude_code_version": "2.1.31", "output_style": "default",
                   "agents": ["general-purpose", "Explore", "Plan"], "skills": [], "plugins": [],
                   "uuid": fake_uuid(self.rng), "fast_mode_state": "off"})
        if self.subscription:  # subscription auth reports its rate-limit window (spec 2.2)
            self.emit({"type": "rate_limit_event", "rate_limit_info": {
                "status": "allowed", "resetsAt": int(self.t) + 4 * 3600, "rateLimitType": "five_hour",
                "overageStatus": "rejected", "isUsingOverage": False}, "uuid": fake_uuid(self.rng),
                "session_id": self.session})

    def _usage(self, out_tokens: int) -> dict:
        self.context += self.rng.randint(200, 2500)
        if self.context > 150000:  # auto-compaction keeps the context bounded
            self.context = 30000
        usage: dict[str, Any] = {"input_tokens": self.rng.randint(1, 9), "cache_creation_input_tokens": self.rng.randint(100, 3000),
                 "cache_read_input_tokens": self.context, "cache_creation": {
                     "ephemeral_5m_input_tokens": 0, "ephemeral_1h_input_tokens": 0},
                 "output_tokens": out_tokens, "service_tier": "standard"}
        for k in self.totals:
            self.totals[k] += usage[k]
        self.cost += (usage["input_tokens"] + usage["cache_creation_input_tokens"] * 1.25) * 5e-6 \
            + usage["cache_read_input_tokens"] * 5e-7 + out_tokens * 2.5e-5
        return usage

    def _message(self, blocks: list[dict], stop_reason: str | None) -> None:
        msg_id = "msg_01" + rand_chars(self.rng, 22)
        usage = self._usage(self.rng.randint(20, 900))
        self.turns += 1
        for block in blocks:
            self.emit({"type": "assistant", "message": {
                "model": self.model, "id": msg_id, "type": "message", "role": "assistant", "content": [block],
                "stop_reason": stop_reason, "stop_sequence": None, "usage": usage, "context_management": None},
                "parent_tool_use_id": None, "session_id": self.session, "uuid": fake_uuid(self.rng)})

    def action(self, a: Action) -> None:
        blocks: list[dict] = []
        if a.think:
            blocks.append({"type": "thinking", "thinking": a.think if self.rng.random() < 0.5 else "",
                           "signature": rand_chars(self.rng, 64)})
        if a.say:
            blocks.append({"type": "text", "text": a.say})
        tool_id = "toolu_01" + rand_chars(self.rng, 22)
        if a.tool == "shell":
            name, inp = "Bash", {"command": a.command, "description": describe_command(a.command), "timeout": 600000}
        elif a.tool == "write":
            name, inp = "Write", {"file_path": a.command, "content": a.content}
        else:
            name, inp = "Read", {"file_path": a.command}
        blocks.append({"type": "tool_use", "id": tool_id, "name": name, "input": inp})
        self._message(blocks, "tool_use")
        self.advance(a.seconds * 0.6)
        content = a.output if a.exit_code == 0 else f"Exit code {a.exit_code}\n{a.output}"
        event: dict[str, Any] = {"type": "user", "message": {"role": "user", "content": [
            {"tool_use_id": tool_id, "type": "tool_result", "content": content, "is_error": a.exit_code != 0}]},
            "parent_tool_use_id": None, "session_id": self.session, "uuid": fake_uuid(self.rng),
            "timestamp": self.iso()}
        if name == "Bash":
            event["tool_use_result"] = {"stdout": a.output, "stderr": "", "interrupted": False, "isImage": False}
        self.emit(event, breakable=True)

    def final(self, a: Action) -> None:
        self._message([{"type": "text", "text": a.say}], "end_turn")
        self.final_text = a.say

    def _result(self, *, subtype: str, is_error: bool, text: str, origin: dict | None = None) -> None:
        event = {"type": "result", "subtype": subtype, "is_error": is_error,
                 "duration_ms": int((self.t - self._start_t) * 1000),
                 "duration_api_ms": int((self.t - self._start_t) * 310), "num_turns": self.turns, "result": text,
                 "stop_reason": "end_turn", "session_id": self.session, "total_cost_usd": round(self.cost, 6),
                 "usage": dict(self.totals, server_tool_use={"web_search_requests": 0, "web_fetch_requests": 0},
                               service_tier="standard"),
                 "modelUsage": {self.model: {
                     "inputTokens": self.totals["input_tokens"], "outputTokens": self.totals["output_tokens"],
                     "cacheReadInputTokens": self.totals["cache_read_input_tokens"],
                     "cacheCreationInputTokens": self.totals["cache_creation_input_tokens"],
                     "webSearchRequests": 0, "costUSD": round(self.cost, 6), "contextWindow": 200000,
                     "maxOutputTokens": 32000}},
                 "permission_denials": [], "uuid": fake_uuid(self.rng)}
        if origin:
            event["origin"] = origin
        self.emit(event)

    def render(self, actions: list[Action], *, ending: TraceEnding) -> None:
        self._start_t = self.t
        super().render(actions, ending=ending)

    def end(self) -> None:
        self._result(subtype="success", is_error=False, text=getattr(self, "final_text", ""))
        if self.rng.random() < 0.4:  # a background task finishing after the main turn (spec 2.1)
            self.advance(35)
            self._message([{"type": "text", "text": "The background training job has finished; the final "
                                                    "model was already saved."}], "end_turn")
            self._result(subtype="success", is_error=False, text="Background task completed.",
                         origin={"kind": "task-notification"})

    def api_limit(self) -> None:
        limit = "You've hit your limit · resets 4pm (UTC)"
        self.emit({"type": "rate_limit_event", "rate_limit_info": {
            "status": "rejected", "resetsAt": int(self.t) + 5400, "rateLimitType": "five_hour",
            "overageStatus": "rejected", "isUsingOverage": False}, "uuid": fake_uuid(self.rng),
            "session_id": self.session})
        self.emit({"type": "assistant", "message": {
            "id": fake_uuid(self.rng), "model": "<synthetic>", "role": "assistant", "type": "message",
            "stop_reason": "stop_sequence", "stop_sequence": "", "content": [{"type": "text", "text": limit}],
            "usage": {"input_tokens": 0, "output_tokens": 0, "cache_creation_input_tokens": 0,
                      "cache_read_input_tokens": 0}}, "parent_tool_use_id": None, "session_id": self.session,
            "uuid": fake_uuid(self.rng), "error": "rate_limit"})
        self._result(subtype="success", is_error=True, text=limit)
