"""The run list, the run page (header, judge panel, trace viewer) and their JSON twins."""
from __future__ import annotations

import re

import pytest

from traces import layout, selectors

from .test_page_twins import units_of_work  # noqa: F401 - fixture

pytestmark = pytest.mark.django_db


def _id(demo_run) -> str:
    return layout.run_id(*demo_run.run_dir.split("/"))


def _flagged_run(report):
    return next(r for r in report.runs if r.flagged_contamination and r.suspicious_trace)


def test_run_page_header_and_judge_panel(client, demo_ingested):
    report, _, _ = demo_ingested
    demo = _flagged_run(report)
    run = selectors.get_run(_id(demo))
    html = client.get(f"/runs/{run.id}/").content.decode()
    assert run.agent in html and run.scaffold in html and demo.benchmark in html
    assert f'<strong id="run-score">{100 * demo.accuracy:.1f}</strong>' in html
    refs = selectors.reference_scores(run.suite, run.base_model, run.benchmark)
    assert f'<span id="ref-base">{100 * refs["base"]:.1f}</span>' in html
    assert f'<span id="ref-instruct">{100 * refs["instruct"]:.1f}</span>' in html
    assert "flagged: scores as its base model on the leaderboard" in html
    assert 'class="badge flagged"' in html and "contamination detected" in html
    assert "synthetic demo run" in html
    hours = int(demo.hours)
    assert re.search(rf"{hours}:\d\d of 10:00 <span class=\"muted\">\(h:mm\)</span>", html)  # issue 17: h:mm (was H:MM:SS of 10 h)
    evidence = selectors.evidence_steps(run.id)
    assert evidence and f'href="?step={evidence[0].index}#step-{evidence[0].index}"' in html


def test_missing_verdict_says_so(client, demo_ingested):
    report, _, _ = demo_ingested
    demo = next(r for r in report.runs if r.verdict_note == "judge_crashed")
    html = client.get(f"/runs/{_id(demo)}/").content.decode()
    assert "The judge produced no verdict for this run." in html


def test_hostile_trace_text_is_escaped(client, demo_ingested):
    report, _, _ = demo_ingested
    run_dir = report.hostile_run_dirs[0]
    run_id = layout.run_id(*run_dir.split("/"))
    page = selectors.steps_page(run_id, q="window.__pwned", limit=5)
    assert page.steps
    html = client.get(f"/runs/{run_id}/?q=window.__pwned").content.decode()
    assert "<script>window.__pwned" not in html
    assert "&lt;script&gt;<mark>window.__pwned</mark>=1&lt;/script&gt;" in html  # the search's match marked
    assert "<img src=x onerror" not in html and "&lt;img src=x onerror" in html
    api = client.get(f"/api/runs/{run_id}/steps?q=window.__pwned").json()
    assert any("<script>window.__pwned=1</script>" in (s["output"] + (s["input"] or "")) for s in api["steps"])


def test_steps_paging_filters_and_deep_links(client, demo_ingested):
    report, _, _ = demo_ingested
    demo = max(report.runs, key=lambda r: r.steps_planned)
    run_id = _id(demo)
    first = client.get(f"/api/runs/{run_id}/steps?limit=20").json()
    assert [s["index"] for s in first["steps"]] == list(range(20))
    assert first["next"] == 19
    second = client.get(f"/api/runs/{run_id}/steps?limit=20&after={first['next']}").json()
    assert second["steps"][0]["index"] == 20
    calls = client.get(f"/api/runs/{run_id}/steps?kind=tool_call&limit=500").json()
    assert calls["total"] == demo.steps_planned and {s["kind"] for s in calls["steps"]} == {"tool_call"}
    last = client.get(f"/api/runs/{run_id}/steps?after={calls['total'] * 10}").json()
    assert last == {"steps": [], "next": None, "total": last["total"], "capped": False}
    html = client.get(f"/runs/{run_id}/?step=37").content.decode()
    assert 'id="step-37"' in html and 'class="step kind-' in html
    assert re.search(r'<li class="step [^"]*focus[^"]*"\s+id="step-37"', html)
    assert 'id="step-36"' not in html  # the page starts at the linked step
    partial = client.get(f"/runs/{run_id}/steps?after=49", HTTP_HX_REQUEST="true").content.decode()
    assert 'id="step-50"' in partial and "<html" not in partial
    assert client.get(f"/api/runs/{run_id}/steps?kind=nonsense").status_code == 422


