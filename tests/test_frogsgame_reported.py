"""The FrogsGame report's published figures ("The State of AI Post-Training Agents", the project's seed document,
copied to data/reported/frogsgame/): shipped in suites/frogsgame.json exactly as the report states them, and
shown on the FrogsGame leaderboard, the analysis page and their JSON twins. A figure the report does not give
(a std, Claude Fable 5's pass@4) stays absent; "roughly a 3x improvement" is a note, not a number."""
from __future__ import annotations

import re
from pathlib import Path

import pytest

from leaderboard.services import PublishedDataError, import_published

REPORT = Path(__file__).resolve().parent.parent / "data/reported/frogsgame/the-state-of-ai-post-training-agents.txt"

# Every figure of the report the suite ships, written out here from the report's text (not read from the suite):
# (topic, agent, quantity, value, value_max, out_of, unit, scope).
EXPECTED = [
    ("score", "opus-4.8", "pass@4", 0.309, None, None, "fraction", "average over trials"),   # "30.9% average pass@4"
    ("score", "gpt-5.5", "pass@4", 0.097, None, None, "fraction", None),                      # "9.7% pass@4"
    ("note", "opus-4.8", "improvement over previous models", None, None, None, None, None),   # "roughly a 3x ..."
    ("methods", "opus-4.8", "grpo_trials", 8, None, 8, "trials", "all trials"),               # "GRPO in all 8 trials"
    ("methods", "opus-4.8", "sft_only_runs", 0, None, 8, "runs", None),                       # "no SFT-only runs"
    ("methods", "gpt-5.5", "sft_first_trials", 8, None, 8, "trials", "all trials"),           # "SFT-first ... all 8"
    ("methods", "gpt-5.5", "rl_steps", 0, 4, None, "steps", None),                            # "from 0 to 4 steps"
    ("methods", "gpt-5.5", "trials_without_rl", 2, None, 8, "trials", None),                  # "2 of 8 ... skipped RL"
    ("methods", "opus-4.8", "binary_reward_runs", 3, None, None, "runs", None),               # "3 runs, all from Opus 4.8"
    ("methods", None, "curriculum", None, None, None, None, None),                            # "Almost all trials ..."
    ("methods", None, "trials_without_curriculum", 2, None, None, "trials", None),           # "The two trials that ..."
    ("note", None, "rollouts_run", None, None, None, None, None),                             # "more than 100 rollouts"
    ("training_signal", "fable-5", "error_injected_traces", 0.05, None, None, "fraction", None),  # "into 5% of traces"
    ("training_signal", "fable-5", "rollouts_per_step", 512, None, None, "rollouts", "best trial"),
    ("training_signal", "fable-5", "rl_steps", 95, None, None, "steps", "best trial"),
    ("training_signal", "fable-5", "sft_boards", 6000, None, None, "boards", "best trial"),  # "6,000 balanced boards"
    ("training_signal", "opus-4.8", "rollouts_per_step", 128, None, None, "rollouts", "best trial"),
    ("training_signal", "opus-4.8", "rl_steps", 64, None, None, "steps", "best trial"),
    ("training_signal", "fable-5", "data_generated_vs_best_opus_4.8", 3, None, None, "x", "best run"),  # "3x more data"
    ("calibration", "fable-5", "overoptimism", 1.2, None, None, "x", "best run"),
    ("calibration", "opus-4.8", "overoptimism", 4.9, None, None, "x", "best run"),
]


@pytest.fixture
def frogs(fresh_warehouse):
    report = import_published(suite_id="frogsgame")
    assert report.counts["agents"] == 2 and report.counts["facts"] == len(EXPECTED)
    return fresh_warehouse


