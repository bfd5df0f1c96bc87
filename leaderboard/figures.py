"""Plotly figures of the plot pages, built with ``plotly.graph_objects`` from the dataclasses of ``plots``.

Each builder returns the figure as a JSON-ready dict (``json.loads(fig.to_json())``) that a template embeds with
``json_script`` and draws with ``Plotly.newPlot``. Points that stand for an agent carry its key as
``customdata[0]``, which the page's script turns into a link to that agent's runs.
"""
from __future__ import annotations

import json
from html import escape  # names of ingested methods reach plotly's HTML-ish labels: escaped
from collections.abc import Iterable

import plotly.colors
import plotly.graph_objects as go

from . import plots

FAMILY_COLOURS = plotly.colors.qualitative.Dark2
AGENT_COLOURS = plotly.colors.qualitative.Alphabet
REFERENCE_COLOURS = {"instruct": "#6b7280", "base-fewshot": "#9ca3af", "base-zeroshot": "#111827"}
SCAFFOLD_SYMBOLS = ["circle", "square", "diamond", "triangle-up", "cross", "x", "star", "hexagon"]
_FONT = dict(family="system-ui, sans-serif", size=13)


def _ordered(values: Iterable[str | None]) -> list[str]:
    """Distinct values in order of first appearance (None shown as "other")."""
    seen: dict[str, None] = {}
    for value in values:
        seen.setdefault(value or "other", None)
    return list(seen)


def _family_colours(points: Iterable[plots.AgentTime]) -> dict[str, str]:
    """Model family -> colour, by sorted family name, so that every chart colours a family alike."""
    families = sorted(_ordered(p.model_family for p in points))
    return {family: FAMILY_COLOURS[i % len(FAMILY_COLOURS)] for i, family in enumerate(families)}


def _as_dict(fig: go.Figure) -> dict:
    return json.loads(fig.to_json())


def _layout(fig: go.Figure, *, height: int, **kwargs) -> None:
    fig.update_layout(template="plotly_white", height=height, font=_FONT, margin=dict(l=70, r=30, t=30, b=60),
                      hoverlabel=dict(align="left"), **kwargs)


def _pct(fraction: float | None) -> float | None:
    """A fraction as percent, the charts' unit for scores."""
    return None if fraction is None else 100 * fraction


def _std_array(values: Iterable[float | None]) -> dict:
    # Plotly draws no whisker where the array holds null: single runs get no error bar.
    return dict(type="data", array=list(values), visible=True, thickness=1.2, width=3)


def _agent_customdata(p: plots.AgentTime) -> list:
    score_std = "" if p.score_std is None else f" ± {100 * p.score_std:.1f}"
    hours_std = "" if p.hours_std is None else f" ± {p.clock_std}"
    return [p.key, p.label, p.scaffold or "", p.runs, f"{p.clock}{hours_std}", f"{100 * p.score:.1f}{score_std}"]


_AGENT_HOVER = ("<b>%{customdata[1]}</b><br>scaffold: %{customdata[2]}<br>runs: %{customdata[3]}"
                "<br>time: %{customdata[4]} h<br>score: %{customdata[5]} %<extra></extra>")


