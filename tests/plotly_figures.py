"""The reference for ``leaderboard.figures`` and ``traces.figures``: each figure built with ``plotly.graph_objects``
(every trace validated) from the same data and the same colour, label and axis helpers, as the site built them
before it wrote them as plain dicts (issue 24). Imported by tests only: web workers never import plotly."""
from __future__ import annotations

import json
from collections.abc import Sequence
from html import escape

import plotly.graph_objects as go
from plotly.subplots import make_subplots

from leaderboard import plots
from leaderboard.figures import (_AGENT_HOVER, _FONT, _LABEL_FONT, BUDGET_COLOUR, FAMILY_COLOURS, FRONTIER_STYLE,
                                 LABEL_POSITIONS, REFERENCE_GROUP, _agent_customdata, _by_family, _families,
                                 _hours_axis, _labelled, _legend, _pct, _reference_name, _reference_style,
                                 _std_array, _symbols, _usage_labels, family_colour, family_hues, palette)


def as_dict(fig: go.Figure) -> dict:
    """The figure's JSON as a page received it (``json.loads(fig.to_json())``)."""
    return json.loads(fig.to_json())


def _layout(fig: go.Figure, *, height: int, margin: dict | None = None, **kwargs) -> None:
    fig.update_layout(template="plotly_white", height=height, font=_FONT,
                      margin={**dict(l=70, r=30, t=30, b=60), **(margin or {})}, hoverlabel=dict(align="left"), **kwargs)


def _horizontal_line(fig: go.Figure, *, x0: float, x1: float, y: float, name: str, colour: str, dash: str,
                     hover: str, **kwargs) -> None:
    xs = [x0 + (x1 - x0) * i / 40 for i in range(41)]
    fig.add_trace(go.Scatter(
        x=xs, y=[y] * len(xs), mode="lines", name=name, legendgroup="reference", legendgrouptitle_text=REFERENCE_GROUP,
        line=dict(color=colour, width=1.4, dash=dash), hovertemplate=f"{hover}<extra></extra>", **kwargs,
    ))


def _budget_line(fig: go.Figure, budget_hours: float, *, y: tuple[float, float], group_title: str = REFERENCE_GROUP,
                 **kwargs) -> None:
    name = f"Time budget ({plots.clock(budget_hours)})"
    fig.add_trace(go.Scatter(
        x=[budget_hours, budget_hours], y=list(y), mode="lines", name=name, legendgroup="reference",
        legendgrouptitle_text=group_title, line=dict(color=BUDGET_COLOUR, width=1.4),
        hovertemplate=f"{name} (h:mm)<extra></extra>", **kwargs,
    ))


def time_vs_score(data: plots.TimeVsScore, *, scaffolds: Sequence[str] = ()) -> dict:
    fig = go.Figure()
    agents = [(p.key, p.scaffold) for p in data.points]
    colours, symbols = palette(agents, scaffolds), _symbols(agents)
    families = _families(agents, scaffolds)
    frontier = [p.key for p in data.frontier]
    order = frontier + [p.key for p in sorted(data.points, key=lambda p: -p.score) if p.key not in frontier]
    x_max = data.budget_hours * 1.04
    tops = [100 * (p.score + (p.score_std or 0)) for p in data.points] + [100 * b.score for b in data.baselines]
    y_max = max(tops, default=10) * 1.06
    for p in _by_family(data.points, lambda p: p.scaffold, families):
        fig.add_trace(go.Scatter(
            x=[p.hours], y=[100 * p.score], mode="markers+text", name=escape(p.label),
            legendgroup=p.scaffold or "other", legendgrouptitle_text=escape(p.scaffold or "other"),
            marker=dict(color=colours[p.key], size=12, symbol=symbols[p.key], line=dict(width=1, color="white")),
            error_x=_std_array([p.hours_std]), error_y=_std_array([_pct(p.score_std)]),
            text=[escape(p.label)], textposition=LABEL_POSITIONS[0], textfont=_LABEL_FONT, cliponaxis=False,
            meta=_labelled(order.index(p.key)),
            customdata=[_agent_customdata(p)], hovertemplate=_AGENT_HOVER,
        ))
    fig.add_trace(go.Scatter(
        x=[p.hours for p in data.frontier], y=[100 * p.score for p in data.frontier], mode="lines",
        line=FRONTIER_STYLE, name="Pareto frontier", legendgroup="reference", legendgrouptitle_text=REFERENCE_GROUP,
        hoverinfo="skip",
    ))
    for i, reference in enumerate(data.baselines):
        colour, dash = _reference_style(reference.key, i)
        _horizontal_line(fig, x0=0, x1=x_max, y=100 * reference.score, colour=colour, dash=dash,
                         name=_reference_name(reference.name, reference.score),
                         hover=f"{escape(reference.name)}: {100 * reference.score:.1f} %")
    _budget_line(fig, data.budget_hours, y=(0, y_max))
    _layout(fig, height=760, legend=_legend())
    fig.update_xaxes(title_text=f"Mean wall time used (h:mm, of the {plots.clock(data.budget_hours)} budget)",
                     **_hours_axis(data.budget_hours, upto=x_max))
    fig.update_yaxes(title_text="Weighted average score (%)", range=[0, y_max])
    return as_dict(fig)


