"""The plot pages in headless Chromium: plotly.js from our static files draws every chart with all its points,
and the charts read well: no point label crossed by a line or an error bar, every line named in the legend, one
colour family per scaffold, percent and h:mm on the axes."""
from __future__ import annotations

import colorsys
import re

import pytest

from .conftest import ARTIFACTS

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.browser]

# (page, chart id, SVG selector of one drawn data point, expected count, screenshot)
CHARTS = [
    ("/plots/time-vs-score/", "time-vs-score", ".scatterlayer .trace .points path.point", 23, None),
    ("/plots/time-spent/", "time-spent", ".barlayer .trace .point", 23, None),
    ("/plots/per-benchmark/", "per-benchmark", ".barlayer .trace .point", 23 * 7, None),
    ("/plots/per-benchmark/?base_model=gemma-3-4b-pt", "per-benchmark", ".barlayer .trace .point", 23 * 7, None),
    ("/plots/budget-and-effort/", "time-budget", ".scatterlayer .trace .points path.point", 12, "plot-budget-and-effort"),
    ("/plots/budget-and-effort/", "reasoning-effort", ".barlayer .trace .point", 3, None),
    ("/plots/budget-and-effort/", "model-size", ".barlayer .trace .point", 3, None),
]


@pytest.mark.parametrize(("url", "chart", "selector", "count", "shot"), CHARTS)
def test_each_chart_draws_its_points(live_server, use_published, page, url, chart, selector, count, shot):
    requests: list[str] = []
    page.on("request", lambda request: requests.append(request.url))
    page.goto(live_server.url + url)
    page.wait_for_selector(f'#{chart}[data-drawn="true"]')
    assert page.locator(f"#{chart} svg.main-svg").count() >= 1
    assert page.locator(f"#{chart} {selector}").count() == count
    assert page.locator(f"#{chart} .modebar-btn[data-title^='Download plot']").count() == 1
    # plotly.js comes from the site itself, never from a CDN.
    assert any(r.endswith("/static/plotly/plotly.min.js") for r in requests)
    assert all(r.startswith(live_server.url) for r in requests), requests
    if shot:
        page.screenshot(path=ARTIFACTS / f"{shot}.png", full_page=True)
    assert page.js_errors == []


def test_hover_names_the_agent_and_click_opens_its_runs(live_server, use_published, page):
    page.goto(live_server.url + "/plots/time-vs-score/")
    page.wait_for_selector('#time-vs-score[data-drawn="true"]')
    # Opus 4.6 (1M) is the only Anthropic point above 24 %: find it by its data, then hover and click it.
    index = page.evaluate("""() => {
        const gd = document.getElementById('time-vs-score');
        for (let t = 0; t < gd.data.length; t++) {
            const cd = gd.data[t].customdata || [];
            for (let i = 0; i < cd.length; i++) if (cd[i][0] === 'opus-4.6-1m') return [t, i];
        }
        return null;
    }""")
    assert index is not None
    point = page.locator("#time-vs-score .scatterlayer .trace").nth(index[0]).locator("path.point").nth(index[1])
    # Plotly's drag layer sits on top of the points: move the real mouse to the marker's centre.
    box = point.bounding_box()
    x, y = box["x"] + box["width"] / 2, box["y"] + box["height"] / 2
    page.mouse.move(x, y)
    page.wait_for_selector("#time-vs-score .hoverlayer .hovertext")
    hover = page.locator("#time-vs-score .hoverlayer").text_content()
    assert "Opus 4.6 (1M)" in hover and "Claude Code" in hover and "runs: 3" in hover
    assert "8:48" in hover and "24.8" in hover
    page.screenshot(path=ARTIFACTS / "plot-time-vs-score-hover.png")
    page.mouse.click(x, y)
    page.wait_for_url("**/runs/?agent=opus-4.6-1m")


def test_png_download(live_server, use_published, page):
    page.goto(live_server.url + "/plots/time-spent/")
    page.wait_for_selector('#time-spent[data-drawn="true"]')
    with page.expect_download() as download:
        page.click("button[data-download='time-spent']")
    assert download.value.suggested_filename == "ptb-time-spent.png"


