"""Demo traces in the three codex formats: ``exec --json``, the legacy ``{"id","msg"}`` protocol and plain
text (fed to ingest/parsers/codex.py)."""
from __future__ import annotations

import json
import time

from demo.episode import CWD, Action, fake_uuid, rand_chars
from demo.writers.base import TraceWriter


class CodexExecWriter(TraceWriter):
    """codex ``exec --json`` (spec 2.3 format 3): thread/turn events and items; a command appears as
    ``item.started`` then ``item.completed`` with the same ``item.id``."""

    format = "codex_exec"
    echo_key: str | None = None

    def begin(self) -> None:
        if self.echo_key is not None:  # agents/codex/solve.sh echoes the key variables (spec 6)
            self.text(f"openai {self.echo_key}")
            self.text(f"codex {self.echo_key}")
        self.text("Reading prompt from stdin...")
        self.item = 0
        self.usage = {"input_tokens": 0, "cached_input_tokens": 0, "output_tokens": 0}
        self.emit({"type": "thread.started", "thread_id": fake_uuid(self.rng)})
        self.emit({"type": "turn.started"})

    def _item(self, kind: str, **fields: object) -> dict:
        item = {"id": f"item_{self.item}", "type": kind, **fields}
        self.item += 1
        return item

    def action(self, a: Action) -> None:
        self.usage["input_tokens"] += self.rng.randint(2000, 9000)
        self.usage["cached_input_tokens"] += self.rng.randint(1500, 8000)
        self.usage["output_tokens"] += self.rng.randint(50, 800)
        if a.think:
            self.emit({"type": "item.completed", "item": self._item(
                "reasoning", text=f"**{a.think.split(';')[0][:60]}**\n\n{a.think}")}, breakable=True)
        if a.say:
            self.emit({"type": "item.completed", "item": self._item("agent_message", text=a.say)})
        if a.tool == "write":
            self.emit({"type": "item.completed", "item": self._item(
                "file_change", changes=[{"path": a.command, "kind": "add"}], status="completed")})
            return
        cmd = a.command if a.tool == "shell" else f"sed -n '1,200p' {a.command}"
        item = self._item("command_execution", command=f"bash -lc {json.dumps(cmd)}", aggregated_output="",
                          exit_code=None, status="in_progress")
        self.emit({"type": "item.started", "item": item})
        self.advance(a.seconds * 0.6)
        done = dict(item, aggregated_output=a.output + "\n", exit_code=a.exit_code,
                    status="completed" if a.exit_code == 0 else "failed")
        self.emit({"type": "item.completed", "item": done})
        if self.rng.random() < 0.01:
            self.emit({"type": "error", "message": "Reconnecting... 1/5 (stream disconnected before completion: "
                                                   "error sending request for url)"})

    def final(self, a: Action) -> None:
        self.emit({"type": "item.completed", "item": self._item("agent_message", text=a.say)})

    def end(self) -> None:
        self.emit({"type": "turn.completed", "usage": self.usage})


