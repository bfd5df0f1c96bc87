"""No trace can lose a run or crash a parser (issue 13): damaged text, deep nesting, huge outputs, cut and split
lines, and the scaffold quirks of public bug reports, each with its input built here and ingested for real."""
from __future__ import annotations

import json
import re
from pathlib import Path

import duckdb
import pytest

from traces import layout, selectors
from ingest.parsers import parse_trace
from ingest.tree import ingest_tree
from traces.vocabulary import STEP_TEXT_CAP

CLAUDE = "claude_claude-opus-4-6_10h_run1"
CODEX = "codex_gpt-5.1-codex-max_10h_v4_seed1"
OPENCODE = "opencode_opencode_kimi-k2.5_10h_run2"
RUN_DIR = "gsm8k_Qwen_Qwen3-1.7B-Base_17000001"
INIT = '{"type":"system","subtype":"init","model":"claude-opus-4-6","session_id":"s1"}'
RESULT = '{"type":"result","subtype":"success","is_error":false,"result":"done","total_cost_usd":1.0}'


def j(event: dict) -> str:
    return json.dumps(event, separators=(",", ":"))


def tool_call(call_id: str, command: str) -> str:
    return j({"type": "assistant", "message": {"id": f"m_{call_id}", "content": [
        {"type": "tool_use", "id": call_id, "name": "Bash", "input": {"command": command}}]}})


def tool_result(call_id: str, content: str) -> str:
    return j({"type": "user", "message": {"content": [
        {"type": "tool_result", "tool_use_id": call_id, "content": content}]}})


def write_run(root: Path, trace: str | bytes, *, method: str = CLAUDE, run_dir: str = RUN_DIR,
              metrics: str | None = '{"accuracy": 0.4}', **files: str) -> str:
    """One run directory with ``trace`` as solve_out.txt; returns the run id."""
    path = root / method / run_dir
    path.mkdir(parents=True)
    (path / "solve_out.txt").write_bytes(trace if isinstance(trace, bytes) else trace.encode("utf-8", "surrogatepass"))
    (path / "time_taken.txt").write_text("05:00:00\n")
    if metrics is not None:
        (path / "metrics.json").write_text(metrics)
    (path / "contamination_judgement.txt").write_text("no contamination detected\n")
    (path / "disallowed_model_judgement.txt").write_text("only allowed use detected\n")
    for name, text in files.items():
        (path / name).write_text(text)
    return layout.run_id(method, run_dir)


def ingest(root: Path) -> None:
    report = ingest_tree(root=root)
    assert (report.stored, report.failed) == (1, 0), report.problems


def steps(run_id: str, **filters) -> list:
    return selectors.steps_page(run_id, limit=500, **filters).steps


# --- text that cannot be stored as it is ------------------------------------------------------------------------

def test_a_lone_surrogate_and_invalid_bytes_no_longer_lose_the_run(fresh_warehouse, tmp_path, client):
    trace = "\n".join([INIT, tool_call("toolu_1", "head log.txt"),
                       # an emoji cut in half by truncation: the JSON text holds a lone high surrogate
                       '{"type":"user","message":{"content":[{"type":"tool_result","tool_use_id":"toolu_1",'
                       '"content":"loss 0.3 \\ud83d"}]}}', RESULT]) + "\n"
    data = trace.encode().replace(b"head log.txt", b"head \xff\xfelog.txt")  # two undecodable bytes
    run_id = write_run(tmp_path / "tree", data)
    ingest(tmp_path / "tree")
    found = steps(run_id)
    assert found[2].output == "loss 0.3 \ufffd"
    assert found[1].input == "head \ufffd\ufffdlog.txt"
    texts = selectors.run_texts(run_id)
    assert texts.chars_replaced == 3
    assert client.get(f"/api/runs/{run_id}").json()["chars_replaced"] == 3
    assert "3 undecodable characters replaced" in client.get(f"/runs/{run_id}/").content.decode()


