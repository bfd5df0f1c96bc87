"""Leaderboard and plot pages: thin views over leaderboard.selectors, leaderboard.plots and leaderboard.figures."""
from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import render
from django.urls import reverse, reverse_lazy
from django.utils.http import urlencode

from ptbsite.pagecache import page_inputs
from ptbsite.suites import display_suite, suite_ids, suite_name
from traces.vocabulary import FACET_TEXT, METHOD_FACETS

from . import figures, plots, selectors
from .board_html import rows_html
from .queries import LeaderboardQuery, PageQuery, PerBenchmarkQuery, PlotQuery, UnknownSuite, UsageQuery

Q = TypeVar("Q", bound=PageQuery)


DEFAULTS: dict[str, str] = LeaderboardQuery().model_dump()
VERDICT_CHOICES = (("era", "the era's rule"), ("any", "any judge"), ("majority", "majority of judges"),
                   ("ignore", "no judge"))


def _known(query: Q) -> Q:
    """The query; a 404 for a suite with no file."""
    try:
        return query.known()
    except UnknownSuite as exc:
        raise Http404(str(exc)) from None


def _leaderboard_query(request: HttpRequest) -> LeaderboardQuery:
    """The view's state from the URL (every view is a shareable link; ``leaderboard.queries``)."""
    return _known(LeaderboardQuery.from_url(request.GET))


def _board(query: LeaderboardQuery) -> selectors.Leaderboard:
    try:
        return query.board()
    except selectors.UnknownBaseModel as exc:
        raise Http404(str(exc)) from None


def _query(params: dict[str, str], **changes: str) -> str:
    """The query string of a view, each parameter left out at its default; the raw view (no judge, no reviewer)
    is written ``flags=ignore``, its old name, so that links and the static export's files keep one name."""
    merged = {**params, **changes}
    raw = (merged["verdicts"], merged["reviews"]) == ("ignore", "0")
    merged.update(flags="ignore" if raw else "apply", **({"verdicts": "era", "reviews": "1"} if raw else {}))
    return urlencode({k: v for k, v in merged.items() if v != DEFAULTS[k]})


def _context(request: HttpRequest) -> dict:
    query = _leaderboard_query(request)
    params: dict[str, str] = query.model_dump()
    board = _board(query)
    sort_links = {}
    for column in ["rank", "agent", "average", "runs", *(b.id for b in board.benchmarks)]:
        # First click on a score column sorts best-first; a second click flips the direction.
        first = "asc" if column in ("rank", "agent") else "desc"
        flipped = {"asc": "desc", "desc": "asc"}[params["dir"]]
        sort_links[column] = _query(params, sort=column, dir=flipped if params["sort"] == column else first)
    filter_links = [("", f"Average of {len(board.base_models)}", _query(params, base_model=""))] + [
        (m.id, m.name, _query(params, base_model=m.id)) for m in board.base_models
    ] if len(board.base_models) > 1 else []
    # Published rows have no per-run verdicts: the published view drops a judging rule (the raw view's old name,
    # flags=ignore, stays as it was).
    judging_off = {} if params["flags"] == "ignore" else {"verdicts": "era", "reviews": "1"}
    source_links = [(key, label, _query(params, source=key, **(judging_off if key == "published" else {})))
                    for key, label in (("published", "Published"), ("runs", "From ingested runs"), ("all", "Both"))]
    runs_only = params["source"] if params["source"] != "published" else "runs"
    raw = params["flags"] == "ignore"
    flag_link = _query(params, verdicts="era" if raw else "ignore", reviews="1" if raw else "0", source=runs_only)
    verdict_links = [(key, label, _query(params, verdicts=key, source=runs_only)) for key, label in VERDICT_CHOICES]
    reviews_link = _query(params, reviews="0" if params["reviews"] == "1" else "1", source=runs_only)
    # A facet narrows the rows computed from runs, so choosing one shows them.
    runs_source = params["source"] if params["source"] != "published" else "runs"
    facet_links = [("", "any method", _query(params, facet=""))] + [
        (m, FACET_TEXT[m], _query(params, facet=m, source=runs_source)) for m in METHOD_FACETS]
    runs_url = reverse("traces:runs")
    return {
        "board": board,
        # The table's body rows, written in Python (leaderboard.board_html: the template loop cost ~1 CPU ms a row).
        "rows_html": rows_html(board, params, runs_url=runs_url, compare_url=reverse("traces:compare"),
                               static_export=getattr(request, "static_export", False)),
        "suites": suite_ids(), "suite_names": [(s, suite_name(s)) for s in suite_ids()],
        "params": params,
        "sort_links": sort_links,
        "filter_links": filter_links,
        "source_links": source_links,
        "flag_link": flag_link,
        "verdict_links": verdict_links,
        "reviews_link": reviews_link,
        # A judging rule on the published rows alone changes nothing: the notice links to the rows from runs.
        "runs_view_query": _query(params, source="runs"),
        # The chips narrow rows from runs: none to narrow without runs, and the static export has no such view.
        "facet_links": facet_links if board.runs_ingested else [],
        "facet_label": FACET_TEXT.get(params["facet"], params["facet"]),
        "runs_url": runs_url,
        "table_url": reverse("leaderboard:table"),
        "page_url": reverse("leaderboard:index"),
    }


