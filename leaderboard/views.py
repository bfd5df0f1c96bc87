"""Leaderboard and plot pages: thin views over leaderboard.selectors, leaderboard.plots and leaderboard.figures."""
from __future__ import annotations

from django.conf import settings
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import render
from django.urls import reverse, reverse_lazy
from django.utils.http import urlencode

from ptbsite.pagecache import page_inputs
from ptbsite.suites import display_suite, suite_ids, suite_name
from traces.vocabulary import FACET_TEXT, METHOD_FACETS

from . import figures, plots, selectors


DEFAULTS = {"suite": settings.DEFAULT_SUITE, "base_model": "", "sort": "rank", "dir": "asc", "source": "published",
            "flags": "apply", "facet": "", "verdicts": "era", "reviews": "1"}
VERDICT_CHOICES = (("era", "the era's rule"), ("any", "any judge"), ("majority", "majority of judges"),
                   ("ignore", "no judge"))


def _params(request: HttpRequest) -> dict[str, str]:
    """The view's state from the URL (every view is a shareable link)."""
    params = {key: request.GET.get(key) or default for key, default in DEFAULTS.items()}
    if params["dir"] not in ("asc", "desc"):
        params["dir"] = "asc"
    if params["source"] not in selectors.SOURCES:
        params["source"] = "published"
    if params["flags"] not in ("apply", "ignore"):
        params["flags"] = "apply"
    if params["verdicts"] not in selectors.JUDGING_RULES:
        params["verdicts"] = "era"
    if params["reviews"] not in ("0", "1"):
        params["reviews"] = "1"
    if params["flags"] == "ignore":  # the flag-blind view's old name: no judge and no reviewer
        params.update(verdicts="ignore", reviews="0")
    params["flags"] = "ignore" if (params["verdicts"], params["reviews"]) == ("ignore", "0") else "apply"
    params["suite"] = _suite(request)
    return params


def _board(params: dict[str, str]) -> selectors.Leaderboard:
    try:
        return selectors.leaderboard(
            suite=params["suite"], base_model=params["base_model"] or None, sort=params["sort"], direction=params["dir"],
            source=params["source"], facet=params["facet"] or None, verdicts=params["verdicts"],
            reviews=params["reviews"] == "1",
        )
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
    params = _params(request)
    board = _board(params)
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
    return {
        "board": board,
        "suites": suite_ids(), "suite_names": [(s, suite_name(s)) for s in suite_ids()],
        "params": params,
        "sort_links": sort_links,
        "filter_links": filter_links,
        "source_links": source_links,
        "flag_link": flag_link,
        "verdict_links": verdict_links,
        "reviews_link": reviews_link,
        # The chips narrow rows from runs: none to narrow without runs, and the static export has no such view.
        "facet_links": facet_links if board.runs_ingested else [],
        "facet_label": FACET_TEXT.get(params["facet"], params["facet"]),
        "runs_url": reverse("traces:runs"),
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


def _suite(request: HttpRequest) -> str:
    """The ``suite`` URL parameter (default posttrainbench); 404 for a suite with no file."""
    suite = request.GET.get("suite") or DEFAULTS["suite"]
    if suite not in suite_ids():
        raise Http404(f"no suite {suite}")
    return suite


def _scaffolds(suite: str) -> list[str]:
    """The suite's scaffold names, which fix the plots' colour families (none when its file does not load)."""
    spec = display_suite(suite)
    return spec.scaffolds() if spec else []


@page_inputs()
def plots_index(request: HttpRequest) -> HttpResponse:
    """``/plots/``: links to every chart page, and the place of the charts still waiting for data."""
    return render(request, "leaderboard/plots/index.html")


@page_inputs(query=("suite",))
def plot_time_vs_score(request: HttpRequest) -> HttpResponse:
    """``/plots/time-vs-score/``: score against hours used, with the Pareto frontier."""
    suite = _suite(request)
    data = plots.time_vs_score(suite=suite)
    return render(request, "leaderboard/plots/time_vs_score.html", {
        "data": data, "figure": figures.time_vs_score(data, scaffolds=_scaffolds(suite)), "runs_url": RUNS_URL})


@page_inputs(query=("verdicts", "reviews"))
def plot_usage_vs_score(request: HttpRequest) -> HttpResponse:
    """``/plots/usage-vs-score/``: score against tokens and against cost per run, from ingested runs."""
    verdicts = request.GET.get("verdicts") or "era"
    data = plots.usage_vs_score(verdicts=verdicts if verdicts in selectors.JUDGING_RULES else "era",
                                reviews=request.GET.get("reviews", "1") != "0")
    scaffolds = _scaffolds(settings.DEFAULT_SUITE)
    return render(request, "leaderboard/plots/usage_vs_score.html", {
        "data": data, "tokens_figure": figures.usage_vs_score(data, axis="tokens", scaffolds=scaffolds),
        "cost_figure": figures.usage_vs_score(data, axis="cost", scaffolds=scaffolds), "runs_url": RUNS_URL,
    })


@page_inputs(query=("suite",))
def plot_time_spent(request: HttpRequest) -> HttpResponse:
    """``/plots/time-spent/``: hours used per agent out of the budget."""
    suite = _suite(request)
    data = plots.time_spent(suite=suite)
    return render(request, "leaderboard/plots/time_spent.html", {
        "data": data, "figure": figures.time_spent(data, scaffolds=_scaffolds(suite)), "runs_url": RUNS_URL})


@page_inputs(query=("suite", "base_model"))
def plot_per_benchmark(request: HttpRequest) -> HttpResponse:
    """``/plots/per-benchmark/?base_model=``: each agent's score per benchmark, with the references."""
    suite = _suite(request)
    try:
        data = plots.per_benchmark(suite=suite, base_model=request.GET.get("base_model") or None)
    except selectors.UnknownBaseModel as exc:
        raise Http404(str(exc)) from None
    return render(request, "leaderboard/plots/per_benchmark.html", {
        "data": data, "figure": figures.per_benchmark(data, scaffolds=_scaffolds(suite)), "runs_url": RUNS_URL})


@page_inputs(query=("suite",))
def plot_budget_and_effort(request: HttpRequest) -> HttpResponse:
    """``/plots/budget-and-effort/``: the paper's ablations (time budget, reasoning effort, model size)."""
    data = plots.budget_and_effort(suite=_suite(request))
    return render(request, "leaderboard/plots/budget_and_effort.html", {
        "data": data,
        "budget_figure": figures.time_budget(data),
        "effort_figure": figures.reasoning_effort(data),
        "size_figure": figures.model_size(data),
    })