def test_time_jump(client, demo_ingested):
    report, _, _ = demo_ingested
    demo = max((r for r in report.runs if r.timestamped and r.hours), key=lambda r: r.hours)
    run_id = _id(demo)
    target = selectors.step_at_time(run_id, 3600)
    page = selectors.steps_page(run_id, after=target - 1, limit=1)
    assert page.steps[0].elapsed_s >= 3600
    before = selectors.steps_page(run_id, after=target - 2, limit=1).steps[0]
    assert before.elapsed_s < 3600
    html = client.get(f"/runs/{run_id}/?at=hour+1").content.decode()
    assert re.search(rf'focus[^"]*"\s+id="step-{target}"', html)


def test_runs_list_and_api_filters(client, demo_ingested):
    report, _, _ = demo_ingested
    flagged = client.get("/api/runs?flagged=true&limit=500").json()
    expected = {_id(r) for r in report.runs if r.flagged_contamination or r.flagged_model}
    got = {r["id"] for r in flagged["runs"]}
    assert got == expected
    for run in flagged["runs"]:
        assert run["flagged"] is True
    opus = client.get("/api/runs?agent=opus-4.6&benchmark=gsm8k").json()
    assert opus["runs"] and all(r["agent_key"] == "opus-4.6" and r["benchmark"] == "gsm8k" for r in opus["runs"])
    # /api/runs serves the one Run model as it is (issue 14): exactly its serialised fields, which include the
    # fields the list always had.
    from traces.schemas import Run
    assert set(opus["runs"][0]) == set(Run.model_json_schema(mode="serialization")["properties"])
    assert {"id", "method", "agent", "agent_key", "scaffold", "benchmark", "base_model", "state", "score",
            "is_latest", "synthetic", "flagged", "verdicts"} <= set(opus["runs"][0])
    page1 = client.get("/api/runs?limit=5").json()
    page2 = client.get(f"/api/runs?limit=5&after={page1['next']}").json()
    assert len(page1["runs"]) == 5 and page2["runs"][0]["id"] > page1["runs"][-1]["id"]
    html = client.get("/runs/?agent=opus-4.6").content.decode()
    assert "synthetic" in html and "Opus 4.6" in html
    detail = client.get(f"/api/runs/{_id(_flagged_run(report))}").json()
    assert detail["flagged"] is True and detail["base_model_score"] is not None
    assert detail["verdicts"][0]["kind"] in ("contamination", "disallowed_model")
    assert client.get("/api/runs/nope").status_code == 404
    assert client.get("/runs/nope/").status_code == 404


def test_leaderboard_cells_lead_to_runs(client, demo_ingested):
    html = client.get("/?source=all").content.decode()
    assert 'href="/runs/?agent=opus-4.6&amp;benchmark=gsm8k"' in html
    assert 'data-source="runs"' in html and "ingested run" in html


def test_synthetic_runs_are_labelled_on_the_analysis_page(client, demo_ingested):
    report, _, _ = demo_ingested
    html = client.get("/analysis/").content.decode()
    latest = sum(1 for r in report.runs if r.is_latest)
    assert f"{latest} of these {latest} runs are generated demo runs" in html


