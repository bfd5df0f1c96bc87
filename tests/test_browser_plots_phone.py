"""The charts on a phone (390 px), in headless Chromium (a new user's pass, nu3): a chart whose legend stands at the
right of its plot on a desktop has it below the plot, and the figure grows by the legend's height, so the plot
keeps the screen's width and nothing is drawn over it (the legend at the right left the plot ~64 px of 390, drawn
under the legend). At 1440 px the legend stays at the right. Screenshots: test-artifacts/pages/phone-chart-*.png."""
from __future__ import annotations

import pytest

from .conftest import ARTIFACTS, open_page

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]
SHOTS = ARTIFACTS / "pages"
# Each drawn chart of the page: its width, its plot area's width and bottom, the legend's box (null when none is
# drawn), the x axis title's bottom and whether the legend runs across (below the plot).
CHARTS = """() => [...document.querySelectorAll('[data-drawn="true"]')].map(el => {
    const box = r => r && r.getBoundingClientRect();
    const plot = box(el.querySelector('.nsewdrag')), legend = box(el.querySelector('g.legend'));
    const titles = [...el.querySelectorAll('.g-xtitle, .xtick text')].map(box);
    return {id: el.id, width: el.clientWidth, plot: plot.width, plotBottom: plot.bottom, plotRight: plot.right,
            legend: legend && {top: legend.top, left: legend.left, height: legend.height},
            axisBottom: Math.max(0, ...titles.map(t => t.bottom)),
            across: el._fullLayout.legend ? el._fullLayout.legend.orientation === 'h' : null};
})"""
PAGES = ["/plots/time-vs-score/", "/plots/per-benchmark/", "/plots/usage-vs-score/", "/plots/budget-and-effort/"]


def _charts(page, url: str) -> list[dict]:
    response = page.goto(url)
    assert response is not None and response.status == 200, url
    expected = page.locator("[data-figure]").count()
    page.wait_for_function(f"document.querySelectorAll('[data-drawn=\"true\"]').length === {expected}")
    return page.evaluate(CHARTS)


@pytest.mark.parametrize("width", [390, 1440])
def test_a_legend_never_covers_its_chart(live_server, demo_ingested, browser, width):
    SHOTS.mkdir(parents=True, exist_ok=True)
    phone = width < 600
    context, page = open_page(browser, viewport={"width": width, "height": 844}, is_mobile=phone, has_touch=phone)
    try:
        seen = 0
        for path in PAGES:
            for chart in _charts(page, live_server.url + path):
                if chart["legend"] is None:
                    continue
                seen += 1
                where = (path, chart["id"])
                if phone:
                    assert chart["across"], where
                    assert chart["plot"] >= 0.6 * chart["width"], (where, chart)
                    assert chart["legend"]["top"] >= chart["axisBottom"] - 1, (where, chart)  # below the axis' words
                else:
                    assert chart["legend"]["left"] >= chart["plotRight"] - 1, (where, chart)  # at the right
            if phone:
                page.locator("[data-figure]").first.screenshot(
                    path=SHOTS / f"phone-chart-{path.strip('/').replace('/', '-')}.png")
        assert seen >= 4
        assert page.evaluate("document.documentElement.scrollWidth") <= width
        assert page.js_errors == [], page.js_errors
    finally:
        context.close()


# Each drawn chart's x axis titles that reach past the chart's own box (left or right), with how far (px).
CUT_TITLES = """() => [...document.querySelectorAll('[data-drawn="true"]')].flatMap(el => {
    const r = el.getBoundingClientRect();
    return [...el.querySelectorAll('[class^="g-x"][class$="title"] text')].map(t => {
        const b = t.getBoundingClientRect();
        return {chart: el.id, title: t.textContent, left: r.left - b.left, right: b.right - r.right};
    }).filter(t => t.left > 0 || t.right > 0);
})"""


@pytest.mark.parametrize("width", [390, 1440])
def test_an_axis_title_fits_its_chart(live_server, demo_ingested, browser, width):
    """At 390 px the x axis titles of the calibration chart (/analysis/) and of the time charts were cut at the
    screen's edge ("base model's score on the benchmark (" ...); they break into lines instead, the plot keeping
    its height (found by a researcher's pass, nu4). Screenshots: phone-chart-title-*.png."""
    phone = width < 600
    context, page = open_page(browser, viewport={"width": width, "height": 844}, is_mobile=phone, has_touch=phone)
    try:
        for path in ("/analysis/", "/plots/time-vs-score/", "/plots/time-spent/"):
            page.goto(live_server.url + path)
            page.wait_for_function("() => [...document.querySelectorAll('[data-figure], [data-figure-src]')]"
                                   ".every(el => el.dataset.drawn === 'true')")
            assert page.evaluate(CUT_TITLES) == [], (path, width)
            if phone:
                chart = page.locator('[data-drawn="true"]').first
                assert chart.evaluate("el => el.querySelector('.nsewdrag').getBoundingClientRect().height") >= 200
                chart.screenshot(path=SHOTS / f"phone-chart-title-{path.strip('/').replace('/', '-')}.png")
        assert page.js_errors == [], page.js_errors
    finally:
        context.close()
