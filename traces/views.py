"""Run pages: the runs list, one run with its trace viewer and judge panel, the analysis page.

Thin views: each calls the one selector of its page (``traces.selectors.pages``, ``selectors.analysis``), the one
its JSON twin in ``traces.api`` serves, and renders it; what is left here is reading the URL and building links.
"""
from __future__ import annotations

from django.conf import settings
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseBadRequest, JsonResponse
from django.shortcuts import render
from django.urls import reverse
from django.utils.http import urlencode

from ptbsite.pagecache import page_inputs
from ptbsite.query import query_int
from ptbsite.suites import suite_ids, suite_name

from . import analysis_html, figures, selectors
from .selectors import search
from .steps import STEP_KINDS
from .verdicts import OVERRIDABLE_KINDS
from .vocabulary import FACET_TEXT, IDLE_GAP_S, METHOD_FACETS, PHASES, RULE_TEXT

PAGE_SIZE = selectors.PAGE_SIZE  # runs a list page shows; steps a trace viewer shows at first


def _flag(value: str | None) -> bool | None:
    return {"1": True, "true": True, "yes": True, "0": False, "false": False, "no": False}.get((value or "").lower())


# The runs list's sortable columns and the direction of a first click on each (names A-Z, numbers and dates
# largest first); a second click on the sorted column flips it. Sorting is the selector's (SQL ORDER BY).
RUN_SORT_FIRST = {"date": "desc", "agent": "asc", "scaffold": "asc", "benchmark": "asc", "base_model": "asc",
                  "state": "asc", "score": "desc", "time": "desc", "steps": "desc"}

# The sortable heads in table order: (column, label, CSS class).
RUN_SORT_HEADS = [("agent", "Agent", ""), ("scaffold", "Scaffold", ""), ("benchmark", "Benchmark", ""),
                  ("base_model", "Base model", ""), ("state", "State", ""), ("score", "Score", "num"),
                  ("time", "Time", "num"), ("steps", "Steps", "num"), ("date", "When", "")]


@page_inputs(query=("agent", "benchmark", "base_model", "state", "facet", "suite", "flagged", "latest", "sort",
                    "dir", "after"))
def runs_list(request: HttpRequest) -> HttpResponse:
    """``/runs/?agent=&benchmark=&base_model=&flagged=&state=&facet=&suite=&latest=&sort=&dir=&after=``: runs,
    page by page.

    ``facet``: a facet spec (``grpo``, ``library:trl``; ``traces.selectors.facet_clause``); ``latest=1``: only
    the latest run of each cell (the runs the leaderboard and the analysis page count); ``sort``: a column of
    RUN_SORT_FIRST (others are ignored: by id), ``dir`` asc or desc; the filters, the sort and the pages keep one
    another. The static export (``request.static_export``) lists every run on one page; its filters and sorting
    run in the browser.
    """
    filters = {k: request.GET.get(k) or None for k in ("agent", "benchmark", "base_model", "state", "facet", "suite")}
    flagged = _flag(request.GET.get("flagged"))
    latest = request.GET.get("latest") == "1"
    static = getattr(request, "static_export", False)
    sort = request.GET.get("sort") if request.GET.get("sort") in RUN_SORT_FIRST and not static else None
    direction = request.GET.get("dir") if request.GET.get("dir") in ("asc", "desc") else None
    direction = direction or (RUN_SORT_FIRST[sort] if sort else "asc")
    data = selectors.runs_page(**filters, flagged=flagged, latest_only=latest, after=request.GET.get("after"),
                               limit=None if static else PAGE_SIZE, sort=sort, direction=direction)
    query = {k: v for k, v in {**filters, "flagged": request.GET.get("flagged"), "latest": "1" if latest else None}.items()
             if v}
    sorted_query = {**query, **({"sort": sort, "dir": direction} if sort else {})}
    flipped = {"asc": "desc", "desc": "asc"}[direction]
    sort_heads = [{"column": column, "label": label, "css": css, "first": RUN_SORT_FIRST[column],
                   "query": urlencode({**query, "sort": column,
                                       "dir": flipped if column == sort else RUN_SORT_FIRST[column]})}
                  for column, label, css in RUN_SORT_HEADS]
    options = data.options
    return render(request, "traces/runs.html", {
        "filter_selects": [("agent", "Agent", options["agents"]), ("benchmark", "Benchmark", options["benchmarks"]),
                           ("base_model", "Base model", options["base_models"])],
        "runs": data.runs, "filters": filters, "flagged": request.GET.get("flagged") or "", "latest": latest,
        "next_query": urlencode({**sorted_query, "after": data.next}) if data.next else None,
        "states": selectors.STATE_TEXT, "method_facets": [(m, FACET_TEXT[m]) for m in METHOD_FACETS],
        "method_facet_keys": METHOD_FACETS,
        "params": {"sort": sort, "dir": direction}, "sort_heads": sort_heads,
    })