def test_nul_characters_are_kept_visible(fresh_warehouse, tmp_path, client):
    trace = "\n".join([INIT, tool_call("toolu_1", "cat bin"), tool_result("toolu_1", "ab\x00cd"), RESULT]) + "\n"
    assert "\\u0000" in trace
    run_id = write_run(tmp_path / "tree", trace)
    ingest(tmp_path / "tree")
    assert steps(run_id)[2].output == "ab\u2400cd"
    assert "ab\u2400cd" in client.get(f"/runs/{run_id}/").content.decode()


DEEP = "[" * 1000 + "]" * 1000
DEEP_LINES = {
    "claude_code": [INIT, '{"type":"assistant","message":{"id":"m","content":' + DEEP + "}}", RESULT],
    "codex_exec": ['{"type":"thread.started","thread_id":"t"}', '{"type":"item.completed","item":' + DEEP + "}",
                   '{"type":"turn.completed","usage":{"input_tokens":5,"output_tokens":1}}'],
    "codex_protocol": ['{"id":"0","msg":{"type":"session_configured","model":"m"}}', '{"id":"1","msg":' + DEEP + "}",
                       '{"id":"2","msg":{"type":"task_complete","last_agent_message":"ok"}}'],
    "gemini": ['{"type":"init","session_id":"s","model":"g"}', '{"type":"message","role":"assistant","content":'
               + DEEP + "}", '{"type":"result","status":"success","stats":{"input_tokens":1,"output_tokens":1}}'],
    "opencode": ['{"type":"step_start","sessionID":"s","part":{"id":"p0"}}',
                 '{"type":"text","sessionID":"s","part":' + DEEP + "}",
                 '{"type":"step_finish","sessionID":"s","part":{"reason":"stop"}}'],
}


@pytest.mark.parametrize("fmt", sorted(DEEP_LINES))
def test_a_line_nested_too_deep_is_kept_as_text_with_a_problem(fmt):
    lines = DEEP_LINES[fmt]
    trace = parse_trace("\n".join(lines) + "\n", source="solve_out.txt")
    assert trace.format == fmt
    assert [(p.line, p.message) for p in trace.problems] == [
        (2, "JSON nested deeper than 100 levels: kept as text")]
    assert [s.output for s in trace.steps if s.line == 2] == [lines[1]]
    # the events around it still parse (an OpenCode step_start is a marker without a step)
    assert {s.line for s in trace.steps} == ({2, 3} if fmt == "opencode" else {1, 2, 3})


def test_a_run_with_a_too_deep_line_is_stored(fresh_warehouse, tmp_path):
    run_id = write_run(tmp_path / "tree", "\n".join(DEEP_LINES["claude_code"]) + "\n")
    ingest(tmp_path / "tree")
    assert any("nested deeper than 100 levels" in p for p in selectors.run_texts(run_id).problems)


def test_a_tool_input_nested_too_deep_is_kept_as_text(fresh_warehouse, tmp_path):
    """A codex_text ``exec`` whose command is a JSON text 2,000 levels deep (found by CI's property test): the
    facets (``traces.vocabulary.call_text``), the evidence marks and the run page's input reading parse it through
    ``ptbsite.jsontext``; none raises RecursionError, the run is stored and its page shows the text."""
    from django.test import Client

    from ingest.evidence import EvidenceContext, mark
    from ptbsite import jsontext
    from traces.tool_input import read_tool_input
    from traces.vocabulary import INVALID_JSON, call_text

    deep = '{"type":"assistant","message":' + "[" * 2000 + "]" * 2000 + "}"
    with pytest.raises(jsontext.TooDeep):
        jsontext.loads(deep)
    assert call_text(deep)[2] is INVALID_JSON
    assert read_tool_input("bash", deep).text == deep
    assert mark("tool_call", "write", deep, EvidenceContext(("gsm8k",), ())) == []
    trace = "OpenAI Codex v0.46.0 (research preview)\n--------\nexec\n" + deep + "\nsucceeded in 5ms:\nok\n"
    run_id = write_run(tmp_path / "tree", trace, method="codexhigh_gpt-5.1-codex-max_10h")
    ingest(tmp_path / "tree")
    stored = selectors.get_run(run_id)
    assert stored is not None and stored.step_count >= 1
    page = Client().get(f"/runs/{run_id}/")
    assert page.status_code == 200 and "[[[[" in page.content.decode()


