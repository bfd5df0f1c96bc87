"""Facets through ingest: time split and calibration checked by hand, the FrogsGame suite, the leaderboard's facet
filter, the analysis page and every JSON twin, on a small hand-built results tree."""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from ptbsite import warehouse
from traces import layout, selectors

OPUS = "claude_claude-opus-4-6_10h_run2"  # one of Opus 4.6's listed seeds
FROGS = "claude_claude-opus-4-6_20h_run1"
RUN_A = "gsm8k_Qwen_Qwen3-4B-Base_17000001"
RUN_B = "humaneval_Qwen_Qwen3-4B-Base_17000002"
RUN_F = "frogsgame_Qwen_Qwen3-8B-Base_17000003"
ID_A, ID_B, ID_F = layout.run_id(OPUS, RUN_A), layout.run_id(OPUS, RUN_B), layout.run_id(FROGS, RUN_F)


def _claude(events: list[tuple[str | None, dict]]) -> str:
    """A Claude Code stream-json trace; each event with a ``[2026-04-05T<hh:mm:ss>Z] `` prefix when given."""
    return "".join((f"[2026-04-05T{t}Z] " if t else "") + json.dumps(e) + "\n" for t, e in events)


def _call(k: int, command: str) -> dict:
    return {"type": "assistant", "message": {"id": f"m{k}", "role": "assistant", "content": [
        {"type": "tool_use", "id": f"toolu_{k}", "name": "Bash", "input": {"command": command}}]}}


def _result(k: int, output: str) -> dict:
    return {"type": "user", "message": {"role": "user", "content": [
        {"type": "tool_result", "tool_use_id": f"toolu_{k}", "content": output}]}}


INIT = {"type": "system", "subtype": "init", "session_id": "s", "model": "claude-opus-4-6", "cwd": "/home/ben/task"}
# Run A, hand-timed: steps 0 init, 1-2 ls, 3-4 data, 5-6 a 2-hour foreground training, 7 a message, then 30
# minutes with nothing running, 8-9 an evaluation, 10 the end.
TRACE_A = _claude([
    ("10:00:00", INIT),
    ("10:00:10", _call(0, "ls")), ("10:00:20", _result(0, "evaluate.py")),
    ("10:00:30", _call(1, "python -c 'from datasets import load_dataset; load_dataset(\"openai/gsm8k\", \"main\", "
                          "split=\"train\")'")),
    ("10:05:30", _result(1, "Dataset(num_rows: 7473)")),
    ("10:06:00", _call(2, "python train.py")), ("12:06:00", _result(2, "{'loss': 0.3}")),
    ("12:07:00", {"type": "assistant", "message": {"id": "m9", "role": "assistant",
                                                   "content": [{"type": "text", "text": "Training done."}]}}),
    ("12:37:00", _call(3, "python evaluate.py --model-path out")), ("12:47:00", _result(3, "accuracy: 0.6000 (30/50)")),
    ("12:50:00", {"type": "result", "subtype": "success", "is_error": False, "result": "done"}),
])
TRACE_B = _claude([(None, INIT), (None, _call(0, "python train_grpo.py")), (None, _result(0, "{'loss': 0.1}")),
                   (None, _call(1, "python evaluate.py")), (None, _result(1, "accuracy: 0.4900"))])
TRACE_F = _claude([("10:00:00", INIT), ("10:00:10", _call(0, "python train_grpo.py")),
                   ("11:00:00", _result(0, "{'loss': 0.1}")), ("11:00:10", _call(1, "python evaluate.py --k 4")),
                   ("11:10:00", _result(1, "pass@4: 0.42"))])
MONITOR = "\n".join(["=== System Monitor Started (interval: 60s) ===", "Start time: 2026-04-05 10:00:00 UTC", ""] + [
    line for when, util, mem in (("10:00:00", 0, 1), ("11:00:00", 95, 60000), ("12:00:00", 90, 61000))
    for line in (f"--- 2026-04-05 {when} UTC ---", "[GPU]",
                 f"0, {util} %, {util // 2} %, {mem} MiB, 81559 MiB, 40, 300.00 W", "[CPU]", " load average: 1.0", "")])