# The parameters _viewer_query and _viewer_params read.
VIEWER_QUERY = ("trace", "kind", "tool", "q", "mark", "limit")


def _viewer_query(request: HttpRequest) -> selectors.RunQuery:
    """The trace viewer's state from the URL (``selectors.RunQuery`` without where it opens): a step kind it does
    not know is left out; ``limit`` in ASCII digits (400 otherwise)."""
    kind = request.GET.get("kind") or ""
    return selectors.RunQuery(trace=request.GET.get("trace") or "agent", kind=kind if kind in STEP_KINDS else "",
                              tool=request.GET.get("tool") or "", q=request.GET.get("q") or "",
                              limit=query_int(request, "limit", PAGE_SIZE) or 1)


def _viewer_params(query: selectors.RunQuery, request: HttpRequest) -> dict:
    """The viewer's state as the templates and links read it; ``limit`` is "" when it is PAGE_SIZE; ``mark``:
    the query of the search of every trace that led here (``?mark=``, at most ``search.MAX_QUERY`` characters),
    whose words and phrases the steps shown mark without filtering them (:func:`_mark_query`)."""
    return {"trace": query.trace, "kind": query.kind, "tool": query.tool, "q": query.q,
            "mark": (request.GET.get("mark") or "").strip()[:search.MAX_QUERY],
            "limit": str(query.limit) if query.limit != PAGE_SIZE else ""}


def _mark_query(params: dict) -> str | list[str]:
    """What the steps shown wrap in ``<mark>`` (``trace_format.highlight``): the viewer's own search ``q`` (one
    substring, the steps it filters), else the words and ``"phrases"`` of ``mark`` as the search of every trace
    reads them (``search.parse_query``); "" for neither."""
    if params["q"]:
        return str(params["q"])
    return search.parse_query(params["mark"])[0] if params["mark"] else ""


def _base_query(params: dict) -> dict:
    """The viewer's state as query parameters, defaults left out."""
    return {k: v for k, v in params.items() if v and not (k == "trace" and v == "agent")}