def time_spent(data: plots.TimeSpent, *, scaffolds: Sequence[str] = ()) -> dict:
    fig = go.Figure()
    ranked = [(p.key, p.scaffold) for p in sorted(data.agents, key=lambda p: -p.score)]
    colours, hues = palette(ranked, scaffolds), family_hues(ranked, scaffolds)
    for family in _families(ranked, scaffolds):
        if any((s or "other") == family for _, s in ranked):
            fig.add_trace(go.Scatter(x=[None], y=[None], mode="markers", name=escape(family), legendgroup=family,
                                     marker=dict(color=family_colour(hues[family]), symbol="square", size=12),
                                     legendrank=1))
    for p in data.agents:
        fig.add_trace(go.Bar(
            y=[p.label], x=[p.hours], orientation="h", name=escape(p.label), showlegend=False,
            legendgroup=p.scaffold or "other", marker_color=colours[p.key], error_x=_std_array([p.hours_std]),
            customdata=[_agent_customdata(p)], hovertemplate=_AGENT_HOVER,
        ))
    column = max([data.budget_hours, *(p.hours + (p.hours_std or 0) for p in data.agents)]) + 0.12
    fig.add_trace(go.Scatter(
        x=[column] * len(data.agents), y=[p.label for p in data.agents], mode="text", showlegend=False,
        text=[p.clock + (f" ± {p.clock_std}" if p.clock_std else "") for p in data.agents],
        textposition="middle right", textfont=_LABEL_FONT, cliponaxis=False, hoverinfo="skip",
        meta=_labelled(0, ["middle right"]),
    ))
    _budget_line(fig, data.budget_hours, y=(0, 1), group_title="", yaxis="y2", legendrank=2)
    _layout(fig, height=max(360, 28 * len(data.agents) + 170), barmode="overlay", margin=dict(r=110, t=30, b=100),
            legend=dict(orientation="h", x=0, y=0.005, yanchor="bottom", yref="container", font=dict(size=12)),
            yaxis2=dict(overlaying="y", range=[0, 1], visible=False, fixedrange=True))
    fig.update_layout(yaxis=dict(type="category", categoryorder="array", categoryarray=[p.label for p in data.agents],
                                 autorange="reversed"))
    fig.update_xaxes(title_text=f"Mean wall time used (h:mm, of the {plots.clock(data.budget_hours)} budget;"
                                " right: mean ± std)", **_hours_axis(data.budget_hours, upto=column + 0.02))
    return as_dict(fig)


