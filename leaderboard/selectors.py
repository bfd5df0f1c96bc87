"""Reads of the leaderboard app: the leaderboard rows of a suite, computed from the warehouse.

All SQL of this app's pages lives here and in services.py. Percent = fraction x 100.
"""
from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field

from ptbsite import warehouse
from traces import selectors as traces_selectors

from . import aggregation

SORT_KEYS = ("rank", "agent", "average", "runs")
FALLBACK_TEXT = {
    "not_stored": "the agent left no final model",
    "error": "the evaluation of the final model failed",
    "not_available": "the agent never finished",
    "missing": "no run",
    "flagged": "a judge flagged the run",
    "judge_error": "the judge's verdict is missing or malformed",
    "timed_out": "the job was killed at its time limit",
    "cuda_failure": "the CUDA check failed",
    "api_limit": "the agent hit its API limit",
    "facet": "the run did not use the filtered facet",
}
SCORING_RULE_TEXT = {"final_model": "the final model", "best_checkpoint": "the best submitted checkpoint"}


@dataclass(frozen=True)
class Benchmark:
    id: str
    name: str
    metric: str
    weight: float


@dataclass(frozen=True)
class BaseModel:
    id: str
    hf_id: str
    name: str
    instruct_id: str


@dataclass
class Cell:
    """One benchmark column of a row: percent score, its spread, and the fallbacks behind it."""

    score: float
    std: float | None = None
    shade: float = 0.0
    fallbacks: list[tuple[str, str]] = field(default_factory=list)  # (base model name, reason code)

    @property
    def fallback_note(self) -> str:
        """Hover text: which base models fell back to their zero-shot score, and why."""
        return "; ".join(f"{model}: base-model score used, {FALLBACK_TEXT.get(r, r)}" for model, r in self.fallbacks)


@dataclass
class Row:
    """One leaderboard line. ``average``/``std`` in percent; ``rank`` None for baselines."""

    key: str
    agent: str
    kind: str
    scaffold: str | None
    reasoning_effort: str | None
    model_family: str | None
    average: float
    std: float | None
    runs: int
    cells: dict[str, Cell]
    rank: int | None = None
    source: str = "published"       # published | runs
    n_runs: int = 0                 # ingested runs behind a runs row
    synthetic: bool = False         # every run behind the row is generated demo data
    overridden: bool = False        # a reviewer overrode a verdict of a run behind the row
    delta: float | None = None      # runs row minus the published row of the same agent, percent points
    rank_change: int | None = None  # flag-blind view: rank with flags applied minus rank without


@dataclass
class Leaderboard:
    suite: str
    suite_name: str
    benchmarks: list[Benchmark]
    base_models: list[BaseModel]
    base_model: str | None
    sort: str
    direction: str
    rows: list[Row]
    weights_note: str
    derived_weights: dict[str, float]
    source: str = "published"
    apply_flags: bool = True
    description: str = ""
    metric: str = ""
    budget_hours: float | None = None
    hardware: str = ""
    scoring_rule: str = ""
    facet: str | None = None
    notes: list[ReportedNote] = field(default_factory=list)

    @property
    def scoring_text(self) -> str:
        """What is scored, in words (``SCORING_RULE_TEXT``), e.g. "the best submitted checkpoint"."""
        return SCORING_RULE_TEXT.get(self.scoring_rule, self.scoring_rule)


@dataclass(frozen=True)
class ReportedNote:
    """A reported observation of the suite's source that is not a per-agent score (e.g. a quoted ratio)."""

    quantity: str
    description: str
    agent: str | None
    value: float
    unit: str
    source: str


class UnknownBaseModel(ValueError):
    """The requested base model is not one of the suite's."""


def suite_models(con, suite: str) -> tuple[list[Benchmark], list[BaseModel]]:
    benchmarks = [
        Benchmark(*row)
        for row in con.execute(
            "SELECT id, name, metric, weight FROM benchmarks WHERE suite = ? ORDER BY position", [suite]
        ).fetchall()
    ]
    models = [
        BaseModel(*row)
        for row in con.execute(
            "SELECT id, hf_id, name, instruct_id FROM base_models WHERE suite = ? ORDER BY position", [suite]
        ).fetchall()
    ]
    return benchmarks, models


SOURCES = ("published", "runs", "all")


