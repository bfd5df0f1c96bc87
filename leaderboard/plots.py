"""Reads behind the plot pages and their JSON twins: each chart's numbers as pydantic dataclasses, which the API
serves as they are (``response=``); a frontier is served as the names or keys of its agents.

Units: hours for time, fractions for scores (percent in JSON: the ``Percent`` fields, ``ptbsite.units``).
All SQL of the plots lives here; headline scores
come from ``selectors.leaderboard`` so that a plot and the leaderboard never disagree.
"""
from __future__ import annotations

from collections.abc import Callable

from pydantic import computed_field, field_serializer
from pydantic.dataclasses import dataclass

from django.conf import settings

from ptbsite import warehouse
from ptbsite.units import Percent, PercentOrNone, hm
from traces import selectors as traces_selectors

from . import selectors
from .frontier import pareto_frontier
from .schemas import judging_text


@dataclass(frozen=True)
class AgentTime:
    """One agent's mean wall time used and headline score.

    ``hours``/``hours_std``: mean and sample std over runs of the agent phase's wall time (hours; std None for a
    single run or where not published). ``score``/``score_std``: weighted average over benchmarks and base
    models and its sample std over runs (fractions; percent in JSON). ``runs``: runs behind the time.
    ``source_file``: where the time comes from, relative to the published data folder.
    """

    key: str
    agent: str
    label: str  # the display name, plus the scaffold where two agents share that name
    scaffold: str | None
    model_family: str | None
    hours: float
    hours_std: float | None
    score: Percent
    score_std: PercentOrNone
    runs: int
    source_file: str

    @property
    def clock(self) -> str:
        """``hours`` as H:MM."""
        return clock(self.hours)

    @property
    def clock_std(self) -> str:
        """``hours_std`` as H:MM, empty where there is none."""
        return "" if self.hours_std is None else clock(self.hours_std)


@dataclass(frozen=True)
class Reference:
    """A baseline drawn as a reference line: its key, name and score (fraction; percent in JSON)."""

    key: str
    name: str
    score: Percent


@dataclass(frozen=True)
class TimeVsScore:
    """Score against time: ``points`` in leaderboard rank order, ``frontier`` (the non-dominated points: less
    time, higher score) in order of hours, ``baselines`` as reference scores, ``budget_hours`` the time limit."""

    budget_hours: float
    points: list[AgentTime]
    frontier: list[AgentTime]
    baselines: list[Reference]

    @field_serializer("frontier")
    def _frontier_names(self, frontier: list[AgentTime]) -> list[str]:
        return [p.agent for p in frontier]  # served as the frontier's agent names, in order of hours

    @computed_field  # type: ignore[prop-decorator]
    @property
    def frontier_keys(self) -> list[str]:
        """The frontier's agent keys, in order of hours."""
        return [p.key for p in self.frontier]


@dataclass(frozen=True)
class TimeSpent:
    """Hours used per agent, most first, against the suite's ``budget_hours``."""

    budget_hours: float
    agents: list[AgentTime]


@dataclass(frozen=True)
class BenchmarkScores:
    """One agent's (or baseline's) score per benchmark id, and its std over runs where published."""

    key: str
    agent: str
    label: str  # the display name, plus the scaffold where two agents share that name
    scaffold: str | None
    scores: dict[str, Percent]
    stds: dict[str, PercentOrNone]


@dataclass(frozen=True)
class PerBenchmark:
    """Per-benchmark scores for one base model id (None: the mean over the suite's base models)."""

    base_model: str | None
    base_models: list[selectors.BaseModel]
    benchmarks: list[selectors.Benchmark]
    agents: list[BenchmarkScores]
    references: list[BenchmarkScores]


@dataclass(frozen=True)
class BudgetPoint:
    """Score (fraction; percent in JSON) of an agent given ``budget_hours`` hours."""

    budget_hours: float
    score: Percent

    @property
    def budget_clock(self) -> str:
        """``budget_hours`` as H:MM."""
        return clock(self.budget_hours)


