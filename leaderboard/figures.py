"""Plotly figures of the plot pages, built with ``plotly.graph_objects`` from the dataclasses of ``plots``.

Each builder returns the figure as a JSON-ready dict (``json.loads(fig.to_json())``) that a template embeds with
``json_script`` and draws with ``Plotly.newPlot``. Points that stand for an agent carry its key as
``customdata[0]``, which the page's script turns into a link to that agent's runs.

Readable by construction, and checked in a browser (tests/test_browser_plots.py):

- Colour: one hue per scaffold family (:func:`palette`: the suite's scaffolds in sorted order get hues far apart
  on the colour wheel) and a shade of it per agent, so that 23 agents read as four families and still differ.
- Legend: every agent is a trace named by its display name, grouped under its scaffold; every line (Pareto
  frontier, baselines, time budget) is a trace too, never a layout shape, so that the legend names it.
- Point labels: a trace whose ``meta`` is :func:`_labelled` has its text placed by ``static/js/plots.js`` at the
  first of its candidate positions that no line, error bar, marker, axis label or other label touches, measured
  on the drawn chart; a label with no clear position is dropped and the point is named on hover only.
- Units: scores in percent, durations in h:mm, on axes, hover texts and labels alike.
"""
from __future__ import annotations

import colorsys
import json
import math
from collections.abc import Iterable, Sequence
from html import escape  # names reach plotly's HTML-ish text (labels, legend, hover): escaped

import plotly.colors
import plotly.graph_objects as go

from . import plots

FAMILY_COLOURS = plotly.colors.qualitative.Dark2
# Hues (degrees) of the scaffold families, in the order the suite's sorted scaffold names take them (PostTrainBench:
# Claude Code orange, Codex CLI green, Gemini CLI blue, OpenCode purple); the first four are >= 60 degrees apart.
FAMILY_HUES = (28, 140, 212, 282, 350, 180, 58, 245)
HUE_SPREAD = 22.0  # degrees over which one family's shades spread (its agents' hues stay within +-11 degrees)
LIGHTNESS = (0.34, 0.66)  # darkest and lightest shade (HLS lightness): readable on white, never black
SATURATION = (0.82, 0.58)  # alternate shades' saturation, so that two shades of like lightness still differ
# Marker shapes, cycled within a family, so that two agents of one family differ in shape as well as in shade.
AGENT_SYMBOLS = ("circle", "square", "diamond", "triangle-up", "pentagon", "triangle-down", "hexagon", "star",
                 "hourglass", "triangle-left")
# Reference lines: colour and dash per baseline key (suite data), then for the frontier and the budget.
REFERENCE_STYLES = {"instruct": ("#6b7280", "dash"), "base-fewshot": ("#4b5563", "dashdot"),
                    "base-zeroshot": ("#111827", "longdash")}
OTHER_REFERENCE_STYLES = [("#4b5563", "dot"), ("#9ca3af", "longdashdot")]
FRONTIER_STYLE = dict(shape="hv", color="#111827", width=1.6, dash="dot")
BUDGET_COLOUR = "#b91c1c"
REFERENCE_GROUP = "Reference lines"
VALIDATE_TRACES = False
"""Whether plotly validates each trace as it is built. Off: the traces are written as plotly writes them already
(plain lists, numbers and text), and its validation cost ~1 CPU ms per trace (the usage chart at K=90: 122 -> 63 ms
for its 64 traces, issue 24); the figure itself is still validated, which expands the layout's template.
``tests/test_figure_dicts.py`` checks that every figure is the same with it on."""
# Where a point's label may go, most preferred first (plotly's ``textposition`` values).
LABEL_POSITIONS = ("top left", "top right", "bottom right", "bottom left", "middle right", "middle left",
                   "top center", "bottom center")
_FONT = dict(family="system-ui, sans-serif", size=13)
_LABEL_FONT = dict(size=11, color="#1f2937")


def _ordered(values: Iterable[str | None]) -> list[str]:
    """Distinct values in order of first appearance (None shown as "other")."""
    seen: dict[str, None] = {}
    for value in values:
        seen.setdefault(value or "other", None)
    return list(seen)


