"""Every trace format streams in bounded memory (issue 28: one streaming path, parsers are generators of steps).

For each format, a generated trace of 2,000 tool calls and one of 20,000 (ten times the file) are read in 64 KiB
blocks through ``ingest.parsers.stream_trace``, each step dropped as it is pulled, under ``tracemalloc``. The peak
of Python memory while parsing the large trace stays within 1.5 times the small one's peak (plus 256 KiB of
slack for allocator noise): what is held is a window of steps, not the file. The same test with the whole file
parsed first (the former path of every format but Claude Code's) grows tenfold, which the last test checks, so the
measure can fail.
"""
from __future__ import annotations

import json
import tracemalloc
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from ingest.parsers import PARSERS, collect, stream_trace
from ingest.parsers.framing import frame_lines

SMALL, LARGE = 2_000, 20_000
BLOCK = 64 * 1024


def _j(value: dict) -> str:
    return json.dumps(value, separators=(",", ":"))


def _claude_code(n: int) -> Iterator[str]:
    yield _j({"type": "system", "subtype": "init", "model": "claude-x", "session_id": "s"})
    for i in range(n):
        yield _j({"type": "assistant", "message": {"id": f"msg_{i}", "role": "assistant", "content": [
            {"type": "tool_use", "id": f"toolu_{i}", "name": "Bash", "input": {"command": f"echo {i}"}}],
            "usage": {"input_tokens": 10, "output_tokens": 2}}})
        yield _j({"type": "user", "message": {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": f"toolu_{i}", "content": f"out {i} " + "x" * 200}]}})
    yield _j({"type": "result", "subtype": "success", "result": "done", "total_cost_usd": 1.0,
              "usage": {"input_tokens": 1, "output_tokens": 1}})


def _codex_exec(n: int) -> Iterator[str]:
    yield _j({"type": "thread.started", "thread_id": "t"})
    yield _j({"type": "turn.started"})
    for i in range(n):
        yield _j({"type": "item.started", "item": {"id": f"item_{i}", "type": "command_execution",
                                                    "command": f"echo {i}", "status": "in_progress"}})
        yield _j({"type": "item.completed", "item": {"id": f"item_{i}", "type": "command_execution",
                                                      "command": f"echo {i}", "aggregated_output": "x" * 200,
                                                      "exit_code": 0, "status": "completed"}})
    yield _j({"type": "turn.completed", "usage": {"input_tokens": 1, "output_tokens": 1}})


def _codex_protocol(n: int) -> Iterator[str]:
    yield _j({"id": "0", "msg": {"type": "session_configured", "model": "gpt-x"}})
    for i in range(n):
        yield _j({"id": str(i), "msg": {"type": "exec_command_begin", "call_id": f"c_{i}", "command": ["echo", str(i)]}})
        yield _j({"id": str(i), "msg": {"type": "exec_command_end", "call_id": f"c_{i}", "stdout": "x" * 200,
                                        "exit_code": 0}})
    yield _j({"id": "z", "msg": {"type": "task_complete", "last_agent_message": "done"}})


def _codex_text(n: int) -> Iterator[str]:
    yield from ("OpenAI Codex v0.1.0", "--------", "model: gpt-x", "--------")
    for i in range(n):
        yield from ("exec", f"echo {i}", " succeeded in 5ms:", "x" * 200)
    yield from ("tokens used", "1,000")


def _gemini(n: int) -> Iterator[str]:
    yield _j({"type": "init", "session_id": "s", "model": "gemini-x"})
    for i in range(n):
        yield _j({"type": "tool_use", "tool_name": "run_shell_command", "tool_id": f"t_{i}",
                  "parameters": {"command": f"echo {i}"}})
        yield _j({"type": "tool_result", "tool_id": f"t_{i}", "status": "success", "output": "x" * 200})
    yield _j({"type": "result", "status": "success", "stats": {"input_tokens": 1, "output_tokens": 1,
                                                                "total_tokens": 2}})


def _opencode(n: int) -> Iterator[str]:
    for i in range(n):
        yield _j({"type": "step_start", "sessionID": "s", "part": {"id": f"ps_{i}"}})
        yield _j({"type": "text", "sessionID": "s", "part": {"id": f"pt_{i}", "text": f"step {i}"}})
        yield _j({"type": "tool_use", "sessionID": "s", "part": {
            "id": f"pc_{i}", "callID": f"c_{i}", "tool": "bash",
            "state": {"status": "completed", "input": {"command": f"echo {i}"}, "output": "x" * 200}}})
        yield _j({"type": "step_finish", "sessionID": "s", "part": {"reason": "tool-calls", "cost": 0.001,
                                                                   "tokens": {"input": 1, "output": 1}}})


FORMATS: dict[str, Callable[[int], Iterator[str]]] = {
    "claude_code": _claude_code, "codex_exec": _codex_exec, "codex_protocol": _codex_protocol,
    "codex_text": _codex_text, "gemini": _gemini, "opencode": _opencode}


def _write(path: Path, fmt: str, n: int) -> Path:
    with path.open("w") as out:
        for i, line in enumerate(FORMATS[fmt](n)):
            out.write(f"[2026-04-05T10:{(i // 60) % 60:02d}:{i % 60:02d}Z] {line}\n")
    return path


def _pieces(path: Path) -> Iterator[str]:
    with path.open("rb") as handle:
        while block := handle.read(BLOCK):
            yield block.decode("utf-8")  # the generated traces are ASCII: no character is cut


def _streamed_peak(path: Path) -> tuple[int, int, str]:
    """``(peak bytes traced, steps, format)`` of pulling every step of ``path`` through ``stream_trace``."""
    tracemalloc.start()
    try:
        stream = stream_trace(_pieces(path), source=path.name)
        steps = 0
        while True:
            try:
                next(stream)
            except StopIteration as stop:
                trace = stop.value
                break
            steps += 1
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    return peak, steps, trace.format


def _whole_peak(path: Path, fmt: str) -> int:
    """Peak bytes traced parsing ``path`` the former way: the whole file framed, then every step collected."""
    tracemalloc.start()
    try:
        collect(PARSERS[fmt](frame_lines(path.read_text()), path.name))
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


@pytest.mark.parametrize("fmt", sorted(FORMATS))
def test_every_format_streams_in_memory_bounded_by_a_window_of_steps(fmt, tmp_path):
    small = _write(tmp_path / "small.txt", fmt, SMALL)
    large = _write(tmp_path / "large.txt", fmt, LARGE)
    assert large.stat().st_size > 9 * small.stat().st_size > 9 * 400_000
    small_peak, small_steps, small_format = _streamed_peak(small)
    large_peak, large_steps, large_format = _streamed_peak(large)
    assert small_format == large_format == fmt
    assert large_steps >= 2 * LARGE and large_steps - small_steps >= 2 * (LARGE - SMALL)
    assert large_peak < 1.5 * small_peak + 256 * 1024, (fmt, small_peak, large_peak)


def test_the_whole_file_path_grows_with_the_file(tmp_path):
    """The measure can fail: parsing the whole file first holds it, so its peak grows with it."""
    small = _write(tmp_path / "small.txt", "codex_exec", SMALL)
    large = _write(tmp_path / "large.txt", "codex_exec", LARGE)
    assert _whole_peak(large, "codex_exec") > 5 * _whole_peak(small, "codex_exec")


def _open_item_trace(n: int) -> list[str]:
    """A codex exec trace whose first item completes only after ``n`` other items (the whole trace as lines)."""
    lines = [_j({"type": "thread.started", "thread_id": "t"}),
             _j({"type": "item.started", "item": {"id": "slow", "type": "command_execution", "command": "sleep 1",
                                                  "status": "in_progress"}})]
    for i in range(n):
        lines.append(_j({"type": "item.completed", "item": {"id": f"i{i}", "type": "agent_message", "text": f"m {i}"}}))
    lines.append(_j({"type": "item.completed", "item": {"id": "slow", "type": "command_execution",
                                                        "command": "sleep 1 # done", "aggregated_output": "ok",
                                                        "exit_code": 0, "status": "completed"}}))
    return [line + "\n" for line in lines]


def test_a_step_still_open_is_held_and_past_max_held_released_with_a_problem(monkeypatch):
    """An item's steps are held until it completes, so its completed version updates them however many steps
    later (here 300, with a window of 4); past ``MAX_HELD`` held steps (set to 50) the step is released all the
    same, memory staying bounded, and the late version is a problem instead of a change."""
    from ingest.parsers import _builder, parse_trace

    monkeypatch.setattr(_builder, "STREAM_WINDOW", 4)
    held = parse_trace(_open_item_trace(300), scaffold="codex")
    assert held.steps[1].input == "sleep 1 # done" and held.problems == []
    assert [s.kind for s in held.steps[-2:]] == ["assistant", "tool_result"]
    monkeypatch.setattr(_builder, "MAX_HELD", 50)
    released = parse_trace(_open_item_trace(300), scaffold="codex")
    assert released.steps[1].input == "sleep 1"
    assert len(released.problems) == 1 and "came after its step 1 was handed on" in released.problems[0].message
    assert released.problems[0].line == 2