def test_numbers_table_opens_under_the_chart(live_server, use_published, page):
    page.goto(live_server.url + "/plots/time-vs-score/")
    table = page.locator("details table")
    assert not table.is_visible()
    page.click("details summary")
    assert table.is_visible()
    assert page.locator('details tr[data-agent="sonnet-4.5"]').inner_text().count("fig2_time_vs_performance.csv") == 1


# --- Readability: labels, legend, colours, units --------------------------------------------------------------

# What a chart draws, measured in the page: every point label's box; every line, error bar and shape path sampled
# every pixel (page coordinates); the legend's texts; plotly's own view of the traces (_fullData) and shapes.
GEOMETRY = """(id) => {
    const gd = document.getElementById(id);
    const box = (r) => ({left: r.left, right: r.right, top: r.top, bottom: r.bottom});
    const labels = [];
    gd.querySelectorAll('.scatterlayer g.textpoint, .barlayer text.bartext, .annotation-text').forEach((node) => {
        if (node.textContent.trim()) labels.push({text: node.textContent, box: box(node.getBoundingClientRect())});
    });
    const paths = [];
    gd.querySelectorAll('.scatterlayer path.js-line, .errorbars path, .shapelayer path').forEach((path) => {
        const group = path.closest('g.trace');
        const name = group && group.__data__ ? group.__data__[0].trace.name : 'shape';
        const kind = path.classList.contains('js-line') ? 'line' : path.closest('.errorbars') ? 'error bar' : 'shape';
        const m = path.getScreenCTM();
        const points = [];
        for (let s = 0, n = path.getTotalLength(); s <= n; s += 1) {
            const p = new DOMPoint(path.getPointAtLength(s).x, path.getPointAtLength(s).y).matrixTransform(m);
            points.push([p.x, p.y]);
        }
        paths.push({name: name, kind: kind, points: points});
    });
    // Legend entries a reader can see: inside the chart's SVG.
    const svg = gd.querySelector('.main-svg').getBoundingClientRect();
    const legend = [...gd.querySelectorAll('.legend .traces text.legendtext')].filter((t) => {
        const r = t.getBoundingClientRect();
        return r.width > 0 && r.left >= svg.left && r.right <= svg.right && r.top >= svg.top && r.bottom <= svg.bottom;
    }).map((t) => t.textContent);
    const traces = gd._fullData.map((t) => ({
        name: t.name, type: t.type, mode: t.mode || '', visible: t.visible, showlegend: t.showlegend,
        legendgroup: t.legendgroup, colour: t.marker && typeof t.marker.color === 'string' ? t.marker.color : null,
        points: (t.x || []).filter((v) => v !== null).length, agent: !!(t.customdata && t.customdata.length),
    }));
    return {labels: labels, paths: paths, legend: legend, traces: traces, shapes: gd._fullLayout.shapes.length,
            xticks: [...gd.querySelectorAll('.xtick text')].map((t) => t.textContent),
            xtitle: (gd.querySelector('.g-xtitle') || {}).textContent || '',
            ytitle: (gd.querySelector('.g-ytitle') || {}).textContent || '',
            placed: gd.dataset.labels || ''};
}"""

FAMILIES = {"Claude Code", "Codex CLI", "Gemini CLI", "OpenCode"}

