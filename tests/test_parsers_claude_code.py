"""Claude Code stream-json traces (spec 2.2): split messages, tool pairing, results, unknown events."""
from __future__ import annotations

from datetime import datetime, timezone

from ingest.parsers import parse_trace
from traces.steps import ParseProblem, Step

UTC = timezone.utc
T0 = datetime(2026, 4, 5, 10, 0, 0, tzinfo=UTC)
T1 = datetime(2026, 4, 5, 10, 0, 1, tzinfo=UTC)

USAGE = ('"usage":{"input_tokens":10,"cache_creation_input_tokens":100,"cache_read_input_tokens":1000,'
         '"output_tokens":20}')
TRACE = "\n".join([
    "✓ CUDA available with 1 device(s) (expected 1)",
    "  GPU 0: NVIDIA H100 80GB HBM3 (85.0 GB)",
    '{"type":"system","subtype":"init","session_id":"s1","cwd":"/home/ben/task","model":"claude-opus-4-6",'
    '"tools":["Bash"],"permissionMode":"bypassPermissions"}',
    # one API message (id m1) split over three lines, each repeating the usage
    '{"type":"assistant","message":{"id":"m1","role":"assistant","content":[{"type":"thinking","thinking":"",'
    '"signature":"sig"}],' + USAGE + '}}',
    '{"type":"assistant","message":{"id":"m1","role":"assistant","content":[{"type":"text","text":"Let me look."}],'
    + USAGE + '}}',
    '{"type":"assistant","message":{"id":"m1","role":"assistant","content":[{"type":"tool_use","id":"toolu_1",'
    '"name":"Bash","input":{"command":"ls -la","description":"list"}}],' + USAGE + '}}',
    '{"type":"user","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_1",'
    '"content":"total 0","is_error":false}]},"timestamp":"2026-04-05T10:00:02.500Z"}',
    '{"type":"assistant","message":{"id":"m2","role":"assistant","content":[{"type":"tool_use","id":"toolu_2",'
    '"name":"Read","input":{"file_path":"/x"}}],"usage":{"input_tokens":5,"output_tokens":7}}}',
    '[2026-04-05T10:00:01Z] {"type":"user","message":{"role":"user","content":[{"type":"tool_result",'
    '"tool_use_id":"toolu_2","content":[{"type":"text","text":"no such file"}],"is_error":true}]}}',
    '{"type":"result","subtype":"success","is_error":false,"result":"Done.","total_cost_usd":1.5,'
    '"usage":{"input_tokens":1,"cache_read_input_tokens":2,"output_tokens":3}}',
    '{"type":"rate_limit_event","rate_limit_info":{"status":"allowed"}}',
    '{"type":"result","subtype":"success","is_error":false,"result":"Late.","total_cost_usd":2.25,'
    '"usage":{"input_tokens":40,"output_tokens":50},"origin":{"kind":"task-notification"}}',
]) + "\n"


def test_it_parses_a_whole_session():
    trace = parse_trace(TRACE, scaffold="claude")
    assert trace.format == "claude_code"
    assert trace.model == "claude-opus-4-6"
    assert trace.problems == []
    assert trace.steps == [
        Step(0, "text", output="✓ CUDA available with 1 device(s) (expected 1)\n"
                                "  GPU 0: NVIDIA H100 80GB HBM3 (85.0 GB)", line=1),
        Step(1, "system", input='{"model":"claude-opus-4-6","cwd":"/home/ben/task","permissionMode":'
             '"bypassPermissions","session_id":"s1"}', output="init", line=3),
        Step(2, "thinking", output="", tokens_in=1110, tokens_out=20, line=4),
        Step(3, "assistant", output="Let me look.", line=5),
        Step(4, "tool_call", tool="Bash", input="ls -la", call_id="toolu_1", line=6, label="list"),
        Step(5, "tool_result", time=datetime(2026, 4, 5, 10, 0, 2, 500000, tzinfo=UTC), tool="Bash",
             output="total 0", call_id="toolu_1", line=7),
        Step(6, "tool_call", tool="Read", input='{"file_path":"/x"}', call_id="toolu_2", tokens_in=5, tokens_out=7,
             line=8),
        Step(7, "tool_result", time=T1, tool="Read", output="no such file", is_error=True, call_id="toolu_2", line=9),
        Step(8, "result", output="Done.", tokens_in=3, tokens_out=3, cost_usd=1.5, line=10, label="success"),
        # issue 13: a rate_limit_event is a typed, labelled step (it was a raw JSON system step)
        Step(9, "system", input='{"type":"rate_limit_event","rate_limit_info":{"status":"allowed"}}',
             output="status: allowed", line=11, label="rate limit"),
        Step(10, "result", output="Late.", tokens_in=40, tokens_out=50, cost_usd=2.25, line=12, label="success"),
    ]


