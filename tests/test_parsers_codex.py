"""Codex traces in all three eras (spec 2.3): exec --json, the legacy protocol, plain text."""
from __future__ import annotations

from datetime import datetime, timezone

from ingest.parsers import detect_format, parse_trace
from traces.steps import Step

UTC = timezone.utc

EXEC_JSON = "\n".join([
    "openai sk-not-a-real-key",
    '[2026-03-01T09:00:00Z] {"type":"thread.started","thread_id":"th1"}',
    '[2026-03-01T09:00:00Z] {"type":"turn.started"}',
    '[2026-03-01T09:00:01Z] {"type":"item.completed","item":{"id":"item_0","type":"reasoning","text":"**Plan**"}}',
    '[2026-03-01T09:00:02Z] {"type":"item.started","item":{"id":"item_1","type":"command_execution",'
    '"command":"bash -lc ls","aggregated_output":"","exit_code":null,"status":"in_progress"}}',
    '[2026-03-01T09:00:04Z] {"type":"item.completed","item":{"id":"item_1","type":"command_execution",'
    '"command":"bash -lc ls","aggregated_output":"a.py\\n","exit_code":0,"status":"completed"}}',
    '[2026-03-01T09:00:05Z] {"type":"item.completed","item":{"id":"item_2","type":"command_execution",'
    '"command":"bash -lc false","aggregated_output":"","exit_code":1,"status":"failed"}}',
    '[2026-03-01T09:00:06Z] {"type":"item.started","item":{"id":"item_3","type":"todo_list",'
    '"items":[{"text":"train","completed":false}]}}',
    '[2026-03-01T09:00:07Z] {"type":"item.updated","item":{"id":"item_3","type":"todo_list",'
    '"items":[{"text":"train","completed":true}]}}',
    '[2026-03-01T09:00:08Z] {"type":"item.completed","item":{"id":"item_4","type":"file_change",'
    '"changes":[{"path":"train.py","kind":"add"}],"status":"completed"}}',
    '[2026-03-01T09:00:09Z] {"type":"item.completed","item":{"id":"item_5","type":"web_search","query":"lora"}}',
    '[2026-03-01T09:00:10Z] {"type":"item.completed","item":{"id":"item_6","type":"agent_message","text":"Done."}}',
    '[2026-03-01T09:00:10Z] {"type":"turn.completed","usage":{"input_tokens":100,"cached_input_tokens":80,'
    '"output_tokens":10}}',
    '[2026-03-01T09:00:11Z] {"type":"error","message":"Reconnecting... 2/5"}',
    # a reprompt: a new codex exec process, item ids start again at item_0
    '[2026-03-01T09:00:12Z] {"type":"thread.started","thread_id":"th1"}',
    '[2026-03-01T09:00:13Z] {"type":"item.completed","item":{"id":"item_0","type":"agent_message","text":"Again."}}',
    '[2026-03-01T09:00:14Z] {"type":"turn.completed","usage":{"input_tokens":200,"cached_input_tokens":0,'
    '"output_tokens":20}}',
    '[2026-03-01T09:00:15Z] {"type":"turn.failed","error":{"message":"stream disconnected"}}',
]) + "\n"


def t(second: int) -> datetime:
    return datetime(2026, 3, 1, 9, 0, second, tzinfo=UTC)


