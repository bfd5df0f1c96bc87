"""Plotly figures of the run page (timeline) and the analysis page (calibration), as JSON-ready dicts.

Pages embed them with ``json_script`` and draw them with the site's own plotly.min.js (``static/js/plots.js``).
Built as plain dicts and lists, the same JSON plotly writes for them (``tests/test_figure_dicts.py`` builds each with
plotly and compares): web workers never import plotly (issue 24).
Points that link somewhere carry the target in ``customdata[0]``: a step index on the timeline, a run id on the
calibration chart.
"""
from __future__ import annotations

from html import escape  # plotly reads <a>, <b>, <span style> in hover texts and names: trace text is escaped

from ptbsite.plotly_template import plotly_white
from ptbsite.units import hm

from .selectors import CalibrationPoint, PhaseStretch, Timeline

PHASE_COLOURS = {"data": "#1b9e77", "training": "#d95f02", "evaluation": "#7570b3", "other": "#a3a3a3",
                 "idle": "#e5e7eb"}
_FONT = dict(family="system-ui, sans-serif", size=13)


def _axes(row: int) -> dict:
    """The x/y axis ids of subplot ``row`` (1-based), as trace dicts name them."""
    return {"xaxis": "x" if row == 1 else f"x{row}", "yaxis": "y" if row == 1 else f"y{row}"}


def _merge_stretches(phases: list[PhaseStretch]) -> list[tuple]:
    """Consecutive stretches of one phase as one bar: (phase, start_s, end_s, first step, last step)."""
    merged: list[list] = []
    for phase, start, end, step_from, step_to in ((p.phase, p.start_s, p.end_s, p.step_from, p.step_to)
                                                  for p in phases):
        if merged and merged[-1][0] == phase and abs(merged[-1][2] - start) < 1e-6:
            merged[-1][2], merged[-1][4] = end, step_to
        else:
            merged.append([phase, start, end, step_from, step_to])
    return [tuple(m) for m in merged]


MAX_TIMELINE_BARS = 200  # more phase stretches than this: drawn as the phases' shares of 200 equal time bins


def bin_stretches(merged: list[tuple], span_s: float, bins: int = MAX_TIMELINE_BARS) -> tuple[list[tuple], float | None]:
    """(bars, bin width in seconds or None): ``merged`` (``_merge_stretches``' tuples: phase, start_s, end_s, first
    step, last step) as they are when there are at most ``bins`` of them. Else the run is cut into ``bins`` equal
    time bins and each bin draws the seconds each phase fills in it side by side, in PHASE_COLOURS order, from the
    bin's start (a bin 70% training and 30% other: a training bar over its first 70%, an other bar over the rest);
    a bar that meets the same phase's bar of the bin before is one bar. Each bar names the first and last step of
    the stretches it stands for. A 42,882-step run has ~3,700 stretches: one SVG path each made a 1.4 MB DOM
    (issue 29); binned, the page keeps each phase's share of every ~1.5 minutes. The seconds per phase the page
    prints come from every stretch (``Timeline.split_s``)."""
    if len(merged) <= bins or span_s <= 0:
        return merged, None
    width = span_s / bins
    filled = [dict.fromkeys(PHASE_COLOURS, 0.0) for _ in range(bins)]
    steps: list[dict[str, list[int]]] = [{} for _ in range(bins)]
    for phase, start, end, step_from, step_to in merged:
        for b in range(max(int(start / width), 0), min(int(end / width), bins - 1) + 1):
            filled[b][phase] = filled[b].get(phase, 0.0) + max(0.0, min(end, (b + 1) * width) - max(start, b * width))
            steps[b].setdefault(phase, []).extend((step_from, step_to))
    bars: list[list] = []
    for b in range(bins):
        at = b * width
        here = [p for p in PHASE_COLOURS if p in steps[b] and filled[b][p] > 0]
        # The phase the bin before ended with comes first and one the next bin has comes last, so bars join
        # across bins: a run alternating training and other draws ~1 bar per bin, not 2.
        after = [p for p in PHASE_COLOURS if b + 1 < bins and p in steps[b + 1] and filled[b + 1][p] > 0]
        here.sort(key=lambda p: (0 if bars and bars[-1][0] == p and abs(bars[-1][2] - at) < 1e-6
                                 else 2 if p in after else 1))
        for phase in here:
            seconds, first, last = filled[b][phase], min(steps[b][phase]), max(steps[b][phase])
            if bars and bars[-1][0] == phase and abs(bars[-1][2] - at) < 1e-6:
                bars[-1][2], bars[-1][4] = at + seconds, max(bars[-1][4], last)
            else:
                bars.append([phase, at, at + seconds, first, last])
            at += seconds
    return [tuple(bar) for bar in bars], width