def time_vs_score(data: plots.TimeVsScore) -> dict:
    """Score (percent, y) against mean hours used (x): one marker per agent, coloured by model family and shaped
    by scaffold, ± std whiskers on both axes, the Pareto frontier as a step line naming its members, the
    baselines as horizontal reference lines and the time budget as a vertical line."""
    fig = go.Figure()
    colours = _family_colours(data.points)
    scaffolds = _ordered(p.scaffold for p in data.points)
    symbol = {s: SCAFFOLD_SYMBOLS[i % len(SCAFFOLD_SYMBOLS)] for i, s in enumerate(scaffolds)}
    for family, colour in colours.items():
        members = [p for p in data.points if (p.model_family or "other") == family]
        fig.add_trace(go.Scatter(
            x=[p.hours for p in members], y=[100 * p.score for p in members], mode="markers", name=family,
            legendgroup="family", legendgrouptitle_text="Model family",
            marker=dict(color=colour, size=12, line=dict(width=1, color="white"),
                        symbol=[symbol[p.scaffold or "other"] for p in members]),
            error_x=_std_array(p.hours_std for p in members), error_y=_std_array(_pct(p.score_std) for p in members),
            customdata=[_agent_customdata(p) for p in members], hovertemplate=_AGENT_HOVER,
        ))
    for scaffold in scaffolds:
        # Legend-only entries: the marker shape of each scaffold.
        fig.add_trace(go.Scatter(
            x=[None], y=[None], mode="markers", name=scaffold, legendgroup="scaffold",
            legendgrouptitle_text="Scaffold", marker=dict(symbol=symbol[scaffold], color="#4b5563", size=10),
        ))
    fig.add_trace(go.Scatter(
        x=[p.hours for p in data.frontier], y=[100 * p.score for p in data.frontier], mode="lines+text",
        line=dict(shape="hv", color="#1d2330", width=1.5, dash="dot"), name="Pareto frontier",
        text=[p.label for p in data.frontier], textfont=dict(size=11), hoverinfo="skip", cliponaxis=False,
        # Names sit above-left of their point, clear of the step line; near the y axis they would run off the
        # chart, so there they go above-right.
        textposition=["top right" if p.hours < 0.15 * data.budget_hours else "top left" for p in data.frontier],
    ))
    for reference in data.baselines:
        fig.add_hline(y=100 * reference.score, line=dict(color=REFERENCE_COLOURS.get(reference.key, "#9ca3af"),
                                                   width=1, dash="dash"),
                      annotation_text=f"{reference.name} {100 * reference.score:.1f}", annotation_position="bottom right",
                      annotation_font=dict(size=11, color="#6b7280"))
    fig.add_vline(x=data.budget_hours, line=dict(color="#b91c1c", width=1),
                  annotation_text=f"{data.budget_hours:g} h budget", annotation_position="bottom left",
                  annotation_font=dict(size=11, color="#b91c1c"))
    _layout(fig, height=640, legend=dict(groupclick="toggleitem"))
    fig.update_xaxes(title_text=f"Mean time used (hours, of the {data.budget_hours:g}-hour budget)",
                     range=[0, data.budget_hours * 1.04], dtick=1)
    fig.update_yaxes(title_text="Weighted average score (%)", rangemode="tozero")
    return _as_dict(fig)


def time_spent(data: plots.TimeSpent) -> dict:
    """Horizontal bars of mean hours used per agent (most at the top) with ± std whiskers, coloured by model
    family, and the time budget as a vertical line."""
    fig = go.Figure()
    for family, colour in _family_colours(data.agents).items():
        members = [p for p in data.agents if (p.model_family or "other") == family]
        fig.add_trace(go.Bar(
            y=[p.label for p in members], x=[p.hours for p in members], orientation="h", name=family,
            marker_color=colour, error_x=_std_array(p.hours_std for p in members),
            text=[p.clock for p in members], textposition="outside", cliponaxis=False,
            customdata=[_agent_customdata(p) for p in members], hovertemplate=_AGENT_HOVER,
        ))
    fig.add_vline(x=data.budget_hours, line=dict(color="#b91c1c", width=1),
                  annotation_text=f"{data.budget_hours:g} h budget", annotation_position="bottom left",
                  annotation_font=dict(size=11, color="#b91c1c"))
    _layout(fig, height=max(360, 28 * len(data.agents) + 120), barmode="relative",
            legend=dict(title_text="Model family"))
    fig.update_yaxes(categoryorder="array", categoryarray=[p.label for p in data.agents], autorange="reversed")
    fig.update_xaxes(title_text=f"Mean time used (hours, of the {data.budget_hours:g}-hour budget)",
                     range=[0, data.budget_hours * 1.08], dtick=1)
    return _as_dict(fig)


