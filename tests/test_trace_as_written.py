"""Traces as the agent wrote them (issue 29): a Claude Code call's description and settings, a result without
text, ToolSearch's tool references, Write inputs in search results, whole outputs without "show all", a step that
does not exist, and ``k`` loading the earlier page with feedback. Parser cases on the formats of spec 2.2; page
cases on a run ingested from a results tree into a fresh warehouse."""
from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from tests.conftest import RERUN_METHOD, RERUN_RUN_DIR, write_run
from ingest.tree import ingest_tree
from traces.layout import run_id as make_run_id
from ingest.parsers import parse_trace
from traces.steps import Step

USAGE = {"input_tokens": 10, "output_tokens": 5}


def _call(n: int, name: str, args: dict) -> dict:
    return {"type": "assistant", "message": {"id": f"m{n}", "role": "assistant", "usage": USAGE, "content": [
        {"type": "tool_use", "id": f"toolu_{n}", "name": name, "input": args}]}}


def _result(n: int, content) -> dict:
    return {"type": "user", "message": {"role": "user", "content": [
        {"type": "tool_result", "tool_use_id": f"toolu_{n}", "content": content, "is_error": False}]}}


SIX_LINES = "\n".join(f"GPU {i}: idle" for i in range(6)) + "\n"
EVENTS = [
    {"type": "system", "subtype": "init", "model": "claude-opus-4-6", "cwd": "/task", "session_id": "s"},
    _call(1, "Bash", {"command": "nvidia-smi", "description": "Check which GPUs are free", "timeout": 600000}),
    _result(1, SIX_LINES),
    _call(2, "Monitor", {"command": "tail -f train.log", "description": "Watch the training loss",
                         "timeout_ms": 3600000, "persistent": True}),
    _result(2, "loss 0.9"),
    _call(3, "ToolSearch", {"query": "select:WebFetch", "max_results": 5}),
    _result(3, [{"type": "tool_reference", "tool_name": "WebFetch"}]),
    _call(4, "Write", {"file_path": "/task/train.py", "content": "import torch\nprint('zebra stripes')\n"}),
    _result(4, "File created successfully at: /task/train.py"),
    {"type": "result", "subtype": "success", "is_error": False, "result": "", "total_cost_usd": 0.5,
     "usage": USAGE},
]
TRACE = "".join(json.dumps(e) + "\n" for e in EVENTS)


# --- the parser (spec 2.2) ---

def test_a_bash_call_keeps_its_description_and_settings():
    steps = parse_trace(TRACE, scaffold="claude").steps
    bash = steps[1]
    assert (bash.kind, bash.tool, bash.input) == ("tool_call", "Bash", "nvidia-smi")  # the command stays the input
    assert bash.label == "Check which GPUs are free · timeout: 600000"


def test_a_monitor_call_keeps_its_settings():
    monitor = parse_trace(TRACE, scaffold="claude").steps[3]
    assert (monitor.tool, monitor.input) == ("Monitor", "tail -f train.log")
    assert monitor.label == "Watch the training loss · timeout_ms: 3600000; persistent: true"


def test_a_call_without_a_command_keeps_its_json_and_gets_no_label():
    steps = parse_trace(TRACE, scaffold="claude").steps
    assert (steps[5].input, steps[5].label) == ('{"query":"select:WebFetch","max_results":5}', None)
    only_command = parse_trace(json.dumps(_call(9, "Bash", {"command": "ls"})) + "\n").steps[0]
    assert (only_command.input, only_command.label) == ("ls", None)


def test_tool_references_read_as_the_tools_loaded():
    result = parse_trace(TRACE, scaffold="claude").steps[6]
    assert (result.kind, result.tool, result.output) == ("tool_result", "ToolSearch", "tool loaded: WebFetch")


def test_a_result_without_text_has_no_output_and_its_subtype_as_label():
    result = parse_trace(TRACE, scaffold="claude").steps[-1]
    assert result == Step(9, "result", output="", label="success", tokens_in=10, tokens_out=5, cost_usd=0.5,
                          line=10)


# --- the run page ---

@pytest.fixture
def written_run(tmp_path: Path, fresh_warehouse: Path) -> str:
    """One Claude Code run holding TRACE, ingested into a fresh warehouse; returns its id."""
    run_dir = write_run(tmp_path / "results", checkpoint=None)
    (run_dir / "solve_out.txt").write_text(TRACE)
    report = ingest_tree(root=tmp_path / "results")
    assert report.stored == 1, report.problems
    return make_run_id(RERUN_METHOD, RERUN_RUN_DIR)


def _step(page: str, index: int) -> str:
    return re.search(rf'<li class="step[^"]*"\s+id="step-{index}".*?</li>', page, re.S)[0]


