"""The judge panel reads (issue 26), in headless Chromium at 1440 and 390 px: a May-2026 run (per-judge files of
gpt5_4, Kimi and the API judge, judge_result.json of aggregate_judgement.py) whose gpt5_4 justification holds a
400-character path with no break: each judge's words stand under their question, the long word wraps inside its
cell (no cell wider than its box, the words' cell ends before "Steps it cites" begins, the page no wider than the
screen), judge_result.json's words, which are the judges' own, are not printed again, the judge's reasoning is
printed once (under its first question), and the cited steps link the agent's steps the words name. Screenshots
``test-artifacts/pages/judge-panel-long-word-{1440,390}.png``."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from ingest.tree import ingest_tree
from traces import layout

from .conftest import ARTIFACTS, RERUN_METHOD, write_run
from .test_issue17_pages import AGENT_TRACE, JUDGE_TRACE

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]
RUN_DIR = "gsm8k_Qwen_Qwen3-1.7B-Base_17000077"
LONG = "/home/ben/task/" + "data_" * 77 + "train.py"   # 400 characters, one word
GPT = {"contamination": False, "disallowed_model": False,
       "justification_contamination": f"Read {LONG} and train.py (toolu_bash01): no test split is loaded.",
       "justification_disallowed_model": "final_model derives from the base model."}
KIMI = {"contamination": True, "disallowed_model": False,
        "justification_contamination": "The agent edited train.py at step 3 to add test questions.",
        "justification_disallowed_model": "Only the base model was fine-tuned."}
API = {"disallowed_api_usage": False, "justification_disallowed_api_usage": "No external API was called."}


@pytest.fixture
def may_run(tmp_path: Path, fresh_warehouse: Path) -> str:
    root = tmp_path / "results"
    path = write_run(root, checkpoint=None, run_dir=RUN_DIR)
    for name in ("contamination_judgement.txt", "disallowed_model_judgement.txt"):
        (path / name).unlink()  # the May era: JSON verdicts only
    (path / "solve_out.txt").write_text(AGENT_TRACE)
    (path / "judge_output_gpt5_4.json").write_text(JUDGE_TRACE)
    for judge, said in (("gpt5_4", GPT), ("kimi", KIMI), ("api", API)):
        (path / f"judgement_{judge}.json").write_text(json.dumps(said))
    said = {"gpt5_4": GPT, "kimi": KIMI}
    (path / "judge_result.json").write_text(json.dumps({  # as aggregate_judgement.py writes it
        "contamination": True, "disallowed_model": False,
        **{f"justification_{k}": "\n\n".join(f"[{j}] {s[f'justification_{k}']}" for j, s in said.items())
           for k in ("contamination", "disallowed_model")},
        "disallowed_api_usage": False, "justification_disallowed_api_usage": API["justification_disallowed_api_usage"]}))
    assert ingest_tree(root=root).stored == 1
    return layout.run_id(RERUN_METHOD, RUN_DIR)


# Every cell of the judge panel: [scrollWidth, clientWidth]; the words' right edge and the cited cell's left edge.
CELLS = """() => [...document.querySelectorAll('#judge-panel td')].map(td => [td.scrollWidth, td.clientWidth])"""
EDGES = """() => [...document.querySelectorAll('#judge-panel tr[data-judge="gpt5_4"][data-kind="contamination"] td')]
  .map(td => [td.getBoundingClientRect().left, td.getBoundingClientRect().right])"""


@pytest.mark.parametrize("width", [1440, 390])
def test_the_judge_panel_reads_at_both_widths(live_server, may_run, page, width):
    page.set_viewport_size({"width": width, "height": 900})
    page.goto(f"{live_server.url}/runs/{may_run}/")
    panel = page.locator("#judge-panel")
    text = panel.text_content() or ""
    assert text.count(LONG) == 1                       # gpt5_4's words, not judge_result.json's copy of them
    assert text.count("no test split is loaded") == 2  # those words and the reasoning (its trace), once each
    assert text.count("Checking the training data.") == 1  # the reasoning once, under its first question
    contamination = page.locator("#question-contamination")
    assert LONG in (contamination.locator('tr[data-judge="gpt5_4"]').text_content() or "")
    assert "step 3" in (contamination.locator('tr[data-judge="kimi"]').text_content() or "")
    assert "with each judge below" in (contamination.locator('tr[data-judge="aggregate"]').text_content() or "")
    assert "the judges' answers below, OR-ed by aggregate_judgement.py" in (
        contamination.locator('tr[data-judge="aggregate"]').text_content() or "")
    assert "the API judge's answer below, copied by aggregate_judgement.py" in (
        page.locator('#question-disallowed_api_usage tr[data-judge="aggregate"]').text_content() or "")
    model = page.locator("#question-disallowed_model")
    assert "gpt5_4's reasoning: under" in (model.locator('tr[data-judge="gpt5_4"]').text_content() or "")
    # Cited: step 1 (the reasoning's "step 1", also train.py's first tool call), toolu_bash01's step 5; Kimi's
    # train.py (step 1) and "step 3".
    gpt_cites = contamination.locator('tr[data-judge="gpt5_4"] td.cited a')
    assert [(gpt_cites.nth(i).inner_text(), gpt_cites.nth(i).get_attribute("title"))
            for i in range(gpt_cites.count())] == [("step 1", "named as step 1"), ("step 5", "named as toolu_bash01")]
    assert contamination.locator('tr[data-judge="kimi"] td.cited a').all_inner_texts() == ["step 1", "step 3"]
    overflowing = [c for c in page.evaluate(CELLS) if c[0] > c[1] + 1]
    assert overflowing == [], overflowing
    (judge, verdict, words, cited) = page.evaluate(EDGES)
    if width > 600:  # a table row: the words end before the cited steps begin
        assert words[1] <= cited[0] + 1, (words, cited)
    assert page.evaluate("document.documentElement.scrollWidth") <= width
    shots = ARTIFACTS / "pages"
    shots.mkdir(parents=True, exist_ok=True)
    panel.scroll_into_view_if_needed()
    panel.screenshot(path=shots / f"judge-panel-long-word-{width}.png")
    assert page.js_errors == []
