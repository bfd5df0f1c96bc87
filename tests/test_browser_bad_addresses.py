"""A visitor's mistyped address or box, in headless Chromium at 1440 px and at 390 px (a new user's pass, nu3): the
run page's Step box refuses what is not a step number before sending it (typed 'abc' or '5.0', Jump opened
Django's bare "Bad Request (400)" page, without the site's header or a word of why); an address the site cannot read
answers the site's own 400 page saying which value and why; an unknown base model's 404 names it (it said "There is
no page at /"). Screenshots: test-artifacts/pages/bad-address-*.png."""
from __future__ import annotations

import pytest

from traces import selectors

from .conftest import ARTIFACTS

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.browser]
SHOTS = ARTIFACTS / "pages"
SIZES = [(1440, ""), (390, "-390")]
NAV = "header.site nav a"


def _agent_run_id() -> str:
    runs = selectors.list_runs(limit=None)[0]
    return next(r.id for r in sorted(runs, key=lambda r: -r.step_count))


@pytest.mark.parametrize(("width", "suffix"), SIZES)
def test_a_mistyped_step_an_unreadable_address_and_an_unknown_base_model(live_server, demo_ingested, page, width,
                                                                           suffix):
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.set_viewport_size({"width": width, "height": 900})
    run_page = f"{live_server.url}/runs/{_agent_run_id()}/"
    page.goto(run_page)
    box = page.locator("#trace-jump input[name=step]")
    for typed in ("abc", "5.0", " 12"):
        box.fill(typed)
        page.locator("#trace-jump button[type=submit]").click()
        page.wait_for_timeout(300)
        assert page.url == run_page, (typed, page.url)  # not sent: the box says why
        assert box.evaluate("el => !el.validity.valid && el.validationMessage !== ''"), typed
    box.fill("12")
    with page.expect_navigation():
        page.locator("#trace-jump button[type=submit]").click()
    assert "step=12" in page.url and page.locator("#step-12").is_visible()

    # Sent anyway (a hand-edited address): the site's page, which value and why, a way back, nothing as HTML.
    response = page.goto(run_page + "?step=%3Cb%3Eabc%3C/b%3E")
    assert response is not None and response.status == 400
    assert page.locator(NAV).count() >= 5 and page.locator("footer.site").count() == 1
    reason = page.locator("#error-reason").inner_text()
    assert "?step=" in reason and "<b>abc</b>" in reason and page.locator("main b").count() == 0, reason
    assert page.locator("main a", has_text="as it opens by default").get_attribute("href") == run_page.replace(
        live_server.url, "")
    page.screenshot(path=SHOTS / f"bad-address-400{suffix}.png")

    response = page.goto(live_server.url + "/?base_model=Qwen3-8B")
    assert response is not None and response.status == 404
    reason = page.locator("#error-reason").inner_text()
    assert "unknown base model 'Qwen3-8B'" in reason and "Qwen3-4B-Base" in reason, reason
    assert "There is no page at" not in page.locator("main").inner_text()
    assert page.evaluate("document.documentElement.scrollWidth") <= width
    page.screenshot(path=SHOTS / f"bad-address-404{suffix}.png")
    # A path that names nothing keeps the general words (the URL resolver's reason is not a visitor's).
    response = page.goto(live_server.url + "/no-such-page/")
    assert response is not None and response.status == 404
    assert page.locator("#error-reason").count() == 0 and "There is no page at" in page.locator("main").inner_text()
    assert page.js_errors == []