@pytest.mark.django_db
def test_the_page_shows_descriptions_settings_and_tool_references(client, written_run):
    page = client.get(f"/runs/{written_run}/").content.decode()
    bash = _step(page, 1)
    assert ('<p class="call-label" title="the call\'s description and settings, as the agent wrote them">'
            'Check which GPUs are free · timeout: 600000</p>') in bash
    assert "badge label" not in bash
    assert "Watch the training loss · timeout_ms: 3600000; persistent: true</p>" in _step(page, 3)
    tool_search = _step(page, 6)
    assert '<pre class="output">tool loaded: WebFetch</pre>' in tool_search and "tool_reference" not in tool_search


@pytest.mark.django_db
def test_a_result_without_text_shows_its_subtype_as_a_label_not_as_text(client, written_run):
    result = _step(client.get(f"/runs/{written_run}/").content.decode(), 9)
    assert '<span class="badge label">success</span>' in result
    assert '<pre class="output">' not in result


@pytest.mark.django_db
def test_an_output_shown_whole_has_no_show_all(client, written_run):
    six = _step(client.get(f"/runs/{written_run}/").content.decode(), 2)
    assert "show all" not in six and "GPU 5: idle" in six
    seven = SIX_LINES + "GPU 6: idle\n"
    from traces.templatetags.trace_format import is_long, preview

    assert not is_long(SIX_LINES) and is_long(seven) and preview(seven).count("\n") == 5


@pytest.mark.django_db
def test_a_search_result_shows_a_written_file_as_its_lines(client, written_run):
    html = client.get(f"/runs/{written_run}/?q=zebra", headers={"HX-Request": "true",
                                                                 "HX-Target": "trace-results"}).content.decode()
    write = _step(html, 7)
    assert '<p class="tool-file"><code>/task/train.py</code></p>' in write
    assert ("<code>import torch\nprint(&#x27;<mark>zebra</mark> stripes&#x27;)\n</code>" in write)
    assert "\\n" not in write and "file_path" not in write


@pytest.mark.django_db
def test_a_step_that_does_not_exist_says_so(client, written_run):
    page = client.get(f"/runs/{written_run}/?step=99999999").content.decode()
    assert ('<p class="notice" id="time-jump-note">Step 99,999,999 does not exist: this trace has 10 steps, #0 to '
            '#9. Showing the trace from its start.</p>') in page
    assert 'id="step-0"' in page  # the trace from its start
    filtered = client.get(f"/runs/{written_run}/?step=1&kind=tool_result").content.decode()
    assert "Step 1 is not among the steps this filter shows" in filtered and 'id="step-2"' in filtered


@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
def test_k_at_the_first_step_says_the_earlier_page_is_loading(live_server, demo_ingested, page):
    from traces import selectors

    from .conftest import ARTIFACTS

    run = max(selectors.list_runs(limit=None)[0], key=lambda r: r.step_count)
    page.goto(f"{live_server.url}/runs/{run.id}/?step=100&limit=20")
    held = []
    # Hold the earlier page's answer back until the button has been read (a slow server, made slow here).
    page.route(re.compile(r".*/steps\?.*before=100.*"), lambda route: held.append(route))
    page.keyboard.press("k")
    button = page.locator("#steps li.load-earlier button")
    assert button.inner_text() == "Loading earlier steps…"
    assert "loading" in button.get_attribute("class") and button.get_attribute("aria-busy") == "true"
    page.screenshot(path=ARTIFACTS / "earlier-steps-loading.png")
    for _ in range(50):  # the route handler runs while Playwright waits
        if held:
            break
        page.wait_for_timeout(100)
    assert len(held) == 1
    held[0].continue_()
    page.wait_for_selector("#step-99.focus")
    assert page.js_errors == []


@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
def test_a_claude_code_run_page_shows_each_calls_description(live_server, demo_ingested, page):
    from traces import selectors

    from .conftest import ARTIFACTS

    run = next(r for r in selectors.list_runs(limit=None)[0] if r.trace_format == "claude_code" and r.step_count > 20)
    page.goto(f"{live_server.url}/runs/{run.id}/#steps")
    label = page.locator("#steps li.kind-tool_call p.call-label").first
    assert label.is_visible() and " · timeout: 600000" in label.inner_text()
    label.scroll_into_view_if_needed()
    page.screenshot(path=ARTIFACTS / "pages" / "run-claude-descriptions-1440.png")
    page.set_viewport_size({"width": 390, "height": 844})
    label.scroll_into_view_if_needed()
    page.screenshot(path=ARTIFACTS / "pages" / "run-claude-descriptions-390.png")