# Tick spacings of a time axis, seconds: from 1 minute to 10 hours, the first giving at most MAX_TICKS ticks.
TICK_STEPS_S = (60, 120, 300, 600, 900, 1800, 3600, 7200, 10800, 21600, 36000)
MAX_TICKS = 8


def hour_ticks(span_s: float) -> list[int]:
    """Tick positions (seconds, from 0) for a time axis ``span_s`` long, at the first of TICK_STEPS_S that gives
    at most MAX_TICKS ticks (a longer span: 10-hour steps, as many as it takes); labelled h:mm by the caller."""
    step = next((s for s in TICK_STEPS_S if span_s / s <= MAX_TICKS), TICK_STEPS_S[-1])
    return list(range(0, int(span_s) + 1, step))


def timeline(data: Timeline) -> dict:
    """Phases (bars) and tool calls (markers, coloured by phase) against time since the trace's start (x in hours,
    ticks and hover texts in h:mm); where the run has system_monitor samples, GPU utilisation (%) and memory used
    (GiB) below on the same time axis.
    Clicking a tool call's marker opens that step (``customdata[0]`` = step index).

    The layout is :func:`_timeline_layout`; the traces are written as plain plotly JSON (graph_objects validated
    every value and took seconds on a 20,000-call trace).
    """
    rows = 3 if data.monitor else 1
    layout = _timeline_layout(rows)
    traces: list[dict] = []
    merged = _merge_stretches(data.phases)
    span = max([p[2] for p in merged] + [c.elapsed_s for c in data.calls] + [s.t_s for s in data.monitor], default=0)
    bars, bar_s = bin_stretches(merged, span)
    mostly = f" (its share of a {bar_s / 60:.3g}-minute bin)" if bar_s else ""
    for phase, colour in PHASE_COLOURS.items():
        stretches = [p for p in bars if p[0] == phase]
        if stretches:
            traces.append({
                "type": "bar", "name": phase, "orientation": "h", "y": ["phases"] * len(stretches),
                "x": [(p[2] - p[1]) / 3600 for p in stretches], "base": [p[1] / 3600 for p in stretches],
                "marker": {"color": colour}, "legendgroup": phase,
                "customdata": [[p[3], p[4], hm(p[1]), hm(p[2] - p[1])] for p in stretches],
                "hovertemplate": f"<b>{phase}</b>{mostly}<br>from %{{customdata[2]}} for %{{customdata[3]}} (h:mm)"
                                 "<br>steps %{customdata[0]}–%{customdata[1]}<extra></extra>", **_axes(1)})
        calls = [c for c in data.calls if c.phase == phase]
        if calls:
            binned = (f"<br>the first of %{{customdata[4]:,}} calls in its {data.bin_s / 60:.3g}-minute bin" if data.bin_s
                      else "")
            traces.append({
                "type": "scatter", "mode": "markers",
                "name": f"{phase} calls" + (" (first of each bin)" if data.bin_s else ""),
                "x": [c.elapsed_s / 3600 for c in calls], "y": ["tool calls"] * len(calls),
                "marker": {"color": colour, "size": 9, "symbol": "line-ns-open"}, "legendgroup": phase,
                "showlegend": False,
                "customdata": [[c.index, escape(c.tool or ""), escape(c.input[:120]), hm(c.elapsed_s), c.calls]
                               for c in calls],
                "hovertemplate": "step %{customdata[0]} · %{customdata[1]}<br>%{customdata[2]}<br>at %{customdata[3]} "
                                 f"(h:mm){binned}<extra></extra>", **_axes(1)})
    if data.monitor:
        hours = [s.t_s / 3600 for s in data.monitor]
        at = [hm(s.t_s) for s in data.monitor]
        traces.append({"type": "scatter", "name": "GPU utilisation %", "x": hours, "y": [s.gpu_util for s in data.monitor],
                       "mode": "lines", "line": {"color": "#2563eb", "width": 1.5}, "customdata": at,
                       "hovertemplate": "GPU %{y:.0f} % at %{customdata} (h:mm)<extra></extra>", **_axes(2)})
        traces.append({"type": "scatter", "name": "GPU memory used GiB", "x": hours,
                       "y": [s.gpu_mem_mib / 1024 for s in data.monitor], "mode": "lines",
                       "line": {"color": "#dc2626", "width": 1.5}, "customdata": at,
                       "hovertemplate": "%{y:.1f} GiB at %{customdata} (h:mm)<extra></extra>", **_axes(3)})
        layout["yaxis3"]["range"] = [0, max(s.gpu_mem_total_mib for s in data.monitor) / 1024 * 1.05]
    ticks = hour_ticks(span)
    for axis in [key for key in layout if key.startswith("xaxis")]:
        layout[axis].update(tickvals=[t / 3600 for t in ticks], ticktext=[hm(t) for t in ticks])
    return {"data": traces, "layout": layout}