def test_planted_secrets_reach_no_page_and_no_api(client, demo_ingested):
    report, _, _ = demo_ingested
    for secret in report.planted_secrets:
        run_id = layout.run_id(*secret.run_dir.split("/"))
        marker = secret.value[:24]
        pages = [client.get(f"/runs/{run_id}/?q=omitted-api-key"), client.get(f"/runs/{run_id}/"),
                 client.get(f"/api/runs/{run_id}/steps?limit=500"), client.get(f"/api/runs/{run_id}")]
        for response in pages:
            assert response.status_code == 200
            assert marker not in response.content.decode(), (secret.name, response.request["PATH_INFO"])
        found = client.get(f"/api/runs/{run_id}/steps?q=omitted-api-key&limit=500").json()
        assert found["total"] >= 1, secret.name  # the redacted line is there, without the key


def test_a_time_jump_on_a_trace_without_timestamps_says_so(client, demo_ingested):
    report, _, _ = demo_ingested
    demo = next(r for r in report.runs if not r.timestamped and r.steps_planned)
    html = client.get(f"/runs/{_id(demo)}/?at=hour+3").content.decode()
    assert "This trace has no timestamps, so it cannot be opened at a time" in html
    assert 'name="at"' not in html  # no time field to offer
    assert 'focus' not in re.findall(r'<li class="step ([^"]*)"', html)[0]


def test_the_api_docs_need_no_cdn(client):
    html = client.get("/api/docs").content.decode()
    assert "/static/ninja/swagger-ui-bundle.js" in html
    assert "cdn" not in html.lower()


def test_runs_list_offers_the_filter_values(client, demo_ingested):
    html = client.get("/runs/?agent=opus-4.6").content.decode()
    assert '<option value="opus-4.6" selected>Opus 4.6</option>' in html
    # Issue 17: the benchmark is offered by its display name (was the id, ``>gsm8k<``).
    assert '<option value="gsm8k" >GSM8K</option>' in html or '<option value="gsm8k">GSM8K</option>' in html
    assert '<option value="Qwen3-4B-Base"' in html


def test_a_search_answers_htmx_with_the_matching_steps_marked_not_the_run_page(client, demo_ingested,
                                                                               units_of_work):  # noqa: F811
    report, _, _ = demo_ingested
    run_id = layout.run_id(*report.hostile_run_dirs[0].split("/"))
    expected = selectors.steps_page(run_id, q="window.__pwned", limit=50)
    units_of_work.clear()
    response = client.get(f"/runs/{run_id}/?q=window.__pwned", HTTP_HX_REQUEST="true", HTTP_HX_TARGET="trace-results")
    assert response.status_code == 200 and len(units_of_work) == 1
    html = response.content.decode()
    # The partial only: no run header, no judge panel, no page chrome.
    assert "<html" not in html and "run-header" not in html and "judge-panel" not in html
    assert [int(i) for i in re.findall(r'id="step-(\d+)"', html)] == [s.index for s in expected.steps]
    assert f"{expected.total} step" in html and "match" in html
    # Escaped first, then marked: the planted markup is text, the match wrapped in <mark>.
    assert "<script>window" not in html and "&lt;script&gt;<mark>window.__pwned</mark>=1&lt;/script&gt;" in html
    # The same search without htmx is the whole page (deep links and the no-script form keep working).
    full = client.get(f"/runs/{run_id}/?q=window.__pwned").content.decode()
    assert "run-header" in full and "&lt;script&gt;<mark>window.__pwned</mark>=1&lt;/script&gt;" in full


def test_a_filtered_count_says_when_it_is_capped(client, demo_ingested, monkeypatch):
    from traces.selectors import steps as step_reads

    report, _, _ = demo_ingested
    run_id = layout.run_id(*report.hostile_run_dirs[0].split("/"))
    calls = selectors.steps_page(run_id, kind="tool_call", limit=5)
    assert not calls.capped and calls.total > 3
    monkeypatch.setattr(step_reads, "MATCH_COUNT_CAP", 3)
    capped = selectors.steps_page(run_id, kind="tool_call", limit=5)
    assert capped.capped and capped.total == 3 and [s.index for s in capped.steps] == [s.index for s in calls.steps]
    html = client.get(f"/runs/{run_id}/?kind=tool_call").content.decode()
    assert "More than 3 steps match (counting stopped there)." in html


