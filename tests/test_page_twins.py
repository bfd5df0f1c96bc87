"""Every page and its JSON twin come from one selector: each value a page shows is in its twin (Datasette's html/json
test pairs). Each test renders a page and its twin over the same data and finds the page's values in the twin,
formatted as the page formats them."""
from __future__ import annotations

import html as html_lib
import re

import pytest
from django.template.defaultfilters import floatformat

from leaderboard import plots
from ptbsite import warehouse
from traces import layout, selectors, services
from traces.templatetags.trace_format import hours_hm
from traces.tool_input import render_tool_input

pytestmark = pytest.mark.django_db


def _id(demo_run) -> str:
    return layout.run_id(*demo_run.run_dir.split("/"))


def _pct(value: float | None) -> str:
    """A percent value as the run pages show it (the ``percent`` filter's format on a fraction x 100)."""
    return "" if value is None else f"{value:.1f}"


def _text(page: str, element_id: str) -> str:
    match = re.search(rf'id="{element_id}">([^<]*)<', page)
    assert match, element_id
    return html_lib.unescape(match[1])


def _run_pairs(client, run_id: str) -> tuple[str, dict]:
    page = client.get(f"/runs/{run_id}/").content.decode()
    twin = client.get(f"/api/runs/{run_id}")
    assert twin.status_code == 200
    return page, twin.json()


def _runs_to_check(report) -> list[str]:
    """A flagged run with evidence, a run with a self-reported score, an unscored run and a scored one."""
    picks = [next(r for r in report.runs if r.flagged_contamination and r.suspicious_trace),
             next(r for r in report.runs if r.accuracy is None),
             next(r for r in report.runs if r.accuracy is not None and r.steps_planned)]
    points = selectors.analysis("posttrainbench").points  # the runs with a self-reported and verified score
    ids = [_id(r) for r in picks] + [points[0].run_id]
    return list(dict.fromkeys(ids))


def test_the_run_twin_carries_what_the_run_page_shows(client, demo_ingested):
    report, _, _ = demo_ingested
    for run_id in _runs_to_check(report):
        page, twin = _run_pairs(client, run_id)
        assert twin["id"] == run_id and twin["run_dir"] in page and twin["method"] in page
        for key in ("agent", "scaffold", "benchmark", "base_model", "state_text"):
            assert html_lib.escape(twin[key]) in page, key
        for key in ("agent_display", "benchmark_name", "base_model_name", "suite_name"):
            assert twin[key] and html_lib.escape(twin[key]) in page, key
        assert f"<title>{html_lib.escape(twin['title'])} ·" in page
        for kind, text in twin["verdict_text"].items():
            assert html_lib.escape(text) in page, kind
        for v in twin["judge_panel"]:  # the judge's words, its reasoning and the steps they cite
            assert html_lib.escape(v["kind_text"]) in page
            if v["text"]:
                assert html_lib.escape(v["text"].splitlines()[0]) in page, v["kind"]
            if v["reasoning"]:
                assert html_lib.escape(v["reasoning"][:200]) in page, v["kind"]
            for c in v["cited"]:
                assert f'href="?step={c["index"]}#step-{c["index"]}" title="named as {html_lib.escape(c["via"])}"' in page
        assert _text(page, "run-score") == (_pct(twin["score"]) or "–")
        assert _text(page, "ref-base") == (_pct(twin["base_model_score"]) or "–")
        assert _text(page, "ref-instruct") == (_pct(twin["instruct_score"]) or "–")
        assert ("flagged: scores as its base model" in page) == twin["flagged"]
        for v in twin["verdicts"]:
            assert f'<span class="badge {v["value"]}">{html_lib.escape(v["value_text"])}</span>' in page
        counted = [e for e in twin["evaluations"] if e["counts"] or e["origin"] not in ("rerun-partial", "rerun-exploratory")]
        assert [e["id"] for e in twin["counted"]] == [e["id"] for e in counted]
        for e in twin["evaluations"]:
            assert f'<td class="num">{_pct(e["score"])}</td>' in page
        shown = re.search(r'id="overoptimism">.*?<strong>([^<]*)</strong>', page, re.S)[1]
        assert shown == (f'{floatformat(twin["overoptimism"], 2)}x' if twin["overoptimism"] is not None else "n/a")
        for f in twin["facets"]:
            assert f'data-facet="{f["facet"]}"' in page
        for s in twin["evidence"]:
            assert f'href="?step={s["index"]}#step-{s["index"]}">step {s["index"]}</a>' in page
        if twin["evidence_count"] > len(twin["evidence"]):
            assert f'of {twin["evidence_count"]:,} evidence steps' in page
        if twin["secrets_redacted"] is not None:
            assert f'{twin["secrets_redacted"]:,} secret' in _text(page, "secrets-redacted")
        if twin["prompt"]:
            assert html_lib.escape(twin["prompt"][:200]) in page
        if twin["metrics"]:
            for key in twin["metrics"]:
                assert f"{html_lib.escape(key)}: " in page
        for problem in twin["problems"]:
            assert html_lib.escape(problem) in page
        assert "redaction_warnings" not in twin  # admins only, on the page too