def per_benchmark(data: plots.PerBenchmark, *, scaffolds: Sequence[str] = ()) -> dict:
    fig = go.Figure()
    positions = list(range(len(data.benchmarks)))
    ranked = [(a.key, a.scaffold) for a in data.agents]
    colours, families = palette(ranked, scaffolds), _families(ranked, scaffolds)
    for agent in _by_family(data.agents, lambda a: a.scaffold, families):
        fig.add_trace(go.Bar(
            x=positions, y=[100 * agent.scores[b.id] for b in data.benchmarks], name=escape(agent.label),
            legendgroup=agent.scaffold or "other", legendgrouptitle_text=escape(agent.scaffold or "other"),
            marker_color=colours[agent.key],
            customdata=[[agent.key, escape(agent.label), escape(agent.scaffold or ""), escape(b.name)]
                        for b in data.benchmarks],
            hovertemplate="<b>%{customdata[1]}</b><br>scaffold: %{customdata[2]}<br>%{customdata[3]}: %{y:.1f} %"
                          "<extra></extra>",
        ))
    for i, reference in enumerate(data.references):
        xs: list[float | None] = []
        ys: list[float | None] = []
        for position, b in zip(positions, data.benchmarks):
            xs += [position - 0.46, position + 0.46, None]
            ys += [100 * reference.scores[b.id]] * 2 + [None]
        colour, dash = _reference_style(reference.key, i)
        fig.add_trace(go.Scatter(
            x=xs, y=ys, mode="lines", name=escape(reference.agent), legendgroup="reference",
            legendgrouptitle_text=REFERENCE_GROUP, line=dict(color=colour, width=2, dash=dash),
            hovertemplate=f"{escape(reference.agent)}: %{{y:.1f}} %<extra></extra>",
        ))
    rows = len(data.agents) + len(data.references) + len(families) + 1
    _layout(fig, height=max(720, 21 * rows + 150), barmode="group", bargap=0.08, bargroupgap=0.0, legend=_legend())
    fig.update_xaxes(tickvals=positions, ticktext=[escape(b.name) for b in data.benchmarks],
                     range=[-0.5, len(positions) - 0.5])
    fig.update_yaxes(title_text="Score (%)", rangemode="tozero")
    return as_dict(fig)


def time_budget(data: plots.BudgetAndEffort) -> dict:
    fig = go.Figure()
    budgets = sorted({p.budget_hours for s in data.time_budget for p in s.points})
    for i, series in enumerate(data.time_budget):
        fig.add_trace(go.Scatter(
            x=[p.budget_hours for p in series.points], y=[100 * p.score for p in series.points], mode="lines+markers",
            name=series.label, marker=dict(size=10, color=FAMILY_COLOURS[i % len(FAMILY_COLOURS)]),
            customdata=[plots.clock(p.budget_hours) for p in series.points],
            hovertemplate=f"<b>{escape(series.label)}</b><br>budget: %{{customdata}} (h:mm)<br>score: %{{y:.1f}} %"
                          "<extra></extra>",
        ))
    _layout(fig, height=440)
    fig.update_xaxes(title_text="Time budget (h:mm)", type="log", tickvals=budgets,
                     ticktext=[plots.clock(b) for b in budgets])
    fig.update_yaxes(title_text="Weighted average score (%)", rangemode="tozero")
    return as_dict(fig)


def reasoning_effort(data: plots.BudgetAndEffort) -> dict:
    points = data.reasoning_effort
    fig = go.Figure(go.Bar(
        x=[p.effort for p in points], y=[100 * p.score for p in points], marker_color=FAMILY_COLOURS[1],
        error_y=_std_array(_pct(p.score_std) for p in points), name=points[0].label if points else "",
        customdata=[[p.label, "" if p.hours is None else plots.clock(p.hours),
                     "" if p.tokens is None else f"{p.tokens:,.0f}"] for p in points],
        hovertemplate="<b>%{customdata[0]}</b>, effort %{x}<br>score: %{y:.1f} %<br>time used: %{customdata[1]} (h:mm)"
                      "<br>tokens per run: %{customdata[2]}<extra></extra>",
    ))
    _layout(fig, height=440, showlegend=False)
    fig.update_xaxes(title_text=f"Reasoning effort ({points[0].label if points else ''})")
    fig.update_yaxes(title_text="Weighted average score (%)", rangemode="tozero")
    return as_dict(fig)


def model_size(data: plots.BudgetAndEffort) -> dict:
    fig = go.Figure(go.Bar(
        x=[p.label for p in data.model_size], y=[100 * p.score for p in data.model_size], marker_color=FAMILY_COLOURS[0],
        hovertemplate="<b>%{x}</b><br>score: %{y:.1f} %<extra></extra>",
    ))
    _layout(fig, height=440, showlegend=False)
    fig.update_xaxes(title_text="Model, smallest first")
    fig.update_yaxes(title_text="Weighted average score (%)", rangemode="tozero")
    return as_dict(fig)