@dataclass(frozen=True)
class BudgetSeries:
    """One agent's scores under the time budgets of the paper's ablation (figure 3)."""

    label: str
    agent: str | None
    points: list[BudgetPoint]


@dataclass(frozen=True)
class EffortPoint:
    """One reasoning effort of the paper's ablation (figure 5): score and std (fractions; percent in JSON), time
    used and its std (hours), mean tokens per run; ``agent`` is the suite's agent key where that setting is one."""

    label: str
    agent: str | None
    effort: str
    score: Percent
    score_std: PercentOrNone
    hours: float | None
    hours_std: float | None
    tokens: float | None

    @property
    def clock(self) -> str:
        """``hours`` as H:MM, empty where there is none."""
        return "" if self.hours is None else clock(self.hours)

    @property
    def clock_std(self) -> str:
        """``hours_std`` as H:MM, empty where there is none."""
        return "" if self.hours_std is None else clock(self.hours_std)


@dataclass(frozen=True)
class SizePoint:
    """One model of the paper's model-size comparison (figure 4): score (fraction; percent in JSON)."""

    label: str
    agent: str | None
    score: Percent


@dataclass(frozen=True)
class BudgetAndEffort:
    """The paper's ablations: score against time budget, reasoning effort and model size."""

    time_budget: list[BudgetSeries]
    reasoning_effort: list[EffortPoint]
    model_size: list[SizePoint]


def clock(hours: float) -> str:
    """Hours as ``H:MM`` (:func:`ptbsite.units.hm`: rounded to the minute), e.g. 9.662 -> ``9:40``."""
    return hm(hours * 3600)


def _labels(rows: list[selectors.Row]) -> dict[str, str]:
    """Agent key -> display name, with the scaffold added where two agents share a name (Opus 4.5 runs on
    Claude Code and on OpenCode)."""
    names = [r.agent for r in rows]
    return {r.key: f"{r.agent} ({r.scaffold})" if names.count(r.agent) > 1 else r.agent for r in rows}


@warehouse.retrying
def _agent_times(suite: str) -> tuple[float, list[AgentTime], list[Reference]]:
    """Budget (hours), every agent that has a reported time (rank order), and the baselines' scores."""
    with warehouse.snapshot() as con:
        board = selectors.read_leaderboard(con, suite=suite)
        budget = con.execute("SELECT budget_hours FROM suites WHERE id = ?", [suite]).fetchone()
        times = {
            row[0]: row[1:]
            for row in con.execute(
                "SELECT agent, hours, hours_std, runs, source_file FROM reported_times WHERE suite = ?", [suite]
            ).fetchall()
        }
    agents = [r for r in sorted(board.rows, key=lambda r: r.rank or 0) if r.kind == "agent" and r.key in times]
    label = _labels(agents)
    points = [
        AgentTime(r.key, r.agent, label[r.key], r.scaffold, r.model_family, times[r.key][0], times[r.key][1],
                  r.average, r.std, times[r.key][2], times[r.key][3])
        for r in agents
    ]
    baselines = [Reference(r.key, r.agent, r.average) for r in board.rows if r.kind == "baseline"]
    return (budget[0] if budget else 0.0), points, baselines


def time_vs_score(*, suite: str = settings.DEFAULT_SUITE) -> TimeVsScore:
    """Every timed agent's mean hours used against its headline score, with the Pareto frontier.

    The frontier minimises hours and maximises score (``frontier.pareto_frontier``) over the mean values; the
    stds are drawn as error bars but do not enter it. Baselines are the suite's reference rows (instruct and
    base models).
    """
    budget, points, baselines = _agent_times(suite)
    frontier = pareto_frontier(points, x=lambda p: p.hours, y=lambda p: p.score)
    return TimeVsScore(budget, points, frontier, baselines)


def time_spent(*, suite: str = settings.DEFAULT_SUITE) -> TimeSpent:
    """Every timed agent's mean hours used (with std), sorted from the most hours to the fewest."""
    budget, points, _ = _agent_times(suite)
    return TimeSpent(budget, sorted(points, key=lambda p: -p.hours))


