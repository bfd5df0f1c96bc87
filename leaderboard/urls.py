from __future__ import annotations

from urllib.parse import urlencode

from django.urls import path

from ptbsite.distill import NotExported, Params, distill_api, distill_path, safe_name

from . import selectors, views

app_name = "leaderboard"

# Static export (ptbsite.distill): the leaderboard in every view (base model x source x flags x judging rule), each
# plot (the usage plot under each judging rule), and their JSON twins. Sorting and the htmx table need the server.
VIEW_KEYS = ("base_model", "source", "flags", "verdicts", "reviews")
# What each exported page reads (export.inputs.SOURCES): the export renders it again only when one of them changed.
BOARD_INPUTS = ("published", "methods", "latest_runs", "run_names")  # rows from runs, the reference rows
CHART_INPUTS = ("published", "run_names")  # the published charts (and whether the suite has runs)


def _base_models() -> list[str]:
    return selectors.base_model_ids()


def leaderboard_views() -> list[Params]:
    """Every leaderboard view: the average and each base model, x every source, x flags applied or ignored, and
    for rows from runs each judging rule (``verdicts``, ``reviews``); each parameter left out at its default."""
    out = [{k: v for k, v in (("base_model", model), ("source", source), ("flags", flags)) if v != views.DEFAULTS[k]}
           for model in ["", *_base_models()] for source in selectors.SOURCES for flags in ("apply", "ignore")]
    # The judging rules (issue 26) change only rows from runs: each rule with and without reviewers' overrides
    # (the default and the raw view, ``flags=ignore``, are above).
    out += [{k: v for k, v in (("base_model", model), ("source", source), ("verdicts", rule), ("reviews", reviews))
             if v != views.DEFAULTS[k]}
            for model in ["", *_base_models()] for source in ("runs", "all")
            for rule in selectors.JUDGING_RULES for reviews in ("1", "0")
            if (rule, reviews) not in (("era", "1"), ("ignore", "0"))]
    return out


def leaderboard_file(query: Params, run: object = None) -> str:
    """The file of a leaderboard view: ``<key>/<value>/`` for each of base_model, source, flags that is not its
    default, then ``index.html`` (``{}`` -> ``index.html``; ``{"base_model": "X"}`` -> ``base_model/X/index.html``)."""
    if query.get("sort", "rank") != "rank" or query.get("dir", "asc") != "asc":
        raise NotExported(f"/?{urlencode(query)}: sorting runs in the browser in the static export")
    parts: list[str] = []
    for key in VIEW_KEYS:
        value = query.get(key) or views.DEFAULTS[key]
        if value != views.DEFAULTS[key]:
            parts += [key, safe_name(value, key)]
    return "/".join([*parts, "index.html"])


def usage_views() -> list[Params]:
    """``/plots/usage-vs-score/`` and its twin under each judging rule, with and without reviewers' overrides
    (issue 26): the default view (``{}``) first, each parameter left out at its default."""
    return [{k: v for k, v in (("verdicts", rule), ("reviews", reviews)) if v != views.USAGE_DEFAULTS[k]}
            for rule in selectors.JUDGING_RULES for reviews in ("1", "0")]


def _usage_rule(params: Params) -> tuple[str, bool]:
    rule = safe_name(params.get("verdicts") or "era", "judging rule")
    if rule not in selectors.JUDGING_RULES:
        raise NotExported(f"verdicts={rule}: not a judging rule")
    return rule, params.get("reviews") == "0"


def usage_file(params: Params, run: object = None) -> str:
    """The usage plot's page per judging rule: ``plots/usage-vs-score/index.html`` (era, reviews on), else
    ``plots/usage-vs-score/verdicts/<rule>/[reviews/0/]index.html``."""
    rule, raw = _usage_rule(params)
    if (rule, raw) == ("era", False):
        return "plots/usage-vs-score/index.html"
    return f"plots/usage-vs-score/verdicts/{rule}/{'reviews/0/' if raw else ''}index.html"