@page_inputs(query=tuple(DEFAULTS))
def index(request: HttpRequest) -> HttpResponse:
    """The leaderboard page ``/?suite=&base_model=&sort=&dir=&source=&verdicts=&reviews=&facet=`` (every view a
    link; ``flags=ignore`` is ``verdicts=ignore&reviews=0``)."""
    return render(request, "leaderboard/index.html", _context(request))


@page_inputs(query=tuple(DEFAULTS))
def table(request: HttpRequest) -> HttpResponse:
    """The leaderboard block alone, swapped in place by htmx when the filter or the sort changes."""
    return render(request, "leaderboard/_board.html", _context(request))


# The runs list of the traces app; a click on an agent's point opens ``RUNS_URL?agent=<key>``.
RUNS_URL = reverse_lazy("traces:runs")


def _scaffolds(suite: str) -> list[str]:
    """The suite's scaffold names, which fix the plots' colour families (none when its file does not load)."""
    spec = display_suite(suite)
    return spec.scaffolds() if spec else []


@page_inputs()
def plots_index(request: HttpRequest) -> HttpResponse:
    """``/plots/``: links to every chart page, and the place of the charts still waiting for data."""
    return render(request, "leaderboard/plots/index.html")


def _suite_figure(request: HttpRequest, template: str, read: Callable[..., object],
                  draw: Callable[..., dict]) -> HttpResponse:
    """A chart page of one figure over its suite's data: ``read(suite=)`` (its twin's model), ``draw(data,
    scaffolds=)`` (the plotly figure)."""
    suite = _known(PlotQuery.from_url(request.GET)).suite
    data = read(suite=suite)
    return render(request, template, {"data": data, "figure": draw(data, scaffolds=_scaffolds(suite)),
                                      "runs_url": RUNS_URL})


@page_inputs(query=tuple(PlotQuery.model_fields))
def plot_time_vs_score(request: HttpRequest) -> HttpResponse:
    """``/plots/time-vs-score/``: score against hours used, with the Pareto frontier."""
    return _suite_figure(request, "leaderboard/plots/time_vs_score.html", plots.time_vs_score, figures.time_vs_score)


@page_inputs(query=tuple(UsageQuery.model_fields))
def plot_usage_vs_score(request: HttpRequest) -> HttpResponse:
    """``/plots/usage-vs-score/``: score against tokens and against cost per run, from ingested runs."""
    query = _known(UsageQuery.from_url(request.GET))
    data = plots.usage_vs_score(suite=query.suite, verdicts=query.verdicts, reviews=query.reviews == "1")
    scaffolds = _scaffolds(query.suite)
    params = query.model_dump()
    return render(request, "leaderboard/plots/usage_vs_score.html", {
        "data": data, "tokens_figure": figures.usage_vs_score(data, axis="tokens", scaffolds=scaffolds),
        "cost_figure": figures.usage_vs_score(data, axis="cost", scaffolds=scaffolds), "runs_url": RUNS_URL,
        "params": params,
        "verdict_links": [(key, label, usage_query(params, verdicts=key)) for key, label in VERDICT_CHOICES],
        "reviews_link": usage_query(params, reviews="0" if params["reviews"] == "1" else "1"),
        "leaderboard_query": _query(DEFAULTS, source="runs", verdicts=params["verdicts"], reviews=params["reviews"]),
    })


USAGE_DEFAULTS: dict[str, str] = UsageQuery().model_dump()


def usage_query(params: dict[str, str], **changes: str) -> str:
    """The query string of a view of ``/plots/usage-vs-score/`` (suite, judging rule), each parameter left out at
    its default (``?verdicts=any&reviews=0``; the default view: ``""``)."""
    merged = {**params, **changes}
    return urlencode({k: v for k, v in merged.items() if v != USAGE_DEFAULTS[k]})


@page_inputs(query=tuple(PlotQuery.model_fields))
def plot_time_spent(request: HttpRequest) -> HttpResponse:
    """``/plots/time-spent/``: hours used per agent out of the budget."""
    return _suite_figure(request, "leaderboard/plots/time_spent.html", plots.time_spent, figures.time_spent)


@page_inputs(query=tuple(PerBenchmarkQuery.model_fields))
def plot_per_benchmark(request: HttpRequest) -> HttpResponse:
    """``/plots/per-benchmark/?base_model=``: each agent's score per benchmark, with the references."""
    query = _known(PerBenchmarkQuery.from_url(request.GET))
    try:
        data = plots.per_benchmark(suite=query.suite, base_model=query.base_model)
    except selectors.UnknownBaseModel as exc:
        raise Http404(str(exc)) from None
    return render(request, "leaderboard/plots/per_benchmark.html", {
        "data": data, "figure": figures.per_benchmark(data, scaffolds=_scaffolds(query.suite)), "runs_url": RUNS_URL})


@page_inputs(query=tuple(PlotQuery.model_fields))
def plot_budget_and_effort(request: HttpRequest) -> HttpResponse:
    """``/plots/budget-and-effort/``: the paper's ablations (time budget, reasoning effort, model size)."""
    data = plots.budget_and_effort(suite=_known(PlotQuery.from_url(request.GET)).suite)
    return render(request, "leaderboard/plots/budget_and_effort.html", {
        "data": data,
        "budget_figure": figures.time_budget(data),
        "effort_figure": figures.reasoning_effort(data),
        "size_figure": figures.model_size(data),
    })