@warehouse.retrying
def leaderboard(
    *, suite: str = "posttrainbench", base_model: str | None = None, sort: str = "rank", direction: str = "asc",
    source: str = "published", apply_flags: bool = True, facet: str | None = None,
) -> Leaderboard:
    """The leaderboard of a suite (spec section 4.4 and the website's data.js, section 5).

    Args:
        base_model: None for the average over the suite's base models, else one base model id
            (e.g. ``Qwen3-4B-Base``).
        sort: ``rank``, ``agent``, ``average``, ``runs`` or a benchmark id; ``direction`` ``asc``/``desc``.
        source: ``published`` (the website's aggregates), ``runs`` (computed from ingested runs by the
            benchmark's rules, ``rows_from_runs``) or ``all`` (both, side by side).
        apply_flags: False for the flag-blind view: flagged runs count with their raw score; each runs row then
            carries ``rank_change`` (its rank with flags applied minus its rank without).
        facet: a facet spec (``grpo``, ``library:trl``; ``traces.selectors.facet_clause``) that narrows the rows
            computed from runs to the runs with that facet (``rows_from_runs``); published rows are unchanged.

    Returns:
        A Leaderboard whose rows hold percent scores. Published average view: per-benchmark cell = mean over
        base models; headline = weighted sum of the cells; std = the published sample std over runs of the
        per-run metric. Published one-model view: headline = weighted sum of that model's cells; std =
        ``aggregation.combined_std`` of the per-cell stds. Agents are ranked by headline, descending;
        baselines are unranked reference rows.

    Raises:
        UnknownBaseModel: ``base_model`` is not a base model of the suite.
        ValueError: ``source`` is not one of SOURCES.
    """
    if source not in SOURCES:
        raise ValueError(f"source must be one of {', '.join(SOURCES)}")
    with warehouse.connect() as con:
        suite_row = con.execute("SELECT name, weights_note, description, metric, budget_hours, hardware, scoring_rule "
                                "FROM suites WHERE id = ?", [suite]).fetchone()
        notes = [ReportedNote(*row) for row in con.execute(
            "SELECT quantity, description, agent, value, unit, source FROM reported_notes WHERE suite = ? "
            "ORDER BY position", [suite]).fetchall()]
        benchmarks, models = suite_models(con, suite)
        agents = con.execute(
            "SELECT key, name, kind, scaffold, reasoning_effort, model_family FROM agents "
            "WHERE suite = ? ORDER BY position",
            [suite],
        ).fetchall()
        cells = con.execute(
            "SELECT agent, base_model, benchmark, value, std, fallback FROM reported_cells WHERE suite = ?", [suite]
        ).fetchall()
        headline = {
            row[0]: row[1:]
            for row in con.execute(
                "SELECT agent, average, std, runs FROM reported_scores WHERE suite = ?", [suite]
            ).fetchall()
        }
    if suite_row is None:
        return Leaderboard(suite, suite, [], [], base_model, sort, direction, [], "", {}, source, apply_flags)
    model_ids = [m.id for m in models]
    if base_model is not None and base_model not in model_ids:
        raise UnknownBaseModel(f"unknown base model {base_model!r}; one of {', '.join(model_ids)}")
    names = {m.id: m.name for m in models}
    weights = {b.id: b.weight for b in benchmarks}
    grid: dict[str, dict[tuple[str, str], tuple[float, float | None, str | None]]] = defaultdict(dict)
    for agent, model, benchmark, value, std, fallback in cells:
        grid[agent][(model, benchmark)] = (value, std, fallback)
    view_models = [base_model] if base_model else model_ids

    rows = []
    for key, name, kind, scaffold, effort, family in agents:
        if source == "runs" and kind == "agent":
            continue
        agent_cells = grid[key]
        per_bench, row_cells = {}, {}
        for b in benchmarks:
            entries = [agent_cells[(m, b.id)] for m in view_models]
            per_bench[b.id] = aggregation.mean(e[0] for e in entries)
            stds = [e[1] for e in entries if e[1] is not None]
            row_cells[b.id] = Cell(
                score=100 * per_bench[b.id],
                std=100 * aggregation.mean(stds) if stds else None,
                fallbacks=[(names[m], e[2]) for m, e in zip(view_models, entries) if e[2]],
            )
        average = aggregation.weighted_score(per_bench, weights)
        published = headline.get(key)
        if base_model is None and published is not None:
            std, runs = published[1], published[2]
        elif published is not None:
            std = aggregation.combined_std({t: agent_cells[(base_model, t)][1] or 0.0 for t in weights}, weights)
            runs = published[2]
        else:
            std, runs = None, (0 if kind == "baseline" else 1)
        rows.append(
            Row(key, name, kind, scaffold, effort, family, 100 * average, None if std is None else 100 * std, runs,
                row_cells, source="published")
        )

    if source in ("runs", "all"):
        base_scores = {(m, t): v[0] for (m, t), v in grid["base-zeroshot"].items()}
        families = {a[0]: a[5] for a in agents}
        cells = traces_selectors.latest_cells(suite)  # read once: the flag-blind view builds its rows twice
        run_rows = rows_from_runs(suite=suite, benchmarks=benchmarks, models=models, base_scores=base_scores,
                                  base_model=base_model, apply_flags=apply_flags, facet=facet, cells=cells)
        published_avg = _published_averages(grid, agents, view_models, weights)
        for row in run_rows:
            row.model_family = families.get(row.key)
            if row.key in published_avg:
                row.delta = row.average - published_avg[row.key]
        if not apply_flags:
            flagged_rows = {r.key: r for r in rows_from_runs(
                suite=suite, benchmarks=benchmarks, models=models, base_scores=base_scores, base_model=base_model,
                apply_flags=True, facet=facet, cells=cells)}
            ranks_with = _ranks(list(flagged_rows.values()))
            ranks_without = _ranks(run_rows)
            for row in run_rows:
                row.rank_change = ranks_with.get(row.key, 0) - ranks_without.get(row.key, 0)
        rows += run_rows

    ranked = sorted((r for r in rows if r.kind == "agent"), key=lambda r: -r.average)
    for position, row in enumerate(ranked, start=1):
        row.rank = position
    _shade(rows, benchmarks)
    rows = _sorted(rows, sort, direction)

    by_model = {m: {t: grid["base-zeroshot"].get((m, t), (0,))[0] for t in weights} for m in model_ids}
    instruct = {t: aggregation.mean(grid["instruct"][(m, t)][0] for m in model_ids) for t in weights} if "instruct" in grid else {}
    base = {t: aggregation.mean(by_model[m][t] for m in model_ids) for t in weights}
    derived = aggregation.derive_weights(instruct, base) if instruct else {}
    return Leaderboard(suite, suite_row[0], benchmarks, models, base_model, sort, direction, rows, suite_row[1],
                       derived, source, apply_flags, description=suite_row[2], metric=suite_row[3],
                       budget_hours=suite_row[4], hardware=suite_row[5], scoring_rule=suite_row[6], facet=facet,
                       notes=notes)


