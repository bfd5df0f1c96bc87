"""Demo traces in Gemini CLI's stream-json (fed to ingest/parsers/gemini.py)."""
from __future__ import annotations

from typing import Any

from demo.episode import HEX, Action, fake_uuid, rand_chars
from demo.writers.base import TraceWriter


class GeminiWriter(TraceWriter):
    """Gemini CLI ``--output-format stream-json`` (spec 2.4): init, streamed assistant ``message`` deltas,
    ``tool_use``/``tool_result``, ``result`` with stats; every event has an ISO timestamp."""

    format = "gemini"

    def begin(self) -> None:
        self.text("YOLO mode is enabled. All tool calls will be automatically approved.")
        self.text("Loaded cached credentials.")
        self.calls = 0
        self.tokens_in = 0
        self.tokens_out = 0
        self._start_t = self.t
        self.emit({"type": "init", "timestamp": self.iso(), "session_id": fake_uuid(self.rng), "model": self.model})
        self.emit({"type": "message", "timestamp": self.iso(), "role": "user", "content": self.prompt})

    def _say(self, text: str) -> None:
        cut = len(text) // 2
        for piece in (text[:cut], text[cut:]):
            self.emit({"type": "message", "timestamp": self.iso(), "role": "assistant", "content": piece,
                       "delta": True})

    def action(self, a: Action) -> None:
        self.tokens_in += self.rng.randint(3000, 12000)
        self.tokens_out += self.rng.randint(50, 700)
        if a.say or a.think:
            self._say(a.say or a.think)
        name, params = {
            "shell": ("run_shell_command", {"command": a.command, "description": "Run " + a.command[:40]}),
            "write": ("write_file", {"file_path": a.command, "content": a.content}),
            "read": ("read_file", {"absolute_path": a.command}),
        }[a.tool or "shell"]
        tool_id = f"{name}-{self.epoch_ms()}-{rand_chars(self.rng, 12, HEX)}"
        self.emit({"type": "tool_use", "timestamp": self.iso(), "tool_name": name, "tool_id": tool_id,
                   "parameters": params})
        self.advance(a.seconds * 0.6)
        result: dict[str, Any] = {"type": "tool_result", "timestamp": self.iso(), "tool_id": tool_id,
                  "status": "success" if a.exit_code == 0 else "error", "output": a.output}
        if a.exit_code:
            result["error"] = {"type": "shell_error", "message": f"Command exited with code {a.exit_code}"}
        self.emit(result, breakable=True)
        self.calls += 1

    def final(self, a: Action) -> None:
        self._say(a.say)

    def end(self) -> None:
        self.emit({"type": "result", "timestamp": self.iso(), "status": "success", "stats": {
            "total_tokens": self.tokens_in + self.tokens_out, "input_tokens": self.tokens_in,
            "output_tokens": self.tokens_out, "duration_ms": int((self.t - self._start_t) * 1000),
            "tool_calls": self.calls}})