def test_exec_json_items_keep_their_completed_version():
    trace = parse_trace(EXEC_JSON, scaffold="codex")
    assert trace.format == "codex_exec"
    assert trace.problems == []
    assert trace.steps == [
        Step(0, "text", output="openai sk-not-a-real-key", line=1),
        Step(1, "system", time=t(0), output='{"type":"thread.started","thread_id":"th1"}', line=2),
        Step(2, "thinking", time=t(1), output="**Plan**", line=4),
        Step(3, "tool_call", time=t(2), tool="shell", input="bash -lc ls", call_id="item_1", line=5),
        Step(4, "tool_result", time=t(4), tool="shell", output="a.py\n", call_id="item_1", line=6),
        Step(5, "tool_call", time=t(5), tool="shell", input="bash -lc false", call_id="item_2", line=7),
        Step(6, "tool_result", time=t(5), tool="shell", output="", is_error=True, call_id="item_2", line=7),
        Step(7, "tool_call", time=t(6), tool="todo_list", input="[x] train", call_id="item_3", line=8),
        Step(8, "tool_call", time=t(8), tool="file_change", input="add train.py", call_id="item_4", line=10),
        Step(9, "tool_result", time=t(8), tool="file_change", output="completed", call_id="item_4", line=10),
        Step(10, "tool_call", time=t(9), tool="web_search", input="lora", call_id="item_5", line=11),
        Step(11, "assistant", time=t(10), output="Done.", line=12),
        Step(12, "system", time=t(10), output='{"type":"turn.completed","usage":{"input_tokens":100,'
             '"cached_input_tokens":80,"output_tokens":10}}', tokens_in=100, tokens_out=10, line=13),
        Step(13, "text", time=t(11), output="Reconnecting... 2/5", is_error=True, line=14),
        Step(14, "system", time=t(12), output='{"type":"thread.started","thread_id":"th1"}', line=15),
        Step(15, "assistant", time=t(13), output="Again.", line=16),
        Step(16, "system", time=t(14), output='{"type":"turn.completed","usage":{"input_tokens":200,'
             '"cached_input_tokens":0,"output_tokens":20}}', tokens_in=100, tokens_out=10, line=17),
        Step(17, "text", time=t(15), output="stream disconnected", is_error=True, line=18),
    ]
    # issue 13 (spec 2.3 corrected): turn.completed.usage is the thread's running total, and the reprompt resumes
    # thread th1, so the run used 200 / 20 (the last snapshot) and the second turn 100 / 10 (it was 300 / 30 and
    # 200 / 20 when snapshots were summed).
    assert (trace.tokens_in, trace.tokens_out) == (200, 20)


def test_exec_json_is_detected_after_stderr_noise_whatever_the_hint():
    noise = "".join(f"warning {i}\n" for i in range(150))
    assert detect_format(noise + EXEC_JSON, scaffold="claude") == "codex_exec"


PROTOCOL = "\n".join([
    '{"model":"o4-mini","provider":"openai"}',
    '{"id":"0","msg":{"type":"session_configured","session_id":"s","model":"o4-mini","cwd":"/t"}}',
    '{"id":"1","msg":{"type":"task_started","model_context_window":200000}}',
    '{"id":"1","msg":{"type":"agent_reasoning_delta","delta":"Think"}}',
    '{"id":"1","msg":{"type":"agent_reasoning_delta","delta":"ing."}}',
    '{"id":"1","msg":{"type":"agent_message_delta","delta":"Hel"}}',
    '{"id":"1","msg":{"type":"agent_message_delta","delta":"lo"}}',
    '{"id":"1","msg":{"type":"agent_message","message":"Hello"}}',
    '{"id":"1","msg":{"type":"exec_command_begin","call_id":"c1","command":["bash","-lc","ls -a"],"cwd":"/t"}}',
    '{"id":"1","msg":{"type":"exec_command_output_delta","call_id":"c1","chunk":"x"}}',
    '{"id":"1","msg":{"type":"exec_command_end","call_id":"c1","exit_code":2,"stdout":"","stderr":"ls: nope"}}',
    '{"id":"1","msg":{"type":"token_count","input_tokens":50,"output_tokens":5}}',
    '{"id":"1","msg":{"type":"token_count","input_tokens":70,"output_tokens":6}}',
    '{"id":"1","msg":{"type":"task_complete","last_agent_message":"Hello"}}',
    '{"id":"1","msg":{"type":"shutdown_complete"}}',
]) + "\n"


def test_protocol_deltas_are_concatenated_and_commands_paired():
    trace = parse_trace(PROTOCOL)
    assert trace.format == "codex_protocol"
    assert trace.model == "o4-mini"
    assert trace.steps == [
        Step(0, "system", output='{"model":"o4-mini","provider":"openai"}', line=1),
        Step(1, "system", input='{"session_id":"s","model":"o4-mini","cwd":"/t"}', output="session_configured",
             line=2),
        Step(2, "thinking", output="Thinking.", line=4),
        Step(3, "assistant", output="Hello", line=6),
        Step(4, "tool_call", tool="shell", input="bash -lc 'ls -a'", call_id="c1", line=9),
        Step(5, "tool_result", tool="shell", output="ls: nope", is_error=True, call_id="c1", line=11),
        Step(6, "result", output="Hello", line=14),
        Step(7, "system", output='{"type":"shutdown_complete"}', line=15),
    ]
    assert (trace.tokens_in, trace.tokens_out) == (120, 11)