@page_inputs(query=(*VIEWER_QUERY, "step", "at"), headers={"HX-Request": None, "HX-Target": ("trace-results",)})
def run_detail(request: HttpRequest, run_id: str) -> HttpResponse:
    """``/runs/<id>/?step=&at=&trace=&kind=&tool=&q=&mark=&limit=``: the run's header, evaluations (old vs new),
    judge panel with the reviewers' audit log, trace viewer; for staff, the re-evaluate, override and re-run-judge
    forms. The steps shown mark the viewer's search ``q`` (the steps it filters), else the words and phrases of
    ``mark`` (a link from the search of every trace: the steps are not filtered).
    One selector (``selectors.open_run`` of the page's ``selectors.RunQuery``), the one ``/api/runs/<id>`` serves.

    ``step`` opens the trace at that step (a deep link); ``at`` ("hour 7", "7:30") at the first step at or after
    that elapsed time.
    """
    viewer = _viewer_query(request)
    params = _viewer_params(viewer, request)
    if request.headers.get("HX-Request") and request.headers.get("HX-Target") == "trace-results":
        return _trace_results(request, run_id, viewer)
    page = selectors.open_run(run_id, viewer.model_copy(update={"step": query_int(request, "step"),
                                                                  "at": request.GET.get("at") or ""}))
    if page is None:
        raise Http404(f"no run {run_id}")
    if (unknown := page.unknown_trace(viewer.trace)) is not None:
        raise Http404(unknown)
    base_query = _base_query(params)
    steps = page.steps
    return render(request, "traces/run_detail.html", {
        "run": page, "texts": page, "page": steps, "facets": page.facets, "timeline": page.timeline,
        "overoptimism": page.overoptimism, "evaluations": page.evaluations, "counted": page.counted,
        "override_log": page.override_log, "evidence": page.evidence, "evidence_count": page.evidence_count,
        "tools": page.tools, "traces": page.traces, "focus": page.focus, "has_times": page.has_times,
        "time_jump_note": page.note, "params": params, "mark_query": _mark_query(params),
        # The figure loads after first paint from run_timeline_figure; the static export has no server: inlined.
        "has_timeline": page.has_timeline, "has_monitor": page.has_monitor,
        "timeline_figure": _timeline_figure(run_id) if page.has_timeline and getattr(request, "static_export", False)
        else None,
        "facet_text": FACET_TEXT, "phases": PHASES, "idle_gap_minutes": int(IDLE_GAP_S // 60), "kinds": STEP_KINDS,
        "rule_text": RULE_TEXT, "override_kinds": OVERRIDABLE_KINDS,
        # Staff controls post to the evaluator's URLs by path (traces does not import evaluator).
        "judge_configured": bool(settings.PTB_JUDGE_COMMAND),
        "more_query": urlencode({**base_query, "after": steps.next}) if steps.next is not None else None,
        "earlier_query": urlencode({**base_query}) if page.focus else None,
        "earlier_steps_query": (urlencode({**base_query, "before": page.earlier_before})
                                if page.earlier_before is not None else None),
    })


def _trace_results(request: HttpRequest, run_id: str, viewer: selectors.RunQuery) -> HttpResponse:
    """The trace viewer's search and filter answer to htmx: the match count (capped, ``StepPage.capped``) and the
    first page of matching steps, each match escaped and wrapped in ``<mark>`` (``trace_format.highlight``), a
    collapsed output holding a match opened; ``static/js/trace.js`` scrolls the first match into view. One unit
    of work (``selectors.run_steps``), not the run page's selector: a search never re-renders the run page."""
    data = selectors.run_steps(run_id, limit=viewer.limit, with_previous=False, **viewer.filters())
    if data is None:
        raise Http404(f"no run {run_id}")
    params = _viewer_params(viewer, request)
    base_query = _base_query(params)
    return render(request, "traces/_trace_results.html", {
        "run": data.run, "page": data.page, "params": params, "rule_text": RULE_TEXT, "focus": None,
        "more_query": urlencode({**base_query, "after": data.page.next}) if data.page.next is not None else None,
        "earlier_query": None, "earlier_steps_query": None, "mark_query": _mark_query(params),
    })


def _timeline_figure(run_id: str) -> dict:
    timeline = selectors.timeline_page(run_id)
    if timeline is None:
        raise Http404(f"no run {run_id}")
    return figures.timeline(timeline)


@page_inputs()
def run_timeline_figure(request: HttpRequest, run_id: str) -> JsonResponse:
    """``/runs/<id>/timeline.json``: the run page's timeline as a plotly figure (``{"data": [...], "layout":
    {...}}``), built from the same selector as its twin ``/api/runs/<id>/timeline`` (``selectors.timeline_page``,
    one unit of work). The run page fetches it after first paint (``static/js/plots.js``, ``data-figure-src``), so
    the page's own bytes do not grow with the trace."""
    return JsonResponse(_timeline_figure(run_id))


@page_inputs(query=(*VIEWER_QUERY, "after", "before"), headers={"HX-Request": None})
def run_steps(request: HttpRequest, run_id: str) -> HttpResponse:
    """``/runs/<id>/steps?after=&before=&limit=&trace=&kind=&tool=&q=``: one page of steps after the cursor
    ``after``, or (``before``, a step index) the page of steps just before that step.

    To htmx (``HX-Request``) a partial: after ``after``, the "load more" steps with their own "load more" control
    below; before ``before``, the "Earlier steps" with their own "Earlier steps" control above (the steps after
    them are on the page already). Otherwise a page of its own with links to the previous and next pages (the
    no-script fallback, and the static export's ``runs/<id>/steps/<n>.html``, whose "Earlier steps" links to the
    previous page). One selector (``selectors.run_steps``), the one ``/api/runs/<id>/steps`` serves.
    """
    viewer = _viewer_query(request)
    params = _viewer_params(viewer, request)
    after = query_int(request, "after", -1, signed=True)
    before = query_int(request, "before")
    partial = bool(request.headers.get("HX-Request"))
    data = selectors.run_steps(run_id, after=after, before=before, limit=viewer.limit, with_previous=not partial,
                               **viewer.filters())
    if data is None:
        raise Http404(f"no run {run_id}")
    base_query = _base_query(params)
    steps = data.page.steps
    if before is not None:  # the steps after these are the ones the reader came from
        more_query = urlencode({**base_query, "after": steps[-1].index}) if steps and not partial else None
    else:
        more_query = urlencode({**base_query, "after": data.page.next}) if data.page.next is not None else None
    previous_query = urlencode({**base_query, "after": data.previous}) if data.previous is not None else None
    context = {
        "run": data.run, "page": data.page, "params": params, "rule_text": RULE_TEXT, "focus": None,
        "more_query": more_query, "previous_query": previous_query,
        "earlier_steps_query": (urlencode({**base_query, "before": steps[0].index})
                                if data.has_earlier and steps and (before is not None or not partial) else None),
        "mark_query": _mark_query(params),  # "load more" after a search marks its matches too
    }
    if partial:
        return render(request, "traces/_steps.html", context)
    return render(request, "traces/run_steps.html", {**context, "after": data.after})


def _get_run(run_id: str) -> selectors.Run:
    run = selectors.get_run(run_id)
    if run is None:
        raise Http404(f"no run {run_id}")
    return run


@page_inputs(query=("field", "trace", "offset"))
def run_step_text(request: HttpRequest, run_id: str, index: int) -> HttpResponse:
    """``/runs/<id>/steps/<index>/text?field=output&trace=&offset=``: the whole text of one step field as plain
    text (never HTML: ``text/plain`` with ``nosniff``), at most ``selectors.MAX_TEXT_RANGE`` bytes from
    ``offset``; headers ``X-Text-Range: <offset>-<end>/<total bytes>`` and, when there is more, a ``Link`` to the
    next range."""
    run = _get_run(run_id)
    field = request.GET.get("field", "output")
    if field not in ("input", "output"):
        return HttpResponseBadRequest("field must be input or output", content_type="text/plain; charset=utf-8")
    offset = query_int(request, "offset", 0)
    trace = request.GET.get("trace") or "agent"
    found = selectors.step_text(run.id, trace=trace, index=index, field=field, offset=offset)
    if found is None:
        raise Http404(f"no step {index} in trace {trace}")
    response = HttpResponse(found.text, content_type="text/plain; charset=utf-8")
    response["X-Content-Type-Options"] = "nosniff"
    response["X-Text-Range"] = f"{found.offset}-{found.end}/{found.total_bytes}"
    if found.next_offset is not None:
        query = urlencode({"field": field, **({"trace": trace} if trace != "agent" else {}), "offset": found.next_offset})
        response["Link"] = f'<{request.path}?{query}>; rel="next"'
    return response


def _suite(request: HttpRequest) -> str:
    suite = request.GET.get("suite") or settings.DEFAULT_SUITE
    if suite not in suite_ids():
        raise Http404(f"no suite {suite}")
    return suite


@page_inputs(query=("suite",))
def analysis(request: HttpRequest) -> HttpResponse:
    """``/analysis/?suite=``: what the agents did over the suite's latest runs: method mix, score by method,
    calibration (with the overoptimism chart) and time use per agent; cells link to their runs. Above them, what
    the suite's source reports on the same questions (``traces.reported``), by topic. One selector
    (``selectors.analysis``), the one its JSON twin ``/api/analysis`` serves."""
    suite = _suite(request)
    data = selectors.analysis(suite)
    static_export = getattr(request, "static_export", False)
    runs_url = reverse("traces:runs")
    return render(request, "traces/analysis.html", {
        # The per-agent tables' rows, written in Python (traces.analysis_html): one template loop per row and cell
        # cost ~0.5 CPU ms per agent (issue 24: 63 agents at the real size).
        "method_mix_rows": analysis_html.method_mix_rows(data.method_mix, runs_url=runs_url, suite=suite),
        "calibration_rows": analysis_html.calibration_rows(data.calibration, runs_url=runs_url, suite=suite),
        "time_use_rows": analysis_html.time_use_rows(data.time_use, runs_url=runs_url, suite=suite),
        "reported": data.reported_by_topic, "reported_source": data.reported[0].source if data.reported else "",
        "data": data, "suite": suite, "suites": suite_ids(), "suite_display": suite_name(suite),
        "suite_names": [(s, suite_name(s)) for s in suite_ids()], "method_facets": METHOD_FACETS, "facet_text": FACET_TEXT,
        # The chart's points (one per run with a ratio) load after first paint from analysis_calibration, so the
        # page's bytes grow with the agents, not the runs; the static export has no server and inlines them.
        "phases": PHASES, "calibration_figure": figures.calibration(data.points) if static_export else None,
        "idle_gap_minutes": int(IDLE_GAP_S // 60),
        # A chart point's run page ("{0}" = its run id): in the static export, the file beside analysis/index.html.
        "run_link": "../runs/{0}/index.html" if static_export else "/runs/{0}/",
    })


@page_inputs(query=("suite",))
def analysis_calibration(request: HttpRequest) -> JsonResponse:
    """``/analysis/calibration.json?suite=``: the analysis page's overoptimism chart as a plotly figure
    (``figures.calibration``: one point per latest run with a defined ratio and a base-model score), from the same
    selector as the page and its twin (``selectors.analysis``, computed once per warehouse version). The page
    fetches it after first paint (``static/js/plots.js``, ``data-figure-src``)."""
    return JsonResponse(figures.calibration(selectors.analysis(_suite(request)).points))


@page_inputs()
def judges(request: HttpRequest) -> HttpResponse:
    """``/judges/``: the judges' report card (``selectors.judge_report``, twin ``/api/judges``): per judge and
    benchmark runs judged, flag rate, reviewers' confirmations and overturns, open challenges; agreement between
    judges (Cohen's kappa); the runs where the site's rules and the judges part, with the steps the rules cite."""
    return render(request, "traces/judges.html", {"report": selectors.judge_report(), "rule_text": RULE_TEXT})