def per_benchmark(data: plots.PerBenchmark) -> dict:
    """Grouped bars: one group per benchmark, one bar per agent (rank order), and each baseline as a dashed
    segment across every group. No whiskers: in the average view a cell's std is only a display convention (the
    mean over base models of per-cell stds), and 23 bars a group leave no room for them; the API has the stds."""
    fig = go.Figure()
    positions = list(range(len(data.benchmarks)))
    for i, agent in enumerate(data.agents):
        fig.add_trace(go.Bar(
            x=positions, y=[100 * agent.scores[b.id] for b in data.benchmarks], name=agent.label,
            marker_color=AGENT_COLOURS[i % len(AGENT_COLOURS)],
            customdata=[[agent.key, agent.agent, agent.scaffold or "", b.name] for b in data.benchmarks],
            hovertemplate="<b>%{customdata[1]}</b> (%{customdata[2]})<br>%{customdata[3]}: %{y:.1f} %<extra></extra>",
        ))
    for reference in data.references:
        xs: list[float | None] = []
        ys: list[float | None] = []
        for position, b in zip(positions, data.benchmarks):
            xs += [position - 0.46, position + 0.46, None]
            ys += [100 * reference.scores[b.id]] * 2 + [None]
        fig.add_trace(go.Scatter(
            x=xs, y=ys, mode="lines", name=reference.agent, legendgroup="references",
            legendgrouptitle_text="References",
            line=dict(color=REFERENCE_COLOURS.get(reference.key, "#9ca3af"), width=2, dash="dash"),
            hovertemplate=f"{reference.agent}: %{{y:.1f}} %<extra></extra>",
        ))
    _layout(fig, height=780, barmode="group", bargap=0.08, bargroupgap=0.0)
    fig.update_xaxes(tickvals=positions, ticktext=[b.name for b in data.benchmarks], range=[-0.5, len(positions) - 0.5])
    fig.update_yaxes(title_text="Score (%)", rangemode="tozero")
    return _as_dict(fig)


def time_budget(data: plots.BudgetAndEffort) -> dict:
    """Score (percent) against the time budget (hours, 1/2/5/10 on a log axis): one line per agent."""
    fig = go.Figure()
    budgets = sorted({p.budget_hours for s in data.time_budget for p in s.points})
    for i, series in enumerate(data.time_budget):
        fig.add_trace(go.Scatter(
            x=[p.budget_hours for p in series.points], y=[100 * p.score for p in series.points], mode="lines+markers",
            name=series.label, marker=dict(size=10, color=FAMILY_COLOURS[i % len(FAMILY_COLOURS)]),
            hovertemplate=f"<b>{series.label}</b><br>budget: %{{x:g}} h<br>score: %{{y:.1f}} %<extra></extra>",
        ))
    _layout(fig, height=440)
    fig.update_xaxes(title_text="Time budget (hours)", type="log", tickvals=budgets, ticktext=[f"{b:g} h" for b in budgets])
    fig.update_yaxes(title_text="Weighted average score (%)", rangemode="tozero")
    return _as_dict(fig)


def reasoning_effort(data: plots.BudgetAndEffort) -> dict:
    """Score (percent) per reasoning effort with ± std whiskers; hover adds hours used and tokens per run."""
    points = data.reasoning_effort
    fig = go.Figure(go.Bar(
        x=[p.effort for p in points], y=[100 * p.score for p in points], marker_color=FAMILY_COLOURS[1],
        error_y=_std_array(_pct(p.score_std) for p in points), name=points[0].label if points else "",
        customdata=[[p.label, "" if p.hours is None else plots.clock(p.hours),
                     "" if p.tokens is None else f"{p.tokens:,.0f}"] for p in points],
        hovertemplate="<b>%{customdata[0]}</b>, effort %{x}<br>score: %{y:.1f} %<br>time used: %{customdata[1]} h"
                      "<br>tokens per run: %{customdata[2]}<extra></extra>",
    ))
    _layout(fig, height=440, showlegend=False)
    fig.update_xaxes(title_text=f"Reasoning effort ({points[0].label if points else ''})")
    fig.update_yaxes(title_text="Weighted average score (%)", rangemode="tozero")
    return _as_dict(fig)


