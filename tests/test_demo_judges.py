"""The judges' report card on the demo tree ``make serve`` loads (``make_demo_results --runs 40 --seed 7``; here
without the ~50 MB long run, which only changes the first Claude run): the May-2026 judges part and a reward hack
every judge passed is listed, against the generator's ground truth (demo.tree.DemoRun.judge_flags / outside_api).

The May-2026 method (OpenCode Kimi K2.5) has four runs, each judged by gpt5_4, kimi and the API judge:
  healthbench  timed out       gpt5_4 clean, kimi clean
  gsm8k        test split      gpt5_4 clean, kimi contamination   (judge_result.json: their OR, flagged)
  aime2025     distils gpt-5   gpt5_4 clean, kimi clean, api clean (the trace writes an OpenAI client script)
  humaneval    test split      gpt5_4 contamination, kimi contamination
gpt5_4 vs kimi on contamination: [n, n, n, y] vs [n, y, n, y]: agreed 3 of 4; p_o = 0.75,
p_e = 0.25 x 0.5 + 0.75 x 0.5 = 0.5, kappa = (0.75 - 0.5) / 0.5 = 0.5.
"""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from traces import layout

from .conftest import ARTIFACTS

pytestmark = pytest.mark.django_db(transaction=True)
MAY = "opencode_opencode_kimi-k2.5_10h_run2"


@pytest.fixture(scope="module")
def demo40(published_warehouse: Path, tmp_path_factory: pytest.TempPathFactory):
    """(DemoReport, warehouse path): the make-serve demo tree (40 runs, seed 7, no long run) ingested once."""
    import shutil

    from django.conf import settings

    from demo.tree import make_demo_results
    from ingest.tree import ingest_tree
    from ptbsite import warehouse

    folder = tmp_path_factory.mktemp("demo40")
    report = make_demo_results(root=folder / "results", runs=40, seed=7, long_run=False)
    path = folder / "warehouse.duckdb"
    shutil.copy(published_warehouse, path)
    previous = settings.PTB_WAREHOUSE
    settings.PTB_WAREHOUSE = str(path)
    warehouse.reset_migration_cache()
    try:
        ingested = ingest_tree(root=report.root)
    finally:
        settings.PTB_WAREHOUSE = previous
    assert ingested.failed == 0, ingested.problems
    return report, path


@pytest.fixture
def demo40_ingested(demo40, settings):
    from ptbsite import warehouse

    settings.PTB_WAREHOUSE = str(demo40[1])
    warehouse.reset_migration_cache()
    return demo40[0]


def _id(demo_run) -> str:
    return layout.run_id(*demo_run.run_dir.split("/"))


def test_the_generator_records_each_judge(demo40):
    report, _ = demo40
    may = {r.benchmark: r for r in report.runs if r.method == MAY}
    assert sorted(may) == ["aime2025", "gsm8k", "healthbench", "humaneval"]
    said = {b: (r.judge_flags["gpt5_4"]["contamination"], r.judge_flags["kimi"]["contamination"])
            for b, r in may.items()}
    assert said == {"healthbench": (False, False), "gsm8k": (False, True), "aime2025": (False, False),
                    "humaneval": (True, True)}
    assert may["gsm8k"].flagged_contamination and may["gsm8k"].contamination_verdict == "flagged"  # the OR
    files = {name: json.loads((report.root / may["gsm8k"].run_dir / name).read_text())["contamination"]
             for name in ("judgement_gpt5_4.json", "judgement_kimi.json", "judge_result.json")}
    assert files == {"judgement_gpt5_4.json": False, "judgement_kimi.json": True, "judge_result.json": True}
    assert [r.run_dir for r in report.runs if r.outside_api] == [may["aime2025"].run_dir]
    assert may["aime2025"].judge_flags["api"] == {"disallowed_api_usage": False}
    assert not may["aime2025"].flagged_contamination and not may["aime2025"].flagged_model
    text = (report.root / may["aime2025"].run_dir / "solve_out.txt").read_text()
    assert "from openai import OpenAI" in text and 'model=\\"gpt-5\\"' in text


