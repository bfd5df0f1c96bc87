from __future__ import annotations

import json
from urllib.parse import urlencode

from django.urls import path, reverse

from ptbsite.query import ascii_int
from ptbsite.distill import (STEPS_PER_PAGE, FileTarget, NotExported, Params, RunContext, distill_api, distill_path,
                             safe_name, trace_page_file)

from . import challenge_views, compare_views, review, search_views, views

app_name = "traces"

# Static export (ptbsite.distill): the runs list (filtered in the browser), the analysis page, and per run its
# page, its step pages per trace and their JSON twins. Whole step texts and facet filters need the server.
RUNS_FILTERS = ("agent", "benchmark", "base_model", "state", "flagged")
# What each exported site page reads (export.inputs.SOURCES): the export renders it again only when one changed.
RUNS_LIST_INPUTS = ("runs_listed", "methods", "evaluations", "verdicts", "overrides")
ANALYSIS_INPUTS = ("latest_runs", "methods", "published")
JUDGES_INPUTS = ("run_names", "verdicts", "overrides", "challenges", "suspicious_steps")


def runs_file(params: Params, run: RunContext | None) -> tuple[str, str, str]:
    return "runs/index.html", urlencode(params), ""  # the filters run in the browser


def run_pages(run: RunContext) -> list[Params]:
    """The run page: page 1 of the agent trace."""
    return [{"run_id": run.run_id, "limit": run.steps_per_page}]


