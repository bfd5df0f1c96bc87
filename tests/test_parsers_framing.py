"""Line framing, plain-text lines, broken lines and format detection (spec 2.1)."""
from __future__ import annotations

import io
from datetime import datetime, timezone

import pytest

from ingest.parsers import detect_format, parse_trace
from ingest.parsers.framing import frame_lines, parse_prefix
from traces.steps import ParseProblem, Step

UTC = timezone.utc
T = datetime(2026, 4, 5, 10, 0, 0, tzinfo=UTC)
INIT = '{"type":"system","subtype":"init","model":"m"}'


def test_it_strips_the_prefix_and_numbers_lines():
    assert frame_lines("[2026-04-05T10:00:00Z] hello\r\nplain\n\n[2026-04-05T10:00:00Z] \n") == [
        (1, T, "hello"), (2, None, "plain"), (3, None, ""), (4, T, ""),
    ]


def test_a_bracketed_line_that_is_not_a_prefix_is_text():
    assert parse_prefix("[2026-13-05T10:00:00Z] x") == (None, "[2026-13-05T10:00:00Z] x")
    assert parse_prefix("[2026-04-05T10:00:00] x") == (None, "[2026-04-05T10:00:00] x")
    assert parse_prefix("[INFO] loading") == (None, "[INFO] loading")


def test_a_trailing_partial_json_line_is_dropped():
    assert frame_lines(f'{INIT}\n[2026-04-05T10:00:00Z] {{"type":"assistant","mess') == [(1, None, INIT)]


def test_an_unterminated_last_line_that_is_complete_is_kept():
    assert frame_lines(f"{INIT}\n{INIT}") == [(1, None, INIT), (2, None, INIT)]
    assert frame_lines(f"{INIT}\nTerminated") == [(1, None, INIT), (2, None, "Terminated")]


def test_it_accepts_bytes_and_file_lines():
    raw = f"[2026-04-05T10:00:00Z] {INIT}\n"
    assert frame_lines(raw.encode()) == frame_lines(io.StringIO(raw)) == [(1, T, INIT)]


def test_json_lines_split_only_on_newline():
    line = '{"type":"user","message":{"role":"user","content":"a\u2028b"}}'
    assert parse_trace(line + "\n").steps == [Step(0, "text", output="a\u2028b", line=1)]


def test_non_json_lines_become_text_steps_and_broken_json_is_a_problem():
    trace = parse_trace("\n".join([
        "✓ CUDA available", "  ✓ GPU 0 is idle", "", INIT, "Terminated", '{"type": "assistant", "message": {',
        "[1, 2]", '{"type":"result","result":"ok","is_error":false}',
    ]) + "\n", source="a/solve_out.txt")
    assert trace.steps == [
        Step(0, "text", output="✓ CUDA available\n  ✓ GPU 0 is idle", line=1),
        Step(1, "system", input='{"model":"m"}', output="init", line=4),
        Step(2, "text", output="Terminated", line=5),
        Step(3, "text", output='{"type": "assistant", "message": {', line=6),
        Step(4, "text", output="[1, 2]", line=7),
        Step(5, "result", output="ok", line=8),
    ]
    assert [(p.file, p.line) for p in trace.problems] == [("a/solve_out.txt", 6)]
    assert isinstance(trace.problems[0], ParseProblem)


def test_the_text_fallback_splits_on_blank_lines():
    trace = parse_trace("hello\nworld\n\nbye\n")
    assert trace.format == "text"
    assert trace.steps == [Step(0, "text", output="hello\nworld", line=1), Step(1, "text", output="bye", line=4)]
    assert parse_trace("").steps == []