def model_size(data: plots.BudgetAndEffort) -> dict:
    """Score (percent) of the models of one family, smallest first (the paper's model-size comparison)."""
    fig = go.Figure(go.Bar(
        x=[p.label for p in data.model_size], y=[100 * p.score for p in data.model_size], marker_color=FAMILY_COLOURS[0],
        hovertemplate="<b>%{x}</b><br>score: %{y:.1f} %<extra></extra>",
    ))
    _layout(fig, height=440, showlegend=False)
    fig.update_xaxes(title_text="Model, smallest first")
    fig.update_yaxes(title_text="Weighted average score (%)", rangemode="tozero")
    return _as_dict(fig)


def usage_vs_score(data: plots.UsageVsScore, *, axis: str) -> dict:
    """Score (percent, y) against mean ``tokens`` or ``cost`` per run (x, log scale): one marker per agent with
    that usage, shaped by scaffold, ± std whiskers on the score, and the Pareto frontier (less usage, higher
    score) as a step line naming its members."""
    value = (lambda p: p.tokens) if axis == "tokens" else (lambda p: p.cost_usd)
    points = [p for p in data.points if value(p) is not None]
    frontier = data.token_frontier if axis == "tokens" else data.cost_frontier
    # Shapes and colours by scaffold over all agents, so that both charts draw a scaffold alike.
    every = sorted(_ordered(p.scaffold for p in data.points))
    symbol = {s: SCAFFOLD_SYMBOLS[i % len(SCAFFOLD_SYMBOLS)] for i, s in enumerate(every)}
    colour = {s: FAMILY_COLOURS[i % len(FAMILY_COLOURS)] for i, s in enumerate(every)}
    fig = go.Figure()
    for scaffold in sorted(_ordered(p.scaffold for p in points)):
        members = [p for p in points if (p.scaffold or "other") == scaffold]
        fig.add_trace(go.Scatter(
            x=[value(p) for p in members], y=[100 * p.score for p in members], mode="markers", name=scaffold,
            marker=dict(size=12, symbol=symbol[scaffold], color=colour[scaffold], line=dict(width=1, color="white")),
            error_y=_std_array(_pct(p.score_std) for p in members),
            customdata=[[p.key, escape(p.agent) + (" (synthetic)" if p.synthetic else ""), escape(p.scaffold or ""), p.runs,
                         f"{value(p):,.0f}" if axis == "tokens" else f"${value(p):,.2f}", f"{100 * p.score:.1f}"]
                        for p in members],
            hovertemplate=("<b>%{customdata[1]}</b><br>scaffold: %{customdata[2]}<br>runs: %{customdata[3]}<br>"
                           + ("tokens per run" if axis == "tokens" else "cost per run")
                           + ": %{customdata[4]}<br>score: %{customdata[5]} %<extra></extra>"),
        ))
    fig.add_trace(go.Scatter(
        x=[value(p) for p in frontier], y=[100 * p.score for p in frontier], mode="lines+text",
        line=dict(shape="hv", color="#1d2330", width=1.5, dash="dot"), name="Pareto frontier",
        text=[escape(p.agent) for p in frontier], textfont=dict(size=11), hoverinfo="skip", cliponaxis=False,
        textposition=["top right" if i == 0 else "top left" for i in range(len(frontier))],
    ))
    _layout(fig, height=520)
    fig.update_xaxes(type="log", title_text="Mean tokens per run (input + output)" if axis == "tokens"
                     else "Mean cost per run (US dollars)")
    fig.update_yaxes(title_text="Weighted average score from ingested runs (%)")
    return _as_dict(fig)
