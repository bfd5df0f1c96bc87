"""The static export in headless Chromium, served by ``python -m http.server`` with no Django behind it."""
from __future__ import annotations

import json
import shutil
import socket
import subprocess
import sys
import time
import urllib.request

import pytest

from export.exporter import STEPS_PER_PAGE, export_site
from ptbsite import warehouse
from traces import selectors

from .conftest import ARTIFACTS
from .test_export import assert_no_broken_link

pytestmark = [pytest.mark.django_db, pytest.mark.browser]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def served(demo_warehouse_state, tmp_path, settings):
    """(base URL, OUTDIR, the run with the most steps): the demo warehouse exported and served as plain files."""
    _, source = demo_warehouse_state
    settings.PTB_WAREHOUSE = str(tmp_path / "export.duckdb")
    shutil.copy(source, settings.PTB_WAREHOUSE)
    warehouse.reset_migration_cache()
    outdir = tmp_path / "site"
    export_site(outdir)
    run = max(selectors.list_runs(limit=None)[0], key=lambda r: r.step_count)
    port = _free_port()
    server = subprocess.Popen([sys.executable, "-m", "http.server", str(port), "--bind", "127.0.0.1",
                               "--directory", str(outdir)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    base = f"http://127.0.0.1:{port}/"
    try:
        for _ in range(100):
            try:
                urllib.request.urlopen(base, timeout=1).close()
                break
            except OSError:
                time.sleep(0.1)
        yield base, outdir, run
    finally:
        server.terminate()
        server.wait(timeout=10)


def test_the_exported_site_works_without_a_server(served, page):
    base, outdir, run = served
    page.goto(base)
    assert page.locator('tr[data-agent="opus-4.6"] td.avg').inner_text().startswith("23.2")
    page.screenshot(path=ARTIFACTS / "export-leaderboard.png", full_page=True)

    # Another base model's view is its own pre-rendered page.
    page.click('a[data-base-model="Qwen3-4B-Base"]')
    page.wait_for_url("**/base_model/Qwen3-4B-Base/index.html")
    page.wait_for_selector('table[data-view="Qwen3-4B-Base"]')
    assert not page.locator('tr[data-agent="opus-4.6"] td.avg').inner_text().startswith("23.2")
    # Sorting runs in the browser: by agent name, then the other way round.
    page.click('a[data-sort="agent"]')
    names = page.locator("table.leaderboard tbody td.agent").all_inner_texts()
    assert names == sorted(names, key=str.lower)
    page.click('a[data-sort="agent"]')
    assert page.locator("table.leaderboard tbody td.agent").all_inner_texts() == sorted(names, key=str.lower)[::-1]
    page.screenshot(path=ARTIFACTS / "export-leaderboard-qwen3-4b.png", full_page=True)

    # The runs list filters in the browser; a run opens with its first page of steps.
    page.goto(base + f"runs/index.html?agent={run.agent_key}&benchmark={run.benchmark}")
    visible = page.locator("table.runs tbody tr:visible")
    assert 0 < visible.count() < page.locator("table.runs tbody tr").count()
    assert page.locator('select[name="benchmark"]').input_value() == run.benchmark
    page.click(f'tr[data-run="{run.id}"] a')
    page.wait_for_url(f"**/runs/{run.id}/index.html")
    assert page.locator("#steps li.step").count() == STEPS_PER_PAGE
    page.screenshot(path=ARTIFACTS / "export-run.png")

    # Step pages: next, then back; j moves the focus.
    page.click("#steps li.load-more a")
    page.wait_for_url(f"**/runs/{run.id}/steps/2.html")
    assert page.locator(f"#step-{STEPS_PER_PAGE}").count() == 1
    page.keyboard.press("j")
    assert page.locator(f"#step-{STEPS_PER_PAGE}.focus").count() == 1
    page.screenshot(path=ARTIFACTS / "export-steps-2.png")
    page.click('nav.pager a[rel="prev"] >> nth=0')
    page.wait_for_url(f"**/runs/{run.id}/index.html")

    # The search runs over search.json and links to the step's page.
    index = json.loads((outdir / f"runs/{run.id}/search.json").read_text())
    late = next(s for s in index["steps"] if s[4] == 2 and s[2])
    page.select_option('#static-search select[name="tool"]', late[2])
    page.click("#static-search button")
    page.wait_for_selector("#static-results li a")
    assert "match" in page.locator("#static-results li").first.inner_text()
    page.screenshot(path=ARTIFACTS / "export-search.png")
    page.click(f'#static-results a[href="steps/2.html#step-{late[0]}"]')
    page.wait_for_url(f"**/runs/{run.id}/steps/2.html#step-{late[0]}")
    # Jump to a step number.
    page.go_back()
    page.fill('#static-jump input[name="step"]', str(STEPS_PER_PAGE + 1))
    page.click("#static-jump button")
    page.wait_for_url(f"**/steps/2.html#step-{STEPS_PER_PAGE + 1}")

    # A plot draws from the vendored plotly.js.
    page.goto(base + "plots/time-vs-score/index.html")
    page.wait_for_selector('#time-vs-score[data-drawn="true"]')
    assert page.locator("#time-vs-score svg .point").count() > 10
    page.screenshot(path=ARTIFACTS / "export-plot.png", full_page=True)
    assert page.js_errors == []

    assert assert_no_broken_link(outdir) > 1000