def test_the_last_result_gives_the_totals():
    trace = parse_trace(TRACE)
    assert (trace.tokens_in, trace.tokens_out, trace.cost_usd) == (40, 50, 2.25)


def test_a_split_message_counts_its_usage_once():
    trace = parse_trace("\n".join(TRACE.splitlines()[:8]) + "\n")  # no result event: totals from messages
    assert (trace.tokens_in, trace.tokens_out, trace.cost_usd) == (1110 + 5, 20 + 7, None)
    assert sum(s.tokens_out or 0 for s in trace.steps) == 27


def test_a_broken_line_is_reported_and_the_rest_still_parses():
    lines = TRACE.splitlines()
    lines[4] = '{"type":"assistant","message":{"id":"m1"'
    trace = parse_trace("\n".join(lines) + "\n", source="runs/x/solve_out.txt")
    assert trace.problems == [ParseProblem("runs/x/solve_out.txt", 5, trace.problems[0].message)]
    assert str(trace.problems[0]).startswith("runs/x/solve_out.txt:5: broken JSON line")
    assert trace.steps[3] == Step(3, "text", output='{"type":"assistant","message":{"id":"m1"', line=5)
    assert [s.kind for s in trace.steps[4:]] == ["tool_call", "tool_result", "tool_call", "tool_result", "result",
                                                 "system", "result"]
    assert trace.cost_usd == 2.25


def test_prefixed_lines_take_the_prefix_time():
    trace = parse_trace('[2026-04-05T10:00:00Z] {"type":"user","message":{"role":"user","content":"go on"},'
                        '"timestamp":"2026-04-05T11:00:00.000Z"}\n')
    assert trace.steps == [Step(0, "text", time=T0, output="go on", line=1)]


def test_a_parser_failing_mid_stream_keeps_the_steps_handed_on_and_shows_the_rest_as_plain_text(monkeypatch):
    """A format parser that fails after handing steps on (stand-in for a parser bug: the real Claude Code parser,
    made to raise at line 12; tests/test_parsers_properties.py keeps real input from doing so) takes nothing back:
    the steps handed on stay, the lines after the last of them are plain text, with a problem naming the failure."""
    from ingest import parsers
    from ingest.parsers import _builder, claude_code, stream_trace

    def failing(lines, source):
        def until_broken():
            for line in lines:
                if line[0] == 12:
                    raise KeyError("bug")
                yield line
        return claude_code.parse(until_broken(), source)

    monkeypatch.setattr(_builder, "STREAM_WINDOW", 2)
    monkeypatch.setitem(parsers.PARSERS, "claude_code", failing)
    events = [f'{{"type":"assistant","message":{{"id":"m{i}","role":"assistant","content":[{{"type":"text",'
              f'"text":"step {i}"}}]}}}}' for i in range(14)]
    handed: list[Step] = []
    stream = stream_trace([TRACE.splitlines(keepends=True)[2], *(e + "\n" for e in events)],
                          source="solve_out.txt", scaffold="claude")
    while True:  # the steps as the stream yields them, then the trace it returns
        try:
            handed.append(next(stream))
        except StopIteration as stop:
            trace = stop.value
            break
    assert [s.index for s in handed] == list(range(len(handed)))
    # handed on before the failure: the steps of lines 1-9 (a window of 2 steps held back)
    assert [s.output for s in handed[:9]] == ["init"] + [f"step {i}" for i in range(8)]
    assert [(s.kind, s.line) for s in handed[9:]] == [("text", 10)]
    assert handed[9].output.splitlines() == events[8:]  # lines 10-15: the held steps' lines, 12 and after
    assert trace.format == "text" and trace.steps == []
    assert trace.problems[0] == ParseProblem("solve_out.txt", 10, "the claude_code parser failed (KeyError: 'bug'): "
                                             "the trace is shown as plain text from this line on")