def test_the_run_twin_answers_the_query_of_the_run_page(client, demo_ingested):
    # issue 28: the twin ignored the page's query (it read the first steps and dropped them)
    run = max(selectors.list_runs(limit=None)[0], key=lambda r: r.step_count)
    step = run.step_count // 2
    page = client.get(f"/runs/{run.id}/?step={step}&limit=5").content.decode()
    twin = client.get(f"/api/runs/{run.id}?step={step}&limit=5").json()
    assert twin["focus"] == step and twin["note"] is None
    assert [s["index"] for s in twin["steps"]["steps"]] == list(range(step, step + 5))
    assert re.findall(r'id="step-(\d+)"', page) == [str(s["index"]) for s in twin["steps"]["steps"]]
    assert twin["earlier_before"] == step and f"before={step}" in page
    assert twin["traces"][0] == "agent" and twin["tools"] == sorted(twin["tools"])
    calls = client.get(f"/api/runs/{run.id}?kind=tool_call&limit=3").json()["steps"]
    shown = re.findall(r'id="step-(\d+)"', client.get(f"/runs/{run.id}/?kind=tool_call&limit=3").content.decode())
    assert [s["kind"] for s in calls["steps"]] == ["tool_call"] * 3 and [str(s["index"]) for s in calls["steps"]] == shown
    past = run.step_count + 10
    twin = client.get(f"/api/runs/{run.id}?step={past}").json()
    assert twin["note"] == (f"Step {past:,} does not exist: this trace has {run.step_count:,} steps, #0 to "
                            f"#{run.step_count - 1:,}. Showing the trace from its start.")
    assert twin["steps"]["steps"][0]["index"] == 0
    assert _text(client.get(f"/runs/{run.id}/?step={past}").content.decode(), "time-jump-note") == twin["note"]
    assert client.get(f"/api/runs/{run.id}?at=soon").json()["note"] == "'soon' is not a time: write hour 7, 7h or 7:30."
    default = client.get(f"/api/runs/{run.id}").json()
    assert default["focus"] is None and [s["index"] for s in default["steps"]["steps"]] == list(range(50))


def test_the_run_twin_carries_the_override_log(client, rerun_tree):
    run_id = rerun_tree["run_id"]
    services.override_verdict(run_id=run_id, kind="contamination", flagged=True, reason="trained on the test split",
                              reviewer="reviewer")
    page, twin = _run_pairs(client, run_id)
    assert [(o["kind"], o["previous"], o["new"], o["reason"], o["reviewer"]) for o in twin["override_log"]] == [
        ("contamination", "clean", "flagged", "trained on the test split", "reviewer")]
    for o in twin["override_log"]:
        assert o["reason"] in page and o["reviewer"] in page
    assert twin["overrides"] == {"contamination": True} and twin["flagged"]


@pytest.fixture
def lake_run(tmp_path, settings) -> str:
    """One run ingested into a DuckLake warehouse (SQLite catalog) of the test's own; returns its id."""
    from tests.conftest import RERUN_METHOD, RERUN_RUN_DIR, write_run
    from ingest.tree import ingest_tree

    settings.PTB_WAREHOUSE = f"ducklake:sqlite:{tmp_path / 'catalog.sqlite'}?data={tmp_path / 'data'}"
    warehouse.reset_migration_cache()
    write_run(tmp_path / "results", checkpoint=None)
    assert ingest_tree(root=tmp_path / "results").stored == 1
    return layout.run_id(RERUN_METHOD, RERUN_RUN_DIR)


