"""The static run page's "Compare with" (issue 24, branch i24e1): the page lists each peer by what names it (links,
relation, seed, which attempt counts), and its script fills in each peer's state and score from the cell's file
(``cells/<suite>/<benchmark>/<base model>.json``, static/js/static_peers.js), so that the list reads as the live
page's, entry by entry; text from the file stays text. Screenshots of the section at 1440 and 390 px go to
test-artifacts/pages/export-peers-{1440,390}.png."""
from __future__ import annotations

import json

import pytest

from traces import selectors

from .conftest import ARTIFACTS
from .test_browser_phone import OVERFLOWING

pytestmark = [pytest.mark.browser, pytest.mark.django_db]

# Every entry of "Compare with": [class, data-run, its text with white space collapsed].
EXTRACT = """() => Array.from(document.querySelectorAll('#compare-with li')).map(li =>
  [li.className, li.dataset.run, li.textContent.replace(/\\s+/g, ' ').trim()])"""
FILLED = """() => Array.from(document.querySelectorAll('#compare-with .peer-facts')).every(s => s.textContent)"""


def _runs_by_relation() -> list[str]:
    """A run whose page offers a peer of each relation the demo has (attempt, repeat, other), fewest runs first."""
    fingerprints = selectors.run_fingerprints()
    chosen: dict[str, str] = {}
    for run_id in sorted(fingerprints):
        for peer in selectors.cell_peers(run_id):
            chosen.setdefault(peer.relation, run_id)
    return sorted(set(chosen.values()))


def _static(page, base: str, run_id: str) -> list:
    page.goto(base + f"runs/{run_id}/index.html")
    page.wait_for_function(FILLED)
    return page.evaluate(EXTRACT)


def test_the_static_run_page_shows_its_peers_state_and_score_as_the_live_page(served, page, client):
    base, outdir, _, _ = served
    run_ids = _runs_by_relation()
    relations, scored = set(), 0
    for run_id in run_ids:
        html = (outdir / f"runs/{run_id}/index.html").read_text()
        peers = selectors.cell_peers(run_id)
        assert peers
        for peer in peers:  # without script: each peer's link is there, its state and score are not
            assert f'href="../{peer.run.id}/index.html"' in html
            assert f'<li class="peer-{peer.relation}" data-run="{peer.run.id}">' in html
            relations.add(peer.relation)
            scored += peer.run.score is not None
        assert html.count('<span class="peer-facts"></span>') == len(peers)
        static = _static(page, base, run_id)
        page.set_content(client.get(f"/runs/{run_id}/").content.decode())
        live = page.evaluate(EXTRACT)
        assert static == live, (run_id, static, live)
        assert [entry[1] for entry in static] == [p.run.id for p in peers]
    assert relations >= {"attempt", "other"} and scored >= 1  # the demo tree has no repeats
    assert page.js_errors == [], page.js_errors


def test_text_from_the_cell_file_stays_text(site_copy, serve, page):
    """A state and a score holding HTML show as that text: nothing of it becomes an element, no script runs."""
    outdir = site_copy.outdir
    run_id = _runs_by_relation()[0]
    peer = selectors.cell_peers(run_id)[0].run.id
    link = (outdir / f"runs/{run_id}/index.html").read_text().split('data-cell="', 1)[1].split('"', 1)[0]
    cell = (outdir / f"runs/{run_id}" / link).resolve()
    assert cell.is_relative_to(outdir.resolve() / "cells") and cell.is_file()
    facts = json.loads(cell.read_text())
    hostile = '<img src=x onerror="document.title=\'owned\'"><script>document.title="owned"</script>'
    facts["runs"][peer] = {"state": hostile, "score": "<b>9</b>"}
    cell.write_text(json.dumps(facts))
    base = serve(outdir)
    dialogs: list[str] = []
    page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
    page.goto(base + f"runs/{run_id}/index.html")
    page.wait_for_function(FILLED)
    page.wait_for_timeout(300)
    entry = page.locator(f'#compare-with li[data-run="{peer}"] .peer-facts')
    assert entry.evaluate("s => s.textContent") == f"({hostile}, <b>9</b>)"
    assert page.locator("#compare-with img, #compare-with script, #compare-with b").count() == 0
    assert page.title() != "owned" and dialogs == []
    assert page.js_errors == [], page.js_errors


@pytest.mark.parametrize("width,height", [(1440, 900), (390, 844)])
def test_the_static_peer_list_fits_a_phone_and_a_desktop(served, page, width, height):
    base, _, _, _ = served
    run_id = max(_runs_by_relation(), key=lambda r: len(selectors.cell_peers(r)))
    (ARTIFACTS / "pages").mkdir(parents=True, exist_ok=True)
    page.set_viewport_size({"width": width, "height": height})
    _static(page, base, run_id)
    if page.locator("details.peer-others").count():
        page.click("details.peer-others summary")
    section = page.locator("#compare-with")
    section.scroll_into_view_if_needed()
    section.screenshot(path=ARTIFACTS / "pages" / f"export-peers-{width}.png")
    scroll = page.evaluate("document.documentElement.scrollWidth")
    assert scroll <= width, (width, scroll, page.evaluate(OVERFLOWING))
    assert page.evaluate(OVERFLOWING) == [], width
    assert page.js_errors == [], page.js_errors
