"""The calibration chart written as plain dicts is the figure plotly builds from the same runs (issue 24: pages that
send a figure as JSON no longer validate every point through plotly)."""
from __future__ import annotations

import json
from html import escape

import plotly.graph_objects as go
import pytest

from traces import figures, selectors

pytestmark = pytest.mark.django_db


def plotly_calibration(runs) -> dict:
    """The figure as traces/figures.py built it with plotly before (the reference)."""
    fig = go.Figure()
    points = [f for f in runs if f.ratio is not None and f.base_score is not None]
    for agent in dict.fromkeys(f.run.agent for f in points):  # the agent's display name (FactRun)
        mine = [f for f in points if f.run.agent == agent]
        fig.add_trace(go.Scatter(
            name=escape(agent), mode="markers", x=[100 * f.base_score for f in mine], y=[f.ratio for f in mine],
            marker=dict(size=10),
            customdata=[[f.run.id, f.run.benchmark, f.run.base_model, 100 * f.self_score, 100 * f.verified]
                        for f in mine],
            hovertemplate=f"<b>{escape(agent)}</b><br>%{{customdata[1]}} · %{{customdata[2]}}<br>self %{{customdata[3]:.1f}}"
                          " vs verified %{customdata[4]:.1f}<br>ratio %{y:.2f}x<extra></extra>"))
    fig.add_hline(y=1, line_dash="dash", line_color="#6b7280")
    fig.update_layout(template="plotly_white", height=420, font=dict(family="system-ui, sans-serif", size=13),
                      margin=dict(l=70, r=20, t=20, b=60), xaxis_title="base model's score on the benchmark (%)",
                      yaxis_title="overoptimism (self-reported / verified)", hoverlabel=dict(align="left"))
    return json.loads(fig.to_json())


def test_the_calibration_dicts_equal_plotlys_figure(demo_ingested):
    runs = selectors.analysis("posttrainbench").runs
    built = figures.calibration(runs)
    assert sum(len(t["x"]) for t in built["data"]) >= 3  # the demo has runs with a ratio
    assert built == plotly_calibration(runs)
    assert figures.calibration([]) == plotly_calibration([])


def test_the_plot_figures_are_the_same_with_plotlys_trace_validation(demo_ingested, monkeypatch):
    """leaderboard.figures builds its traces without plotly's validation (VALIDATE_TRACES); each figure of every
    plot page, on the demo's runs and the published data, equals the one built with it."""
    from leaderboard import figures as board_figures
    from leaderboard import plots

    usage = plots.usage_vs_score(suite="posttrainbench")
    budget = plots.budget_and_effort(suite="posttrainbench")
    builders = [
        lambda: board_figures.time_vs_score(plots.time_vs_score(suite="posttrainbench")),
        lambda: board_figures.time_spent(plots.time_spent(suite="posttrainbench")),
        lambda: board_figures.per_benchmark(plots.per_benchmark(suite="posttrainbench")),
        lambda: board_figures.per_benchmark(plots.per_benchmark(suite="posttrainbench", base_model="Qwen3-4B-Base")),
        lambda: board_figures.time_budget(budget), lambda: board_figures.reasoning_effort(budget),
        lambda: board_figures.model_size(budget),
        lambda: board_figures.usage_vs_score(usage, axis="tokens"), lambda: board_figures.usage_vs_score(usage, axis="cost"),
    ]
    assert len(usage.points) >= 3  # the demo's agents are plotted
    fast = [build() for build in builders]
    monkeypatch.setattr(board_figures, "VALIDATE_TRACES", True)
    checked = [build() for build in builders]
    for built, reference in zip(fast, checked):
        assert json.dumps(built, sort_keys=True) == json.dumps(reference, sort_keys=True)
    assert sum(len(f["data"]) for f in fast) >= 20