def _published_averages(grid, agents, view_models, weights) -> dict[str, float]:
    """Percent headline of each published agent in this view (for the runs-vs-published difference)."""
    out = {}
    for key, _, kind, *_ in agents:
        if kind != "agent":
            continue
        per_bench = {t: aggregation.mean(grid[key][(m, t)][0] for m in view_models) for t in weights}
        out[key] = 100 * aggregation.weighted_score(per_bench, weights)
    return out


def _ranks(rows: list[Row]) -> dict[str, int]:
    ordered = sorted((r for r in rows if r.kind == "agent"), key=lambda r: -r.average)
    return {r.key: i for i, r in enumerate(ordered, start=1)}


def rows_from_runs(
    *, suite: str, benchmarks: list[Benchmark], models: list[BaseModel], base_scores: dict[tuple[str, str], float],
    base_model: str | None = None, apply_flags: bool = True, facet: str | None = None,
    cells: list[traces_selectors.CellRun] | None = None,
) -> list[Row]:
    """Leaderboard rows computed from ingested runs by the benchmark's own rules (spec section 4.2-4.4).

    Per method (one sweep), the latest run of each (benchmark, base model) counts; a missing, unfinished,
    model-less, failed or flagged cell takes the base model's zero-shot score (``aggregation.final_cell``) and
    is marked with the reason. Methods of one agent (repeated seeds, grouped by agent key) are averaged: each
    method's metric = mean over the view's base models of the weighted sum over benchmarks; the row's average =
    mean of the metrics, std = their sample std (n-1, None for one method), ``runs`` = number of methods.
    Percent out. ``source`` is ``runs`` and ``n_runs`` the number of ingested runs behind the row.

    A suite without base-model baselines (no ``base_scores`` for a cell) takes 0 for a cell that falls back.

    ``facet`` (e.g. ``grpo``): only runs with that facet count. A cell whose latest run lacks it falls back to the
    base model's score like a missing run, with reason ``facet``, so the weighted average keeps its meaning
    ("the agent's score had only its GRPO runs counted"); agents with no such run get no row; ``n_runs``
    counts the runs with the facet.
    """
    keep = traces_selectors.runs_with_facet(suite, facet) if facet else None
    weights = {b.id: b.weight for b in benchmarks}
    view_models = [base_model] if base_model else [m.id for m in models]
    names = {m.id: m.name for m in models}
    by_method: dict[str, dict[tuple[str, str], object]] = defaultdict(dict)
    agents: dict[str, dict[str, object]] = {}
    for cell in cells if cells is not None else traces_selectors.latest_cells(suite):
        by_method[cell.method][(cell.base_model, cell.benchmark)] = cell
        if keep is not None and cell.run_id not in keep:
            continue
        info = agents.setdefault(cell.agent_key, {"name": cell.agent_name, "scaffold": cell.scaffold,
                                                  "effort": cell.reasoning_effort, "methods": set(),
                                                  "synthetic": cell.synthetic, "overridden": False})
        info["methods"].add(cell.method)
        info["overridden"] = info["overridden"] or cell.overridden
        info["synthetic"] = info["synthetic"] and cell.synthetic
    rows = []
    for key, info in agents.items():
        methods = sorted(info["methods"])
        finals: dict[str, dict[tuple[str, str], tuple[float, str | None]]] = {}
        n_runs = 0
        for method in methods:
            finals[method] = {}
            for m in view_models:
                for t in weights:
                    run = by_method[method].get((m, t))
                    base = base_scores.get((m, t), 0.0)
                    if run is not None and keep is not None and run.run_id not in keep:
                        finals[method][(m, t)] = (base, "facet")
                        continue
                    n_runs += run is not None
                    finals[method][(m, t)] = aggregation.final_cell(
                        accuracy=getattr(run, "accuracy", None), state=getattr(run, "state", None),
                        flags=getattr(run, "flags", None), base=base, apply_flags=apply_flags)
        metrics = [
            aggregation.mean(aggregation.weighted_score({t: finals[me][(m, t)][0] for t in weights}, weights)
                             for m in view_models)
            for me in methods
        ]
        row_cells = {}
        for t in weights:
            values = [aggregation.mean(finals[me][(m, t)][0] for m in view_models) for me in methods]
            std = aggregation.sample_std(values)
            row_cells[t] = Cell(
                score=100 * aggregation.mean(values), std=None if std is None else 100 * std,
                fallbacks=[(names[m] + (f" ({me})" if len(methods) > 1 else ""), finals[me][(m, t)][1])
                           for me in methods for m in view_models if finals[me][(m, t)][1]],
            )
        if n_runs == 0:
            continue  # no run of this agent in this view (e.g. none on the chosen base model): no row, no rank
        std = aggregation.sample_std(metrics)
        rows.append(Row(
            key, str(info["name"]), "agent", str(info["scaffold"]), info["effort"], None,
            100 * aggregation.mean(metrics), None if std is None else 100 * std, len(methods), row_cells,
            source="runs", n_runs=n_runs, synthetic=bool(info["synthetic"]), overridden=bool(info["overridden"]),
        ))
    return rows