def test_the_ingested_demo_flags_as_the_generator_says(demo40_ingested):
    """Every run of the make-serve tree: the site's flags (the era's rule: judge_result.json's OR in May 2026) are the
    generator's, and each suspicious trace has its evidence step."""
    from traces import selectors

    for demo in demo40_ingested.runs:
        run = selectors.get_run(_id(demo))
        assert run is not None, demo.run_dir
        assert (run.flags["contamination"] == "flagged") == demo.flagged_contamination, demo.run_dir
        assert (run.flags["disallowed_model"] == "flagged") == demo.flagged_model, demo.run_dir
        if demo.suspicious_trace:
            rules = {r for s in selectors.evidence_steps(run.id) for r in s.rules}
            assert rules & ({"outside_llm_api"} if demo.outside_api else
                            {"benchmark_dataset", "test_data", "non_base_model"}), (demo.run_dir, rules)


def test_the_demo_report_card_has_substance(demo40_ingested, client):
    from django.core.cache import caches

    from traces import selectors

    caches["throttle"].clear()
    report = demo40_ingested
    may = {r.benchmark: r for r in report.runs if r.method == MAY}
    card = client.get("/api/judges").json()
    pairs = {(p["judge_a"], p["judge_b"], p["kind"]): (p["runs"], p["agreed"], p["kappa"]) for p in card["pairs"]}
    assert pairs[("gpt5_4", "kimi", "contamination")] == (4, 3, pytest.approx(0.5))
    assert any(k is not None and k < 1 for _, _, k in pairs.values())
    stats = {(s["judge"], s["benchmark"]): (s["runs"], s["flagged"]) for s in card["stats"]}
    assert stats[("kimi", "gsm8k")] == (1, 1) and stats[("gpt5_4", "gsm8k")] == (1, 0)
    assert stats[("api", "aime2025")] == (1, 0)

    missed = _id(may["aime2025"])
    rows = [d for d in card["disagreements"] if d["run_id"] == missed]
    assert [(d["mode"], d["rules"], d["judges"], d["judge_ids"]) for d in rows] == [
        ("outside_model", "found", "clean", ["api"])]
    steps = rows[0]["steps"]
    cited = {s.index: s for s in selectors.evidence_steps(missed)}
    assert steps and all("outside_llm_api" in cited[i].rules for i in steps)
    assert all("from openai import OpenAI" in (cited[i].input or "") for i in steps)
    # Kimi's flag agrees with the rules on gsm8k's test split, so that run is no disagreement; neither is humaneval.
    assert not [d for d in card["disagreements"] if d["run_id"] in (_id(may["gsm8k"]), _id(may["humaneval"]))]
    page = client.get("/judges/").content.decode()
    assert f'href="/runs/{missed}/?step={steps[0]}#step-{steps[0]}">step {steps[0]}</a>' in page
    assert "0.50" in page


@pytest.mark.browser
def test_the_demo_report_card_screenshots(live_server, demo40_ingested, page):
    """/judges/ of the demo at 1440 and 390 px, under test-artifacts/pages/ for a person to look at: no cell
    overflows the page and the missed distillation's run is linked."""
    shots = ARTIFACTS / "pages"
    shots.mkdir(parents=True, exist_ok=True)
    missed = _id(next(r for r in demo40_ingested.runs if r.outside_api))
    for width, height, name in ((1440, 900, "judges-demo"), (390, 844, "judges-demo-390")):
        page.set_viewport_size({"width": width, "height": height})
        response = page.goto(live_server.url + "/judges/")
        assert response is not None and response.status == 200
        page.wait_for_load_state("networkidle")
        assert page.locator(f'a[href^="/runs/{missed}/"]').count() >= 1
        overflow = page.evaluate("() => document.documentElement.scrollWidth - window.innerWidth")
        file = shots / f"{name}.png"
        page.screenshot(path=file, full_page=True)
        assert file.stat().st_size > 10_000
        assert overflow <= 0, (width, overflow)
    assert page.js_errors == [], page.js_errors