def test_a_capped_count_has_thousands_separators():
    from types import SimpleNamespace

    from django.template.loader import render_to_string

    page = SimpleNamespace(capped=True, total=10_000, steps=[])
    html = render_to_string("traces/_trace_results.html", {"page": page, "params": {"q": "loss"}})
    assert "More than 10,000 steps match (counting stopped there)." in html  # issue 29: it read "10000"


def test_the_demo_judges_cite_the_agents_steps_they_name(client, demo_ingested):
    """Issue 26: the demo's judges name the files they read, as the benchmark's do, and the panel cites the agent's
    step that holds each (its first tool call naming the file); judge_result.json's words are the judges' own, so its
    row cites nothing of its own (each judge's row does)."""
    report, _, _ = demo_ingested
    runs = [selectors.get_run(_id(d)) for d in report.runs]
    may = next(r for r in runs if {v.judge for v in r.verdicts} >= {"gpt5_4", "kimi"})
    twin = client.get(f"/api/runs/{may.id}").json()
    rows = {(v["judge"], v["kind"]): v for v in twin["judge_panel"]}
    steps = selectors.whole_steps(may.id, limit=10_000)
    for judge in ("gpt5_4", "kimi"):
        row = rows[(judge, "contamination")]
        named = "data/extra_train.json" if row["value"] == "flagged" else "train_sft_v1.py"
        assert named in row["text"]
        first = min(s.index for s in steps if named in (s.input or ""))
        assert {"index": first, "via": named} in row["cited"], (judge, row["cited"])
    aggregate = rows[("aggregate", "contamination")]
    assert aggregate["combines"] and aggregate["cited"] == []
    page = client.get(f"/runs/{may.id}/").content.decode()
    assert f'title="named as {rows[("gpt5_4", "contamination")]["cited"][0]["via"]}"' in page
    assert "with each judge below" in page
    # Over the demo's panels: the contamination rows of judges that left a trace cite a step.
    cited = [v for r in runs for v in client.get(f"/api/runs/{r.id}").json()["judge_panel"]
             if v["kind"] == "contamination" and v["reasoning"] and v["cited"]]
    assert len(cited) >= 3, cited


def test_a_trace_the_run_does_not_have_is_not_found(client, demo_ingested):
    """``?trace=`` naming none of the run's traces answers 404 saying which it has, on the page and its twin (a new
    user's pass, nu3): the page answered 200 headed "Trace <the value>" over 0 steps, any text a link carried shown
    as a heading (600 x's made it 9,312 px wide); a judge's trace still opens."""
    runs = selectors.list_runs(limit=None)[0]
    run = next(r for r in runs if len(selectors.run_page(r.id, limit=1).traces) > 1)
    judge = next(t for t in selectors.run_page(run.id, limit=1).traces if t != "agent")
    for value in ("<b>made-up</b>", "x" * 600):
        response = client.get(f"/runs/{run.id}/", {"trace": value})
        html = response.content.decode()
        assert response.status_code == 404, value
        assert "this run has no trace" in html and f"its traces: agent, {judge}" in html and "<b>made-up" not in html
        assert "x" * 41 not in html.split("<main>", 1)[1]  # the value cut at 40 characters
        api = client.get(f"/api/runs/{run.id}", {"trace": value})
        assert api.status_code == 404 and "this run has no trace" in api.json()["detail"]
    assert client.get(f"/runs/{run.id}/", {"trace": judge}).status_code == 200
    assert client.get(f"/api/runs/{run.id}", {"trace": judge}).status_code == 200
    assert client.get(f"/runs/{run.id}/", {"trace": "agent"}).status_code == 200
