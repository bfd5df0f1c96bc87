"""Line framing shared by every scaffold's demo trace writer (docs/posttrainbench-formats.md §2.1): the PTB
timestamp prefix, plain-text lines, one JSON event per line, one deliberately broken line, a partial last line
when killed."""
from __future__ import annotations

import json
import random
import time
from dataclasses import dataclass
from typing import Literal

from demo.episode import Action

TraceEnding = Literal["normal", "api_limit", "killed"]


@dataclass(slots=True)
class TraceInfo:
    """What a rendered trace contains, for the DemoReport.

    Fields:
        text: the whole ``solve_out.txt`` content.
        tool_calls: number of tool-call events written (each shell/write/read once, however many lines).
        broken_lines: 1-based line numbers of deliberately truncated JSON lines in the middle of the file.
        partial_last_line: the file ends without a newline in the middle of an event (job killed).
        end_time: epoch seconds (UTC) of the last line.
    """

    text: str
    tool_calls: int
    broken_lines: list[int]
    partial_last_line: bool
    end_time: float


class TraceWriter:
    """Line framing shared by every scaffold: the PTB timestamp prefix (spec 2.1), plain-text lines, one JSON
    event per line, one deliberately broken line, a partial last line when killed."""

    format = "text"

    def __init__(self, *, rng: random.Random, start: float, timestamped: bool, model: str, prompt: str,
                 break_at: int | None) -> None:
        self.rng = rng
        self.t = start
        self.timestamped = timestamped
        self.model = model
        self.prompt = prompt
        self.break_at = break_at  # ordinal of the breakable event to truncate, or None
        self._breakable_seen = 0
        self.parts: list[str] = []
        self.lines = 0
        self.tool_calls = 0
        self.broken_lines: list[int] = []
        self._stamp_sec = -1
        self._stamp = ""

    # framing -------------------------------------------------------------------------------------------------
    def _prefix(self) -> str:
        if not self.timestamped:
            return ""
        sec = int(self.t)
        if sec != self._stamp_sec:
            self._stamp_sec = sec
            self._stamp = time.strftime("[%Y-%m-%dT%H:%M:%SZ] ", time.gmtime(sec))
        return self._stamp

    def text(self, line: str) -> None:
        """Write plain-text line(s); every physical line gets the prefix."""
        for part in line.split("\n"):
            self.parts.append(self._prefix() + part + "\n")
            self.lines += 1

    def emit(self, obj: dict, *, breakable: bool = False) -> None:
        """Write one JSON event as one physical line (``breakable`` events may be cut once, see break_at)."""
        line = json.dumps(obj, ensure_ascii=False, separators=(",", ":"))
        if breakable:
            self._breakable_seen += 1
            if self._breakable_seen == self.break_at:
                line = line[: max(20, len(line) * 3 // 5)]
                self.broken_lines.append(self.lines + 1)
        self.parts.append(self._prefix() + line + "\n")
        self.lines += 1

    def advance(self, seconds: float) -> None:
        self.t += seconds

    def iso(self, ms: bool = True) -> str:
        base = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(int(self.t)))
        return f"{base}.{int((self.t % 1) * 1000):03d}Z" if ms else base + "Z"

    def epoch_ms(self) -> int:
        return int(self.t * 1000)

    # rendering -----------------------------------------------------------------------------------------------
    def render(self, actions: list[Action], *, ending: TraceEnding) -> None:
        self.begin()
        for a in actions:
            if a.tool is None:
                if ending == "normal":
                    self.final(a)
                continue
            t0 = self.t
            self.advance(a.seconds * 0.2)  # model latency before the call
            self.action(a)                 # writers advance ~0.6 while the tool runs, never backwards
            self.tool_calls += 1
            self.t = max(self.t, t0 + a.seconds)
        if ending == "api_limit":
            self.api_limit()
        elif ending == "normal":
            self.end()
        else:
            self.kill()

    def kill(self) -> None:
        """Cut the last line in half: the job was killed while the CLI was writing it."""
        last = self.parts.pop()
        self.parts.append(last[: max(len(self._prefix()) + 5, len(last) // 2)])

    # Hooks each scaffold implements. begin: start-up lines and session events. action: one tool-calling turn
    # (reasoning, text, the call and its result). final: the closing assistant message. end: closing events
    # (result / turn.completed / task_complete). api_limit: what the CLI prints when the usage limit hits.
    def begin(self) -> None: ...
    def action(self, a: Action) -> None: ...
    def final(self, a: Action) -> None: ...
    def end(self) -> None: ...

    def api_limit(self) -> None:
        self.text("ERROR: You've hit your limit · resets 4pm (UTC)")

    def info(self) -> TraceInfo:
        text = "".join(self.parts)
        return TraceInfo(text=text, tool_calls=self.tool_calls, broken_lines=self.broken_lines,
                         partial_last_line=not text.endswith("\n"), end_time=self.t)


_DESCRIPTIONS = (("sleep", "Wait, then check the training log"), ("python evaluate.py", "Evaluate checkpoint"),
                 ("nohup", "Start training in the background"), ("nvidia-smi", "Check GPU usage"),
                 ("ls", "List files"), ("pip", "Check installed packages"), ("env", "Show environment"),
                 ("huggingface-cli", "Download model"), ("python -c", "Inspect dataset"), ("cp", "Save final model"))


def describe_command(command: str) -> str:
    """The short ``description`` Claude Code puts on a Bash call."""
    return next((d for prefix, d in _DESCRIPTIONS if command.startswith(prefix)), "Run command")