def _run(root: Path, method: str, run_dir: str, *, trace: str, accuracy: float, time_taken: str,
         monitor: str | None = None) -> None:
    path = root / method / run_dir
    path.mkdir(parents=True)
    (path / "solve_out.txt").write_text(trace)
    (path / "metrics.json").write_text(json.dumps({"accuracy": accuracy}))
    (path / "time_taken.txt").write_text(time_taken + "\n")
    (path / "contamination_judgement.txt").write_text("no contamination detected\n")
    (path / "disallowed_model_judgement.txt").write_text("only allowed use detected\n")
    if monitor:
        (path / "system_monitor.log").write_text(monitor)


@pytest.fixture(scope="module")
def facet_warehouse(published_warehouse, tmp_path_factory):
    """The published data, the FrogsGame suite, and the hand-built trees of both suites ingested."""
    from django.conf import settings

    from leaderboard.services import import_published
    from ingest.tree import ingest_tree

    base = tmp_path_factory.mktemp("facets")
    path = base / "facets.duckdb"
    shutil.copy(published_warehouse, path)
    ptb, frogs = base / "ptb", base / "frogs"
    _run(ptb, OPUS, RUN_A, trace=TRACE_A, accuracy=0.5, time_taken="03:18:00", monitor=MONITOR)
    _run(ptb, OPUS, RUN_B, trace=TRACE_B, accuracy=0.1, time_taken="05:00:00")
    _run(frogs, FROGS, RUN_F, trace=TRACE_F, accuracy=0.35, time_taken="01:15:00")
    previous = settings.PTB_WAREHOUSE
    settings.PTB_WAREHOUSE = str(path)
    warehouse.reset_migration_cache()
    try:
        import_published(suite_id="frogsgame")
        reports = [ingest_tree(root=ptb), ingest_tree(root=frogs, suite_id="frogsgame")]
    finally:
        settings.PTB_WAREHOUSE = previous
    assert [(r.stored, r.failed) for r in reports] == [(2, 0), (1, 0)], [r.problems for r in reports]
    return path


@pytest.fixture
def facet_db(facet_warehouse, settings):
    settings.PTB_WAREHOUSE = str(facet_warehouse)
    return facet_warehouse


def test_time_split_by_hand(facet_db):
    timeline = selectors.run_timeline(selectors.get_run(ID_A))
    # other 0:00-0:30 (init, ls); data 0:30-6:00 (330 s); training 6:00-2:07:00 (the 2 h call and the minute
    # after it, 7,260 s); idle 2:07:00-2:37:00 (30 min after a message); evaluation 2:37:00-2:50:00 (780 s).
    assert [(p.phase, p.start_s, p.end_s, p.step_from, p.step_to) for p in timeline.phases] == [("other", 0.0, 30.0, 0, 3), ("data", 30.0, 360.0, 3, 5),
                               ("training", 360.0, 7620.0, 5, 7), ("idle", 7620.0, 9420.0, 7, 8),
                               ("evaluation", 9420.0, 10200.0, 8, 10)]
    assert timeline.split_s == {"data": 330.0, "training": 7260.0, "evaluation": 780.0, "other": 30.0, "idle": 1800.0}
    assert sum(timeline.split_s.values()) == 10200.0  # the trace's span, 2:50:00
    assert timeline.idle_gaps == 1
    assert timeline.budget_fraction == pytest.approx(11880 / 36000)  # 3:18:00 of 10 h
    assert [(c.index, c.phase) for c in timeline.calls] == [(1, "other"), (3, "data"), (5, "training"), (8, "evaluation")]
    assert [(m.t_s, m.gpu_util, m.gpu_mem_mib, m.gpu_mem_total_mib) for m in timeline.monitor] == [(0.0, 0.0, 1.0, 81559.0), (3600.0, 95.0, 60000.0, 81559.0),
                                (7200.0, 90.0, 61000.0, 81559.0)]


