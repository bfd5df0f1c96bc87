"""The JSON twins of the plot pages against the published numbers, and the frontier against a hand computation."""
from __future__ import annotations

import csv

import pytest

from leaderboard.services import DEFAULT_PUBLISHED_DIR

pytestmark = pytest.mark.django_db

# The time-vs-score frontier by hand, from the published times (data/time_aggregated.csv,
# data/aggregated_time_overview.csv; Sonnet 4.5 from paper-plots fig2) and headline scores (percent), in order
# of hours. A point is on the frontier when its score beats every faster agent's:
#   GPT-5.1 Codex Max (OpenCode)   0:32:56 = 0.549 h   7.65   fastest of all          -> on
#   GPT-5.3 Codex (Medium)         0:53:38 = 0.894 h  13.77   > 7.65                  -> on
#   Kimi K2 Thinking               1:22:04 = 1.368 h   7.25   < 13.77                 -> off
#   GPT-5.3 Codex (High)           1:39:09 = 1.653 h  17.76   > 13.77                 -> on
#   GPT-5.4 (High)                 1:46:27 = 1.774 h  20.23   > 17.76                 -> on
#   Qwen3 Max 2.096 h 7.42, GPT-5.2 Codex 2.427 h 17.22, Kimi K2.5 2.547 h 10.26, GLM-4.7 2.693 h 7.48,
#   MiniMax M2.5 2.983 h 9.50, GLM-5 3.562 h 13.88, MiniMax M2.1 3.727 h 9.33: all < 20.23 -> off
#   Gemini 3.1 Pro                 4:03:04 = 4.051 h  21.59   > 20.23                 -> on
#   GPT-5.1 Codex Max (Codex CLI)  4:03:12 = 4.053 h  19.68   < 21.59                 -> off
#   Sonnet 4.5 4.186 h 9.94, Gemini 3 Pro (OpenCode) 6.058 h 14.86, GPT-5.2 6.077 h 21.38 (just under 21.59),
#   Gemini 3 Pro 6.596 h 18.12, Sonnet 4.6 6.834 h 16.42, Opus 4.5 (OpenCode) 6.880 h 17.29,
#   Opus 4.5 7.878 h 17.14: all < 21.59 -> off
#   Opus 4.6 (1M)                  8:48:03 = 8.801 h  24.82   > 21.59                 -> on
#   Opus 4.6                       9:39:42 = 9.662 h  23.16   < 24.82                 -> off
FRONTIER_KEYS = ["gpt-5.1-codex-max-opencode", "gpt-5.3-codex-med", "gpt-5.3-codex-high", "gpt-5.4-high",
                 "gemini-3.1-pro", "opus-4.6-1m"]
FRONTIER_NAMES = ["GPT-5.1 Codex Max", "GPT-5.3 Codex (Medium)", "GPT-5.3 Codex (High)", "GPT-5.4 (High)",
                  "Gemini 3.1 Pro", "Opus 4.6 (1M)"]


def _hours(text: str) -> float:
    h, m, s = (int(x) for x in text.split(":"))
    return h + m / 60 + s / 3600


def test_time_vs_score_frontier_matches_the_hand_computation(client, use_published):
    body = client.get("/api/plots/time-vs-score").json()
    assert body["frontier"] == FRONTIER_NAMES
    assert body["frontier_keys"] == FRONTIER_KEYS
    # The same by brute force over the returned points: no other point at most as slow and at least as good.
    points = body["points"]
    dominated = {
        p["key"] for p in points for q in points
        if q is not p and q["hours"] <= p["hours"] and q["score"] >= p["score"]
        and (q["hours"], q["score"]) != (p["hours"], p["score"])
    }
    assert [p["key"] for p in sorted(points, key=lambda p: p["hours"]) if p["key"] not in dominated] == FRONTIER_KEYS


def test_time_vs_score_numbers(client, use_published):
    body = client.get("/api/plots/time-vs-score").json()
    points = {p["key"]: p for p in body["points"]}
    assert len(points) == 23 and body["budget_hours"] == 10
    assert set(points["opus-4.6"]) == {"key", "agent", "label", "scaffold", "model_family", "hours", "hours_std",
                                       "score", "score_std", "runs", "source_file"}
    opus = points["opus-4.6"]
    assert (opus["agent"], opus["scaffold"], opus["runs"]) == ("Opus 4.6", "Claude Code", 3)
    assert opus["hours"] == pytest.approx(_hours("9:39:42"))
    assert opus["hours_std"] == pytest.approx(_hours("0:22:15"))
    assert opus["score"] == pytest.approx(23.162899943863, abs=1e-9)
    assert opus["score_std"] == pytest.approx(1.8034286817758392, abs=1e-9)
    glm = points["glm-5"]
    assert (glm["hours"], glm["hours_std"], glm["score_std"], glm["runs"]) == (
        pytest.approx(_hours("3:33:43")), None, None, 1)
    assert points["sonnet-4.5"]["source_file"] == "paper-plots/data/fig2_time_vs_performance.csv"
    assert points["opus-4.5-opencode"]["label"] == "Opus 4.5 (OpenCode)"
    assert {b["key"]: round(b["score"], 1) for b in body["baselines"]} == {
        "instruct": 51.1, "base-fewshot": 18.1, "base-zeroshot": 7.5}


