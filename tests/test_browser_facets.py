"""The run page's timeline and the analysis page's calibration chart in headless Chromium."""
from __future__ import annotations

import pytest

from .conftest import ARTIFACTS
from .test_facets_ingest import ID_A, facet_db, facet_warehouse  # noqa: F401 - fixtures

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.browser]


def test_the_timeline_draws_phases_calls_and_gpu_use(live_server, facet_db, page):  # noqa: F811
    fetched = []
    page.on("request", lambda r: fetched.append(r.url) if r.url.endswith("/timeline.json") else None)
    response = page.goto(f"{live_server.url}/runs/{ID_A}/")
    assert "line-ns-open" not in response.text()  # the page's own bytes do not carry the figure
    page.wait_for_selector('#timeline[data-drawn="true"]')
    assert fetched == [f"{live_server.url}/runs/{ID_A}/timeline.json"]  # drawn after load, from its twin's figure
    # Five phase stretches (other, data, training, idle, evaluation), four tool calls, two monitor lines.
    assert page.locator("#timeline .barlayer .trace .point").count() == 5
    assert page.locator("#timeline .scatterlayer .trace .points path.point").count() == 4
    assert page.locator("#timeline .scatterlayer .trace .js-line").count() == 2
    page.screenshot(path=ARTIFACTS / "run-timeline.png", full_page=True)
    # A click on a tool call opens its step.
    page.evaluate("document.getElementById('timeline').emit('plotly_click', {points: [{customdata: [8]}]})")
    page.wait_for_url("**/?step=8#step-8")
    assert page.locator("#step-8.focus").count() == 1
    assert page.js_errors == []


def test_the_calibration_chart_draws_one_point_per_run(live_server, facet_db, page):  # noqa: F811
    page.goto(f"{live_server.url}/analysis/")
    page.wait_for_selector('#calibration-chart[data-drawn="true"]')
    assert page.locator("#calibration-chart .scatterlayer .trace .points path.point").count() == 2
    page.screenshot(path=ARTIFACTS / "analysis.png", full_page=True)
    assert page.js_errors == []