def _hex(hue: float, lightness: float, saturation: float = SATURATION[0]) -> str:
    r, g, b = colorsys.hls_to_rgb((hue % 360) / 360, lightness, saturation)
    return f"#{round(255 * r):02x}{round(255 * g):02x}{round(255 * b):02x}"


def _families(agents: Sequence[tuple[str, str | None]], scaffolds: Sequence[str]) -> list[str]:
    """The suite's scaffolds (sorted), then any other scaffold of ``agents`` (sorted; None as "other")."""
    return _ordered([*sorted(scaffolds), *sorted({s or "other" for _, s in agents})])


def family_hues(agents: Sequence[tuple[str, str | None]], scaffolds: Sequence[str] = ()) -> dict[str, float]:
    """Scaffold -> hue in degrees (``FAMILY_HUES`` in the order of :func:`_families`)."""
    return {f: FAMILY_HUES[i % len(FAMILY_HUES)] for i, f in enumerate(_families(agents, scaffolds))}


def family_colour(hue: float) -> str:
    """A family's own colour (its middle shade), for its legend entry."""
    return _hex(hue, sum(LIGHTNESS) / 2)


def palette(agents: Sequence[tuple[str, str | None]], scaffolds: Sequence[str] = ()) -> dict[str, str]:
    """Agent key -> ``#rrggbb``: the hue of its scaffold's family and a shade of its own.

    Args:
        agents: (key, scaffold) in a fixed order (the leaderboard's), so that every chart gives an agent the same
            shade: the k-th agent of a family of n gets lightness level k interleaved (0, n/2, 1, n/2 + 1, ...), so
            neighbours differ by about half the range, a hue within ``HUE_SPREAD`` of its family's, and a
            saturation that alternates between levels.
        scaffolds: the suite's scaffold names; their sorted order fixes the families' hues, so that a chart
            missing a scaffold colours the others as every other chart does.
    """
    hues = family_hues(agents, scaffolds)
    members: dict[str, list[str]] = {}
    for key, scaffold in agents:
        members.setdefault(scaffold or "other", []).append(key)
    colours = {}
    for family, keys in members.items():
        n = len(keys)
        for k, key in enumerate(keys):
            level = k // 2 if k % 2 == 0 else (n + 1) // 2 + k // 2
            t = level / (n - 1) if n > 1 else 0.5
            colours[key] = _hex(hues[family] + HUE_SPREAD * (t - 0.5), LIGHTNESS[0] + (LIGHTNESS[1] - LIGHTNESS[0]) * t,
                                SATURATION[level % 2])
    return colours


def _symbols(agents: Sequence[tuple[str, str | None]]) -> dict[str, str]:
    """Agent key -> marker symbol, cycled within each family (in the order given)."""
    seen: dict[str, int] = {}
    symbols = {}
    for key, scaffold in agents:
        k = seen[scaffold or "other"] = seen.get(scaffold or "other", -1) + 1
        symbols[key] = AGENT_SYMBOLS[k % len(AGENT_SYMBOLS)]
    return symbols


def _as_dict(fig: go.Figure) -> dict:
    return json.loads(fig.to_json())


_TRACE_TYPES = {"scatter": go.Scatter}


def _with_traces(fig: go.Figure, traces: list[dict]) -> dict:
    """The figure (its layout built and validated by plotly) as a JSON-ready dict whose ``data`` is ``traces``:
    plain dicts of plotly's trace properties (nested, no magic underscores) with their ``type``, written as they
    are. A chart with a trace per agent (the usage charts: ~60 at K=90, issue 24) spent ~1 CPU ms per trace in
    plotly's trace objects even unvalidated. With :data:`VALIDATE_TRACES` each is built and validated by plotly
    (``tests/test_figure_dicts.py`` checks both give the same figure)."""
    if VALIDATE_TRACES:
        fig.add_traces([_TRACE_TYPES[t["type"]](**{k: v for k, v in t.items() if k != "type"}) for t in traces])
        return _as_dict(fig)
    out = _as_dict(fig)
    out["data"] = json.loads(json.dumps(traces))
    return out