def test_the_suite_ships_the_report_figures_and_nothing_else(frogs):
    from leaderboard import selectors

    facts = selectors.reported_facts("frogsgame")
    assert [(f.topic, f.agent, f.quantity, f.value, f.value_max, f.out_of, f.unit, f.scope) for f in facts] == EXPECTED
    assert all(f.source == "“The State of AI Post-Training Agents” (the FrogsGame report)" for f in facts)
    names = {f.agent: f.agent_name for f in facts}
    assert names == {"opus-4.8": "Claude Opus 4.8", "gpt-5.5": "GPT-5.5", "fable-5": "Claude Fable 5", None: None}
    # Fable 5 has figures but no pass@4 in the report: no score fact, no leaderboard row.
    assert not [f for f in facts if f.agent == "fable-5" and f.topic == "score"]
    # "roughly a 3x improvement" is a note: no value. Every quote is a sentence of the report.
    (note,) = [f for f in facts if f.quantity == "improvement over previous models"]
    assert note.value is None and note.display == "" and "roughly a 3x improvement" in note.quote
    report = " ".join(REPORT.read_text(encoding="utf-8").split())
    for f in facts:
        assert f.quote in report, f.quote
    assert [f.display for f in facts] == [
        "30.9%", "9.7%", "", "8 of 8 trials", "0 of 8 runs", "8 of 8 trials", "0-4 steps", "2 of 8 trials", "3 runs", "",
        "2 trials", "", "5.0%", "512 rollouts", "95 steps", "6,000 boards", "128 rollouts", "64 steps", "3x", "1.2x", "4.9x"]


def test_the_leaderboard_ranks_the_two_reported_scores_without_inventing_a_std(frogs, client):
    from leaderboard import selectors

    board = selectors.leaderboard(suite="frogsgame")
    rows = [(r.key, r.agent, r.rank, 100 * r.average, r.std, r.runs, 100 * r.cells["frogsgame"].score, r.cells["frogsgame"].std)
            for r in board.rows]
    assert rows == [("opus-4.8", "Claude Opus 4.8", 1, pytest.approx(30.9), None, 8, pytest.approx(30.9), None),
                    ("gpt-5.5", "GPT-5.5", 2, pytest.approx(9.7), None, None, pytest.approx(9.7), None)]
    assert board.reported_named_only == ["Claude Fable 5"]
    data = client.get("/api/leaderboard?suite=frogsgame").json()
    assert [(r["key"], r["average"], r["std"], r["runs"], r["stds"]) for r in data["rows"]] == [
        ("opus-4.8", pytest.approx(30.9), None, 8, {"frogsgame": None}),
        ("gpt-5.5", pytest.approx(9.7), None, None, {"frogsgame": None})]  # the report gives no runs for 9.7%
    assert [(f["agent"], f["quantity"], f["value"], f["display"]) for f in data["reported"]
            if f["topic"] == "calibration"] == [("fable-5", "overoptimism", 1.2, "1.2x"),
                                                ("opus-4.8", "overoptimism", 4.9, "4.9x")]
    html = client.get("/?suite=frogsgame").content.decode()
    assert re.search(r'data-agent="opus-4.8".*?30\.9.*?>8<', html, re.S)
    gpt = html[html.index('data-agent="gpt-5.5"'):html.index("</tr>", html.index('data-agent="gpt-5.5"'))]
    assert ">8<" not in gpt and 'title="the source gives this score but not over how many runs">–<' in gpt
    assert 'data-quantity="rollouts_per_step" data-agent="fable-5"' in html and "<strong>512 rollouts</strong>" in html
    assert "Claude Fable 5: figures below, but no score in the source, so no leaderboard row." in html
    assert re.search(r'data-quantity="improvement over previous models".*?note, no figure', html, re.S)
    assert "No published per-agent results shipped yet" not in html


