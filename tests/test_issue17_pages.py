"""Issue 17 on the pages: display names and run titles, the judge panel (the judge's words and reasoning, the steps
it cites, "not assessed", "steps our rules flag"), tool inputs rendered by tool with Pygments (hostile markup in a
written file stays text), thousands separators; in headless Chromium with screenshots, and over the test client."""
from __future__ import annotations

import html
import json
from pathlib import Path

import pytest

from traces import layout, selectors
from ingest.tree import ingest_tree

from .conftest import ARTIFACTS, RERUN_METHOD, write_run

HOSTILE = '<script>window.__pwned_write=1</script><img src=x onerror="window.__pwned_img=1">'
WRITE_CONTENT = f'import torch\n\ndef train():\n    return "{HOSTILE}"\n'
RUN_DIR = "gsm8k_Qwen_Qwen3-1.7B-Base_17000042"


def _line(obj: dict) -> str:
    return json.dumps(obj, separators=(",", ":"))


def _tool_use(call_id: str, name: str, args: dict, message: str) -> str:
    return _line({"type": "assistant", "message": {"id": message, "role": "assistant", "content": [
        {"type": "tool_use", "id": call_id, "name": name, "input": args}]}})


def _tool_result(call_id: str, text: str) -> str:
    return _line({"type": "user", "message": {"role": "user", "content": [
        {"type": "tool_result", "tool_use_id": call_id, "content": text, "is_error": False}]}})


AGENT_TRACE = "\n".join([
    _line({"type": "system", "subtype": "init", "session_id": "s1", "cwd": "/task", "model": "claude-opus-4-6"}),
    _tool_use("toolu_write01", "Write", {"file_path": "/task/train.py", "content": WRITE_CONTENT}, "m1"),   # 1
    _tool_result("toolu_write01", "File created"),                                                          # 2
    _tool_use("toolu_edit01", "Edit", {"file_path": "/task/train.py", "old_string": "return 1\n",
                                        "new_string": "return 2\n"}, "m2"),                                   # 3
    _tool_result("toolu_edit01", "ok"),                                                                      # 4
    _tool_use("toolu_bash01", "Bash", {"command": "python train.py --epochs 3 | tee log.txt"}, "m3"),      # 5
    _tool_result("toolu_bash01", "done"),                                                                    # 6
    _line({"type": "result", "subtype": "success", "is_error": False, "result": "Done.", "total_cost_usd": 1.0}),
]) + "\n"
JUDGE_TRACE = "\n".join(["Reading prompt from stdin..."] + [_line(e) for e in [
    {"type": "thread.started", "thread_id": "t1"}, {"type": "turn.started"},
    {"type": "item.completed", "item": {"id": "item_0", "type": "reasoning", "text": "Checking the training data."}},
    {"type": "item.completed", "item": {"id": "item_1", "type": "agent_message",
                                        "text": "The agent wrote train.py at step 1 and ran it (tool call "
                                                "toolu_bash01); no test split is loaded."}},
    {"type": "turn.completed", "usage": {"input_tokens": 10, "cached_input_tokens": 0, "output_tokens": 5}}]]) + "\n"


@pytest.fixture
def judged_run(tmp_path: Path, fresh_warehouse: Path) -> str:
    """One run with a Claude Code trace (Write, Edit, Bash), txt verdicts (no API-usage verdict) and a judge trace
    whose reasoning cites step 1 and the call toolu_bash01 (step 5); ingested into a fresh warehouse."""
    root = tmp_path / "results"
    path = write_run(root, checkpoint=None, run_dir=RUN_DIR)
    (path / "solve_out.txt").write_text(AGENT_TRACE)
    (path / "judge_output.json").write_text(JUDGE_TRACE)
    report = ingest_tree(root=root)
    assert report.stored == 1, report.problems
    return layout.run_id(RERUN_METHOD, RUN_DIR)


pytestmark = pytest.mark.django_db(transaction=True)


