"""The static export's comparison page (issue 24, branch i24c2): ``compare/index.html?runs=a,b`` built in headless
Chromium from the runs' side files (``runs/<id>/compare.json``, static/js/static_compare.js) shows what the live
``/compare/?runs=`` shows, table cell by table cell; trace text stays text. Screenshots at 1440 and 390 px go to
test-artifacts/pages/export-compare-{1440,390}.png."""
from __future__ import annotations

import pytest

from traces import selectors

from .conftest import ARTIFACTS
from .test_browser_phone import OVERFLOWING
from .test_export import _write

pytestmark = [pytest.mark.browser, pytest.mark.django_db]

# Every table row of the comparison: [class, data-key, each cell's text with white space collapsed], the phase axes
# (their text, each bar's title, left and width, the axis' label) and the notices and headings around them.
EXTRACT = """() => {
  const norm = t => t.replace(/\\s+/g, ' ').trim();
  const table = id => Array.from(document.querySelectorAll('#' + id + ' tr')).map(tr =>
    [tr.className, tr.dataset.key || '', ...Array.from(tr.children).map(c => norm(c.textContent))]);
  const axes = Array.from(document.querySelectorAll('#compare-phases .phase-axis-row')).map(row => [
    norm(row.textContent), (row.querySelector('.phase-axis-name') || {}).title || '',
    (row.querySelector('.phase-axis') || {getAttribute: () => ''}).getAttribute('aria-label'),
    ...Array.from(row.querySelectorAll('.phase-axis > span')).map(s =>
      [s.className, s.title, s.style.left, s.style.width])]);
  const notices = Array.from(document.querySelectorAll('main p.notice')).map(p => [p.id, norm(p.textContent)]);
  const steps = document.querySelector('#steps + p');
  return {h1: norm(document.querySelector('main h1').textContent), notices, axes,
          legend: norm((document.querySelector('#compare-phases .phase-legend') || {}).textContent || ''),
          facts: table('compare-facts'), facets: table('compare-facets'), steps: table('compare-steps'),
          mode: steps ? norm(steps.textContent) : '', runs: Array.from(document.querySelectorAll('th.compare-run'))
            .map(th => th.dataset.run)};
}"""


def _static(page, base: str, ids: list[str]) -> dict:
    page.goto(base + "compare/index.html?runs=" + "%2C".join(ids))
    page.wait_for_selector("#static-compare[data-ready=true]")
    return page.evaluate(EXTRACT)


def _live(page, client, ids: list[str]) -> dict:
    response = client.get("/compare/?runs=" + ",".join(ids))
    assert response.status_code == 200
    page.set_content(response.content.decode())
    return page.evaluate(EXTRACT)


def _without_more(shown: dict, *, static: bool) -> tuple[dict, bool]:
    """The comparison without its "more steps" row (live: a link to the next page; static: a note that the rest is
    on each run's page), and whether it had one."""
    rows = shown["steps"]
    more = bool(rows) and rows[-1][2].startswith("More steps")
    if more:
        assert rows[-1][2] == ("More steps: on each run's page." if static else "More steps"), rows[-1]
        rows = rows[:-1]
    return {**shown, "steps": rows}, more


def _pairs() -> list[list[str]]:
    """Comparisons to check: the run with the most steps and each kind of peer its page offers, a run without
    clocks if the demo has one with it (aligned by position), and three and four runs of one cell."""
    runs = selectors.list_runs(limit=None)[0]
    fingerprints = selectors.run_fingerprints()
    agent_runs = [r for r in runs if r.id in fingerprints]
    deepest = max(agent_runs, key=lambda r: r.step_count)
    peers = selectors.cell_peers(deepest.id)
    chosen = [[deepest.id, p.run.id] for p in {p.relation: p for p in peers}.values()]
    unclocked = [r for r in agent_runs if r.started_at is None]
    if unclocked:
        chosen.append([unclocked[0].id, deepest.id])  # any two runs compare; aligned by position
    cells: dict[tuple, list[str]] = {}
    for r in agent_runs:
        cells.setdefault((r.suite, r.benchmark, r.base_model), []).append(r.id)
    big = max(cells.values(), key=len)
    chosen += [big[:3], big[:4]]
    return chosen