def _shade(rows: list[Row], benchmarks: list[Benchmark]) -> None:
    """Each cell's position (0..1) between its column's lowest and highest agent score."""
    for b in benchmarks:
        values = [r.cells[b.id].score for r in rows if r.kind == "agent"]
        low, high = (min(values), max(values)) if values else (0.0, 0.0)
        for r in rows:
            cell = r.cells[b.id]
            cell.shade = 0.0 if high == low else min(max((cell.score - low) / (high - low), 0.0), 1.0)


def _sorted(rows: list[Row], sort: str, direction: str) -> list[Row]:
    """Agents sorted by the chosen column; baselines keep their place as reference rows after the agents."""
    reverse = direction == "desc"
    if sort in ("rank", "average"):
        # Reference rows sit where their score would place them, as on the benchmark's own site.
        return sorted(rows, key=lambda r: r.average, reverse=(sort == "average") == reverse)
    agents = [r for r in rows if r.kind == "agent"]
    baselines = [r for r in rows if r.kind == "baseline"]
    if sort == "agent":
        agents.sort(key=lambda r: r.agent.lower(), reverse=reverse)
    elif sort == "runs":
        agents.sort(key=lambda r: (r.runs, r.average), reverse=reverse)
    elif rows and sort in rows[0].cells:
        agents.sort(key=lambda r: r.cells[sort].score, reverse=reverse)
    baselines.sort(key=lambda r: -r.average)
    return agents + baselines