def test_the_run_page_reads_in_names_and_the_judge_in_its_words(client, judged_run):
    page = client.get(f"/runs/{judged_run}/").content.decode()
    twin = client.get(f"/api/runs/{judged_run}").json()
    assert twin["title"] == "Opus 4.6 (unlisted sweep) on GSM8K with Qwen3-1.7B"  # no list names the method
    assert '<h1 id="run-title">Opus 4.6 (unlisted sweep) <span class="muted">on</span> GSM8K <span class="muted">with</span> Qwen3-1.7B' in page
    assert f"<code>{RERUN_METHOD}/{RUN_DIR}</code>" in page  # the directory is a detail
    assert twin["verdict_labels"] == {"contamination": "clean", "disallowed_model": "clean",
                                      "disallowed_api_usage": "not_assessed"}
    assert "External API usage: not assessed" in page and "disallowed_api_usage: clean" not in page
    contamination = next(v for v in twin["judge_panel"] if v["kind"] == "contamination")
    assert contamination["text"] == "no contamination detected"
    assert contamination["source_file"] == "contamination_judgement.txt"
    assert contamination["reasoning_trace"] == "judge:codex"
    assert "toolu_bash01" in contamination["reasoning"] and "Checking the training data." in contamination["reasoning"]
    assert [(c["index"], c["via"]) for c in contamination["cited"]] == [(1, "step 1"), (5, "toolu_bash01")]
    assert 'href="?step=5#step-5" title="named as toolu_bash01">step 5</a>' in page
    assert "The judge&#x27;s reasoning" in page or "The judge's reasoning" in page
    assert "Steps our rules flag" in page


def test_tool_inputs_are_rendered_by_tool_and_escaped(client, judged_run):
    page = client.get(f"/runs/{judged_run}/").content.decode()
    assert HOSTILE not in page and "&lt;script&gt;window.__pwned_write=1&lt;/script&gt;" in page
    assert 'data-render="file"' in page and "<code>/task/train.py</code>" in page
    assert '<span class="kn">import</span>' in page  # Python highlighted by the file's extension
    assert 'data-render="diff"' in page and '<span class="gd">-return 1</span>' in page
    assert '<span class="gi">+return 2</span>' in page
    shell = page.split('data-render="shell"', 1)[1].split("</pre>", 1)[0]
    assert "python<span" in shell and "--epochs" in shell and "tee" in shell  # the command, not its JSON


@pytest.mark.browser
def test_issue17_in_a_browser(live_server, judged_run, page):
    page.goto(f"{live_server.url}/runs/{judged_run}/")
    assert page.locator("#run-title").inner_text().startswith("Opus 4.6 (unlisted sweep) on GSM8K with Qwen3-1.7B")
    badges = page.locator("#verdict-badges").inner_text()
    assert "External API usage: not assessed" in badges and "Contamination: clean" in badges
    panel = page.locator("#judge-panel")
    assert "no contamination detected" in panel.inner_text()
    panel.locator("details.judge-reasoning summary").first.click()
    assert "toolu_bash01" in panel.locator("details.judge-reasoning").first.inner_text()
    assert page.locator("#rule-steps").inner_text() == "Steps our rules flag"
    assert page.locator('#judge-panel tr.not-assessed[data-kind="disallowed_api_usage"]').count() == 1
    write = page.locator('#step-1 pre[data-render="file"]')
    assert HOSTILE.split('<img')[0] in write.inner_text()  # the markup shows as text
    assert page.evaluate("window.__pwned_write") is None and page.evaluate("window.__pwned_img") is None
    assert page.locator("#steps img").count() == 0
    assert write.locator("span.kn").count() >= 1  # highlighted
    assert page.evaluate("getComputedStyle(document.querySelector('#step-1 span.kn')).color") == "rgb(0, 128, 0)"
    assert page.locator('#step-3 pre[data-render="diff"] span.gi').last.inner_text() == "+return 2"
    assert page.locator('#step-5 pre[data-render="shell"]').inner_text().strip() == "python train.py --epochs 3 | tee log.txt"
    page.screenshot(path=ARTIFACTS / "issue17-run.png", full_page=True)
    page.click('#judge-panel a[title="named as toolu_bash01"]')
    page.wait_for_url("**step=5**")
    assert "focus" in page.locator("#step-5").get_attribute("class")
    page.goto(f"{live_server.url}/runs/")
    row = page.locator(f'tr[data-run="{judged_run}"]')
    assert "Opus 4.6 (unlisted sweep) on GSM8K with Qwen3-1.7B" in row.inner_text() and "GSM8K" in row.inner_text()
    page.screenshot(path=ARTIFACTS / "issue17-runs.png", full_page=True)
    assert page.js_errors == []


