"""One unit per duration across the run pages (issue 17): h:mm (``ptbsite.units.hm``) for the steps' elapsed and
remaining time (their hover text too), the run's time split, and the timeline's hover texts and axis, on run A of
the hand-timed tree of tests/test_facets_ingest.py (10:00:00 to 12:50:00, a 10-hour budget)."""
from __future__ import annotations

import re

import pytest

from ptbsite.units import hm

from .conftest import ARTIFACTS
from .test_facets_ingest import ID_A, facet_db, facet_warehouse  # noqa: F401 - fixtures

pytestmark = pytest.mark.django_db

HMS = re.compile(r"\b\d+:\d\d:\d\d\b")  # H:MM:SS, the format the step lines had


@pytest.mark.parametrize(("seconds", "shown"), [(3900, "1:05"), (29, "0:00"), (30, "0:01"), (59, "0:01"), (7260, "2:01"),
                                                (9.662 * 3600, "9:40"), (50 * 3600, "50:00"), (-90, "-0:02"),
                                                (-80, "-0:01"), (None, "")])
def test_hm_is_hours_and_minutes_rounded_to_the_nearest_minute(seconds, shown):
    """One rounding for every duration on the site (the plots' mean times and the steps' clocks alike)."""
    assert hm(seconds) == shown


def _step(page: str, index: int) -> str:
    return page.split(f'id="step-{index}"', 1)[1].split("</li>", 1)[0]


def test_step_times_read_in_hours_and_minutes_with_hover_text(client, facet_db):  # noqa: F811
    page = client.get(f"/runs/{ID_A}/").content.decode()
    # Step 6 is the training's result at 12:06:00, two hours and six minutes in; 7:54 of the 10 hours are left.
    six = _step(page, 6)
    assert "2026-04-05 12:06:00 UTC" in six  # the clock time keeps its seconds
    assert '<span class="elapsed" title="2:06 (h:mm) since the trace\'s first step">+2:06</span>' in six
    assert '<span class="remaining" title="7:54 (h:mm) of the 10:00 budget left">7:54 left</span>' in six
    assert "+0:00" in _step(page, 1) and "+2:50" in _step(page, 10)
    for index in range(11):
        assert not HMS.search(_step(page, index).split("UTC", 1)[-1]), index
    # The time split: training ran 2:01 (10:06:00 to 12:06:00 and the minute after), in h:mm too.
    split = page.split('class="facts time-split"', 1)[1].split("</dl>", 1)[0]
    assert '<div data-phase="training"><dt>training</dt><dd title="h:mm">2:01</dd></div>' in split
    assert not HMS.search(split)


def test_the_timeline_hovers_and_ticks_in_hours_and_minutes(client, facet_db):  # noqa: F811
    figure = client.get(f"/runs/{ID_A}/timeline.json").json()
    axis = figure["layout"]["xaxis"]
    # 2:50 of trace: a tick every half hour, labelled h:mm, placed in hours.
    assert axis["ticktext"] == ["0:00", "0:30", "1:00", "1:30", "2:00", "2:30"]
    assert axis["tickvals"] == [0, 0.5, 1, 1.5, 2, 2.5]
    assert figure["layout"][f"xaxis{3}"]["title"]["text"] == "time since the trace's start (h:mm)"
    training = next(t for t in figure["data"] if t["type"] == "bar" and t["name"] == "training")
    assert training["customdata"] == [[5, 7, "0:06", "2:01"]]
    assert "from %{customdata[2]} for %{customdata[3]} (h:mm)" in training["hovertemplate"]
    calls = [t for t in figure["data"] if t.get("mode") == "markers"]
    assert sorted(c[3] for t in calls for c in t["customdata"]) == ["0:00", "0:01", "0:06", "2:37"]  # the second call 30 s in: rounded up
    gpu = next(t for t in figure["data"] if t["name"] == "GPU utilisation %")
    assert gpu["customdata"] == ["0:00", "1:00", "2:00"] and "(h:mm)" in gpu["hovertemplate"]
    for trace in figure["data"]:
        assert ".2f} h" not in trace.get("hovertemplate", "")


@pytest.mark.browser
def test_step_times_and_their_hover_text_in_a_browser(live_server, facet_db, page):  # noqa: F811
    page.goto(f"{live_server.url}/runs/{ID_A}/?step=6")
    elapsed = page.locator("#step-6 .when .elapsed")
    assert elapsed.inner_text() == "+2:06"
    assert elapsed.get_attribute("title") == "2:06 (h:mm) since the trace's first step"
    assert page.locator("#step-6 .when .remaining").inner_text() == "7:54 left"
    page.hover("#step-6 .when .elapsed")
    page.wait_for_selector('#timeline[data-drawn="true"]')
    # The bottom time axis (the panels above share it) reads in h:mm.
    ticks = page.eval_on_selector_all("#timeline g.xtick text, #timeline g.x3tick text",
                                      "els => els.map(e => e.textContent)")
    assert ticks == ["0:00", "0:30", "1:00", "1:30", "2:00", "2:30"], ticks
    page.screenshot(path=ARTIFACTS / "durations-hm.png", full_page=True)
    assert page.js_errors == []
