"""OpenCode JSON traces (spec 2.5): epoch-ms times, tool calls, summed cost and tokens."""
from __future__ import annotations

from datetime import datetime, timezone

from ingest.parsers import parse_trace
from traces.steps import Step

UTC = timezone.utc
MS = 1_775_000_000_000  # 2026-03-31T23:33:20Z


def ms(offset: int) -> datetime:
    return datetime.fromtimestamp((MS + offset) / 1000, tz=UTC)


TRACE = "\n".join([
    f'{{"type":"step_start","timestamp":{MS},"sessionID":"ses_1","part":{{"id":"p0","messageID":"m1"}}}}',
    f'{{"type":"text","timestamp":{MS + 500},"sessionID":"ses_1","part":{{"text":"Checking GPU."}}}}',
    f'{{"type":"tool_use","timestamp":{MS + 3000},"sessionID":"ses_1","part":{{"tool":"bash","callID":"call_1",'
    f'"state":{{"status":"completed","input":{{"command":"nvidia-smi"}},"output":"H100",'
    f'"time":{{"start":{MS + 1000},"end":{MS + 2500}}}}}}}}}',
    f'{{"type":"tool_use","timestamp":{MS + 4000},"sessionID":"ses_1","part":{{"tool":"read","callID":"call_2",'
    f'"state":{{"status":"error","input":{{"filePath":"/x"}},"error":"not found"}}}}}}',
    f'{{"type":"step_finish","timestamp":{MS + 5000},"sessionID":"ses_1","part":{{"reason":"tool-calls",'
    f'"cost":0.25,"tokens":{{"input":100,"output":10,"reasoning":5,"cache":{{"read":1000,"write":0}}}}}}}}',
    f'{{"type":"step_finish","timestamp":{MS + 6000},"sessionID":"ses_1","part":{{"reason":"stop",'
    f'"cost":0.5,"tokens":{{"input":200,"output":20,"reasoning":0,"cache":{{"read":0,"write":50}}}}}}}}',
    f'{{"type":"error","timestamp":{MS + 7000},"sessionID":"ses_1","error":{{"name":"APIError",'
    f'"data":{{"message":"rate limited"}}}}}}',
]) + "\n"


def test_it_parses_a_session_with_epoch_ms_times():
    trace = parse_trace(TRACE, scaffold="opencode")
    assert trace.format == "opencode"
    assert trace.steps == [
        Step(0, "assistant", time=ms(500), output="Checking GPU.", line=2),
        Step(1, "tool_call", time=ms(1000), tool="bash", input="nvidia-smi", call_id="call_1", line=3),
        Step(2, "tool_result", time=ms(2500), tool="bash", output="H100", call_id="call_1", line=3),
        Step(3, "tool_call", time=ms(4000), tool="read", input='{"filePath":"/x"}', call_id="call_2", line=4),
        Step(4, "tool_result", time=ms(4000), tool="read", output="not found", is_error=True, call_id="call_2",
             line=4),
        Step(5, "system", time=ms(5000), output="tool-calls", tokens_in=1100, tokens_out=15, cost_usd=0.25, line=5),
        Step(6, "system", time=ms(6000), output="stop", tokens_in=250, tokens_out=20, cost_usd=0.5, line=6),
        Step(7, "text", time=ms(7000), output="rate limited", is_error=True, line=7),
    ]
    assert ms(500) == datetime(2026, 3, 31, 23, 33, 20, 500000, tzinfo=UTC)


def test_cost_and_tokens_are_summed_over_step_finish():
    trace = parse_trace(TRACE)
    assert (trace.cost_usd, trace.tokens_in, trace.tokens_out) == (0.75, 1350, 35)


def test_a_line_prefix_wins_over_event_times():
    trace = parse_trace(f"[2026-04-05T10:00:00Z] {TRACE.splitlines()[1]}\n")
    assert trace.steps[0].time == datetime(2026, 4, 5, 10, 0, 0, tzinfo=UTC)