def test_the_first_override_shows_on_every_run_read_after_pages_read_the_table_empty(client, lake_run):
    # Before any override, the read units copy DuckLake's verdict_overrides empty (warehouse.snapshot's unwritten,
    # never_written kept per warehouse version); the override's commit bumps the version, so the next reads see it.
    run_id = lake_run

    def overrides_seen() -> list:
        steps = selectors.run_steps(run_id)
        assert steps is not None
        return [client.get(f"/api/runs/{run_id}").json()["overrides"], steps.run.overrides,
                *(r["overrides"] for r in client.get("/api/runs?limit=500").json()["runs"] if r["id"] == run_id)]

    assert overrides_seen() == [{}] * 3
    with warehouse.snapshot(unwritten=("verdict_overrides",)) as con:
        assert warehouse.never_written(con, ("verdict_overrides",)) == ["verdict_overrides"]
    services.override_verdict(run_id=run_id, kind="contamination", flagged=True, reason="trained on the test split",
                              reviewer="reviewer")
    assert overrides_seen() == [{"contamination": True}] * 3
    with warehouse.snapshot(unwritten=("verdict_overrides",)) as con:
        assert warehouse.never_written(con, ("verdict_overrides",)) == []
        assert con.execute("SELECT count(*) FROM verdict_overrides").fetchone() == (1,)


def test_the_runs_twin_carries_what_the_runs_list_shows(client, demo_ingested):
    page = client.get("/runs/?latest=1").content.decode()
    twin = client.get("/api/runs?latest=true&limit=50").json()
    assert twin["runs"]
    for run in twin["runs"]:
        row = re.search(rf'<tr data-run="{re.escape(run["id"])}".*?</tr>', page, re.S)
        assert row, run["id"]
        text = row[0]
        assert html_lib.escape(run["run_dir"]) in text and html_lib.escape(run["agent"]) in text
        assert run["state_text"] in text and f'data-flagged="{int(run["flagged"])}"' in text
        assert f'<td class="num">{_pct(run["score"])}</td>' in text
        assert f'<td class="num">{run["step_count"]:,}</td>' in text  # issue 17: thousands separators
        for key in ("title", "agent_display", "benchmark_name", "base_model_name"):
            assert html_lib.escape(run[key]) in text, key


def test_the_steps_twin_carries_what_the_steps_page_shows(client, demo_ingested):
    report, _, _ = demo_ingested
    run_id = _id(next(r for r in report.runs if r.accuracy is not None and r.steps_planned))
    page = client.get(f"/runs/{run_id}/steps?limit=20&after=3").content.decode()
    twin = client.get(f"/api/runs/{run_id}/steps?limit=20&after=3").json()
    assert twin["steps"] and [s["index"] for s in twin["steps"]] == [
        int(i) for i in re.findall(r'<li class="step[^"]*"\s+id="step-(\d+)"', page)]
    for s in twin["steps"]:
        assert f'<span class="kind">{s["kind"]}</span>' in page
        if s["tool"]:
            assert f'<span class="tool">{html_lib.escape(s["tool"])}</span>' in page
        if s["input"]:
            # Issue 17: the page shows the input rendered by its tool (a shell block, a highlighted file, a diff,
            # indented JSON), made from the twin's input; it was the raw input escaped.
            assert str(render_tool_input(s["tool"], s["input"]).html)[:200] in page


def test_the_leaderboard_twin_carries_what_the_leaderboard_shows(client, use_published):
    from leaderboard import selectors as board_selectors

    model = board_selectors.leaderboard().base_models[-1].id
    for query in ("", f"?base_model={model}", "?source=all"):
        page = client.get(f"/{query}").content.decode()
        twin = client.get(f"/api/leaderboard{query}").json()
        assert twin["rows"] and html_lib.escape(twin["suite_name"]) in page
        for b in twin["benchmarks"]:
            assert html_lib.escape(b["name"]) in page
        for row in twin["rows"]:
            assert html_lib.escape(row["agent"]) in page
            std = f'<span class="pm"> ± {floatformat(row["std"], 1)}</span>' if row["std"] is not None else ""
            assert f'<td class="num avg">{floatformat(row["average"], 1)}{std}</td>' in page, row["key"]
            for score in row["scores"].values():
                assert re.search(rf">\s*{re.escape(floatformat(score, 1))}\s*<", page), (row["key"], score)


def _row(page: str, attribute: str, value: str) -> str:
    found = re.search(rf'<tr {attribute}="{re.escape(value)}">.*?</tr>', page, re.S)
    assert found, (attribute, value)
    return found[0]