def test_the_analysis_page_and_its_twin_show_the_reported_figures(frogs, client):
    html = client.get("/analysis/?suite=frogsgame").content.decode()
    section = html[html.index('<section id="reported">'):html.index("</section>", html.index('<section id="reported">'))]
    assert [t for t in re.findall(r"<h3>(.*?)</h3>", section)] == ["Score", "Methods", "Training signal",
                                                                    "Calibration", "Note"]
    assert "<strong>4.9x</strong>" in section and "<strong>2 of 8 trials</strong>" in section
    assert "<strong>0-4 steps</strong>" in section and "Claude Fable 5" in section
    reported = client.get("/api/analysis?suite=frogsgame").json()["reported"]
    assert [(f["agent"], f["quantity"], f["value"]) for f in reported if f["topic"] == "training_signal"] == [
        ("fable-5", "error_injected_traces", 0.05), ("fable-5", "rollouts_per_step", 512), ("fable-5", "rl_steps", 95), ("fable-5", "sft_boards", 6000),
        ("opus-4.8", "rollouts_per_step", 128), ("opus-4.8", "rl_steps", 64),
        ("fable-5", "data_generated_vs_best_opus_4.8", 3)]
    assert len(reported) == len(EXPECTED)
    assert client.get("/api/analysis?suite=posttrainbench").json()["reported"] == []
    assert client.get("/api/analysis?suite=nope").status_code == 404
    # PostTrainBench's analysis page has no reported section.
    assert '<section id="reported">' not in client.get("/analysis/").content.decode()


def test_the_plot_twins_answer_the_suite_of_their_page(frogs, client):
    # issue 28: the plot twins took no suite and answered PostTrainBench's data whatever the page showed
    import_published()  # PostTrainBench beside it: the default suite
    twin = client.get("/api/plots/per-benchmark?suite=frogsgame").json()
    assert [b["id"] for b in twin["benchmarks"]] == ["frogsgame"]
    assert [(a["key"], a["scores"]["frogsgame"]) for a in twin["agents"]] == [
        ("opus-4.8", pytest.approx(30.9)), ("gpt-5.5", pytest.approx(9.7))]
    page = client.get("/plots/per-benchmark/?suite=frogsgame").content.decode()
    assert "Claude Opus 4.8" in page and "GPT-5.5" in page
    default = client.get("/api/plots/per-benchmark").json()
    assert "frogsgame" not in [b["id"] for b in default["benchmarks"]]
    for chart in ("time-vs-score", "time-spent", "budget-and-effort", "usage-vs-score"):
        assert client.get(f"/api/plots/{chart}?suite=nope").status_code == 404, chart
        assert client.get(f"/plots/{chart}/?suite=nope").status_code == 404, chart
        assert client.get(f"/api/plots/{chart}?suite=frogsgame").status_code == 200, chart
    spent = client.get("/api/plots/time-spent?suite=frogsgame").json()
    assert (spent["budget_hours"], spent["agents"]) == (20, [])  # suites/frogsgame.json; the report gives no times
    default = client.get("/api/plots/time-spent").json()
    assert default["budget_hours"] == 10 and default["agents"]  # PostTrainBench's


def test_a_fact_naming_an_agent_the_suite_does_not_list_is_rejected(fresh_warehouse, tmp_path, settings, monkeypatch):
    import json

    from ptbsite import suites

    suite = json.loads((suites.SUITES_DIR / "frogsgame.json").read_text())
    suite["reported"]["facts"].append({"topic": "calibration", "agent": "opus-9", "quantity": "overoptimism",
                                       "value": 2.0, "unit": "x", "description": "d", "quote": "q"})
    (tmp_path / "frogsgame.json").write_text(json.dumps(suite))
    monkeypatch.setattr(suites, "SUITES_DIR", tmp_path)
    monkeypatch.setattr("leaderboard.services.SUITES_DIR", tmp_path)
    with pytest.raises(PublishedDataError, match=r"reported.facts\[21\]: names unknown agent 'opus-9'"):
        import_published(suite_id="frogsgame")