def test_a_judge_file_nested_too_deep_is_a_malformed_verdict(tmp_path):
    """judge_result.json nested 2,000 levels deep: a malformed verdict naming the file, not a RecursionError."""
    from traces.verdicts import _load_json

    path = tmp_path / "judge_result.json"
    path.write_text('{"contamination": ' + "[" * 2000 + "]" * 2000 + "}")
    assert _load_json(path, lambda text: text) == "judge_result.json:1: not read (JSON nested deeper than 100 levels)"


# --- huge outputs -------------------------------------------------------------------------------------------------

def _big_text(n_bytes: int) -> str:
    """A text of about ``n_bytes`` UTF-8 bytes mixing 1-, 2- and 4-byte characters (boundaries fall mid-character)."""
    unit = "epoch 1 loss 0.123 é 😀\n"
    return (unit * (n_bytes // len(unit.encode()) + 1))


def test_a_huge_output_is_capped_at_ingest_and_served_whole_range_by_range(fresh_warehouse, tmp_path, client):
    big = _big_text(3 * 1024 * 1024)
    trace = "\n".join([INIT, tool_call("toolu_1", "cat train.log"), tool_result("toolu_1", big), RESULT]) + "\n"
    run_id = write_run(tmp_path / "tree", trace)
    ingest(tmp_path / "tree")
    con = duckdb.connect(str(fresh_warehouse))
    try:
        stored, full = con.execute("SELECT strlen(output), output_bytes FROM steps WHERE run_id = ? AND idx = 2",
                                   [run_id]).fetchone()
        chunks = con.execute("SELECT count(*) FROM step_texts WHERE run_id = ?", [run_id]).fetchone()[0]
    finally:
        con.close()
    total = len(big.encode())
    assert full == total and STEP_TEXT_CAP - 4 < stored <= STEP_TEXT_CAP and chunks == 4  # 1 MiB chunks
    # the API page says how much it leaves out
    page = client.get(f"/api/runs/{run_id}/steps")
    step = page.json()["steps"][2]
    assert step["output_bytes"] == total
    assert step["output_not_shown"] == total - len(step["output"].encode())
    assert len(page.content) < 100_000
    # the run page says it too, and links the whole text
    html = client.get(f"/runs/{run_id}/").content.decode()
    shown = f"{step['output_not_shown']:,} bytes not shown"
    assert shown in html and f"/runs/{run_id}/steps/2/text?field=output" in html
    # the plain-text view serves it 1 MiB at a time, cut at character boundaries, until the Link runs out
    parts, url = [], f"/runs/{run_id}/steps/2/text?field=output"
    while url:
        response = client.get(url)
        assert response["Content-Type"] == "text/plain; charset=utf-8"
        assert response["X-Content-Type-Options"] == "nosniff"
        assert len(response.content) <= selectors.MAX_TEXT_RANGE
        parts.append(response.content.decode("utf-8"))
        link = response.get("Link")
        url = re.match(r"<([^>]+)>", link)[1] if link else None
    assert "".join(parts) == big and len(parts) == 4
    # the API twin: JSON ranges chained by next_offset, each at most 1 MiB whatever length asks for
    text, offset = "", 0
    while offset is not None:
        answer = client.get(f"/api/runs/{run_id}/steps/2/text?offset={offset}&length=50000000").json()
        assert answer["end"] - answer["offset"] <= selectors.MAX_TEXT_RANGE and answer["total_bytes"] == total
        text, offset = text + answer["text"], answer["next_offset"]
    assert text == big


def test_run_and_step_pages_are_bounded_whatever_the_trace_holds(fresh_warehouse, tmp_path, client):
    lines = [INIT]
    for i in range(60):  # 60 outputs of 300 KB of characters that HTML-escape to 4-6 bytes each: 18 MB of trace
        lines += [tool_call(f"toolu_{i}", f"cat part{i}"), tool_result(f"toolu_{i}", '<&"' * 100_000)]
    run_id = write_run(tmp_path / "tree", "\n".join(lines + [RESULT]) + "\n")
    ingest(tmp_path / "tree")
    sizes = {
        "run page": len(client.get(f"/runs/{run_id}/").content),
        "run page, 500 steps": len(client.get(f"/runs/{run_id}/?limit=500").content),
        "steps page, 500 steps": len(client.get(f"/runs/{run_id}/steps?limit=500").content),
        "API steps, 50": len(client.get(f"/api/runs/{run_id}/steps").content),
        "API steps, 500": len(client.get(f"/api/runs/{run_id}/steps?limit=500").content),
        "API run": len(client.get(f"/api/runs/{run_id}").content),
    }
    # 1,000,000 characters of step text per page at most (traces.selectors.PAGE_TEXT_CHARS), 6 bytes each escaped
    assert max(sizes.values()) < 7_000_000, sizes
    assert sizes["API steps, 50"] < 2_500_000, sizes


# --- damaged traces -----------------------------------------------------------------------------------------------

def test_a_claude_trace_without_its_result_is_incomplete_and_still_counts(fresh_warehouse, tmp_path, client):
    run_id = write_run(tmp_path / "tree", "\n".join([INIT, tool_call("toolu_1", "ls"), tool_result("toolu_1", "a")])
                       + "\n")
    ingest(tmp_path / "tree")
    run = selectors.get_run(run_id)
    assert (run.state, 100 * run.score) == ("scored", pytest.approx(40.0))
    assert selectors.run_texts(run_id).trace_incomplete == "no final result event"
    assert client.get(f"/api/runs/{run_id}").json()["trace_incomplete"] == "no final result event"
    html = client.get(f"/runs/{run_id}/").content.decode()
    assert "incomplete trace" in html and "the run still counts: it was scored" in html
    cell = next(c for c in selectors.latest_cells("posttrainbench") if c.run_id == run_id)
    assert cell.accuracy == pytest.approx(0.4)  # the leaderboard counts it


def test_a_last_line_cut_mid_event_is_a_problem_with_its_line_number(fresh_warehouse, tmp_path):
    run_id = write_run(tmp_path / "tree", "\n".join([INIT, tool_call("toolu_1", "ls"), RESULT,
                                                     '{"type":"assistant","message":{"id":"m9","cont']))
    ingest(tmp_path / "tree")
    texts = selectors.run_texts(run_id)
    assert f"{RUN_DIR}/solve_out.txt:4: the trace ends inside this event (cut off, e.g. killed at the time limit): " \
           "dropped" in texts.problems
    assert texts.trace_incomplete == "the last line is cut off mid-event"


def test_an_event_injected_into_another_gives_back_both_and_reports_both_halves():
    # anthropics/claude-code issue 49640: a rate_limit_event written into the middle of an assistant event
    outer = j({"type": "assistant", "message": {"id": "m1", "content": [
        {"type": "text", "text": "partial text and its continuation"}]}})
    cut = outer.index(" and its")
    injected = j({"type": "rate_limit_event", "rate_limit_info": {"status": "allowed_warning",
                                                                   "rateLimitType": "five_hour"}})
    trace = parse_trace("\n".join([INIT, outer[:cut] + injected, outer[cut:], RESULT]) + "\n", source="solve_out.txt")
    assert [(s.kind, s.label, s.output) for s in trace.steps] == [
        ("system", None, "init"), ("assistant", None, "partial text and its continuation"),
        ("system", "rate limit", "status: allowed_warning; rateLimitType: five_hour"), ("result", "success", "done")]
    assert [p.line for p in trace.problems] == [2, 3]
    assert "written into the middle" in trace.problems[0].message
    assert "second half of the event split at line 2: rejoined" == trace.problems[1].message


def test_halves_that_do_not_rejoin_are_both_reported():
    outer = j({"type": "assistant", "message": {"id": "m1", "content": [{"type": "text", "text": "partial text"}]}})
    injected = j({"type": "rate_limit_event", "rate_limit_info": {"status": "allowed"}})
    cut = outer.index(" text")
    trace = parse_trace("\n".join([INIT, outer[:cut] + injected, '", oops}' + outer[cut:], RESULT]) + "\n",
                        source="solve_out.txt")
    assert [p.line for p in trace.problems] == [2, 3]
    assert trace.problems[0].message.startswith("first half of an event split by an event written into it")
    assert trace.problems[1].message == "second half of the event split at line 2: kept as text"
    assert [s.label for s in trace.steps if s.kind == "system"] == [None, "rate limit"]
    assert [s.line for s in trace.steps if s.kind == "text"] == [2, 3]


# --- codex --------------------------------------------------------------------------------------------------------

def _codex(*events: dict) -> str:
    return "\n".join(j(e) for e in events) + "\n"


def test_codex_usage_is_the_last_snapshot_of_each_thread():
    trace = parse_trace(_codex(
        {"type": "thread.started", "thread_id": "A"}, {"type": "turn.started"},
        {"type": "turn.completed", "usage": {"input_tokens": 1000, "cached_input_tokens": 0, "output_tokens": 100}},
        {"type": "turn.started"},
        {"type": "turn.completed", "usage": {"input_tokens": 1800, "cached_input_tokens": 900, "output_tokens": 150}},
        {"type": "thread.started", "thread_id": "B"}, {"type": "turn.started"},
        {"type": "turn.completed", "usage": {"input_tokens": 500, "cached_input_tokens": 0, "output_tokens": 20}},
    ))
    assert (trace.tokens_in, trace.tokens_out) == (1800 + 500, 150 + 20)  # summing snapshots would say 3300 / 270
    assert [(s.tokens_in, s.tokens_out) for s in trace.steps if s.tokens_in] == [(1000, 100), (800, 50), (500, 20)]
    assert trace.incomplete is None


def test_old_codex_exec_field_names_give_the_same_steps():
    current = _codex({"type": "thread.started", "thread_id": "t1"}, {"type": "turn.started"},
                     {"type": "item.completed", "item": {"id": "item_0", "type": "reasoning", "text": "**Plan**"}},
                     {"type": "item.completed", "item": {"id": "item_1", "type": "command_execution",
                                                         "command": "ls", "aggregated_output": "a\n", "exit_code": 0,
                                                         "status": "completed"}},
                     {"type": "item.completed", "item": {"id": "item_2", "type": "agent_message", "text": "Done."}},
                     {"type": "turn.completed", "usage": {"input_tokens": 10, "output_tokens": 2}})
    old = (current.replace('"type":"thread.started","thread_id"', '"type":"session.created","session_id"')
           .replace('"type":"reasoning"', '"item_type":"reasoning"')
           .replace('"type":"command_execution"', '"item_type":"command_execution"')
           .replace('"type":"agent_message"', '"item_type":"assistant_message"'))
    assert "assistant_message" in old and "session.created" in old
    new_steps, old_steps = parse_trace(current).steps, parse_trace(old).steps
    assert parse_trace(old).format == "codex_exec"
    assert [(s.kind, s.tool, s.input, s.output) for s in old_steps[1:]] == \
        [(s.kind, s.tool, s.input, s.output) for s in new_steps[1:]]
    assert [s.kind for s in new_steps] == ["system", "thinking", "tool_call", "tool_result", "assistant", "system"]
    assert parse_trace(old).unknown_events == {}


def test_unknown_codex_item_types_are_counted_and_shown(fresh_warehouse, tmp_path, client):
    events = [{"type": "thread.started", "thread_id": "t"}, {"type": "turn.started"}]
    events += [{"type": "item.completed", "item": {"id": f"item_{i}", "type": "plan_update", "steps": [i]}}
               for i in range(3)]
    events += [{"type": "turn.completed", "usage": {"input_tokens": 1, "output_tokens": 1}}]
    run_id = write_run(tmp_path / "tree", _codex(*events), method=CODEX)
    ingest(tmp_path / "tree")
    assert selectors.run_texts(run_id).unknown_events == {"item plan_update": 3}
    assert client.get(f"/api/runs/{run_id}").json()["unknown_events"] == {"item plan_update": 3}
    html = client.get(f"/runs/{run_id}/").content.decode()
    assert "3 events of unknown type" in html and "item plan_update × 3" in html


def test_a_codex_turn_that_never_completes_makes_the_trace_incomplete():
    trace = parse_trace(_codex({"type": "thread.started", "thread_id": "t"}, {"type": "turn.started"},
                               {"type": "item.completed", "item": {"id": "i", "type": "agent_message", "text": "x"}}))
    assert trace.incomplete == "the turn started at line 2 has no turn.completed"


# --- opencode -----------------------------------------------------------------------------------------------------

def _oc(etype: str, part: dict, ts: int = 1775383200000) -> dict:
    return {"type": etype, "timestamp": ts, "sessionID": "ses_1", "part": part}


def test_opencode_part_snapshots_give_one_step_and_one_call_per_call_id():
    grow = ["I will", "I will list", "I will list the", "I will list the files."]
    events = [_oc("step_start", {"id": "p0", "type": "step-start"})]
    events += [_oc("text", {"id": "prt_1", "type": "text", "text": t}) for t in grow]
    for status, output in (("pending", None), ("running", None), ("completed", "a.py\nb.py")):
        state = {"status": status, "input": {"command": "ls"}, **({"output": output} if output else {})}
        events.append(_oc("tool_use", {"id": "prt_2", "type": "tool", "tool": "bash", "callID": "call_1",
                                       "state": state}))
    events.append(_oc("step_finish", {"id": "p3", "type": "step-finish", "reason": "stop", "cost": 0.01,
                                      "tokens": {"input": 10, "output": 5, "reasoning": 0, "cache": {"read": 0}}}))
    trace = parse_trace(_codex(*events))
    assert trace.format == "opencode"
    assert [(s.kind, s.output) for s in trace.steps] == [
        ("assistant", "I will list the files."), ("tool_call", ""), ("tool_result", "a.py\nb.py"), ("system", "stop")]
    assert [s.call_id for s in trace.steps[1:3]] == ["call_1", "call_1"]
    assert trace.incomplete is None


def test_opencode_compaction_is_marked_and_not_an_agent_message():
    # anomalyco/opencode issue 42238: run --format json emits the compaction's prompt and summary as text events
    events = [_oc("step_start", {"id": "s1"}), _oc("text", {"id": "t1", "text": "Training done."}),
              _oc("step_finish", {"id": "f1", "reason": "stop"}),
              _oc("compaction", {"id": "c1", "type": "compaction", "auto": True}),
              _oc("step_start", {"id": "s2"}), _oc("text", {"id": "t2", "text": "What did we do so far?"}),
              _oc("text", {"id": "t3", "text": "## Summary\nWe trained a LoRA on gsm8k."}),
              _oc("step_finish", {"id": "f2", "reason": "stop"}),
              _oc("step_start", {"id": "s3"}),
              _oc("text", {"id": "t4", "synthetic": True, "text": "Continue if you have next steps, or stop and ask "
                                                                   "for clarification if you are unsure how to proceed."}),
              _oc("text", {"id": "t5", "text": "Evaluating now."}), _oc("step_finish", {"id": "f3", "reason": "stop"})]
    trace = parse_trace(_codex(*events))
    assert [(s.kind, s.label) for s in trace.steps if s.kind != "system" or s.label] == [
        ("assistant", None), ("system", "compaction"), ("text", "compaction prompt"), ("system", "compaction summary"),
        ("text", "compaction prompt"), ("assistant", None)]
    assert [s.output for s in trace.steps if s.kind == "assistant"] == ["Training done.", "Evaluating now."]


def test_opencode_missing_step_finish_is_marked(fresh_warehouse, tmp_path, client):
    events = [_oc("step_start", {"id": "s1"}), _oc("text", {"id": "t1", "text": "Step one."}),
              _oc("step_start", {"id": "s2"}), _oc("text", {"id": "t2", "text": "Step two."}),
              _oc("step_finish", {"id": "f2", "reason": "tool-calls"}),
              _oc("step_start", {"id": "s3"}), _oc("text", {"id": "t3", "text": "Killed here."})]
    run_id = write_run(tmp_path / "tree", _codex(*events), method=OPENCODE)
    ingest(tmp_path / "tree")
    texts = selectors.run_texts(run_id)
    assert texts.trace_incomplete == "the last step (line 6) has no step_finish"
    assert [p.split(": ", 1)[1] for p in texts.problems] == [
        "this step has no step_finish (the next step started at line 3)", "the last step has no step_finish"]
    assert [p.split(":")[1] for p in texts.problems] == ["1", "6"]
    assert "incomplete trace" in client.get(f"/runs/{run_id}/").content.decode()


# --- claude code --------------------------------------------------------------------------------------------------

def test_claude_rate_limit_retry_and_task_events_are_typed_labelled_steps(fresh_warehouse, tmp_path, client):
    events = [INIT,
              j({"type": "rate_limit_event", "rate_limit_info": {"status": "allowed_warning", "resetsAt": 1775397600,
                                                                  "rateLimitType": "five_hour", "utilization": 0.9}}),
              j({"type": "system", "subtype": "api_retry", "attempt": 2, "max_retries": 10, "retry_delay_ms": 4000,
                 "error_status": 529, "error": "overloaded_error"}),
              j({"type": "system", "subtype": "task_started", "task_id": "b7", "description": "train in background",
                 "task_type": "local_bash"}),
              j({"type": "system", "subtype": "task_updated", "task_id": "b7", "status": "running"}),
              j({"type": "system", "subtype": "task_notification", "task_id": "b7", "status": "completed",
                 "summary": "training finished", "output_file": "/tmp/b7.out"}),
              tool_call("toolu_9", "ls"), tool_result("toolu_9", "final_model"), RESULT]
    run_id = write_run(tmp_path / "tree", "\n".join(events) + "\n")
    ingest(tmp_path / "tree")
    labelled = [(s.label, s.output) for s in steps(run_id) if s.label]
    assert labelled == [
        ("rate limit", "status: allowed_warning; rateLimitType: five_hour; utilization: 0.9; "
                       "resetsAt: 2026-04-05 14:00 UTC"),
        ("api retry", "attempt: 2; max_retries: 10; retry_delay_ms: 4000; error_status: 529; error: overloaded_error"),
        ("task started", "task_id: b7; task_type: local_bash; description: train in background"),
        ("task updated", "task_id: b7; status: running"),
        ("task notification", "task_id: b7; status: completed; summary: training finished; output_file: /tmp/b7.out"),
        ("success", "done"),  # the result's subtype is its label (issue 29)
    ]
    assert selectors.run_texts(run_id).unknown_events == {}
    html = client.get(f"/runs/{run_id}/").content.decode()
    assert '<span class="badge label">api retry</span>' in html
    api_steps = client.get(f"/api/runs/{run_id}/steps").json()["steps"]
    assert [(s["kind"], s["call_id"]) for s in api_steps if s["call_id"]] == [("tool_call", "toolu_9"),
                                                                             ("tool_result", "toolu_9")]
    assert api_steps[1]["label"] == "rate limit"


# --- scores -------------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("value, score, problem", [
    ('"0.85"', 85.0, None),
    ('" 0.5 "', 50.0, None),
    ('"eighty"', None, 'accuracy "eighty" is not a number; counted as no score'),
    ('"85"', None, 'accuracy "85" is not a fraction between 0 and 1; counted as no score'),
    ("true", None, "accuracy true is not a number; counted as no score"),
    ('"nan"', None, 'accuracy "nan" is not a fraction between 0 and 1; counted as no score'),
])
def test_a_string_score_is_parsed_or_reported(fresh_warehouse, tmp_path, value, score, problem):
    run_id = write_run(tmp_path / "tree", "\n".join([INIT, RESULT]) + "\n", metrics=f'{{"accuracy": {value}}}')
    ingest(tmp_path / "tree")
    run = selectors.get_run(run_id)
    problems = selectors.run_texts(run_id).problems
    if score is None:
        assert run.score is None and run.state != "scored"
        metrics_path = tmp_path / "tree" / CLAUDE / RUN_DIR / "metrics.json"
        assert f"{metrics_path}: {problem}" in problems
    else:
        assert (run.state, 100 * run.score) == ("scored", pytest.approx(score))
        assert problems == []
