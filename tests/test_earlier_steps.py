"""Reading backwards from a deep link (issue 17): a run page opened at ``?step=N`` has an "Earlier steps" control
above its first step that loads the page before in place (htmx, ``/runs/<id>/steps?before=N``), ``k`` at the first
step shown loads it and walks on across pages, and the static export's step pages link to the previous page."""
from __future__ import annotations

import re

import pytest

from export.exporter import STEPS_PER_PAGE
from traces import selectors

from .conftest import ARTIFACTS

pytestmark = pytest.mark.django_db

STEP_IDS = re.compile(r'<li class="step[^"]*"\s+id="step-(\d+)"')


def _longest(demo_ingested) -> selectors.Run:
    run = max(selectors.list_runs(limit=None)[0], key=lambda r: r.step_count)
    assert run.step_count > 150, run.step_count
    return run


def test_a_deep_link_offers_the_steps_before_it(client, demo_ingested):
    run = _longest(demo_ingested)
    page = client.get(f"/runs/{run.id}/?step=100&limit=20").content.decode()
    steps = page.split('<ol class="steps" id="steps">', 1)[1]
    earlier = (f'<li class="load-earlier"><button type="button" hx-get="/runs/{run.id}/steps?limit=20&amp;before=100"'
               ' hx-target="closest li" hx-swap="outerHTML">Earlier steps</button>')
    assert steps.lstrip().startswith(earlier)  # above the first step shown
    assert [int(i) for i in STEP_IDS.findall(steps)] == list(range(100, 120))
    # The control's answer: the 20 steps before step 100, with its own control above them and nothing below (the
    # steps after them are on the page).
    partial = client.get(f"/runs/{run.id}/steps?limit=20&before=100", HTTP_HX_REQUEST="true").content.decode()
    assert [int(i) for i in STEP_IDS.findall(partial)] == list(range(80, 100))
    assert partial.startswith(f'<li class="load-earlier"><button type="button" hx-get="/runs/{run.id}/steps?'
                              'limit=20&amp;before=80"') and "load-more" not in partial
    twin = client.get(f"/api/runs/{run.id}/steps?limit=20&before=100").json()
    assert [s["index"] for s in twin["steps"]] == list(range(80, 100)) and twin["next"] is None
    # At the start of the trace: what is left, and no control.
    start = client.get(f"/runs/{run.id}/steps?limit=20&before=15", HTTP_HX_REQUEST="true").content.decode()
    assert [int(i) for i in STEP_IDS.findall(start)] == list(range(15)) and "load-earlier" not in start
    assert "load-earlier" not in client.get(f"/runs/{run.id}/").content.decode()  # from the start: nothing before
    # Without htmx, a page of its own: the steps before 100, linking to the pages around it.
    own = client.get(f"/runs/{run.id}/steps?limit=20&before=100").content.decode()
    assert [int(i) for i in STEP_IDS.findall(own)] == list(range(80, 100))
    assert f'href="/runs/{run.id}/steps?limit=20&amp;after=59" rel="prev"' in own
    assert f'href="/runs/{run.id}/steps?limit=20&amp;after=99" rel="next"' in own


def test_earlier_steps_keep_the_filters(client, demo_ingested):
    run = _longest(demo_ingested)
    calls = [s.index for s in selectors.steps_page(run.id, kind="tool_call", limit=500).steps]
    target = calls[30]
    page = client.get(f"/runs/{run.id}/?step={target}&kind=tool_call&limit=10").content.decode()
    assert f'hx-get="/runs/{run.id}/steps?kind=tool_call&amp;limit=10&amp;before={target}"' in page
    partial = client.get(f"/runs/{run.id}/steps?kind=tool_call&limit=10&before={target}",
                         HTTP_HX_REQUEST="true").content.decode()
    assert [int(i) for i in STEP_IDS.findall(partial)] == calls[20:30]
    assert f"before={calls[20]}" in partial


@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
def test_earlier_steps_and_k_walk_back_from_a_deep_link(live_server, demo_ingested, page):
    run = _longest(demo_ingested)
    page.goto(f"{live_server.url}/runs/{run.id}/?step=100&limit=20")
    assert page.locator("#steps li.step.focus").get_attribute("id") == "step-100"
    first = page.locator("#steps > li").first
    assert first.get_attribute("class") == "load-earlier" and first.inner_text().strip() == "Earlier steps"
    page.click("#steps li.load-earlier button")
    page.wait_for_selector("#step-99")
    # Step 99 now sits right above step 100, and a new control above step 80.
    assert page.evaluate("document.getElementById('step-100').previousElementSibling.id") == "step-99"
    assert page.evaluate("document.querySelector('#steps li.load-earlier').nextElementSibling.id") == "step-80"
    assert page.locator("#steps li.step").count() == 40
    page.screenshot(path=ARTIFACTS / "earlier-steps.png")
    # k from the first step shown: the earlier page loads and the walk goes on from its last step.
    page.goto(f"{live_server.url}/runs/{run.id}/?step=100&limit=20")
    page.keyboard.press("k")
    page.wait_for_selector("#step-99.focus")
    assert "step=99" in page.url
    for _ in range(19):
        page.keyboard.press("k")
    assert page.locator("#steps li.step.focus").get_attribute("id") == "step-80"
    page.keyboard.press("k")
    page.wait_for_selector("#step-79.focus")
    assert page.locator("#steps li.step").count() == 60 and "step=79" in page.url
    page.screenshot(path=ARTIFACTS / "earlier-steps-k.png")
    assert page.js_errors == []


@pytest.mark.browser
def test_static_step_pages_walk_back_to_the_previous_page(served, page):
    base, outdir, run, _ = served
    assert run.step_count > STEPS_PER_PAGE
    exported = (outdir / f"runs/{run.id}/steps/2.html").read_text()
    assert '<li class="load-earlier"><a href="../index.html" rel="prev">Earlier steps</a></li>' in exported
    page.goto(base + f"runs/{run.id}/steps/2.html")
    first = STEPS_PER_PAGE
    page.keyboard.press("j")
    assert page.locator("#steps li.step.focus").get_attribute("id") == f"step-{first}"
    page.keyboard.press("k")  # before the first step of the page: the previous page, at its last step
    page.wait_for_url(f"**/runs/{run.id}/index.html#step-{first - 1}")
    page.wait_for_selector(f"#step-{first - 1}.focus")
    page.keyboard.press("k")
    assert page.locator("#steps li.step.focus").get_attribute("id") == f"step-{first - 2}"
    assert page.locator("#steps li.load-earlier").count() == 0  # the first page: nothing before it
    page.screenshot(path=ARTIFACTS / "export-earlier-steps.png")
    assert page.js_errors == []