def test_calibration_by_hand(facet_db):
    data = selectors.analysis("posttrainbench")
    runs = {p.run_id: p for p in data.points}
    assert runs[ID_A].self_score == 0.6 and runs[ID_A].verified == 0.5
    assert runs[ID_A].ratio == pytest.approx(1.2)           # 0.60 / 0.50
    assert runs[ID_B].ratio == pytest.approx(4.9)           # 0.49 / 0.10
    assert runs[ID_A].base_score == pytest.approx(0.4185, abs=1e-3)  # Qwen3-4B-Base zero-shot on GSM8K
    (opus,) = [c for c in data.calibration if c.key == "opus-4.6"]
    assert opus.runs == 2
    assert opus.mean_ratio == pytest.approx((1.2 + 4.9) / 2)
    assert (100 * opus.mean_self, 100 * opus.mean_verified) == (pytest.approx(54.5), pytest.approx(30.0))
    assert (opus.best_run, opus.best_ratio) == (ID_A, pytest.approx(1.2))  # the run with the higher verified score


def test_time_use_and_method_mix_per_agent(facet_db):
    data = selectors.analysis("posttrainbench")
    (time_use,) = [t for t in data.time_use if t.key == "opus-4.6"]
    assert (time_use.runs, time_use.runs_timed, time_use.runs_traced) == (2, 2, 1)  # run B has no timestamps
    assert time_use.budget_fraction == pytest.approx((11880 / 36000 + 5 / 10) / 2)
    assert time_use.hours == pytest.approx({"data": 330 / 3600, "training": 7260 / 3600, "evaluation": 780 / 3600,
                                            "other": 30 / 3600, "idle": 0.5})
    (mix,) = [m for m in data.method_mix if m.key == "opus-4.6"]
    assert mix.runs == 2 and mix.counts["grpo"] == 1 and mix.counts["full_finetune"] == 2 and mix.counts["sft"] == 0
    (grpo,) = [m for m in data.score_by_method if m.facet == "grpo"]
    assert (grpo.runs, 100 * grpo.mean_score, grpo.runs_without, 100 * grpo.mean_without) == (1, pytest.approx(10.0), 1,
                                                                                   pytest.approx(50.0))


def test_the_run_page_shows_facets_citing_steps_and_the_timeline(client, facet_db):
    response = client.get(f"/runs/{ID_A}/")
    assert response.status_code == 200
    page = response.content.decode()
    assert "What the agent did" in page
    assert 'data-facet="dataset"' in page and "openai/gsm8k" in page
    assert '<a href="?step=3#step-3">3</a>' in page        # the dataset facet cites the load_dataset call
    assert 'data-facet="self_score"' in page and "60.0%" in page
    assert "<strong>1.20x</strong>" in page  # 0.60 / 0.50
    assert 'id="timeline"' in page and "plotly.min.js" in page
    assert 'data-click-href="?step={0}#step-{0}"' in page
    # The figure is not in the page: it loads after first paint from its own JSON, built from the timeline twin.
    assert f'data-figure-src="/runs/{ID_A}/timeline.json"' in page and 'id="timeline-figure"' not in page
    assert "line-ns-open" not in page and '"hovertemplate"' not in page
    figure = client.get(f"/runs/{ID_A}/timeline.json").json()
    assert [len(t["x"]) for t in figure["data"] if t.get("mode") == "markers"] == [1, 1, 1, 1]  # four calls
    assert [t["name"] for t in figure["data"] if t["type"] == "bar"] == ["data", "training", "evaluation", "other",
                                                                          "idle"]
    twin = client.get(f"/api/runs/{ID_A}/timeline").json()
    assert sorted(c for t in figure["data"] if t.get("mode") == "markers" for c, *_ in t["customdata"]) == \
        [c["index"] for c in twin["calls"]]
    assert client.get("/runs/nope/timeline.json").status_code == 404