# (page, chart id, screenshot, fewest labels that must stay visible, names the legend must show)
READABLE = [
    ("/plots/time-vs-score/", "time-vs-score", "plot-time-vs-score", 15,
     {"Opus 4.6", "Opus 4.6 (1M)", "GPT-5.3 Codex (High)", "Gemini 3 Pro (Gemini CLI)", "Kimi K2 Thinking",
      "Pareto frontier", "Official Instruct Models (51.1 %)", "Base Models (few-shot) (18.1 %)",
      "Base Models (zero-shot) (7.5 %)", "Time budget (10:00)"}),
    ("/plots/time-spent/", "time-spent", "plot-time-spent", 23, FAMILIES | {"Time budget (10:00)"}),
    ("/plots/per-benchmark/", "per-benchmark", "plot-per-benchmark", 0,
     {"Opus 4.6", "Opus 4.6 (1M)", "GPT-5.4 (High)", "MiniMax M2.1", "Official Instruct Models",
      "Base Models (few-shot)", "Base Models (zero-shot)"}),
    ("/plots/per-benchmark/?base_model=gemma-3-4b-pt", "per-benchmark", "plot-per-benchmark-gemma", 0,
     {"Opus 4.6", "Official Instruct Models", "Base Models (zero-shot)"}),
]
# Score vs tokens and vs cost come from ingested runs (the generated demo tree).
READABLE_USAGE = [
    ("/plots/usage-vs-score/", "tokens-vs-score", "plot-usage-tokens", 4, {"Opus 4.6 (synthetic)", "Kimi K2.5 (synthetic)", "Pareto frontier"}),
    ("/plots/usage-vs-score/", "cost-vs-score", "plot-usage-cost", 2, {"Opus 4.6 (synthetic)", "Kimi K2.5 (synthetic)", "Pareto frontier"}),
]


def _hue(colour: str) -> float:
    """A ``#rrggbb`` or ``rgb(r, g, b)`` colour's hue in degrees."""
    if colour.startswith("#"):
        rgb = [int(colour[i:i + 2], 16) for i in (1, 3, 5)]
    else:
        rgb = [int(float(v)) for v in re.findall(r"[\d.]+", colour)[:3]]
    return 360 * colorsys.rgb_to_hls(*(v / 255 for v in rgb))[0]


def _apart(a: float, b: float) -> float:
    return min(abs(a - b), 360 - abs(a - b))


def _crossings(geometry: dict) -> list[str]:
    """Every (label, path) pair where a sampled point of the path lies in the label's box, and every two labels
    that overlap."""
    found = []
    for label in geometry["labels"]:
        b = label["box"]
        for path in geometry["paths"]:
            if any(b["left"] <= x <= b["right"] and b["top"] <= y <= b["bottom"] for x, y in path["points"]):
                found.append(f"label {label['text']!r} crossed by the {path['kind']} of {path['name']!r}")
    for i, one in enumerate(geometry["labels"]):
        for other in geometry["labels"][i + 1:]:
            a, b = one["box"], other["box"]
            if a["left"] < b["right"] and b["left"] < a["right"] and a["top"] < b["bottom"] and b["top"] < a["bottom"]:
                found.append(f"labels {one['text']!r} and {other['text']!r} overlap")
    return found


def _check_readable(page, chart: str, fewest_labels: int, names: set[str]) -> dict:
    geometry = page.evaluate(GEOMETRY, chart)
    # No label crossed by a line or an error bar, none over another; enough labels stay to be worth reading.
    assert _crossings(geometry) == []
    assert len(geometry["labels"]) >= fewest_labels, geometry["placed"]
    # Reference lines are traces, never layout shapes, and every trace that draws a line is named in the legend.
    assert geometry["shapes"] == 0
    lines = [t for t in geometry["traces"] if t["type"] == "scatter" and "lines" in t["mode"] and t["visible"] is True]
    assert lines
    for trace in lines:
        assert trace["showlegend"] and trace["name"] in geometry["legend"], trace["name"]
    assert names <= set(geometry["legend"]), names - set(geometry["legend"])
    # One colour family per scaffold: an agent's hue within 12 degrees of its family's others, families >= 40 apart.
    hues: dict[str, list[float]] = {}
    for trace in geometry["traces"]:
        if trace["agent"] and trace["colour"] and trace["points"]:
            hues.setdefault(trace["legendgroup"], []).append(_hue(trace["colour"]))
    assert set(hues) <= FAMILIES and len(hues) >= 2, set(hues)
    for family, values in hues.items():
        assert max(_apart(a, b) for a in values for b in values) <= 24, (family, values)
    for one in hues:
        for other in hues:
            if one < other:
                assert min(_apart(a, b) for a in hues[one] for b in hues[other]) >= 40, (one, other)
    # One unit per quantity: durations in h:mm on a time axis, scores in percent.
    if "time" in geometry["xtitle"]:
        assert "h:mm" in geometry["xtitle"]
        assert geometry["xticks"] and all(re.fullmatch(r"\d+:\d\d", t) for t in geometry["xticks"]), geometry["xticks"]
    assert "(%)" in geometry["ytitle"] or "time" in geometry["xtitle"]
    return geometry