def test_time_vs_score_agrees_with_the_papers_figure_2(client, use_published):
    """fig2_time_vs_performance.csv is the paper's own Pareto data: times to within 5 s, scores to 0.1 point."""
    points = {p["label"]: p for p in client.get("/api/plots/time-vs-score").json()["points"]}
    names = {"GPT 5.3 Codex (High)": "GPT-5.3 Codex (High)", "GPT 5.4 (High)": "GPT-5.4 (High)",
             "Opus 4.5": "Opus 4.5 (Claude Code)", "GPT-5.1 Codex Max": "GPT-5.1 Codex Max (Codex CLI)",
             "Gemini 3 Pro": "Gemini 3 Pro (Gemini CLI)"}
    with (DEFAULT_PUBLISHED_DIR / "paper-plots/data/fig2_time_vs_performance.csv").open() as handle:
        rows = list(csv.DictReader(handle))
    assert len(rows) == 14
    for row in rows:
        point = points[names.get(row["Agent"], row["Agent"])]
        assert point["hours"] == pytest.approx(_hours(row["AvgTime"]), abs=5 / 3600), row["Agent"]
        assert f"{point['score']:.1f}" == row["AvgPerf"], row["Agent"]
        if row["StdPerf"]:
            assert f"{point['score_std']:.1f}" == row["StdPerf"], row["Agent"]


def test_time_spent_is_sorted_most_first(client, use_published):
    body = client.get("/api/plots/time-spent").json()
    hours = [a["hours"] for a in body["agents"]]
    assert hours == sorted(hours, reverse=True) and len(hours) == 23
    assert body["agents"][0]["key"] == "opus-4.6"
    assert body["agents"][-1]["key"] == "gpt-5.1-codex-max-opencode"
    assert body["agents"][-1]["hours"] == pytest.approx(_hours("0:32:56"))


def test_per_benchmark_numbers_and_base_model(client, use_published):
    body = client.get("/api/plots/per-benchmark").json()
    assert body["base_model"] is None
    assert [b["id"] for b in body["benchmarks"]] == [
        "aime2025", "arenahardwriting", "bfcl", "gpqamain", "gsm8k", "healthbench", "humaneval"]
    assert [a["key"] for a in body["agents"]][:3] == ["opus-4.6-1m", "opus-4.6", "gemini-3.1-pro"]
    assert len(body["agents"]) == 23
    assert {r["key"] for r in body["references"]} == {"instruct", "base-fewshot", "base-zeroshot"}
    one = client.get("/api/plots/per-benchmark", {"base_model": "Qwen3-4B-Base"}).json()
    references = {r["key"]: r for r in one["references"]}
    agents = {a["key"]: a for a in one["agents"]}
    assert references["base-zeroshot"]["scores"]["gsm8k"] == pytest.approx(41.85, abs=0.005)
    assert agents["glm-4.7"]["scores"]["gsm8k"] == pytest.approx(45.72, abs=0.005)
    assert agents["glm-4.7"]["stds"]["gsm8k"] is None
    # Same agent order in every view (the overall leaderboard's), so colours and legend stay put.
    assert [a["key"] for a in one["agents"]] == [a["key"] for a in body["agents"]]
    assert client.get("/api/plots/per-benchmark", {"base_model": "Llama-3-8B"}).status_code == 404


def test_budget_and_effort_numbers(client, use_published):
    body = client.get("/api/plots/budget-and-effort").json()
    budget = {s["label"]: s for s in body["time_budget"]}
    assert list(budget) == ["Claude Opus 4.5", "GPT-5.1 Codex Max", "Gemini 3 Pro"]
    assert budget["Claude Opus 4.5"]["agent"] == "opus-4.5"
    # fig3's Score is a fraction: 0.11841255902550873 -> 11.84 percent.
    assert [round(p["score"], 2) for p in budget["Claude Opus 4.5"]["points"]] == [11.84, 12.36, 16.86, 17.12]
    assert [p["budget_hours"] for p in budget["Gemini 3 Pro"]["points"]] == [1, 2, 5, 10]
    effort = {p["effort"]: p for p in body["reasoning_effort"]}
    assert list(effort) == ["low", "medium", "high"]
    assert effort["medium"]["agent"] == "gpt-5.1-codex-max"
    assert (effort["high"]["score"], effort["high"]["score_std"], effort["high"]["hours"], effort["high"]["tokens"]) == (
        pytest.approx(17.4), pytest.approx(0.3), pytest.approx(5.484), 1890246)
    assert [(p["label"], round(p["score"], 1)) for p in body["model_size"]] == [
        ("Haiku 4.5", 6.2), ("Sonnet 4.5", 9.9), ("Opus 4.5", 17.1)]
