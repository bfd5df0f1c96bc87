"""The plot pages in headless Chromium: plotly.js from our static files draws every chart with all its points."""
from __future__ import annotations

import pytest

from .conftest import ARTIFACTS

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.browser]

# (page, chart id, SVG selector of one drawn data point, expected count, screenshot)
CHARTS = [
    ("/plots/time-vs-score/", "time-vs-score", ".scatterlayer .trace .points path.point", 23, "plot-time-vs-score"),
    ("/plots/time-spent/", "time-spent", ".barlayer .trace .point", 23, "plot-time-spent"),
    ("/plots/per-benchmark/", "per-benchmark", ".barlayer .trace .point", 23 * 7, "plot-per-benchmark"),
    ("/plots/per-benchmark/?base_model=gemma-3-4b-pt", "per-benchmark", ".barlayer .trace .point", 23 * 7,
     "plot-per-benchmark-gemma"),
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
