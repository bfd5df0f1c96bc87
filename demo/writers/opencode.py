"""Demo traces in OpenCode's ``--format json`` (fed to ingest/parsers/opencode.py)."""
from __future__ import annotations

from demo.episode import HEX, Action, rand_chars
from demo.writers.base import TraceWriter


class OpenCodeWriter(TraceWriter):
    """OpenCode ``run --format json`` (spec 2.5): epoch-ms timestamps, ``step_start``/``text``/``tool_use``/
    ``step_finish`` parts; cost and tokens per step_finish."""

    format = "opencode"

    def begin(self) -> None:
        self.session = "ses_" + rand_chars(self.rng, 26)

    def _event(self, kind: str, part: dict, *, breakable: bool = False) -> None:
        self.emit({"type": kind, "timestamp": self.epoch_ms(), "sessionID": self.session, "part": part},
                  breakable=breakable)

    def _step(self, a: Action, reason: str) -> None:
        message = "msg_" + rand_chars(self.rng, 26)
        snapshot = rand_chars(self.rng, 40, HEX)
        self._event("step_start", {"id": "prt_" + rand_chars(self.rng, 26), "sessionID": self.session,
                                   "messageID": message, "type": "step-start", "snapshot": snapshot})
        if a.say or a.think:
            now = self.epoch_ms()
            self._event("text", {"id": "prt_" + rand_chars(self.rng, 26), "sessionID": self.session,
                                 "messageID": message, "type": "text", "text": a.say or a.think,
                                 "time": {"start": now, "end": now}})
        if a.tool is not None:
            tool, inp = {"shell": ("bash", {"command": a.command, "description": a.command[:40]}),
                         "write": ("write", {"filePath": a.command, "content": a.content}),
                         "read": ("read", {"filePath": a.command})}[a.tool]
            start = self.epoch_ms()
            self.advance(a.seconds * 0.6)
            state = {"status": "completed" if a.exit_code == 0 else "error", "input": inp, "output": a.output,
                     "title": a.command[:60], "metadata": {"exit": a.exit_code},
                     "time": {"start": start, "end": self.epoch_ms()}}
            self._event("tool_use", {"id": "prt_" + rand_chars(self.rng, 26), "sessionID": self.session,
                                     "messageID": message, "type": "tool", "callID": "call_" + rand_chars(self.rng, 24),
                                     "tool": tool, "state": state}, breakable=True)
        tokens_in = self.rng.randint(2000, 30000)
        self._event("step_finish", {"id": "prt_" + rand_chars(self.rng, 26), "sessionID": self.session,
                                    "messageID": message, "type": "step-finish", "reason": reason,
                                    "snapshot": snapshot, "cost": round(tokens_in * 6e-7, 6), "tokens": {
                                        "input": tokens_in, "output": self.rng.randint(40, 900),
                                        "reasoning": self.rng.randint(0, 400),
                                        "cache": {"read": self.rng.randint(0, 20000), "write": 0}}})

    def action(self, a: Action) -> None:
        self._step(a, "tool-calls")

    def final(self, a: Action) -> None:
        self._step(a, "stop")