@warehouse.retrying
def per_benchmark(*, suite: str = settings.DEFAULT_SUITE, base_model: str | None = None) -> PerBenchmark:
    """Each agent's score per benchmark and the baselines' as references; agents in the order of the
    overall leaderboard (average over base models) in every view.

    Args:
        base_model: a base model id (e.g. ``Qwen3-4B-Base``), or None for the mean over the suite's base models;
            the numbers are the leaderboard's cells for that view.

    Raises:
        selectors.UnknownBaseModel: ``base_model`` is not one of the suite's.
    """
    with warehouse.snapshot() as con:  # one unit of work for both views
        board = selectors.read_leaderboard(con, suite=suite, base_model=base_model)
        overall = board if base_model is None else selectors.read_leaderboard(con, suite=suite)

    label = _labels(board.rows)

    def scores(row: selectors.Row) -> BenchmarkScores:
        return BenchmarkScores(row.key, row.agent, label[row.key], row.scaffold,
                               {b: c.score for b, c in row.cells.items()}, {b: c.std for b, c in row.cells.items()})

    # The overall leaderboard's order in every view, so that an agent keeps its place and colour.
    position = {r.key: r.rank or 0 for r in overall.rows}
    ranked = sorted((r for r in board.rows if r.kind == "agent"), key=lambda r: position[r.key])
    references = [scores(r) for r in board.rows if r.kind == "baseline"]
    return PerBenchmark(base_model, board.base_models, board.benchmarks, [scores(r) for r in ranked], references)


@warehouse.retrying
def budget_and_effort(*, suite: str = settings.DEFAULT_SUITE) -> BudgetAndEffort:
    """The paper's ablation series as stored by the importer (``reported_series``), scores as fractions (percent in
    JSON)."""
    with warehouse.snapshot() as con:
        rows = con.execute(
            "SELECT series, label, agent, budget_hours, reasoning_effort, score, score_std, hours, hours_std, tokens "
            "FROM reported_series WHERE suite = ? ORDER BY series, position",
            [suite],
        ).fetchall()
    budgets: dict[str, BudgetSeries] = {}
    efforts, sizes = [], []
    for series, label, agent, budget, effort, score, score_std, hours, hours_std, tokens in rows:
        if series == "time_budget":
            budgets.setdefault(label, BudgetSeries(label, agent, [])).points.append(BudgetPoint(budget, score))
        elif series == "reasoning_effort":
            efforts.append(EffortPoint(label, agent, effort, score, score_std, hours, hours_std, tokens))
        elif series == "model_size":
            sizes.append(SizePoint(label, agent, score))
    return BudgetAndEffort(list(budgets.values()), efforts, sizes)


@dataclass(frozen=True)
class AgentUsage:
    """One agent's mean usage per run against its score computed from ingested runs.

    ``tokens``: mean input + output tokens per run over ``tokens_runs`` runs whose trace carries them (None if
    none); ``cost_usd``: mean US dollars per run over ``cost_runs`` runs (None if none); ``runs``: the agent's
    latest runs; ``score``/``score_std``: its runs-leaderboard average and std over seeds (fraction; percent in JSON).
    """

    key: str
    agent: str
    scaffold: str | None
    synthetic: bool
    score: Percent
    score_std: PercentOrNone
    runs: int
    tokens: float | None
    tokens_runs: int
    cost_usd: float | None
    cost_runs: int


@dataclass(frozen=True)
class UsageVsScore:
    """Score against tokens and against cost: every agent with ingested runs, the two Pareto frontiers (fewer
    tokens / dollars, higher score; agents without that usage left out) and why runs are missing; ``verdicts``
    and ``reviews``: the judging rule the scores were computed under (``traces.verdicts.JUDGING_RULES``; reviewers'
    overrides on top or not), ``verdicts_text`` the same in words."""

    points: list[AgentUsage]
    token_frontier: list[AgentUsage]
    cost_frontier: list[AgentUsage]
    missing: dict[str, int]  # reason -> number of runs without usage
    verdicts: str = "era"
    reviews: bool = True

    @computed_field  # type: ignore[prop-decorator]
    @property
    def verdicts_text(self) -> str:
        """The judging rule of the scores in words, as the leaderboard says it (``Leaderboard.verdicts_text``)."""
        return judging_text(self.verdicts, self.reviews)

    @field_serializer("token_frontier", "cost_frontier")
    def _frontier_keys(self, frontier: list[AgentUsage]) -> list[str]:
        return [p.key for p in frontier]  # served as the frontier's agent keys, in order of usage

    @property
    def synthetic(self) -> bool:
        """Some point comes from generated demo runs."""
        return any(p.synthetic for p in self.points)