def test_the_static_comparison_shows_what_the_live_page_shows(served, page, client):
    base, outdir, _, _ = served
    pairs = _pairs()
    assert len(pairs) >= 4
    modes = set()
    for ids in pairs:
        static, static_more = _without_more(_static(page, base, ids), static=True)
        live, live_more = _without_more(_live(page, client, ids), static=False)
        assert static_more == live_more, ids
        assert static["runs"] == ids
        assert static["facts"] and static["steps"], ids
        for part in ("h1", "notices", "axes", "legend", "facts", "facets", "steps", "runs"):
            assert static[part] == live[part], (ids, part, static[part], live[part])
        # The live page adds its jump-to-time form after this text (time alignment) only on the live site.
        assert static["mode"] == live["mode"], ids
        modes.add(static["mode"].split(" ")[0])
        assert any(r[0] == "differs" for r in static["facts"]), ids  # two runs differ in something
    assert modes == {"Aligned", "A"}  # by elapsed time, and by position

    # A step's link opens that run's step page at the step; a run's title its page.
    deepest, peer = pairs[0]
    page.goto(base + f"compare/index.html?runs={deepest}%2C{peer}")
    page.wait_for_selector("#static-compare[data-ready=true]")
    page.click(f'#compare-steps a.step-link[href*="runs/{peer}/"] >> nth=0')
    page.wait_for_url(f"**/runs/{peer}/index.html#step-*")
    assert page.locator("li.step.focus, li.step:target").count() >= 1
    assert page.js_errors == [], page.js_errors

    # The run page's "Compare with" link leads there.
    page.goto(base + f"runs/{deepest}/index.html")
    page.goto(page.locator(f'li[data-run="{peer}"] a.compare-link').evaluate("a => a.href"))  # in a folded list
    page.wait_for_url(f"**/compare/index.html?runs={deepest}%2C{peer}")
    page.wait_for_selector("#static-compare[data-ready=true]")
    assert page.locator("th.compare-run").evaluate_all("ths => ths.map(th => th.dataset.run)") == [deepest, peer]


def test_the_static_comparison_says_what_it_left_out(served, page, client):
    base, _, _, _ = served
    ids = _pairs()[-1]  # four runs of a cell
    more = [*ids, ids[0] + "x"]
    static = _static(page, base, [*more[:3], "nosuchrun", *more[3:]])
    live = _live(page, client, [*more[:3], "nosuchrun", *more[3:]])
    assert static["notices"] == live["notices"]
    assert [n[0] for n in static["notices"]] == ["compare-capped", ""]
    assert "No run nosuchrun: left out." in static["notices"][1][1]
    one = _static(page, base, ids[:1])
    assert one["notices"] == _live(page, client, ids[:1])["notices"] and one["notices"][0][0] == "compare-one"
    for hostile in ("../../index", "a/b", "%2e%2e"):
        page.goto(base + "compare/index.html?runs=" + hostile)
        page.wait_for_selector("#static-compare[data-ready=true]")
        assert page.locator("#compare-none").count() == 1 and page.locator("#compare-facts").count() == 0
    page.goto(base + "compare/index.html")
    page.wait_for_selector("#static-compare[data-ready=true]")
    assert "Open \"Compare with\" on a run page" in page.locator("#static-compare").inner_text()
    assert page.js_errors == [], page.js_errors


def test_trace_text_on_the_static_comparison_is_text(site_copy, serve, page):
    """A step whose text is HTML shows as that text: nothing of it becomes an element, no script runs."""
    from export.exporter import export_site

    outdir = site_copy.outdir
    run = max((r for r in selectors.list_runs(limit=None)[0] if r.id in selectors.run_fingerprints()),
              key=lambda r: r.step_count)
    peer = selectors.cell_peers(run.id)[0].run.id
    hostile = '<img src=x onerror="document.title=\'owned\'"><script>document.title="owned"</script>'
    _write(site_copy.warehouse,
           ("UPDATE steps SET output = ?, input = ?, tool = ? WHERE run_id = ? AND trace = 'agent' AND idx = 0",
            [hostile, hostile, "<b>bold</b>", run.id]),
           ("UPDATE runs SET content_hash = 'changed' WHERE id = ?", [run.id]))
    export_site(outdir)
    base = serve(outdir)
    dialogs: list[str] = []
    page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
    page.goto(base + f"compare/index.html?runs={run.id}%2C{peer}")
    page.wait_for_selector("#static-compare[data-ready=true]")
    page.wait_for_timeout(300)
    cell = page.locator(f'#compare-steps a.step-link[href*="runs/{run.id}/"][href$="#step-0"]').locator("xpath=..")
    assert cell.locator("pre.output").inner_text() == hostile
    assert cell.locator("pre.input").inner_text() == hostile
    assert page.locator("#static-compare img, #static-compare script, #static-compare b").count() == 0
    assert page.title().startswith("Compare 2 runs") and dialogs == []
    assert cell.locator("span.tool").inner_text() == "<b>bold</b>"


@pytest.mark.parametrize("width,height", [(1440, 900), (390, 844)])
def test_the_static_comparison_fits_a_phone_and_a_desktop(served, page, width, height):
    base, _, _, _ = served
    ids = _pairs()[0]
    (ARTIFACTS / "pages").mkdir(parents=True, exist_ok=True)
    page.set_viewport_size({"width": width, "height": height})
    page.goto(base + "compare/index.html?runs=" + "%2C".join(ids))
    page.wait_for_selector("#static-compare[data-ready=true]")
    page.screenshot(path=ARTIFACTS / "pages" / f"export-compare-{width}.png", full_page=True)
    scroll = page.evaluate("document.documentElement.scrollWidth")
    assert scroll <= width, (width, scroll, page.evaluate(OVERFLOWING))
    assert page.evaluate(OVERFLOWING) == [], width
    assert page.js_errors == [], page.js_errors
