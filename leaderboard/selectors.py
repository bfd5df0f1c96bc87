"""Reads of the leaderboard app: the leaderboard rows of a suite, computed from the warehouse.

All SQL of this app's pages lives here and in services.py. Percent = fraction x 100.
"""
from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field

from ptbsite import warehouse

from . import aggregation

SORT_KEYS = ("rank", "agent", "average", "runs")
FALLBACK_TEXT = {
    "not_stored": "the agent left no final model",
    "error": "the evaluation of the final model failed",
    "not_available": "the agent never finished",
    "missing": "no run",
    "flagged": "a judge flagged the run",
}


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


def leaderboard(
    *, suite: str = "posttrainbench", base_model: str | None = None, sort: str = "rank", direction: str = "asc"
) -> Leaderboard:
    """The leaderboard of a suite, as published (spec section 4.4 and the website's data.js, section 5).

    Args:
        base_model: None for the average over the suite's base models, else one base model id
            (e.g. ``Qwen3-4B-Base``).
        sort: ``rank``, ``agent``, ``average``, ``runs`` or a benchmark id; ``direction`` ``asc``/``desc``.

    Returns:
        A Leaderboard whose rows hold percent scores. Average view: per-benchmark cell = mean over base models;
        headline = weighted sum of the cells; std = the published sample std over runs of the per-run metric.
        One-model view: headline = weighted sum of that model's cells; std = ``aggregation.combined_std`` of
        the per-cell stds. Agents are ranked by headline, descending; baselines are unranked reference rows.

    Raises:
        UnknownBaseModel: ``base_model`` is not a base model of the suite.
    """
    with warehouse.connect() as con:
        suite_row = con.execute("SELECT name, weights_note FROM suites WHERE id = ?", [suite]).fetchone()
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
        return Leaderboard(suite, suite, [], [], base_model, sort, direction, [], "", {})
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
        agent_cells = grid[key]
        per_bench, per_bench_std, row_cells = {}, {}, {}
        for b in benchmarks:
            entries = [agent_cells[(m, b.id)] for m in view_models]
            per_bench[b.id] = aggregation.mean(e[0] for e in entries)
            stds = [e[1] for e in entries if e[1] is not None]
            per_bench_std[b.id] = aggregation.mean(stds) if stds else None
            row_cells[b.id] = Cell(
                score=100 * per_bench[b.id],
                std=None if per_bench_std[b.id] is None else 100 * per_bench_std[b.id],
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
            Row(key, name, kind, scaffold, effort, family, 100 * average, None if std is None else 100 * std, runs, row_cells)
        )

    ranked = sorted((r for r in rows if r.kind == "agent"), key=lambda r: -r.average)
    for position, row in enumerate(ranked, start=1):
        row.rank = position
    _shade(rows, benchmarks)
    rows = _sorted(rows, sort, direction)

    by_model = {m: {t: grid["base-zeroshot"].get((m, t), (0,))[0] for t in weights} for m in model_ids}
    instruct = {t: aggregation.mean(grid["instruct"][(m, t)][0] for m in model_ids) for t in weights} if "instruct" in grid else {}
    base = {t: aggregation.mean(by_model[m][t] for m in model_ids) for t in weights}
    derived = aggregation.derive_weights(instruct, base) if instruct else {}
    return Leaderboard(suite, suite_row[0], benchmarks, models, base_model, sort, direction, rows, suite_row[1], derived)


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
    elif sort == "average":
        agents.sort(key=lambda r: r.average, reverse=reverse)
    elif rows and sort in rows[0].cells:
        agents.sort(key=lambda r: r.cells[sort].score, reverse=reverse)
    baselines.sort(key=lambda r: -r.average)
    return agents + baselines