def _layout(fig: go.Figure, *, height: int, margin: dict | None = None, **kwargs) -> None:
    fig.update_layout(template="plotly_white", height=height, font=_FONT,
                      margin={**dict(l=70, r=30, t=30, b=60), **(margin or {})}, hoverlabel=dict(align="left"), **kwargs)


def _legend(**kwargs) -> dict:
    """A vertical legend at the right, one group per scaffold and the reference lines last; clicking an entry
    hides or shows that line only."""
    return dict(groupclick="toggleitem", tracegroupgap=6, font=dict(size=12), grouptitlefont=dict(size=12),
                **kwargs)


def _pct(fraction: float | None) -> float | None:
    """A fraction as percent, the charts' unit for scores."""
    return None if fraction is None else 100 * fraction


def _std_array(values: Iterable[float | None]) -> dict:
    # A whisker only where there is a std: plotly would draw a zero-length whisker with caps for null.
    values = list(values)
    return dict(type="data", array=[v or 0 for v in values], visible=any(v is not None for v in values),
                thickness=1.2, width=3)


def _labelled(rank: int, positions: Sequence[str] = LABEL_POSITIONS) -> dict:
    """A trace's ``meta`` asking plots.js to place its points' text at the first of ``positions`` that is clear of
    every line, error bar, marker, axis label and earlier-placed label; lower ``rank`` is placed first."""
    return {"labels": list(positions), "label_rank": rank}


def _hours_axis(budget_hours: float, *, upto: float | None = None) -> dict:
    """An x axis of durations: ticks every hour (every 2 h past 12 h) labelled h:mm, up to the budget."""
    step = 1 if budget_hours <= 12 else 2
    ticks = [float(h) for h in range(0, math.floor(budget_hours) + 1, step)]
    return dict(tickvals=ticks, ticktext=[plots.clock(h) for h in ticks], range=[0, upto or budget_hours * 1.04])


def _reference_style(key: str, index: int) -> tuple[str, str]:
    return REFERENCE_STYLES.get(key) or OTHER_REFERENCE_STYLES[index % len(OTHER_REFERENCE_STYLES)]


def _reference_name(name: str, score: float) -> str:
    return f"{escape(name)} ({100 * score:.1f} %)"


def _horizontal_line(fig: go.Figure, *, x0: float, x1: float, y: float, name: str, colour: str, dash: str,
                     hover: str, **kwargs) -> None:
    """A reference line as a trace (named in the legend), with points every few percent of its length so that
    hovering anywhere along it names it."""
    xs = [x0 + (x1 - x0) * i / 40 for i in range(41)]
    fig.add_trace(go.Scatter(_validate=VALIDATE_TRACES,
        x=xs, y=[y] * len(xs), mode="lines", name=name, legendgroup="reference", legendgrouptitle_text=REFERENCE_GROUP,
        line=dict(color=colour, width=1.4, dash=dash), hovertemplate=f"{hover}<extra></extra>", **kwargs,
    ))


def _budget_line(fig: go.Figure, budget_hours: float, *, y: tuple[float, float], group_title: str = REFERENCE_GROUP,
                 **kwargs) -> None:
    """The time budget as a vertical line trace named in the legend."""
    name = f"Time budget ({plots.clock(budget_hours)})"
    fig.add_trace(go.Scatter(_validate=VALIDATE_TRACES,
        x=[budget_hours, budget_hours], y=list(y), mode="lines", name=name, legendgroup="reference",
        legendgrouptitle_text=group_title, line=dict(color=BUDGET_COLOUR, width=1.4),
        hovertemplate=f"{name} (h:mm)<extra></extra>", **kwargs,
    ))


def _agent_customdata(p: plots.AgentTime) -> list:
    score_std = "" if p.score_std is None else f" ± {100 * p.score_std:.1f}"
    hours_std = "" if p.hours_std is None else f" ± {p.clock_std}"
    return [p.key, escape(p.label), escape(p.scaffold or ""), p.runs, f"{p.clock}{hours_std}",
            f"{100 * p.score:.1f}{score_std}"]