class CodexProtocolWriter(TraceWriter):
    """Legacy codex JSON protocol (spec 2.3 format 2): ``{"id": "<n>", "msg": {...}}`` lines with streamed
    ``*_delta`` events, preceded by a config line."""

    format = "codex_protocol"

    def _msg(self, msg: dict, *, breakable: bool = False) -> None:
        self.emit({"id": "1", "msg": msg}, breakable=breakable)

    def begin(self) -> None:
        self.emit({"model": self.model, "provider": "openai", "approval": "never", "sandbox": "danger-full-access",
                   "reasoning effort": "medium", "reasoning summaries": "detailed", "workdir": CWD})
        self.emit({"id": "0", "msg": {"type": "session_configured", "session_id": fake_uuid(self.rng),
                                      "model": self.model, "model_provider_id": "openai", "cwd": CWD,
                                      "approval_policy": "never", "sandbox_policy": {"mode": "danger-full-access"},
                                      "history_log_id": 0, "history_entry_count": 0}})
        self._msg({"type": "task_started", "model_context_window": 272000})
        self.total = 0

    def _stream(self, kind: str, text: str, field_name: str) -> None:
        words = text.split(" ")
        for i in range(0, len(words), 4):
            chunk = " ".join(words[i:i + 4]) + (" " if i + 4 < len(words) else "")
            self._msg({"type": f"{kind}_delta", "delta": chunk})
        self._msg({"type": kind, field_name: text})

    def action(self, a: Action) -> None:
        if a.think:
            self._stream("agent_reasoning", a.think, "text")
        if a.say:
            self._stream("agent_message", a.say, "message")
        call = "call_" + rand_chars(self.rng, 24)
        if a.tool == "write":
            rel = a.command.rsplit("/", 1)[-1]
            patch = "*** Begin Patch\n*** Add File: " + rel + "\n" + "".join(
                "+" + line + "\n" for line in a.content.splitlines()) + "*** End Patch"
            self._msg({"type": "patch_apply_begin", "call_id": call, "auto_approved": True, "patch": patch})
            self._msg({"type": "patch_apply_end", "call_id": call, "success": True, "error": None,
                       "stdout": f"Success. Updated the following files:\nA {rel}\n", "stderr": ""})
        else:
            cmd = a.command if a.tool == "shell" else f"sed -n '1,200p' {a.command}"
            argv = ["bash", "-lc", cmd]
            self._msg({"type": "exec_command_begin", "call_id": call, "command": argv, "cwd": CWD,
                       "source": "agent"})
            self.advance(a.seconds * 0.6)
            for chunk in a.output.split("\n")[:3]:
                self._msg({"type": "exec_command_output_delta", "call_id": call, "stream": "stdout",
                           "chunk": chunk + "\n"}, breakable=True)
            self._msg({"type": "exec_command_end", "call_id": call, "command": argv, "exit_code": a.exit_code,
                       "stdout": a.output, "stderr": "", "duration": {"secs": int(a.seconds * 0.6),
                                                                      "nanos": 0}})
        self.total += self.rng.randint(3000, 9000)
        if self.rng.random() < 0.3:
            self._msg({"type": "token_count", "session": {"total_tokens": self.total},
                       "turn": {"input_tokens": self.total - 500, "output_tokens": 500, "total_tokens": self.total,
                                "reasoning_output_tokens": 120}})

    def final(self, a: Action) -> None:
        self._stream("agent_message", a.say, "message")
        self.final_text = a.say

    def end(self) -> None:
        self._msg({"type": "task_complete", "last_agent_message": getattr(self, "final_text", "")})


class CodexTextWriter(TraceWriter):
    """Plain-text codex transcript (spec 2.3 format 1): banner, ``thinking``/``exec``/``codex`` blocks,
    ``tokens used`` and a number with thousands separators at the end."""

    format = "codex_text"

    def begin(self) -> None:
        self.tokens = 0
        self.text("Reading additional input from stdin...")
        self.text("OpenAI Codex v0.58.0 (research preview)\n--------\nworkdir: " + CWD + f"\nmodel: {self.model}\n"
                  "provider: openai\napproval: never\nsandbox: danger-full-access\nreasoning effort: high\n"
                  f"reasoning summaries: detailed\nsession id: {fake_uuid(self.rng)}\n--------")
        self.text("user\n" + self.prompt)

    def action(self, a: Action) -> None:
        self.tokens += self.rng.randint(3000, 9000)
        if a.think:
            self.text(f"\nthinking\n**{a.think[:50]}**\n\n{a.think}")
        if a.say:
            self.text(f"\ncodex\n{a.say}")
        if a.tool == "write":
            self.text(f"\nfile update\nA {a.command}\n" + "\n".join("+" + x for x in a.content.splitlines()[:40]))
            self.text(f"\napply_patch(auto_approved=true) exited 0 in 12ms:\nSuccess. Updated the following "
                      f"files:\nA {a.command}")
            return
        cmd = a.command if a.tool == "shell" else f"sed -n '1,200p' {a.command}"
        self.text(f"\nexec\nbash -lc {json.dumps(cmd)} in {CWD}")
        self.advance(a.seconds * 0.6)
        ms = int(a.seconds * 600)
        head = f" succeeded in {ms}ms:" if a.exit_code == 0 else f" exited {a.exit_code} in {ms}ms:"
        self.text(head + "\n" + a.output)
        if self.rng.random() < 0.02:
            self.text(time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(int(self.t))) +
                      ".680647Z ERROR codex_core::exec: exec error: stream disconnected, retrying")

    def final(self, a: Action) -> None:
        self.text(f"\ncodex\n{a.say}")

    def end(self) -> None:
        self.text(f"tokens used\n{self.tokens:,}")