@pytest.mark.parametrize("line, fmt", [
    ('{"type":"thread.started","thread_id":"x"}', "codex_exec"),
    ('{"id":"0","msg":{"type":"session_configured"}}', "codex_protocol"),
    (INIT, "claude_code"),
    ('{"type":"assistant","message":{"content":[]}}', "claude_code"),
    ('{"type":"init","session_id":"s","model":"gemini"}', "gemini"),
    ('{"type":"tool_use","tool_name":"x","tool_id":"1"}', "gemini"),
    ('{"type":"text","timestamp":1,"sessionID":"s","part":{}}', "opencode"),
    ("OpenAI Codex v0.46.0 (research preview)", "codex_text"),
    ("just a log line", "text"),
])
def test_it_detects_each_format(line, fmt):
    assert detect_format(f"[2026-04-05T10:00:00Z] ✓ CUDA\n[2026-04-05T10:00:00Z] {line}\n") == fmt


def test_content_wins_over_the_scaffold_hint():
    assert detect_format(INIT + "\n", scaffold="opencode") == "claude_code"
    assert detect_format("just text\n", scaffold="claude") == "text"
    assert detect_format("user\nhello\n", scaffold="codexhigh") == "codex_text"


def test_the_hint_breaks_a_tie():
    both = INIT + '\n{"type":"init","session_id":"s"}\n'
    assert detect_format(both) == "claude_code"
    assert detect_format(both, scaffold="gemini") == "gemini"


def test_detection_accepts_bytes_and_file_lines():
    raw = f"[2026-04-05T10:00:00Z] {INIT}\n"
    assert detect_format(raw.encode()) == detect_format(io.StringIO(raw)) == "claude_code"


@pytest.mark.parametrize("fmt", ["claude_code", "codex_exec", "codex_protocol", "gemini", "opencode"])
def test_events_of_unexpected_shape_never_raise(fmt):
    from ingest.parsers import PARSERS, collect

    odd = [
        '{"type":"assistant","message":{"id":[1],"content":7,"usage":"x"}}',
        '{"type":"user","message":{"content":{"type":"tool_result","tool_use_id":{"a":1}}}}',
        '{"type":"item.completed","item":{"id":{"x":1},"type":"command_execution","exit_code":"1"}}',
        '{"id":"1","msg":{"type":{"t":1},"call_id":[]}}',
        '{"type":"tool_use","tool_name":[],"tool_id":3,"parameters":5}',
        '{"type":"step_finish","sessionID":"s","part":{"cost":true,"tokens":[1]}}',
        '{"method":"m","response":{"candidates":4}}',
    ]
    trace = collect(PARSERS[fmt](frame_lines("\n".join(odd) + "\n"), "f"))  # the steps the generator yields
    assert [s.index for s in trace.steps] == list(range(len(trace.steps)))
    assert all(s.tool is None or isinstance(s.tool, str) for s in trace.steps)
    assert all(s.call_id is None or isinstance(s.call_id, str) for s in trace.steps)


ORJSON_EDGES = ['NaN', '{"a": 1e400}', '{"a": 123456789012345678901234567890}', '{"a": 9223372036854775807}',
                '{"a": -9223372036854775809}', '"\\ud83d"', '{"a":1,"a":2}', '-0', '1.0', '[1, 2.5e-3]',
                '{"x": "\\u0000"}', ' {"a": [] } ', '0.1', '1E5', '-0.0', '"\\ud83d\\ude00"', '{"a":"\x01"}', '[1,]',
                '{"a" : true, "b": null}', '1.7976931348623157e309', '"\\/"', '123abc', '[]]', '\ufeff{}',
                '{"a":1}\n', '"\u2028"', '1e-400']


@pytest.mark.parametrize("text", ORJSON_EDGES)
def test_loads_is_json_loads_where_orjson_differs(text):
    """ptbsite.jsontext.loads decodes with orjson first: values and error messages are still json.loads'."""
    import json

    from ptbsite.jsontext import loads

    def outcome(decode):
        try:
            value = decode(text)
        except ValueError as exc:
            return ("error", str(exc))
        return (type(value).__name__, repr(value))

    assert outcome(loads) == outcome(json.loads)
