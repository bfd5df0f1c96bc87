"""Every figure the site sends, written as plain dicts and lists, is the figure plotly builds from the same data
(issue 24: web workers never import plotly; pages that send a figure as JSON no longer validate every point through
plotly). The references are built with plotly here (tests/plotly_figures.py); compared as JSON with sorted keys, so
a float where plotly has an int (or a value plotly could not write) fails too. And a web process that renders every
public page and JSON twin never imports plotly."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from html import escape
from pathlib import Path

import plotly.graph_objects as go
import pytest

from ptbsite import plotly_template
from traces import figures, selectors

from . import plotly_figures

pytestmark = pytest.mark.django_db
ROOT = Path(__file__).resolve().parent.parent


def same_json(built: dict, reference: dict) -> bool:
    """Whether two figures serialise to the same JSON text (keys sorted)."""
    return json.dumps(built, sort_keys=True) == json.dumps(reference, sort_keys=True)


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
    facts = selectors.run_facts("posttrainbench")  # every latest run: the reference keeps those with a ratio
    built = figures.calibration(selectors.analysis("posttrainbench").points)  # the runs with a ratio, as tuples
    assert sum(len(t["x"]) for t in built["data"]) >= 3  # the demo has runs with a ratio
    assert same_json(built, plotly_calibration(facts))
    assert same_json(figures.calibration([]), plotly_calibration([]))


def test_the_template_file_is_plotlys_current_template():
    """ptbsite/plotly_white.json is what the installed plotly writes (regenerate: python -m ptbsite.plotly_template)."""
    template = plotly_template.plotly_white()
    assert template == plotly_template.from_plotly()
    assert template["layout"]["plot_bgcolor"] == "white" and "scatter" in template["data"]
    assert plotly_template.plotly_white() is not template  # a fresh copy per figure


def test_the_family_colours_are_plotlys_dark2():
    import plotly.colors

    from leaderboard import figures as board_figures

    assert board_figures.FAMILY_COLOURS == plotly.colors.qualitative.Dark2


def test_every_plot_figure_equals_plotlys(demo_ingested):
    """Each figure of every plot page, on the demo's runs and the published data, equals the figure plotly builds
    with every trace validated (tests/plotly_figures.py)."""
    from leaderboard import figures as board_figures
    from leaderboard import plots

    usage = plots.usage_vs_score(suite="posttrainbench")
    budget = plots.budget_and_effort(suite="posttrainbench")
    scaffolds = sorted({p.scaffold for p in usage.points if p.scaffold})
    pairs = [
        ("time_vs_score", (plots.time_vs_score(suite="posttrainbench"),), {}),
        ("time_vs_score", (plots.time_vs_score(suite="posttrainbench"),), {"scaffolds": scaffolds}),
        ("time_spent", (plots.time_spent(suite="posttrainbench"),), {}),
        ("per_benchmark", (plots.per_benchmark(suite="posttrainbench"),), {}),
        ("per_benchmark", (plots.per_benchmark(suite="posttrainbench", base_model="Qwen3-4B-Base"),), {}),
        ("time_budget", (budget,), {}), ("reasoning_effort", (budget,), {}), ("model_size", (budget,), {}),
        ("usage_vs_score", (usage,), {"axis": "tokens"}), ("usage_vs_score", (usage,), {"axis": "cost"}),
        ("usage_vs_score", (usage,), {"axis": "cost", "scaffolds": scaffolds}),
    ]
    assert len(usage.points) >= 3 and len(budget.time_budget) >= 1  # the demo's agents are plotted
    traces = 0
    for name, args, kwargs in pairs:
        built = getattr(board_figures, name)(*args, **kwargs)
        reference = getattr(plotly_figures, name)(*args, **kwargs)
        assert same_json(built, reference), name
        traces += len(built["data"])
    assert traces >= 40


def test_the_timeline_equals_plotlys(demo_ingested):
    """The run page's timeline, with and without the GPU monitor's rows: the layout is what plotly's subplot
    builder wrote, and plotly's trace classes take every trace as it is."""
    from traces.selectors import list_runs

    runs = [r for r in list_runs(limit=None)[0] if r.step_count]
    timelines = [t for t in (selectors.timeline_page(r.id) for r in runs) if t is not None]
    with_monitor = [t for t in timelines if t.monitor]
    without = [t for t in timelines if not t.monitor]
    assert with_monitor and without
    for timeline in (with_monitor[0], without[0]):
        built = figures.timeline(timeline)
        assert len(built["data"]) >= 2
        assert same_json(built, plotly_figures.timeline(timeline))
    for rows in (1, 3):
        layout = figures._timeline_layout(rows)
        assert same_json(layout, plotly_figures.timeline_layout(rows))


# A web worker (ptbsite.wsgi, DEBUG off, as `serve` runs it) GETs every public page and JSON twin (bench/scale.py's
# list, plus the pages it leaves out) on the demo warehouse, then prints which heavy packages it holds. A fresh
# process: this test process has imported plotly (the references above) and much else.
WEB_PROCESS = """
import json, sys
sys.path.insert(0, "bench")
from ptbsite.wsgi import application  # noqa: F401 (what gunicorn's worker loads)
from django.test import Client
import scale
from traces.selectors import list_runs

urls = scale.pages()
run = next(r for r in list_runs(limit=None)[0] if r.step_count)
other = next(r for r in list_runs(limit=None)[0] if r.id != run.id)
urls += ["/judges/", "/api/judges", "/leaderboard/table", "/search/?q=python",
         f"/compare/?runs={run.id}&runs={other.id}", f"/runs/{run.id}/steps/1/text", f"/api/runs/{run.id}/steps/1/text",
         f"/runs/{run.id}/timeline.json", "/analysis/calibration.json", "/api/plots/usage-vs-score"]
client = Client()
answers = {url: client.get(url).status_code for url in urls}
print(json.dumps({"answers": answers, "modules": sorted(m for m in sys.modules if m.split(".")[0] in
                  ("plotly", "_plotly_utils", "pandas", "celery", "kombu", "amqp"))}))
"""


def test_a_web_process_never_imports_plotly(demo_ingested, tmp_path):
    """Every public page and twin rendered by one web process: all answer 200, the plot pages and the run page
    carry their figures, and not one plotly module (nor pandas, celery, kombu or amqp) was imported."""
    import shutil

    _, _, path = demo_ingested
    copy = tmp_path / "warehouse.duckdb"
    shutil.copy(path, copy)  # a plain DuckDB file admits one process: the subprocess reads its own copy
    env = {**os.environ, "PTB_WAREHOUSE": str(copy), "PTB_DATA_DIR": str(tmp_path / "data"), "DJANGO_DEBUG": "0",
           "PTB_PAGE_CACHE": "0", "PTB_PAGE_WARM": "0", "DJANGO_SETTINGS_MODULE": "ptbsite.settings"}
    out = subprocess.run([sys.executable, "-c", WEB_PROCESS], env=env, cwd=ROOT, capture_output=True, text=True,
                         timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]
    found = json.loads(out.stdout.strip().splitlines()[-1])
    answers = found["answers"]
    assert len(answers) >= 40
    assert {url: code for url, code in answers.items() if code != 200} == {}
    assert {"/plots/time-vs-score/", "/plots/budget-and-effort/", "/analysis/calibration.json"} <= set(answers)
    assert any(url.endswith("/timeline.json") for url in answers)
    assert found["modules"] == []