def test_json_twins_of_the_run_page(client, facet_db):
    found = client.get(f"/api/runs/{ID_A}/facets").json()
    assert {"facet": "training_launches", "value": "1", "value_num": 1.0, "steps": [5]} in found
    assert {"facet": "self_score", "value": "accuracy: 0.6000", "value_num": 0.6, "steps": [8, 9]} in found
    timeline = client.get(f"/api/runs/{ID_A}/timeline").json()
    assert timeline["split_s"]["idle"] == 1800.0 and timeline["idle_gaps"] == 1 and timeline["idle_gap_s"] == 600.0
    assert timeline["phases"][2] == {"phase": "training", "start_s": 360.0, "end_s": 7620.0, "step_from": 5, "step_to": 7}
    assert timeline["monitor"][1] == {"t_s": 3600.0, "gpu_util": 95.0, "gpu_mem_mib": 60000.0,
                                      "gpu_mem_total_mib": 81559.0}
    assert client.get("/api/runs/nope/facets").status_code == 404


def test_runs_list_and_api_filter_by_facet(client, facet_db):
    assert [r["id"] for r in client.get("/api/runs?facet=grpo&suite=posttrainbench").json()["runs"]] == [ID_B]
    assert {r["id"] for r in client.get("/api/runs?facet=grpo").json()["runs"]} == {ID_B, ID_F}
    assert {r["id"] for r in client.get("/api/runs?facet=dataset:openai/gsm8k").json()["runs"]} == {ID_A}
    assert client.get("/api/runs?facet=curriculum").json()["runs"] == []
    page = client.get("/runs/?facet=grpo&suite=posttrainbench").content.decode()
    assert f'data-run="{ID_B}"' in page and f'data-run="{ID_A}"' not in page


def test_analysis_page_and_api(client, facet_db):
    page = client.get("/analysis/").content.decode()
    assert "Method mix per agent" in page and "Calibration per agent" in page and "Time use per agent" in page
    assert "/runs/?agent=opus-4.6&amp;facet=grpo&amp;suite=posttrainbench&amp;latest=1" in page
    assert f'<a href="/runs/{ID_A}/">1.20x</a>' in page
    assert 'id="calibration-chart"' in page
    twin = client.get("/api/analysis").json()
    calibration = twin["calibration"]
    (opus,) = [a for a in calibration["agents"] if a["key"] == "opus-4.6"]
    assert opus["mean_ratio"] == pytest.approx(3.05)
    assert {r["run_id"]: r["ratio"] for r in calibration["runs"]} == {ID_A: pytest.approx(1.2), ID_B: pytest.approx(4.9)}
    assert [m["counts"]["grpo"] for m in twin["method_mix"] if m["key"] == "opus-4.6"] == [1]
    assert twin["time_use"] and twin["score_by_method"]
    assert client.get("/api/analysis?suite=nope").status_code == 404


def test_the_leaderboard_counts_only_runs_with_the_facet(facet_db):
    from leaderboard import selectors as board

    full = {r.key: r for r in board.leaderboard(source="runs", base_model="Qwen3-4B-Base").rows if r.source == "runs"}
    assert full["opus-4.6"].n_runs == 2 and 100 * full["opus-4.6"].cells["gsm8k"].score == pytest.approx(50.0)
    grpo = {r.key: r for r in board.leaderboard(source="runs", base_model="Qwen3-4B-Base", facet="grpo").rows
            if r.source == "runs"}
    opus = grpo["opus-4.6"]
    assert opus.n_runs == 1 and 100 * opus.cells["humaneval"].score == pytest.approx(10.0)
    assert opus.cells["gsm8k"].fallbacks == [("Qwen3-4B", "facet")]     # run A did not use GRPO
    assert 100 * opus.cells["gsm8k"].score == pytest.approx(41.85, abs=0.01)  # so the base model's score stands in
    assert [r for r in board.leaderboard(source="runs", facet="sft").rows if r.source == "runs"] == []