@pytest.mark.parametrize("width", [1400, 860])
@pytest.mark.parametrize(("url", "chart", "shot", "fewest_labels", "names"), READABLE)
def test_charts_read_well(live_server, use_published, page, url, chart, shot, fewest_labels, names, width):
    page.set_viewport_size({"width": width, "height": 900})
    page.goto(live_server.url + url)
    page.wait_for_selector(f'#{chart}[data-drawn="true"]')
    page.screenshot(path=ARTIFACTS / f"{shot}{'' if width == 1400 else f'-{width}'}.png", full_page=True)
    _check_readable(page, chart, fewest_labels if width == 1400 else min(fewest_labels, 8), names)
    assert page.js_errors == []


@pytest.mark.parametrize(("url", "chart", "shot", "fewest_labels", "names"), READABLE_USAGE)
def test_usage_charts_read_well(live_server, demo_ingested, page, url, chart, shot, fewest_labels, names):
    page.goto(live_server.url + url)
    page.wait_for_selector(f'#{chart}[data-drawn="true"]')
    page.locator(f"#{chart}").screenshot(path=ARTIFACTS / f"{shot}.png")
    _check_readable(page, chart, fewest_labels, names)
    assert page.js_errors == []


def test_time_spent_numbers_sit_clear_of_whiskers_and_budget(live_server, use_published, page):
    page.goto(live_server.url + "/plots/time-spent/")
    page.wait_for_selector('#time-spent[data-drawn="true"]')
    geometry = page.evaluate(GEOMETRY, "time-spent")
    texts = [label["text"] for label in geometry["labels"]]
    # Every agent's mean (± std) in h:mm: Opus 4.6 9:39:42 ± 0:22:15, GPT-5.1 Codex Max (OpenCode) 0:32:56 alone.
    assert len(texts) == 23 and "9:40 ± 0:22" in texts and "0:33" in texts
    budget = next(p for p in geometry["paths"] if p["name"] == "Time budget (10:00)")
    assert min(label["box"]["left"] for label in geometry["labels"]) > max(x for x, _ in budget["points"])


def test_one_agent_keeps_its_colour_across_charts(live_server, use_published, page):
    colours = {}
    for url, chart in [("/plots/time-vs-score/", "time-vs-score"), ("/plots/per-benchmark/", "per-benchmark"),
                       ("/plots/time-spent/", "time-spent")]:
        page.goto(live_server.url + url)
        page.wait_for_selector(f'#{chart}[data-drawn="true"]')
        colours[chart] = {t["name"]: t["colour"] for t in page.evaluate(GEOMETRY, chart)["traces"] if t["agent"]}
    for name in ["Opus 4.6", "GPT-5.2", "Gemini 3.1 Pro", "Kimi K2 Thinking"]:
        assert colours["time-vs-score"][name] == colours["per-benchmark"][name] == colours["time-spent"][name]


def test_the_frontier_and_most_agents_are_labelled(live_server, use_published, page):
    page.goto(live_server.url + "/plots/time-vs-score/")
    page.wait_for_selector('#time-vs-score[data-drawn="true"]')
    labels = {label["text"] for label in page.evaluate(GEOMETRY, "time-vs-score")["labels"]}
    # On a desktop screen the frontier's agents keep their labels (the fastest, GPT-5.1 Codex Max on OpenCode at
    # 0:33, sits between the y axis, the frontier and the zero-shot line: named on hover), and so do most others.
    assert {"GPT-5.3 Codex (Medium)", "GPT-5.3 Codex (High)", "GPT-5.4 (High)", "Gemini 3.1 Pro",
            "Opus 4.6 (1M)"} <= labels
    assert {"Opus 4.6", "GPT-5.2", "Gemini 3 Pro (Gemini CLI)", "Sonnet 4.5"} <= labels