@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
def test_the_frogsgame_pages_in_a_browser(frogs, live_server, page):
    from .conftest import ARTIFACTS

    page.goto(live_server.url + "/?suite=frogsgame")
    assert page.locator('tr[data-agent="opus-4.8"] td.avg').inner_text().strip() == "30.9"
    assert page.locator('tr[data-agent="gpt-5.5"] td.avg').inner_text().strip() == "9.7"
    fact = page.locator('table.reported-facts tr[data-quantity="overoptimism"][data-agent="opus-4.8"] td.figure')
    assert fact.inner_text().strip() == "4.9x"
    page.screenshot(path=ARTIFACTS / "frogsgame-leaderboard.png", full_page=True)
    page.goto(live_server.url + "/analysis/?suite=frogsgame")
    assert page.locator('#reported table[data-topic="training_signal"] tr').count() == 8  # header + 7 figures
    page.screenshot(path=ARTIFACTS / "frogsgame-analysis.png", full_page=True)
    assert page.js_errors == []


def test_the_runs_view_still_names_only_fable_5_as_unscored(frogs, client):
    from leaderboard import selectors

    assert selectors.leaderboard(suite="frogsgame", source="runs").reported_named_only == ["Claude Fable 5"]
    html = client.get("/?suite=frogsgame&source=runs").content.decode()
    assert "scored: the best submitted checkpoint." in html
    assert "Claude Fable 5: figures below, but no score in the source, so no leaderboard row." in html


def test_the_footer_names_the_source_of_the_suite_shown(frogs, client):
    """A FrogsGame page credits the report, a PostTrainBench page the website data (ptbsite.context_processors)."""
    frogs_footer = re.search(r'<footer class="site">(.*?)</footer>', client.get("/?suite=frogsgame").content.decode(),
                             re.S).group(1)
    assert "Reported results: “The State of AI Post-Training Agents” (the FrogsGame report)" in frogs_footer
    assert "posttrainbench-website" not in frogs_footer
    default_footer = re.search(r'<footer class="site">(.*?)</footer>', client.get("/").content.decode(), re.S).group(1)
    assert ("Published results: a copy of the PostTrainBench website data (aisa-group/posttrainbench-website, "
            "49cdae1).") in default_footer
    analysis = client.get("/analysis/?suite=frogsgame").content.decode()
    assert "Reported results: “The State of AI Post-Training Agents”" in analysis


def test_pages_of_a_suite_without_runs_show_no_empty_tables(frogs, client):
    """Issue 29: FrogsGame's analysis page had four empty or all-zero tables and an empty chart, its leaderboard an
    empty Scaffold and Effort column, a one-row weights table and a legend about 7 benchmarks and 4 base models."""
    html = client.get("/analysis/?suite=frogsgame").content.decode()
    for gone in ('id="method-mix"', 'id="score-by-method"', 'id="calibration-chart"', 'id="time-use"'):
        assert gone not in html, gone
    notice = html[html.index('id="no-runs"'):html.index("</p>", html.index('id="no-runs"'))]
    assert "No ingested runs for FrogsGame yet, so this page shows" in notice and "only what its source reports" in notice
    board = client.get("/?suite=frogsgame").content.decode()
    head = board[board.index('<table class="leaderboard"'):board.index("</thead>")]
    assert "<th>Scaffold</th>" not in head and "<th>Effort</th>" not in head
    assert 'id="derived-weights"' not in board and "One benchmark, FrogsGame (pass@4)" in board
    assert "56 cells" not in board and "4 base models" not in board
    assert "(1 cell per run here: 1 benchmark × 1 base model)" in client.get("/?suite=frogsgame&source=all").content.decode()
    # PostTrainBench keeps them: its agents have scaffolds and efforts, seven weighted benchmarks.
    import_published()
    ptb = client.get("/").content.decode()
    assert "<th>Scaffold</th>" in ptb and "<th>Effort</th>" in ptb and 'id="derived-weights"' in ptb