_AGENT_HOVER = ("<b>%{customdata[1]}</b><br>scaffold: %{customdata[2]}<br>runs: %{customdata[3]}"
                "<br>time used: %{customdata[4]} (h:mm)<br>score: %{customdata[5]} %<extra></extra>")


def _by_family(items: Sequence, scaffold_of, families: Sequence[str]) -> list:
    """``items`` grouped by family (in ``families`` order), each group in its given order."""
    rank = {f: i for i, f in enumerate(families)}
    return sorted(items, key=lambda item: rank[scaffold_of(item) or "other"])


def time_vs_score(data: plots.TimeVsScore, *, scaffolds: Sequence[str] = ()) -> dict:
    """Score (percent, y) against mean time used (h:mm, x): one marker per agent in its scaffold family's colour
    (a shade and a shape of its own), named in the legend under its scaffold and labelled where there is room
    (the frontier's agents first); ± std whiskers where runs were repeated; the Pareto frontier as a step line,
    the baselines as horizontal lines and the time budget as a vertical line, each named in the legend.

    Args:
        scaffolds: the suite's scaffold names, which fix the families' hues (:func:`palette`).
    """
    fig = go.Figure()
    agents = [(p.key, p.scaffold) for p in data.points]
    colours, symbols = palette(agents, scaffolds), _symbols(agents)
    families = _families(agents, scaffolds)
    frontier = [p.key for p in data.frontier]
    # Labels placed in this order: the frontier's agents (fastest first), then the others by score.
    order = frontier + [p.key for p in sorted(data.points, key=lambda p: -p.score) if p.key not in frontier]
    x_max = data.budget_hours * 1.04
    tops = [100 * (p.score + (p.score_std or 0)) for p in data.points] + [100 * b.score for b in data.baselines]
    y_max = max(tops, default=10) * 1.06
    for p in _by_family(data.points, lambda p: p.scaffold, families):
        fig.add_trace(go.Scatter(_validate=VALIDATE_TRACES,
            x=[p.hours], y=[100 * p.score], mode="markers+text", name=escape(p.label),
            legendgroup=p.scaffold or "other", legendgrouptitle_text=escape(p.scaffold or "other"),
            marker=dict(color=colours[p.key], size=12, symbol=symbols[p.key], line=dict(width=1, color="white")),
            error_x=_std_array([p.hours_std]), error_y=_std_array([_pct(p.score_std)]),
            text=[escape(p.label)], textposition=LABEL_POSITIONS[0], textfont=_LABEL_FONT, cliponaxis=False,
            meta=_labelled(order.index(p.key)),
            customdata=[_agent_customdata(p)], hovertemplate=_AGENT_HOVER,
        ))
    fig.add_trace(go.Scatter(_validate=VALIDATE_TRACES,
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
    return _as_dict(fig)


def time_spent(data: plots.TimeSpent, *, scaffolds: Sequence[str] = ()) -> dict:
    """Horizontal bars of mean time used per agent (most at the top) in its scaffold family's shade, ± std
    whiskers, the time budget as a vertical line, and each agent's h:mm in a column right of the budget and of
    every whisker, so that no whisker or line crosses a number. The legend names the families and the budget.

    Args:
        scaffolds: the suite's scaffold names, which fix the families' hues (:func:`palette`).
    """
    fig = go.Figure()
    # Shades in leaderboard order (by score), as on every other chart.
    ranked = [(p.key, p.scaffold) for p in sorted(data.agents, key=lambda p: -p.score)]
    colours, hues = palette(ranked, scaffolds), family_hues(ranked, scaffolds)
    for family in _families(ranked, scaffolds):
        if any((s or "other") == family for _, s in ranked):
            # The family's legend entry: draws nothing, shows and hides the family's bars.
            fig.add_trace(go.Scatter(_validate=VALIDATE_TRACES, x=[None], y=[None], mode="markers", name=escape(family), legendgroup=family,
                                     marker=dict(color=family_colour(hues[family]), symbol="square", size=12),
                                     legendrank=1))
    for p in data.agents:
        fig.add_trace(go.Bar(_validate=VALIDATE_TRACES,
            y=[p.label], x=[p.hours], orientation="h", name=escape(p.label), showlegend=False,
            legendgroup=p.scaffold or "other", marker_color=colours[p.key], error_x=_std_array([p.hours_std]),
            customdata=[_agent_customdata(p)], hovertemplate=_AGENT_HOVER,
        ))
    column = max([data.budget_hours, *(p.hours + (p.hours_std or 0) for p in data.agents)]) + 0.12
    fig.add_trace(go.Scatter(_validate=VALIDATE_TRACES,
        x=[column] * len(data.agents), y=[p.label for p in data.agents], mode="text", showlegend=False,
        text=[p.clock + (f" ± {p.clock_std}" if p.clock_std else "") for p in data.agents],
        textposition="middle right", textfont=_LABEL_FONT, cliponaxis=False, hoverinfo="skip",
        meta=_labelled(0, ["middle right"]),
    ))
    _budget_line(fig, data.budget_hours, y=(0, 1), group_title="", yaxis="y2", legendrank=2)
    # The legend under the axis title, clear of the mode bar at the top right on a narrow screen.
    _layout(fig, height=max(360, 28 * len(data.agents) + 170), barmode="overlay", margin=dict(r=110, t=30, b=100),
            legend=dict(orientation="h", x=0, y=0.005, yanchor="bottom", yref="container", font=dict(size=12)),
            yaxis2=dict(overlaying="y", range=[0, 1], visible=False, fixedrange=True))
    fig.update_layout(yaxis=dict(type="category", categoryorder="array", categoryarray=[p.label for p in data.agents],
                                 autorange="reversed"))
    fig.update_xaxes(title_text=f"Mean wall time used (h:mm, of the {plots.clock(data.budget_hours)} budget;"
                                " right: mean ± std)", **_hours_axis(data.budget_hours, upto=column + 0.02))
    return _as_dict(fig)


def per_benchmark(data: plots.PerBenchmark, *, scaffolds: Sequence[str] = ()) -> dict:
    """Grouped bars: one group per benchmark, one bar per agent in its scaffold family's shade (the families side
    by side, each in leaderboard order), and each baseline as a segment across every group, named in the legend.
    No whiskers: in the average view a cell's std is only a display convention (the mean over base models of
    per-cell stds), and 23 bars a group leave no room for them; the API has the stds.

    Args:
        scaffolds: the suite's scaffold names, which fix the families' hues (:func:`palette`).
    """
    fig = go.Figure()
    positions = list(range(len(data.benchmarks)))
    ranked = [(a.key, a.scaffold) for a in data.agents]
    colours, families = palette(ranked, scaffolds), _families(ranked, scaffolds)
    for agent in _by_family(data.agents, lambda a: a.scaffold, families):
        fig.add_trace(go.Bar(_validate=VALIDATE_TRACES,
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
        fig.add_trace(go.Scatter(_validate=VALIDATE_TRACES,
            x=xs, y=ys, mode="lines", name=escape(reference.agent), legendgroup="reference",
            legendgrouptitle_text=REFERENCE_GROUP, line=dict(color=colour, width=2, dash=dash),
            hovertemplate=f"{escape(reference.agent)}: %{{y:.1f}} %<extra></extra>",
        ))
    rows = len(data.agents) + len(data.references) + len(families) + 1
    _layout(fig, height=max(720, 21 * rows + 150), barmode="group", bargap=0.08, bargroupgap=0.0, legend=_legend())
    fig.update_xaxes(tickvals=positions, ticktext=[escape(b.name) for b in data.benchmarks],
                     range=[-0.5, len(positions) - 0.5])
    fig.update_yaxes(title_text="Score (%)", rangemode="tozero")
    return _as_dict(fig)


def time_budget(data: plots.BudgetAndEffort) -> dict:
    """Score (percent) against the time budget (h:mm, 1:00/2:00/5:00/10:00 on a log axis): one line per agent."""
    fig = go.Figure()
    budgets = sorted({p.budget_hours for s in data.time_budget for p in s.points})
    for i, series in enumerate(data.time_budget):
        fig.add_trace(go.Scatter(_validate=VALIDATE_TRACES,
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
    return _as_dict(fig)


def reasoning_effort(data: plots.BudgetAndEffort) -> dict:
    """Score (percent) per reasoning effort with ± std whiskers; hover adds hours used and tokens per run."""
    points = data.reasoning_effort
    fig = go.Figure(go.Bar(_validate=VALIDATE_TRACES,
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
    return _as_dict(fig)


def model_size(data: plots.BudgetAndEffort) -> dict:
    """Score (percent) of the models of one family, smallest first (the paper's model-size comparison)."""
    fig = go.Figure(go.Bar(_validate=VALIDATE_TRACES,
        x=[p.label for p in data.model_size], y=[100 * p.score for p in data.model_size], marker_color=FAMILY_COLOURS[0],
        hovertemplate="<b>%{x}</b><br>score: %{y:.1f} %<extra></extra>",
    ))
    _layout(fig, height=440, showlegend=False)
    fig.update_xaxes(title_text="Model, smallest first")
    fig.update_yaxes(title_text="Weighted average score (%)", rangemode="tozero")
    return _as_dict(fig)


def _usage_labels(points: Sequence[plots.AgentUsage]) -> dict[str, str]:
    """Agent key -> display name, with the scaffold added where two agents share a name, and "(synthetic)" for
    agents computed from generated demo runs (escaped)."""
    names = [p.agent for p in points]
    return {p.key: escape(f"{p.agent} ({p.scaffold})" if names.count(p.agent) > 1 else p.agent)
            + (" (synthetic)" if p.synthetic else "") for p in points}


def usage_vs_score(data: plots.UsageVsScore, *, axis: str, scaffolds: Sequence[str] = ()) -> dict:
    """Score (percent, y) against mean ``tokens`` or ``cost`` per run (x, log scale): one marker per agent with
    that usage in its scaffold family's colour (a shade and a shape of its own, the same on both charts), named in
    the legend and labelled where there is room (the frontier's agents first), ± std whiskers on the score, and the
    Pareto frontier (less usage, higher score) as a step line named in the legend.

    Args:
        axis: ``tokens`` or ``cost``.
        scaffolds: the suite's scaffold names, which fix the families' hues (:func:`palette`).
    """
    value = (lambda p: p.tokens) if axis == "tokens" else (lambda p: p.cost_usd)
    points = [p for p in data.points if value(p) is not None]
    frontier = data.token_frontier if axis == "tokens" else data.cost_frontier
    # Colours and shapes over every agent (in score order), so that both charts draw an agent alike.
    every = [(p.key, p.scaffold) for p in data.points]
    colours, symbols, families = palette(every, scaffolds), _symbols(every), _families(every, scaffolds)
    label = _usage_labels(data.points)
    order = [p.key for p in frontier] + [p.key for p in points if p not in frontier]
    traces = [dict(
        type="scatter", x=[value(p)], y=[100 * p.score], mode="markers+text", name=label[p.key],
        legendgroup=p.scaffold or "other", legendgrouptitle=dict(text=escape(p.scaffold or "other")),
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
    ) for p in _by_family(points, lambda p: p.scaffold, families)]
    traces.append(dict(
        type="scatter", x=[value(p) for p in frontier], y=[100 * p.score for p in frontier], mode="lines",
        line=FRONTIER_STYLE, name="Pareto frontier", legendgroup="reference",
        legendgrouptitle=dict(text=REFERENCE_GROUP), hoverinfo="skip",
    ))
    fig = go.Figure()
    _layout(fig, height=560, legend=_legend())
    fig.update_xaxes(type="log", title_text="Mean tokens per run (input + output)" if axis == "tokens"
                     else "Mean cost per run (US dollars)", tickprefix="" if axis == "tokens" else "$")
    fig.update_yaxes(title_text="Weighted average score from ingested runs (%)")
    return _with_traces(fig, traces)