def usage_vs_score(data: plots.UsageVsScore, *, axis: str, scaffolds: Sequence[str] = ()) -> dict:
    value = (lambda p: p.tokens) if axis == "tokens" else (lambda p: p.cost_usd)
    points = [p for p in data.points if value(p) is not None]
    frontier = data.token_frontier if axis == "tokens" else data.cost_frontier
    every = [(p.key, p.scaffold) for p in data.points]
    colours, symbols, families = palette(every, scaffolds), _symbols(every), _families(every, scaffolds)
    label = _usage_labels(data.points)
    order = [p.key for p in frontier] + [p.key for p in points if p not in frontier]
    fig = go.Figure()
    for p in _by_family(points, lambda p: p.scaffold, families):
        fig.add_trace(go.Scatter(
            x=[value(p)], y=[100 * p.score], mode="markers+text", name=label[p.key],
            legendgroup=p.scaffold or "other", legendgrouptitle_text=escape(p.scaffold or "other"),
            marker=dict(size=12, symbol=symbols[p.key], color=colours[p.key], line=dict(width=1, color="white")),
            error_y=_std_array([_pct(p.score_std)]),
            text=[label[p.key]], textposition=LABEL_POSITIONS[0], textfont=_LABEL_FONT, cliponaxis=False,
            meta=_labelled(order.index(p.key)),
            customdata=[[p.key, label[p.key], escape(p.scaffold or ""), p.runs,
                         f"{value(p):,.0f}" if axis == "tokens" else f"${value(p):,.2f}",
                         f"{100 * p.score:.1f}" + ("" if p.score_std is None else f" ± {100 * p.score_std:.1f}")]],
            hovertemplate=("<b>%{customdata[1]}</b><br>scaffold: %{customdata[2]}<br>runs: %{customdata[3]}<br>"
                           + ("tokens per run" if axis == "tokens" else "cost per run")
                           + ": %{customdata[4]}<br>score: %{customdata[5]} %<extra></extra>"),
        ))
    fig.add_trace(go.Scatter(
        x=[value(p) for p in frontier], y=[100 * p.score for p in frontier], mode="lines", line=FRONTIER_STYLE,
        name="Pareto frontier", legendgroup="reference", legendgrouptitle_text=REFERENCE_GROUP, hoverinfo="skip",
    ))
    _layout(fig, height=560, legend=_legend())
    fig.update_xaxes(type="log", title_text="Mean tokens per run (input + output)" if axis == "tokens"
                     else "Mean cost per run (US dollars)", tickprefix="" if axis == "tokens" else "$")
    fig.update_yaxes(title_text="Weighted average score from ingested runs (%)")
    return as_dict(fig)


def timeline_layout(rows: int) -> dict:
    """The run timeline's layout as plotly's subplot builder wrote it (traces.figures before issue 24)."""
    fig = make_subplots(rows=rows, cols=1, shared_xaxes=True, vertical_spacing=0.06,
                        row_heights=[0.4, 0.3, 0.3] if rows == 3 else [1.0])
    if rows == 3:
        fig.update_yaxes(title_text="util %", range=[0, 105], row=2, col=1)
        fig.update_yaxes(title_text="GiB", range=[0, 1], row=3, col=1)
    fig.update_xaxes(tickvals=[0], ticktext=["0:00"])
    fig.update_xaxes(title_text="time since the trace's start (h:mm)", row=rows, col=1)
    fig.update_layout(template="plotly_white", height=260 + 130 * (rows - 1), font=dict(family="system-ui, sans-serif",
                      size=13), barmode="overlay", margin=dict(l=90, r=20, t=20, b=50),
                      legend=dict(orientation="h", y=-0.25 if rows == 1 else -0.1), hoverlabel=dict(align="left"))
    return as_dict(fig)["layout"]


def timeline(data) -> dict:
    """The whole timeline figure with its traces validated by plotly (``go.Figure(data=..., layout=...)``): the
    site's traces (plain dicts) read back through plotly's trace classes, on the reference layout."""
    from traces import figures

    built = figures.timeline(data)
    rows = 3 if data.monitor else 1
    layout = timeline_layout(rows)
    for key, axis in built["layout"].items():  # what each run sets: the time axes' ticks, the GPU memory range
        if key.startswith("xaxis"):
            layout[key].update(tickvals=axis["tickvals"], ticktext=axis["ticktext"])
    if rows == 3:
        layout["yaxis3"]["range"] = built["layout"]["yaxis3"]["range"]
    return as_dict(go.Figure(data=built["data"], layout=layout))