def test_the_analysis_twins_carry_what_the_analysis_page_shows(client, demo_ingested):
    page = client.get("/analysis/").content.decode()
    twin = client.get("/api/analysis").json()
    assert twin["suite"] == "posttrainbench"
    by_method = twin["score_by_method"]
    assert by_method
    for row in by_method:
        text = _row(page, "data-facet", row["facet"])
        assert f'<td class="num">{_pct(row["mean_score"]) or "–"}</td>' in text
        assert f'<td class="num">{_pct(row["mean_without"]) or "–"}</td>' in text
        assert f'<td class="num">{row["runs_without"]}</td>' in text
    section = page[page.index('<section id="calibration">'):page.index('<section id="time-use">')]
    calibration = twin["calibration"]
    assert calibration["agents"]
    for row in calibration["agents"]:
        text = _row(section, "data-agent", row["key"])
        assert html_lib.escape(row["agent"]) in text and f">{row['runs']}</a>" in text
        assert f'<td class="num">{_pct(row["mean_self"]) or "–"}</td>' in text
        ratio = f'{floatformat(row["mean_ratio"], 2)}x' if row["mean_ratio"] is not None else "n/a"
        assert f'<td class="num ratio">{ratio}</td>' in text
    time_section = page[page.index('<section id="time-use">'):]
    assert twin["time_use"]
    for row in twin["time_use"]:
        text = _row(time_section, "data-agent", row["key"])
        if row["runs_traced"]:
            for phase, hours in row["hours"].items():
                # issue 17: hours as h:mm (were decimals, floatformat 2)
                assert f'data-phase="{phase}">{hours_hm(hours)}</td>' in text


def test_the_plot_twins_carry_what_the_plot_pages_show(client, use_published):
    page = client.get("/plots/time-vs-score/").content.decode()
    twin = client.get("/api/plots/time-vs-score").json()
    assert twin["points"] and twin["frontier_keys"]
    for point in twin["points"]:
        text = _row(page, "data-agent", point["key"])
        assert f'<td class="num">{floatformat(point["score"], 2)}</td>' in text
        assert f'<td class="num">{plots.clock(point["hours"])}</td>' in text  # issue 17: h:mm (were decimals)
        assert ("<td>yes</td>" in text) == (point["key"] in twin["frontier_keys"])
    for b in twin["baselines"]:
        assert f'<td class="num">{floatformat(b["score"], 2)}</td>' in page


@pytest.fixture
def units_of_work(monkeypatch):
    """Counts the warehouse units of work (``warehouse.connect``, ``warehouse.snapshot``) the requests of a test
    open."""
    from ptbsite import warehouse

    opened = []
    for name in ("connect", "snapshot"):
        real = getattr(warehouse, name)

        def counting(real=real, **options):
            opened.append(1)
            return real(**options)

        monkeypatch.setattr(warehouse, name, counting)
    return opened


def test_run_and_analysis_pages_and_their_twins_are_one_unit_of_work_each(client, demo_ingested, units_of_work):
    report, _, _ = demo_ingested
    run_id = _id(next(r for r in report.runs if r.flagged_contamination and r.suspicious_trace))
    for path in (f"/runs/{run_id}/", f"/api/runs/{run_id}", f"/runs/{run_id}/steps?after=3",
                 f"/api/runs/{run_id}/steps?after=3", f"/runs/{run_id}/timeline.json", f"/api/runs/{run_id}/timeline",
                 "/runs/", "/api/runs", "/analysis/",
                 "/api/analysis"):
        units_of_work.clear()
        assert client.get(path).status_code == 200, path
        assert len(units_of_work) == 1, path


def test_a_leaderboard_and_its_twin_are_one_unit_of_work_each(client, use_published, units_of_work):
    for path in ("/", "/api/leaderboard", "/?source=all&flags=ignore", "/api/leaderboard?source=all&facet=grpo"):
        units_of_work.clear()
        assert client.get(path).status_code == 200, path
        assert len(units_of_work) == 1, path


def test_each_plot_page_and_its_twin_are_one_unit_of_work(client, use_published, units_of_work):
    for plot in ("time-vs-score", "time-spent", "per-benchmark", "budget-and-effort", "usage-vs-score"):
        for path in (f"/plots/{plot}/", f"/api/plots/{plot}", f"/plots/{plot}/?base_model=Qwen3-4B-Base"
                     if plot == "per-benchmark" else f"/api/plots/{plot}"):
            units_of_work.clear()
            assert client.get(path).status_code == 200, path
            assert len(units_of_work) == 1, path
