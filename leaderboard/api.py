"""JSON twins of the leaderboard and plot pages (django-ninja router, mounted under /api/)."""
from __future__ import annotations

from typing import Literal

from django.conf import settings
from ninja import Router
from ninja.errors import HttpError

from ptbsite.pagecache import page_inputs
from ptbsite.suites import suite_ids

from . import plots, selectors

router = Router(tags=["leaderboard"])


@router.get("/leaderboard", response=selectors.Leaderboard, summary="The leaderboard rows, as on /")
@page_inputs(query=("suite", "base_model", "sort", "dir", "source", "flags", "facet", "verdicts", "reviews"))
def leaderboard(request, suite: str = settings.DEFAULT_SUITE, base_model: str | None = None, sort: str = "rank",
                dir: Literal["asc", "desc", ""] = "asc", source: Literal["published", "runs", "all", ""] = "published",
                flags: Literal["apply", "ignore", ""] = "apply", facet: str | None = None,
                verdicts: Literal["era", "any", "majority", "ignore", ""] = "era", reviews: Literal["0", "1", ""] = "1"):
    """Rows of the leaderboard for the average over base models (default) or one ``base_model`` id.

    ``source``: ``published`` (the website's aggregates), ``runs`` (computed from ingested runs), ``all``.
    ``verdicts``: the judging rule of the rows from runs: ``era`` (default: the benchmark's rule of each run's
    judge era), ``any`` (flagged if any judge flags), ``majority`` (more than half of the run's judges), ``ignore``
    (no judge); ``reviews``: ``1`` (default) reviewers' overrides on top, ``0`` not. ``flags=ignore`` is the old
    name of ``verdicts=ignore&reviews=0`` (raw scores). In any view but the default, runs rows carry
    ``rank_change`` = rank in the default view minus rank in this one; ``verdicts_text`` says the rule in words.
    ``average``, ``std``, ``scores``, ``stds`` and ``delta`` are percent (0-100); ``std`` is null for single-run
    agents and baselines; ``stds`` is the "±" under each benchmark, defined per row source in ``std_notes``
    (published rows: mean over base models of the per-cell std; runs rows: std over runs of the benchmark's
    model mean; one base model: the per-cell std); ``rank`` is null for baselines; ``fallbacks`` lists, per
    benchmark, the base models whose cell holds the base model's zero-shot score, with the reason; ``n_runs``
    counts the ingested runs behind a runs row; ``delta`` is a runs row minus the published row of the same
    agent; ``baseline_source`` (runs rows): whose zero-shot scores stand in, ``tree`` (the results tree's own
    ``baseline_zeroshot/`` runs), ``published``, ``mixed`` or ``none``; ``fallback_baselines`` says it per
    results tree.
    ``suite``: a suite id (``posttrainbench``, ``frogsgame``); ``metric`` and each benchmark's ``metric`` come from
    it. ``facet`` (``grpo``, ``library:trl``): runs rows count only runs with that facet (a cell whose run lacks it
    takes the base model's score, reason ``facet``). ``reported``: what the suite's source reports besides the
    scores (method counts, training signal, calibration, notes), as it reports it: ``value`` null for a
    statement without a number, ``unit`` ``fraction`` (``display`` shows percent) or ``x`` or a count's noun.
    An empty ``sort``, ``dir``, ``source`` or ``flags`` (a form's unset field) means its default.
    """
    flags, source, dir, sort = flags or "apply", source or "published", dir or "asc", sort or "rank"
    verdicts, reviews = verdicts or "era", reviews or "1"
    if flags == "ignore":
        verdicts, reviews = "ignore", "0"
    if suite not in suite_ids():
        raise HttpError(404, f"no suite {suite}")
    try:
        board = selectors.leaderboard(suite=suite, base_model=base_model or None, sort=sort, direction=dir,
                                      source=source, facet=facet or None, verdicts=verdicts,
                                      reviews=reviews == "1")
    except selectors.UnknownBaseModel as exc:
        raise HttpError(404, str(exc)) from None
    except ValueError as exc:
        raise HttpError(422, str(exc)) from None
    return board


@router.get("/plots/time-vs-score", response=plots.TimeVsScore, summary="Score vs wall time, as on /plots/time-vs-score/")
@page_inputs()
def time_vs_score(request):
    """Every timed agent's mean ``hours`` used (± ``hours_std``) and headline ``score`` (percent, ± ``score_std``),
    in leaderboard order; ``frontier``: the Pareto frontier's agent names (less time, higher score) in order of
    hours, ``frontier_keys`` the same agents' keys; ``baselines``: reference scores (percent)."""
    return plots.time_vs_score()


@router.get("/plots/time-spent", response=plots.TimeSpent, summary="Hours used per agent, as on /plots/time-spent/")
@page_inputs()
def time_spent(request):
    """Every timed agent's mean ``hours`` used (± ``hours_std``), most first, and the suite's ``budget_hours``."""
    return plots.time_spent()


@router.get("/plots/per-benchmark", response=plots.PerBenchmark, summary="Scores per benchmark, as on /plots/per-benchmark/")
@page_inputs(query=("base_model",))
def per_benchmark(request, base_model: str | None = None):
    """Each agent's percent score per benchmark id (leaderboard order) for one ``base_model`` id or the average
    over base models; ``stds``: std over runs (percent) or null; ``references``: the baselines' scores."""
    try:
        return plots.per_benchmark(base_model=base_model or None)
    except selectors.UnknownBaseModel as exc:
        raise HttpError(404, str(exc)) from None


@router.get("/plots/budget-and-effort", response=plots.BudgetAndEffort,
            summary="The paper's ablations, as on /plots/budget-and-effort/")
@page_inputs()
def budget_and_effort(request):
    """Score (percent) against time budget (hours) per agent, per reasoning effort (with hours used and tokens
    per run), and per model size; ``agent`` is the suite's agent key where the figure's agent is one."""
    return plots.budget_and_effort()


@router.get("/plots/usage-vs-score", response=plots.UsageVsScore,
            summary="Score vs tokens and vs cost per run, as on /plots/usage-vs-score/")
@page_inputs(query=("verdicts", "reviews"))
def usage_vs_score(request, verdicts: Literal["era", "any", "majority", "ignore", ""] = "era",
                   reviews: Literal["0", "1", ""] = "1"):
    """Agents with ingested runs: mean ``tokens`` (input + output) and ``cost_usd`` per run over the runs whose
    traces carry them (``tokens_runs``, ``cost_runs`` of ``runs``), against their ``score`` from ingested runs
    (percent); ``token_frontier``/``cost_frontier``: Pareto frontiers' agent keys in order of usage;
    ``missing``: reason -> number of runs without usage. ``verdicts``/``reviews``: the judging rule of the scores,
    as on ``/api/leaderboard``."""
    return plots.usage_vs_score(verdicts=verdicts or "era", reviews=(reviews or "1") == "1")