@pytest.mark.browser
def test_sort_arrows_and_the_weights_disclosure_on_the_leaderboard(live_server, use_published, page):
    page.goto(f"{live_server.url}/")
    sorted_head = page.locator("#board th[aria-sort]")
    assert sorted_head.count() == 1 and sorted_head.get_attribute("aria-sort") == "ascending"
    assert sorted_head.inner_text().strip() == "#▲"
    assert page.locator(".suites a").all_inner_texts() == ["FrogsGame", "PostTrainBench"]
    how = page.locator("#weights-how")
    assert how.locator("summary").inner_text() == "How the weights are derived"
    assert how.get_attribute("open") is None and not page.locator("#derived-weights").is_visible()
    how.locator("summary").click()
    assert page.locator("#derived-weights").is_visible()
    page.click('#board th a:has-text("Average")')
    page.wait_for_selector('#board th[aria-sort="descending"]')
    head = page.locator("#board th[aria-sort]")
    assert head.count() == 1 and "Average▼" in head.inner_text()
    page.screenshot(path=ARTIFACTS / "issue17-leaderboard.png")
    assert page.js_errors == []


@pytest.mark.browser
def test_analysis_heads_and_suite_chips_read_in_names(live_server, demo_ingested, page):
    page.goto(f"{live_server.url}/analysis/")
    heads = page.locator("#method-mix th[data-facet-head]").all_inner_texts()
    assert "Full fine-tune" in heads and "Other RL" in heads and "full_finetune" not in heads
    chips = page.locator('[aria-label="Suite"] a.chip').all_inner_texts()
    assert "PostTrainBench" in chips and "FrogsGame" in chips
    agents = page.locator("#method-mix tbody td:first-child").all_inner_texts()
    # A sweep no agent list names reads as the listed agent's name, marked (it was "gpt-5.1-codex-max (codexhigh)").
    assert "GPT-5.1 Codex Max (High) (unlisted sweep)" in agents and "gpt-5.1-codex-max (codexhigh)" not in agents
    time_use = page.locator("#time-use").inner_text()
    assert "time_taken.txt" not in time_use and "(h:mm)" in time_use
    assert "ingest/facets.py" not in page.content()
    page.screenshot(path=ARTIFACTS / "issue17-analysis.png", full_page=True)
    page.goto(f"{live_server.url}/runs/")
    benchmarks = set(page.locator("table.runs tbody tr td:nth-child(4)").all_inner_texts())
    assert benchmarks and benchmarks <= {"AIME 2025", "Arena-Hard Writing", "BFCL", "GPQA", "GSM8K", "HealthBench",
                                         "HumanEval"}
    assert page.js_errors == []


def test_an_override_says_so_and_is_in_the_admin_history(client, judged_run):
    from django.contrib.admin.models import LogEntry
    from django.contrib.auth import get_user_model

    staff = get_user_model().objects.create_user("reviewer17", password="x", is_staff=True)
    client.force_login(staff)
    response = client.post(f"/reruns/runs/{judged_run}/override",
                           {"kind": "contamination", "flagged": "true", "reason": "test split in train.py"}, follow=True)
    page = response.content.decode()
    assert '<ul class="messages"><li class="success">Contamination overridden: flagged.' in page
    entry = LogEntry.objects.get(user=staff)
    assert entry.object_id == judged_run and entry.change_message == ("Contamination overridden: flagged "
                                                                     "(test split in train.py)")
    admin = client.get("/admin/").content.decode()
    title = selectors.get_run(judged_run).title
    # the admin's recent actions list it by its run and kind (issue 29: it was "Unknown content", "run <id>")
    assert entry.object_repr == f"Contamination of {title}: flagged" and html.escape(entry.object_repr) in admin
    assert "Verdict override" in admin and "Unknown content" not in admin