def usage_twin_file(params: Params, run: object = None) -> str:
    """The usage plot's twin per judging rule: ``api/plots/usage-vs-score.json`` (era, reviews on), else
    ``api/plots/usage-vs-score/<rule>[-reviews0].json``."""
    rule, raw = _usage_rule(params)
    if (rule, raw) == ("era", False):
        return "api/plots/usage-vs-score.json"
    return f"api/plots/usage-vs-score/{rule}{'-reviews0' if raw else ''}.json"


def by_base_model() -> list[Params]:
    """The average (no parameter), then each base model."""
    return [{}, *({"base_model": model} for model in _base_models())]


def _per_model(folder: str, json: bool = False):
    def file(params: Params, run: object = None) -> str:
        model = params.get("base_model")
        if json:
            return f"{folder}/{safe_name(model, 'base model')}.json" if model else f"{folder}.json"
        return f"{folder}/base_model/{safe_name(model, 'base model')}/index.html" if model else f"{folder}/index.html"
    return file


urlpatterns = [
    distill_path("", views.index, name="index", distill_func=leaderboard_views, distill_file=leaderboard_file,
                 distill_query=(*VIEW_KEYS, "sort", "dir"), distill_inputs=BOARD_INPUTS),
    path("leaderboard/table", views.table, name="table"),
    distill_path("plots/", views.plots_index, name="plots", distill_file="plots/index.html", distill_inputs=()),
    distill_path("plots/time-vs-score/", views.plot_time_vs_score, name="plot-time-vs-score",
                 distill_file="plots/time-vs-score/index.html", distill_inputs=CHART_INPUTS),
    distill_path("plots/usage-vs-score/", views.plot_usage_vs_score, name="plot-usage-vs-score",
                 distill_func=usage_views, distill_file=usage_file, distill_query=("verdicts", "reviews"),
                 distill_inputs=BOARD_INPUTS),
    distill_path("plots/time-spent/", views.plot_time_spent, name="plot-time-spent",
                 distill_file="plots/time-spent/index.html", distill_inputs=CHART_INPUTS),
    distill_path("plots/per-benchmark/", views.plot_per_benchmark, name="plot-per-benchmark",
                 distill_func=by_base_model, distill_file=_per_model("plots/per-benchmark"),
                 distill_query=("base_model",), distill_inputs=CHART_INPUTS),
    distill_path("plots/budget-and-effort/", views.plot_budget_and_effort, name="plot-budget-and-effort",
                 distill_file="plots/budget-and-effort/index.html", distill_inputs=("published",)),
]

def leaderboard_twins() -> list[Params]:
    """The leaderboard's twin per base model (published rows), and the rows from runs under each judging rule,
    with and without reviewers' overrides (issue 26)."""
    return [*by_base_model(), *({"source": "runs", "verdicts": rule, "reviews": reviews}
                                for rule in selectors.JUDGING_RULES for reviews in ("1", "0"))]


def leaderboard_twin_file(params: Params, run: object = None) -> str:
    """``api/leaderboard[/<base model>].json``; rows from runs: ``api/leaderboard/runs/<rule>[-reviews0].json``."""
    if params.get("source") == "runs":
        rule = safe_name(params.get("verdicts") or "era", "judging rule")
        return f"api/leaderboard/runs/{rule}{'-reviews0' if params.get('reviews') == '0' else ''}.json"
    return _per_model("api/leaderboard", json=True)(params)


distill_api("api:leaderboard", distill_func=leaderboard_twins, distill_file=leaderboard_twin_file,
            distill_query=("base_model", "source", "verdicts", "reviews"), distill_inputs=BOARD_INPUTS)
distill_api("api:per_benchmark", distill_func=by_base_model,
            distill_file=_per_model("api/plots/per-benchmark", json=True), distill_query=("base_model",),
            distill_inputs=CHART_INPUTS)
distill_api("api:usage_vs_score", distill_func=usage_views, distill_file=usage_twin_file,
            distill_query=("verdicts", "reviews"), distill_inputs=BOARD_INPUTS)
for _chart in ("time_vs_score", "time_spent", "budget_and_effort"):
    distill_api(f"api:{_chart}", distill_file=f"api/plots/{_chart.replace('_', '-')}.json",
                distill_inputs=("published",) if _chart == "budget_and_effort" else CHART_INPUTS)