# The timeline's subplots' domains (fractions of the plot's height) as plotly's ``make_subplots(rows=3, cols=1,
# vertical_spacing=0.06, row_heights=[0.4, 0.3, 0.3])`` computes them, top row first.
_DOMAINS_3 = ([0.648, 1.0], [0.324, 0.5880000000000001], [0.0, 0.264])
_TIME_TITLE = "time since the trace's start (h:mm)"


def _timeline_layout(rows: int) -> dict:
    """The timeline's layout for ``rows`` (1 or 3) subplots sharing one time axis, all but what each run sets (the
    time axes' ticks, the GPU memory axis' range), as plotly writes the layout of ``make_subplots(rows=rows, cols=1,
    shared_xaxes=True, vertical_spacing=0.06, row_heights=[0.4, 0.3, 0.3] or [1.0])`` with the y axis titles, the
    time axis title on the bottom row and ``template="plotly_white"``: a fresh dict per call."""
    ticks = {"tickvals": [0], "ticktext": ["0:00"]}
    common = dict(font=dict(_FONT), margin=dict(l=90, r=20, t=20, b=50),
                  legend=dict(orientation="h", y=-0.25 if rows == 1 else -0.1), hoverlabel=dict(align="left"),
                  height=260 + 130 * (rows - 1), barmode="overlay", template=plotly_white())
    if rows == 1:
        return dict(xaxis=dict(anchor="y", domain=[0.0, 1.0], **ticks, title={"text": _TIME_TITLE}),
                    yaxis=dict(anchor="x", domain=[0.0, 1.0]), **common)
    upper = dict(domain=[0.0, 1.0], matches="x3", showticklabels=False)
    return dict(
        xaxis=dict(anchor="y", **upper, **ticks), yaxis=dict(anchor="x", domain=list(_DOMAINS_3[0])),
        xaxis2=dict(anchor="y2", **upper, **ticks),
        yaxis2=dict(anchor="x2", domain=list(_DOMAINS_3[1]), title={"text": "util %"}, range=[0, 105]),
        xaxis3=dict(anchor="y3", domain=[0.0, 1.0], **ticks, title={"text": _TIME_TITLE}),
        yaxis3=dict(anchor="x3", domain=list(_DOMAINS_3[2]), title={"text": "GiB"}, range=[0, 1]), **common)


def _calibration_layout() -> dict:
    """The calibration chart's layout as plotly writes it for ``add_hline(y=1, line_dash="dash",
    line_color="#6b7280")`` and the axis titles, with ``template="plotly_white"``: a fresh dict per call."""
    return dict(
        shapes=[{"line": {"color": "#6b7280", "dash": "dash"}, "type": "line", "x0": 0, "x1": 1, "xref": "x domain",
                 "y0": 1, "y1": 1, "yref": "y"}],
        font=dict(_FONT), margin=dict(l=70, r=20, t=20, b=60), hoverlabel=dict(align="left"), height=420,
        xaxis={"title": {"text": "base model's score on the benchmark (%)"}},
        yaxis={"title": {"text": "overoptimism (self-reported / verified)"}}, template=plotly_white())


def calibration(points: list[CalibrationPoint]) -> dict:
    """Overoptimism (self-reported / verified) of each run with a defined ratio (``Analysis.points``) against the
    base model's score on its benchmark (percent; benchmark difficulty for that base model), one colour per agent,
    a dashed line at 1 (calibrated). Runs without a base-model score are left out. ``customdata[0]`` = run id.

    The scatter traces are written as the dicts plotly's ``go.Scatter`` would serialise (one pass over the runs;
    plotly validated every point: 215 CPU ms for 2,520 runs, bench/RESULTS.md), the layout comes from
    :func:`_calibration_layout`; ``tests/test_figure_dicts.py`` checks the result equals plotly's."""
    by_agent: dict[str, list[tuple[CalibrationPoint, float]]] = {}  # (point, its base model's score) per agent
    for p in points:
        if p.base_score is not None:
            by_agent.setdefault(p.agent, []).append((p, p.base_score))  # the name every page uses
    data = []
    for agent, mine in by_agent.items():
        data.append({
            "customdata": [[p.run_id, p.benchmark, p.base_model, 100 * p.self_score, 100 * p.verified]
                           for p, _ in mine],
            "hovertemplate": f"<b>{escape(agent)}</b><br>%{{customdata[1]}} · %{{customdata[2]}}<br>self "
                             "%{customdata[3]:.1f} vs verified %{customdata[4]:.1f}<br>ratio %{y:.2f}x<extra></extra>",
            "marker": {"size": 10}, "mode": "markers", "name": escape(agent),
            "x": [100 * base for _, base in mine], "y": [p.ratio for p, _ in mine], "type": "scatter"})
    return {"data": data, "layout": _calibration_layout()}