# Why a run's trace carries no usage: its format records none, or the agent never ran.
USAGE_GAPS = {
    "codex_text": "plain-text Codex traces print only a token total, no input/output split and no cost",
    "codex_exec": "Codex --json traces carry tokens but no cost",
    "codex_protocol": "legacy Codex traces carry tokens but no cost",
    "gemini": "Gemini CLI traces carry tokens but no cost",
    "none": "no trace",
    "text": "the trace is plain text",
}


@warehouse.retrying
def usage_vs_score(*, suite: str = settings.DEFAULT_SUITE, verdicts: str = "era", reviews: bool = True
                   ) -> UsageVsScore:
    """Every agent with ingested runs: mean tokens and cost per latest run against its runs-leaderboard score,
    the score under the judging rule ``verdicts`` (``traces.verdicts.JUDGING_RULES``; ``reviews``: reviewers'
    overrides on top), as ``/?source=runs&verdicts=`` computes it.

    Usage comes from the runs' traces (Claude Code ``result`` totals, OpenCode ``step_finish`` sums, Codex turn
    usage, Gemini stats); runs whose trace has no such numbers are counted in ``missing`` by reason.
    """
    with warehouse.snapshot() as con:  # one unit of work: the board and the usage of the same runs
        board = selectors.read_leaderboard(con, suite=suite, source="runs", verdicts=verdicts, reviews=reviews)
        usage = traces_selectors.read_usage_by_agent(con, suite)
    rows = {r.key: r for r in board.rows if r.source == "runs"}
    # Only agents on the runs leaderboard have a score to plot (a warehouse with runs but without its suite's
    # published rows, e.g. a bare ``manage.py ingest``, has none).
    missing: dict[str, int] = {}
    points = []
    for key, used in usage.items():
        if key not in rows:
            continue
        for (trace_format, state, no_tokens), count in used.gaps.items():
            if trace_format in ("claude_code", "opencode"):
                reason = f"the trace ends without its usage totals ({state.replace('_', ' ')})"
            elif no_tokens and trace_format in ("codex_exec", "codex_protocol", "gemini"):
                reason = f"the agent produced no usage events ({state.replace('_', ' ')})"
            else:
                reason = USAGE_GAPS.get(trace_format or "none", f"{trace_format} traces carry no usage")
            missing[reason] = missing.get(reason, 0) + count
        row, tokens, costs = rows[key], used.tokens, used.costs
        points.append(AgentUsage(
            key, row.agent, row.scaffold, row.synthetic, row.average, row.std, used.runs,
            sum(tokens) / len(tokens) if tokens else None, len(tokens),
            sum(costs) / len(costs) if costs else None, len(costs),
        ))
    points.sort(key=lambda p: -p.score)
    token_frontier = _usage_frontier(points, lambda p: p.tokens)
    cost_frontier = _usage_frontier(points, lambda p: p.cost_usd)
    return UsageVsScore(points, token_frontier, cost_frontier, dict(sorted(missing.items())), verdicts, reviews)


def _usage_frontier(points: list[AgentUsage], usage: Callable[[AgentUsage], float | None]) -> list[AgentUsage]:
    """The Pareto frontier (less ``usage``, higher score) of the points whose usage is known, in order of usage."""
    known = [(p, value) for p in points if (value := usage(p)) is not None]
    return [p for p, _ in pareto_frontier(known, x=lambda k: k[1], y=lambda k: k[0].score)]
