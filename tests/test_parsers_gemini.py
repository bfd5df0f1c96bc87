"""Gemini CLI stream-json and API-log traces (spec 2.4)."""
from __future__ import annotations

from datetime import datetime, timezone

from ingest.parsers import parse_trace
from traces.steps import Step

UTC = timezone.utc

TRACE = "\n".join([
    "Loaded cached credentials.",
    '{"type":"init","timestamp":"2026-02-01T12:00:00.000Z","session_id":"g1","model":"gemini-3-pro"}',
    '{"type":"message","timestamp":"2026-02-01T12:00:01.000Z","role":"user","content":"Train it."}',
    '{"type":"message","timestamp":"2026-02-01T12:00:02.000Z","role":"assistant","content":"I will ","delta":true}',
    '{"type":"message","timestamp":"2026-02-01T12:00:03.000Z","role":"assistant","content":"start.","delta":true}',
    '{"type":"tool_use","timestamp":"2026-02-01T12:00:04.000Z","tool_name":"run_shell_command","tool_id":"t1",'
    '"parameters":{"command":"nvidia-smi"}}',
    '{"type":"tool_result","timestamp":"2026-02-01T12:00:05.000Z","tool_id":"t1","status":"success","output":"ok"}',
    '{"type":"tool_result","timestamp":"2026-02-01T12:00:06.000Z","tool_id":"t9","status":"error",'
    '"error":{"type":"x","message":"denied"}}',
    '{"type":"error","timestamp":"2026-02-01T12:00:07.000Z","severity":"warning","message":"Loop detected"}',
    '{"type":"result","timestamp":"2026-02-01T12:00:08.000Z","status":"success","stats":{"total_tokens":300,'
    '"input_tokens":200,"output_tokens":100,"tool_calls":1,"duration_ms":8000}}',
]) + "\n"


def t(second: int) -> datetime:
    return datetime(2026, 2, 1, 12, 0, second, tzinfo=UTC)


def test_it_parses_stream_json():
    trace = parse_trace(TRACE, scaffold="gemini")
    assert trace.format == "gemini"
    assert trace.model == "gemini-3-pro"
    assert trace.steps == [
        Step(0, "text", output="Loaded cached credentials.", line=1),
        Step(1, "system", time=t(0), input='{"model":"gemini-3-pro","session_id":"g1"}', output="init", line=2),
        Step(2, "text", time=t(1), output="Train it.", line=3),
        Step(3, "assistant", time=t(2), output="I will start.", line=4),
        Step(4, "tool_call", time=t(4), tool="run_shell_command", input="nvidia-smi", call_id="t1", line=6),
        Step(5, "tool_result", time=t(5), tool="run_shell_command", output="ok", call_id="t1", line=7),
        Step(6, "tool_result", time=t(6), output="denied", is_error=True, call_id="t9", line=8),
        Step(7, "text", time=t(7), output="Loop detected", is_error=True, line=9),
        Step(8, "result", time=t(8), output="success", tokens_in=200, tokens_out=100, line=10),
    ]
    assert (trace.tokens_in, trace.tokens_out, trace.tokens_total) == (200, 100, 300)


def test_it_parses_the_older_api_log_shape():
    chunk1 = ('{"candidates":[{"content":{"parts":[{"text":"Hmm","thought":true},{"text":"Run it"},'
              '{"functionCall":{"name":"run_shell_command","args":{"command":"ls"}}}]}}]}')
    chunk2 = '{"usageMetadata":{"promptTokenCount":10,"candidatesTokenCount":4,"thoughtsTokenCount":2}}'
    reply = ('{"method":"generateContent","response":{"candidates":[{"content":{"parts":[{"functionResponse":'
             '{"name":"run_shell_command","response":{"output":"a.py"}}}]}}]}}')
    trace = parse_trace(f'{{"method":"streamGenerateContent","response":[{chunk1},{chunk2}]}}\n{reply}\n')
    assert trace.format == "gemini"
    assert trace.steps == [
        Step(0, "thinking", output="Hmm", tokens_in=10, tokens_out=6, line=1),
        Step(1, "assistant", output="Run it", line=1),
        Step(2, "tool_call", tool="run_shell_command", input="ls", line=1),
        Step(3, "tool_result", tool="run_shell_command", output="a.py", line=2),
    ]
    assert (trace.tokens_in, trace.tokens_out) == (10, 6)