def test_protocol_cumulative_token_counts_keep_the_last():
    trace = parse_trace('{"id":"1","msg":{"type":"token_count","session":{"input_tokens":5,"output_tokens":1}}}\n'
                        '{"id":"1","msg":{"type":"token_count","session":{"input_tokens":9,"output_tokens":2}}}\n')
    assert (trace.format, trace.tokens_in, trace.tokens_out, trace.steps) == ("codex_protocol", 9, 2, [])


PLAIN = """\
[2026-01-10T08:00:00Z] Reading additional input from stdin...
[2026-01-10T08:00:00Z] OpenAI Codex v0.46.0 (research preview)
[2026-01-10T08:00:00Z] --------
[2026-01-10T08:00:00Z] workdir: /home/ben/task
[2026-01-10T08:00:00Z] model: gpt-5-codex
[2026-01-10T08:00:00Z] --------
[2026-01-10T08:00:01Z] user
[2026-01-10T08:00:01Z] Train the model.
[2026-01-10T08:00:02Z] thinking
[2026-01-10T08:00:02Z] **Listing files**
[2026-01-10T08:00:03Z] exec
[2026-01-10T08:00:03Z] bash -lc ls in /home/ben/task
[2026-01-10T08:00:04Z]  succeeded in 23ms:
[2026-01-10T08:00:04Z] train.py
[2026-01-10T08:00:04Z] data
[2026-01-10T08:00:05Z] exec
[2026-01-10T08:00:05Z] bash -lc 'python x.py' in /home/ben/task
[2026-01-10T08:00:06Z]  exited 1 in 5ms:
[2026-01-10T08:00:06Z] Traceback
[2026-01-10T08:00:07Z] codex
[2026-01-10T08:00:07Z] All done.
[2026-01-10T08:00:08Z] tokens used
[2026-01-10T08:00:08Z] 1,234,567
"""


def at(second: int) -> datetime:
    return datetime(2026, 1, 10, 8, 0, second, tzinfo=UTC)


def test_plain_text_blocks_and_tokens_used():
    trace = parse_trace(PLAIN, scaffold="codexhigh")
    assert trace.format == "codex_text"
    assert trace.model == "gpt-5-codex"
    assert trace.steps == [
        Step(0, "text", time=at(0), output="Reading additional input from stdin...", line=1),
        Step(1, "system", time=at(0), input="workdir: /home/ben/task\nmodel: gpt-5-codex",
             output="OpenAI Codex v0.46.0 (research preview)", line=2),
        Step(2, "text", time=at(1), output="Train the model.", line=7),
        Step(3, "thinking", time=at(2), output="**Listing files**", line=9),
        Step(4, "tool_call", time=at(3), tool="shell", input="bash -lc ls in /home/ben/task", line=11),
        Step(5, "tool_result", time=at(4), tool="shell", output="train.py\ndata", line=13),
        Step(6, "tool_call", time=at(5), tool="shell", input="bash -lc 'python x.py' in /home/ben/task", line=16),
        Step(7, "tool_result", time=at(6), tool="shell", output="Traceback", is_error=True, line=18),
        Step(8, "assistant", time=at(7), output="All done.", line=20),
        Step(9, "result", time=at(8), output="1,234,567", line=22),
    ]
    assert (trace.tokens_total, trace.tokens_in, trace.tokens_out) == (1234567, None, None)


def test_very_old_plain_text_with_codex_own_prefix():
    trace = parse_trace("[2025-08-01T10:00:00] User instructions:\nDo it.\n"
                        "[2025-08-01T10:00:05] exec bash -lc ls in /t\n"
                        "[2025-08-01T10:00:06] bash -lc ls in /t succeeded in 3ms:\nx\n"
                        "[2025-08-01T10:00:07] tokens used: 4,000\n", scaffold="codex")
    old = datetime(2025, 8, 1, 10, 0, 0, tzinfo=UTC)
    assert trace.format == "codex_text"
    assert trace.steps == [
        Step(0, "text", time=old, output="Do it.", line=1),
        Step(1, "tool_call", time=old.replace(second=5), tool="shell", input="bash -lc ls in /t", line=3),
        Step(2, "tool_result", time=old.replace(second=6), tool="shell", output="x", line=4),
        Step(3, "result", time=old.replace(second=7), output="4,000", line=6),
    ]
    assert trace.tokens_total == 4000
