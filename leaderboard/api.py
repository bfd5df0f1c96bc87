"""JSON twins of the leaderboard and plot pages (django-ninja router, mounted under /api/)."""
from __future__ import annotations

from typing import TypeVar

from ninja import Query, Router
from ninja.errors import HttpError

from ptbsite.pagecache import page_inputs

from . import plots, selectors
from .queries import LeaderboardQuery, PageQuery, PerBenchmarkQuery, PlotQuery, UnknownSuite, UsageQuery

Q = TypeVar("Q", bound=PageQuery)

router = Router(tags=["leaderboard"])


@router.get("/leaderboard", response=selectors.Leaderboard, summary="The leaderboard rows, as on /")
@page_inputs(query=tuple(LeaderboardQuery.model_fields))
def leaderboard(request, query: Query[LeaderboardQuery]):
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
    try:
        return _known(query).board()
    except selectors.UnknownBaseModel as exc:
        raise HttpError(404, str(exc)) from None
    except ValueError as exc:
        raise HttpError(422, str(exc)) from None


def _known(query: Q) -> Q:
    """The query; a 404 for a suite with no file."""
    try:
        return query.known()
    except UnknownSuite as exc:
        raise HttpError(404, str(exc)) from None


@router.get("/plots/time-vs-score", response=plots.TimeVsScore, summary="Score vs wall time, as on /plots/time-vs-score/")
@page_inputs(query=tuple(PlotQuery.model_fields))
def time_vs_score(request, query: Query[PlotQuery]):
    """Every timed agent of ``suite`` (a suite id): its mean ``hours`` used (± ``hours_std``) and headline ``score``
    (percent, ± ``score_std``), in leaderboard order; ``frontier``: the Pareto frontier's agent names (less time,
    higher score) in order of hours, ``frontier_keys`` the same agents' keys; ``baselines``: reference scores
    (percent)."""
    return plots.time_vs_score(suite=_known(query).suite)


@router.get("/plots/time-spent", response=plots.TimeSpent, summary="Hours used per agent, as on /plots/time-spent/")
@page_inputs(query=tuple(PlotQuery.model_fields))
def time_spent(request, query: Query[PlotQuery]):
    """Every timed agent's mean ``hours`` used (± ``hours_std``), most first, and the suite's ``budget_hours``."""
    return plots.time_spent(suite=_known(query).suite)


@router.get("/plots/per-benchmark", response=plots.PerBenchmark, summary="Scores per benchmark, as on /plots/per-benchmark/")
@page_inputs(query=tuple(PerBenchmarkQuery.model_fields))
def per_benchmark(request, query: Query[PerBenchmarkQuery]):
    """Each agent's percent score per benchmark id (leaderboard order) for one ``base_model`` id or the average
    over the suite's base models; ``stds``: std over runs (percent) or null; ``references``: the baselines'
    scores."""
    try:
        return plots.per_benchmark(suite=_known(query).suite, base_model=query.base_model)
    except selectors.UnknownBaseModel as exc:
        raise HttpError(404, str(exc)) from None


@router.get("/plots/budget-and-effort", response=plots.BudgetAndEffort,
            summary="The paper's ablations, as on /plots/budget-and-effort/")
@page_inputs(query=tuple(PlotQuery.model_fields))
def budget_and_effort(request, query: Query[PlotQuery]):
    """Score (percent) against time budget (hours) per agent, per reasoning effort (with hours used and tokens
    per run), and per model size; ``agent`` is the suite's agent key where the figure's agent is one."""
    return plots.budget_and_effort(suite=_known(query).suite)


@router.get("/plots/usage-vs-score", response=plots.UsageVsScore,
            summary="Score vs tokens and vs cost per run, as on /plots/usage-vs-score/")
@page_inputs(query=tuple(UsageQuery.model_fields))
def usage_vs_score(request, query: Query[UsageQuery]):
    """Agents with ingested runs: mean ``tokens`` (input + output) and ``cost_usd`` per run over the runs whose
    traces carry them (``tokens_runs``, ``cost_runs`` of ``runs``), against their ``score`` from ingested runs
    (percent); ``token_frontier``/``cost_frontier``: Pareto frontiers' agent keys in order of usage;
    ``missing``: reason -> number of runs without usage. ``verdicts``/``reviews``: the judging rule of the scores,
    as on ``/api/leaderboard``."""
    return plots.usage_vs_score(suite=_known(query).suite, verdicts=query.verdicts, reviews=query.reviews == "1")