def run_file(params: Params, run: RunContext | None) -> FileTarget:
    """A run page, with ``step=`` the page holding that step (``#step-<n>``), with ``trace=`` a judge trace's."""
    run_id = safe_name(params.pop("run_id"), "run id")
    if run is None or run.run_id != run_id:
        index = ascii_int(str(params.get("step", "")))
        if set(params) == {"step"} and index is not None:
            # A step of a run linked from a site page (the judges' report card, the analysis) or another run's:
            # agent-trace indices are dense from 0, so its page is the index's page in that run's step pages.
            return trace_page_file(run_id, "agent", index // STEPS_PER_PAGE + 1), "", f"step-{index}"
        if params:
            raise NotExported(f"/runs/{run_id}/: steps of run {run_id} linked from outside its pages")
        return f"runs/{run_id}/index.html"
    trace = params.get("trace", "agent")
    step = str(params.get("step", ""))
    if ascii_int(step) is not None:
        return run.file(trace, run.trace(trace).page_of_step(int(step))), "", f"step-{step}"
    run.trace(trace)
    return run.file(trace, 1)


def step_pages(run: RunContext) -> list[Params]:
    """Every step page of every trace after the run page itself (agent page 1), ``steps_per_page`` steps each."""
    return [{"run_id": run.run_id, "after": cursor, "limit": run.steps_per_page,
             **({"trace": trace} if trace != "agent" else {})}
            for trace, pages in run.traces.items() for n, cursor in enumerate(pages.cursors, 1)
            if (trace, n) != ("agent", 1)]


def steps_file(params: Params, run: RunContext | None) -> str:
    run_id = safe_name(params["run_id"], "run id")
    if run is None or run.run_id != run_id:
        raise NotExported(f"/runs/{run_id}/steps: steps of run {run_id} linked from outside its pages")
    if int(params.get("limit", 0)) != run.steps_per_page:
        raise NotExported(f"/runs/{run_id}/steps: static step pages hold {run.steps_per_page} steps")
    trace = params.get("trace", "agent")
    return run.file(trace, run.trace(trace).page_of_cursor(int(params["after"])))


urlpatterns = [
    distill_path("runs/", views.runs_list, name="runs", distill_file=runs_file, distill_query=RUNS_FILTERS,
                 distill_inputs=RUNS_LIST_INPUTS),
    distill_path("analysis/", views.analysis, name="analysis", distill_file="analysis/index.html",
                 distill_inputs=ANALYSIS_INPUTS),
    # The analysis page's chart, loaded after first paint (the static export inlines it in the page).
    distill_path("analysis/calibration.json", views.analysis_calibration, name="analysis_calibration",
                 distill_live_only=True),
    distill_path("runs/<str:run_id>/", views.run_detail, name="run", distill_scope="run", distill_func=run_pages,
                 distill_file=run_file, distill_query=("trace", "step", "limit")),
    distill_path("runs/<str:run_id>/steps", views.run_steps, name="steps", distill_scope="run",
                 distill_func=step_pages, distill_file=steps_file, distill_query=("after", "limit", "trace")),
    # The timeline figure the run page loads after first paint (the static export inlines it in the page).
    distill_path("runs/<str:run_id>/timeline.json", views.run_timeline_figure, name="timeline_figure",
                 distill_live_only=True),
    # The whole text of a long step output is served by the live site.
    distill_path("runs/<str:run_id>/steps/<int:index>/text", views.run_step_text, name="step_text",
                 distill_live_only=True),
    # The search of every trace needs the server: the static export's /search/ is its own Pagefind page
    # (export.exporter.EXPORT_PAGES), which reads the same ?q=.
    path("search/", search_views.search_results, name="search"),
    path("compare/pick/", compare_views.pick_runs, name="compare_pick"),
    # The static export's comparison is its own page (export.exporter.EXPORT_PAGES), built in the browser from one
    # side file per run (traces.selectors.compare_side): it reads the same ?runs=.
    path("compare/", compare_views.compare_runs, name="compare"),
    # A reviewer's override (staff; traces.review). The path is the one the run page's form has always posted to.
    path("reruns/runs/<str:run_id>/override", review.run_override, name="override"),
    distill_path("judges/", views.judges, name="judges", distill_file="judges/index.html",
                 distill_inputs=JUDGES_INPUTS),
    path("challenges/runs/<str:run_id>/new", challenge_views.challenge_form, name="challenge"),
    path("challenges/", challenge_views.challenge_list, name="challenges"),
    path("challenges/<str:challenge_id>/triage", challenge_views.challenge_triage, name="challenge_triage"),
]


def _all_runs(fetch) -> bytes:
    """``api/runs.json``: every run in one file, with the schema of the live API (which pages by 500)."""
    runs, after = [], None
    while True:
        page = json.loads(fetch(reverse("api:runs") + "?" + urlencode({"limit": 500, **({"after": after} if after
                                                                                           else {})})))
        runs += page["runs"]
        after = page["next"]
        if after is None:
            return json.dumps({"runs": runs, "next": None}).encode()  # as ninja writes it


def _one_run(params: Params, run: RunContext | None) -> str:
    return f"api/runs/{safe_name(params['run_id'], 'run id')}.json"


def _run_part(part: str):
    return lambda params, run: f"api/runs/{safe_name(params['run_id'], 'run id')}/{part}.json"


def _api_step_pages(run: RunContext) -> list[Params]:
    return [{"run_id": run.run_id, "after": cursor, "limit": run.steps_per_page}
            for cursor in run.traces["agent"].cursors]


def _api_steps_file(params: Params, run: RunContext | None) -> str:
    if run is None or int(params.get("limit", 0)) != run.steps_per_page:
        raise NotExported(f"/api/runs/{params['run_id']}/steps: not in the static API")
    return f"api/runs/{run.run_id}/steps/{run.trace('agent').page_of_cursor(int(params['after']))}.json"


def _run_ids(run: RunContext) -> list[Params]:
    return [{"run_id": run.run_id}]


distill_api("api:runs", distill_file="api/runs.json", distill_render=_all_runs, distill_inputs=RUNS_LIST_INPUTS)
distill_api("api:run", distill_scope="run", distill_func=_run_ids, distill_file=_one_run)
distill_api("api:steps", distill_scope="run", distill_func=_api_step_pages, distill_file=_api_steps_file,
            distill_query=("after", "limit"))
distill_api("api:run_facets", distill_scope="run", distill_func=_run_ids, distill_file=_run_part("facets"))
distill_api("api:run_timeline", distill_scope="run", distill_func=_run_ids, distill_file=_run_part("timeline"))
distill_api("api:analysis", distill_file="api/analysis.json", distill_query=("suite",), distill_inputs=ANALYSIS_INPUTS)
distill_api("api:judges", distill_file="api/judges.json", distill_inputs=JUDGES_INPUTS)