def test_frogsgame_suite_loads_and_its_leaderboard_renders_pass_at_4(client, facet_db):
    from ptbsite.suites import load_suite

    suite = load_suite("frogsgame")
    assert (suite["budget_hours"], suite["scoring_rule"], suite["benchmarks"][0]["metric"]) == (20, "best_checkpoint",
                                                                                                 "pass@4")
    # The report's two scores, nothing more (tests/test_frogsgame_reported.py checks every figure).
    assert [(a["key"], a["average"], a["std"], a["runs"]) for a in suite["reported"]["agents"]] == [
        ("opus-4.8", 0.309, None, 8), ("gpt-5.5", 0.097, None, None)]  # no trial count for 9.7% in the report
    page = client.get("/?suite=frogsgame").content.decode()
    assert "pass@4" in page and "the best submitted checkpoint" in page
    assert "4.9x" in page and "The State of AI Post-Training Agents" in page
    runs_page = client.get("/?suite=frogsgame&source=runs").content.decode()
    assert 'data-benchmark="frogsgame"' in runs_page and '<span class="metric-label">pass@4</span>' in runs_page
    data = client.get("/api/leaderboard?suite=frogsgame&source=runs").json()
    assert data["metric"] == "pass@4 on held-out boards" and data["benchmarks"][0]["metric"] == "pass@4"
    (row,) = data["rows"]
    # FrogsGame lists no method directories for its agents, so the run's method is its own row, keyed by its name.
    assert row["key"] == FROGS and row["scores"] == {"frogsgame": pytest.approx(35.0)}
    calibration = client.get("/api/analysis?suite=frogsgame").json()["calibration"]
    assert calibration["runs"] == [{"run_id": ID_F, "agent_key": FROGS, "benchmark": "frogsgame",
                                    "base_model": "Qwen3-8B-Base", "self_score": 0.42, "verified": 0.35,
                                    "ratio": pytest.approx(1.2), "base_score": None}]
    assert client.get("/?suite=nope").status_code == 404


def test_monitor_blocks_times_and_rows():
    """``ingest.monitor.parse_monitor``: each block's time (UTC), its GPU rows averaged and summed; a line that
    only looks like a block's start is not one; an impossible time is refused as ``strptime`` refused it."""
    from datetime import datetime, timezone

    import pytest

    from ingest.monitor import Sample, parse_monitor

    text = ("=== System Monitor Started (interval: 60s) ===\n"
            "--- 2026-04-13 00:13:00 UTC ---\n[GPU]\n0, 5 %, 2 %, 1 MiB, 81559 MiB, 31, 100.50 W\n"
            "1, 15 %, 2 %, 3 MiB, 81559 MiB, 31, 100.50 W\n[CPU]\n 00:13:00 up 12 days --- x\n"
            "  --- 2026-04-13 00:14:00 UTC ---  \n[GPU]\n0, 50 %, 2 %, 100 MiB, 81559 MiB, 30, 69.00 W\n"
            "--- 2026-04-13 00:15:00 UTC --- and more\n0, 99 %, 2 %, 100 MiB, 81559 MiB, 30, 69.00 W\n")
    assert parse_monitor(text) == [
        Sample(datetime(2026, 4, 13, 0, 13, tzinfo=timezone.utc), 10.0, 4.0, 163118.0),
        Sample(datetime(2026, 4, 13, 0, 14, tzinfo=timezone.utc), 74.5, 200.0, 163118.0),  # 00:15 is no block
    ]
    with pytest.raises(ValueError):
        parse_monitor("--- 2026-02-30 00:00:00 UTC ---\n[GPU]\n0, 5 %, 2 %, 1 MiB, 81559 MiB, 31, 100.50 W\n")
