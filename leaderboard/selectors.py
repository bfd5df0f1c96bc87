"""Reads of the leaderboard app: the leaderboard rows of a suite, computed from the warehouse.

All SQL of this app's pages lives here and in services.py. Scores are fractions (percent in JSON, ``ptbsite.units``).
"""
from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import PurePath

from django.conf import settings

from ptbsite import warehouse
from traces.reported import FACT_TOPIC_TEXT, ReportedFact, read_reported_facts, reported_facts
from traces import selectors as traces_selectors
from traces.verdicts import JUDGING_RULES, flags_under

from . import aggregation
from .schemas import (FALLBACK_TEXT, SCORING_RULE_TEXT, SORT_KEYS, BaseModel, Benchmark, Cell, FallbackBaseline,
                      Leaderboard, Row)

class UnknownBaseModel(ValueError):
    """The requested base model is not one of the suite's."""


def suite_models(con, suite: str) -> tuple[list[Benchmark], list[BaseModel]]:
    benchmarks = [
        Benchmark(**row)
        for row in traces_selectors.fetch_dicts(
            con, "SELECT id, name, metric, weight FROM benchmarks WHERE suite = ? ORDER BY position", [suite])
    ]
    models = [
        BaseModel(**row)
        for row in traces_selectors.fetch_dicts(
            con, "SELECT id, hf_id, name, instruct_id FROM base_models WHERE suite = ? ORDER BY position", [suite])
    ]
    return benchmarks, models


SOURCES = ("published", "runs", "all")


@warehouse.retrying
def base_model_ids(suite: str = settings.DEFAULT_SUITE) -> list[str]:
    """The ids of a suite's base models in the suite's order: ``leaderboard(suite=suite).base_models``' ids (none
    when the suite is not imported) in one query, without computing the leaderboard (the static export lists its
    pages per base model on every export)."""
    with warehouse.connect() as con:
        return [model_id for (model_id,) in con.execute(
            "SELECT b.id FROM base_models b WHERE b.suite = ? AND EXISTS (SELECT 1 FROM suites s WHERE s.id = ?) "
            "ORDER BY b.position", [suite, suite]).fetchall()]


@warehouse.retrying
def leaderboard(
    *, suite: str = settings.DEFAULT_SUITE, base_model: str | None = None, sort: str = "rank", direction: str = "asc",
    source: str = "published", apply_flags: bool = True, facet: str | None = None, verdicts: str = "era",
    reviews: bool = True,
) -> Leaderboard:
    """The leaderboard of a suite in its own unit of work: :func:`read_leaderboard` on one warehouse snapshot."""
    with warehouse.snapshot() as con:
        return read_leaderboard(con, suite=suite, base_model=base_model, sort=sort, direction=direction,
                                source=source, apply_flags=apply_flags, facet=facet, verdicts=verdicts,
                                reviews=reviews)


def read_leaderboard(
    con, *, suite: str = settings.DEFAULT_SUITE, base_model: str | None = None, sort: str = "rank",
    direction: str = "asc", source: str = "published", apply_flags: bool = True, facet: str | None = None,
    verdicts: str = "era", reviews: bool = True,
) -> Leaderboard:
    """The leaderboard of a suite (spec section 4.4 and the website's data.js, section 5).

    Args:
        base_model: None for the average over the suite's base models, else one base model id
            (e.g. ``Qwen3-4B-Base``).
        sort: ``rank``, ``agent``, ``average``, ``runs`` or a benchmark id; ``direction`` ``asc``/``desc``.
        source: ``published`` (the website's aggregates), ``runs`` (computed from ingested runs by the
            benchmark's rules, ``rows_from_runs``) or ``all`` (both, side by side).
        apply_flags: False for the flag-blind view, the same as ``verdicts="ignore", reviews=False`` (the old
            ``flags=ignore``): flagged runs count with their raw score.
        verdicts: the judging rule of the rows from runs (``traces.verdicts.JUDGING_RULES``): ``era`` (default,
            the benchmark's rule of each run's era), ``any``, ``majority``, ``ignore``; ``reviews``: reviewers'
            overrides on top (default) or not. In any view but the default each runs row carries ``rank_change``:
            its rank in the default view minus its rank in this one (positive: this rule moves it up).
        facet: a facet spec (``grpo``, ``library:trl``; ``traces.selectors.facet_clause``) that narrows the rows
            computed from runs to the runs with that facet (``rows_from_runs``); published rows are unchanged.

    Returns:
        A Leaderboard whose rows hold scores as fractions (percent in JSON). Published average view: per-benchmark cell = mean over
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
    if verdicts not in JUDGING_RULES:
        raise ValueError(f"verdicts must be one of {', '.join(JUDGING_RULES)}")
    if not apply_flags:
        verdicts, reviews = "ignore", False
    apply_flags = not (verdicts == "ignore" and not reviews)
    suite_row = con.execute("SELECT name, weights_note, description, metric, budget_hours, hardware, scoring_rule "
                            "FROM suites WHERE id = ?", [suite]).fetchone()
    reported = read_reported_facts(con, suite)
    runs_ingested = con.execute(f"SELECT count(*) FROM runs r WHERE r.suite = ? AND {traces_selectors.AGENT_RUN}",
                                [suite]).fetchone()[0]
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
    if source in ("runs", "all"):
        # Read once, in this unit of work: the flag-blind view builds its rows twice.
        cells_of_runs = traces_selectors.read_latest_cells(con, suite)
        trees = traces_selectors.read_tree_baselines(con, suite)
        keep = traces_selectors.read_runs_with_facet(con, suite, facet) if facet else None
    if suite_row is None:
        return Leaderboard(suite=suite, suite_name=suite, benchmarks=[], base_models=[], base_model=base_model, sort=sort,
                           direction=direction, rows=[], weights_note="", derived_weights={}, source=source,
                           apply_flags=apply_flags, verdicts=verdicts, reviews=reviews)
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
                score=per_bench[b.id],
                std=aggregation.mean(stds) if stds else None,
                fallbacks=[(names[m], e[2]) for m, e in zip(view_models, entries) if e[2]],
            )
        average = aggregation.weighted_score(per_bench, weights)
        published = headline.get(key)
        runs: int | None
        if base_model is None and published is not None:
            std, runs = published[1], published[2] or None  # 0 stored: the source does not say (import_published)
        elif published is not None and base_model is not None:
            std = aggregation.combined_std({t: agent_cells[(base_model, t)][1] or 0.0 for t in weights}, weights)
            runs = published[2] or None
        else:
            std, runs = None, (0 if kind == "baseline" else 1)
        rows.append(
            Row(key=key, agent=name, kind=kind, scaffold=scaffold, reasoning_effort=effort, model_family=family,
                average=average, std=std, runs=runs, cells=row_cells,
                source="published")
        )

    fallback_baselines: list[FallbackBaseline] = []
    if source in ("runs", "all"):
        base_scores = {(m, t): v[0] for (m, t), v in grid["base-zeroshot"].items()}
        families = {a[0]: a[5] for a in agents}
        fallback_baselines = _fallback_baselines(cells_of_runs, trees, base_scores, model_ids, list(weights))
        run_rows = rows_from_runs(suite=suite, benchmarks=benchmarks, models=models, base_scores=base_scores,
                                  base_model=base_model, facet=facet, cells=cells_of_runs,
                                  tree_base=trees, keep=keep, verdicts=verdicts, reviews=reviews)
        published_avg = _published_averages(grid, agents, view_models, weights)
        for row in run_rows:
            row.model_family = families.get(row.key)
            if row.key in published_avg:
                row.delta = row.average - published_avg[row.key]
        if (verdicts, reviews) != ("era", True):
            default_rows = rows_from_runs(
                suite=suite, benchmarks=benchmarks, models=models, base_scores=base_scores, base_model=base_model,
                facet=facet, cells=cells_of_runs, tree_base=trees, keep=keep)
            ranks_default = _ranks(default_rows)
            ranks_here = _ranks(run_rows)
            for row in run_rows:
                row.rank_change = ranks_default.get(row.key, 0) - ranks_here.get(row.key, 0)
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
    return Leaderboard(suite=suite, suite_name=suite_row[0], benchmarks=benchmarks, base_models=models,
                       base_model=base_model, sort=sort, direction=direction, rows=rows, weights_note=suite_row[1],
                       derived_weights=derived, source=source, apply_flags=apply_flags, verdicts=verdicts,
                       reviews=reviews, description=suite_row[2], metric=suite_row[3],
                       budget_hours=suite_row[4], hardware=suite_row[5], scoring_rule=suite_row[6], facet=facet,
                       reported=reported, fallback_baselines=fallback_baselines, runs_ingested=runs_ingested,
                       has_scaffolds=any(a[3] for a in agents) or any(r.scaffold for r in rows),
                       has_efforts=any(a[4] for a in agents) or any(r.reasoning_effort for r in rows),
                       reported_named_only=_named_only(reported, {a[0] for a in agents}))


def _named_only(facts: list[ReportedFact], scored: set[str]) -> list[str]:
    """Names of the agents the source gives figures for but no score (no leaderboard row), in order."""
    return list(dict.fromkeys(f.agent_name or f.agent for f in facts if f.agent is not None and f.agent not in scored))


def _published_averages(grid, agents, view_models, weights) -> dict[str, float]:
    """Headline (fraction) of each published agent in this view (for the runs-vs-published difference)."""
    out = {}
    for key, _, kind, *_ in agents:
        if kind != "agent":
            continue
        per_bench = {t: aggregation.mean(grid[key][(m, t)][0] for m in view_models) for t in weights}
        out[key] = aggregation.weighted_score(per_bench, weights)
    return out


def _ranks(rows: list[Row]) -> dict[str, int]:
    ordered = sorted((r for r in rows if r.kind == "agent"), key=lambda r: -r.average)
    return {r.key: i for i, r in enumerate(ordered, start=1)}


def _fallback_baselines(cells, trees, published: dict[tuple[str, str], float], model_ids: list[str],
                        bench_ids: list[str]) -> list[FallbackBaseline]:
    """Per results root behind the rows computed from runs, which baseline supplies their fallback scores."""
    methods: dict[str, set[str]] = defaultdict(set)
    for cell in cells:
        methods[cell.results_root].add(cell.method)
    out = []
    for root in sorted(methods):
        tree = trees.get(root)
        grid = [(m, t) for m in model_ids for t in bench_ids]
        shown = PurePath(root).name or root  # the tree's folder name: its path on the server is not the public's
        if tree is not None:
            scored = sum(1 for key in grid if tree.scores.get(key) is not None)
            out.append(FallbackBaseline(results_root=shown, kind="tree", tree_cells=scored,
                                        published_cells=len(grid) - scored, methods=len(methods[root])))
        else:
            out.append(FallbackBaseline(results_root=shown, kind="published" if published else "none", tree_cells=0,
                                        published_cells=len(grid) if published else 0, methods=len(methods[root])))
    return out


def rows_from_runs(
    *, suite: str, benchmarks: list[Benchmark], models: list[BaseModel], base_scores: dict[tuple[str, str], float],
    base_model: str | None = None, apply_flags: bool = True, facet: str | None = None,
    cells: list[traces_selectors.CellRun] | None = None,
    tree_base: dict[str, traces_selectors.TreeBaseline] | None = None, keep: set[str] | None = None,
    verdicts: str = "era", reviews: bool = True,
) -> list[Row]:
    """Leaderboard rows computed from ingested runs by the benchmark's own rules (spec section 4.2-4.4).

    Per method (one sweep), the latest run of each (benchmark, base model) counts; a missing, unfinished,
    model-less, failed or flagged cell takes the base model's zero-shot score (``aggregation.final_cell``) and
    is marked with the reason. Methods of one agent (its explicit method list in the suite file, upstream's
    ``HARDCODED_AGENT_MAP``) are averaged: each method's metric = mean over the view's base models of the
    weighted sum over benchmarks; the row's average = mean of the metrics, std = their sample std (n-1, None for
    one method), ``runs`` = number of methods. Per benchmark: score = mean over methods of the view's model mean,
    std = sample std over methods of it (in a one-model view, the per-cell std of ``aggregated_std_<agent>.csv``).
    Fractions out. ``source`` is ``runs`` and ``n_runs`` the number of ingested runs behind the row (the latest
    of each of its cells that has one), ``n_scored`` those that count with their own score (the others are
    flagged, failed or unfinished and take the base model's), ``n_cells`` = ``runs`` x base models x benchmarks:
    the cells the average is over (those without a run take the base model's score).

    Fallback scores: a method's cells take its results tree's own ``baseline_zeroshot/`` scores (``tree_base``,
    by results root, as ``aggregate_final.py`` reads ``aggregated_baseline_zeroshot.csv``); where the tree has
    none, or lacks the cell, ``base_scores`` (the published zero-shot baseline). A suite without any baseline
    takes 0 for a cell that falls back. ``baseline_source`` says which one the row's methods used.

    Two rows with the same display name (unlisted methods of one model and harness) get their method names
    appended, so that no two rows read alike.

    ``facet`` (e.g. ``grpo``): only runs with that facet count. A cell whose latest run lacks it falls back to the
    base model's score like a missing run, with reason ``facet``, so the weighted average keeps its meaning
    ("the agent's score had only its GRPO runs counted"); agents with no such run get no row; ``n_runs``
    counts the runs with the facet; ``keep``: the ids of the runs with it when the caller has read them.

    ``verdicts`` (``traces.verdicts.JUDGING_RULES``) and ``reviews``: which verdicts make a cell fall back: each
    run's flags under that rule (``traces.verdicts.flags_under``), reviewers' overrides on top when ``reviews``;
    ``apply_flags`` False is ``ignore`` without reviews (the raw scores).
    """
    if not apply_flags:
        verdicts, reviews = "ignore", False
    if facet and keep is None:
        keep = traces_selectors.runs_with_facet(suite, facet)
    elif not facet:
        keep = None
    tree_base = tree_base or {}
    weights = {b.id: b.weight for b in benchmarks}
    view_models = [base_model] if base_model else [m.id for m in models]
    names = {m.id: m.name for m in models}
    by_method: dict[str, dict[tuple[str, str], traces_selectors.CellRun]] = defaultdict(dict)
    roots: dict[str, str] = {}
    agents: dict[str, _RunsAgent] = {}
    for cell in cells if cells is not None else traces_selectors.latest_cells(suite):
        by_method[cell.method][(cell.base_model, cell.benchmark)] = cell
        roots[cell.method] = cell.results_root
        if keep is not None and cell.run_id not in keep:
            continue
        info = agents.get(cell.agent_key)
        if info is None:  # the agent's first cell (not a _RunsAgent built per cell to be thrown away)
            info = agents[cell.agent_key] = _RunsAgent(name=cell.agent_name, scaffold=cell.scaffold,
                                                       effort=cell.reasoning_effort, synthetic=cell.synthetic)
        info.methods.add(cell.method)
        info.overridden = info.overridden or cell.overridden
        info.synthetic = info.synthetic and cell.synthetic

    # Each results root's fallback score per cell of the view, once (not once per cell of every method), in the
    # order of ``grid``: model by model, each model's benchmarks in ``weights``' order.
    grid = [(m, t) for m in view_models for t in weights]
    bases: dict[str, list[float]] = {}
    for root in set(roots.values()):
        tree = tree_base.get(root)
        bases[root] = []
        for cell_key in grid:
            score = tree.scores.get(cell_key) if tree is not None else None
            bases[root].append(score if score is not None else base_scores.get(cell_key, 0.0))

    # Each method's cells as lists in ``grid``'s order (its run or None; its final value and reason), built once;
    # the sums below walk them by position, adding the same floats in the same order as per-cell dicts did.
    bench_count, weight_list = len(weights), list(weights.values())
    spans = [(j * bench_count, (j + 1) * bench_count) for j in range(len(view_models))]  # each model's cells
    rows = []
    for key, info in agents.items():
        methods = sorted(info.methods)
        finals: list[list[tuple[float, str | None]]] = []  # per method (in ``methods``' order), per cell of grid
        counted: list[list[str | None]] = []  # per method, per cell of grid: the run id the cell counts, or None
        n_runs = n_scored = 0
        for method in methods:
            of_method = by_method[method]
            cell_runs = [of_method.get(cell_key) for cell_key in grid]
            final: list[tuple[float, str | None]] = []
            for run, base in zip(cell_runs, bases[roots[method]]):
                if run is None:
                    final.append(aggregation.final_cell(accuracy=None, state=None, flags=None, base=base))
                elif keep is not None and run.run_id not in keep:
                    final.append((base, "facet"))
                else:
                    n_runs += 1
                    value = aggregation.final_cell(accuracy=run.accuracy, state=run.state,
                                                   flags=_cell_flags(run, verdicts, reviews), base=base)
                    final.append(value)
                    n_scored += value[1] is None
            finals.append(final)
            counted.append([run.run_id if run is not None and (keep is None or run.run_id in keep) else None
                            for run in cell_runs])
        # Each method's metric: the mean over the view's models of the weighted sum over benchmarks.
        metrics = [aggregation.mean([sum(w * v[0] for w, v in zip(weight_list, final[a:b])) for a, b in spans])
                   for final in finals]
        row_cells = {}
        for i, t in enumerate(weights):
            values = [aggregation.mean([final[a + i][0] for a, _ in spans]) for final in finals]
            std = aggregation.sample_std(values)
            row_cells[t] = Cell(
                score=aggregation.mean(values), std=std,
                fallbacks=[(names[m] + (f" ({me})" if len(methods) > 1 else ""), reason)
                           for me, final in zip(methods, finals) for m, (a, _) in zip(view_models, spans)
                           if (reason := final[a + i][1])],
                run_ids=[run_id for ids in counted for a, _ in spans if (run_id := ids[a + i]) is not None],
            )
        if n_runs == 0:
            continue  # no run of this agent in this view (e.g. none on the chosen base model): no row, no rank
        std = aggregation.sample_std(metrics)
        own = {roots[me] in tree_base for me in methods}
        rows.append(Row(
            key=key, agent=info.name, kind="agent", scaffold=info.scaffold,
            reasoning_effort=info.effort, model_family=None, average=aggregation.mean(metrics),
            std=std, runs=len(methods), cells=row_cells, source="runs", n_runs=n_runs, n_scored=n_scored,
            n_cells=len(methods) * len(view_models) * len(weights),
            synthetic=info.synthetic, overridden=info.overridden,
            baseline_source="mixed" if len(own) > 1 else "tree" if own == {True} else "published" if base_scores
            else "none",
        ))
    seen: dict[str, int] = defaultdict(int)
    for row in rows:
        seen[row.agent] += 1
    for row in rows:
        if seen[row.agent] > 1:
            row.agent = f"{row.agent} [{', '.join(sorted(agents[row.key].methods))}]"
    return rows


@dataclass
class _RunsAgent:
    """An agent of the rows from runs while its cells are read: display name, scaffold, reasoning effort, its
    methods (results-tree directories), whether every run is synthetic and whether a reviewer overrode any."""

    name: str
    scaffold: str
    effort: str | None
    synthetic: bool
    methods: set[str] = field(default_factory=set)
    overridden: bool = False


def _cell_flags(run: traces_selectors.CellRun | None, verdicts: str, reviews: bool) -> dict[str, str | None] | None:
    """A cell's flags under a judging rule: the stored effective flags in the default view (era, reviews on),
    else ``flags_under`` of its verdicts with or without the reviewers' overrides."""
    if run is None:
        return None
    if (verdicts, reviews) == ("era", True):
        return run.flags
    return flags_under(run.verdicts, verdicts, run.overrides if reviews else None)


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
        agents.sort(key=lambda r: (r.runs or 0, r.average), reverse=reverse)
    elif rows and sort in rows[0].cells:
        agents.sort(key=lambda r: r.cells[sort].score, reverse=reverse)
    baselines.sort(key=lambda r: -r.average)
    return agents + baselines


# Re-exported: the models (leaderboard.schemas) and the reported facts (traces.reported) under the names other
# modules and the tests have used.
__all__ = ["FACT_TOPIC_TEXT", "FALLBACK_TEXT", "JUDGING_RULES", "SCORING_RULE_TEXT", "SORT_KEYS", "SOURCES", "BaseModel", "Benchmark",
           "Cell", "FallbackBaseline", "Leaderboard", "ReportedFact", "Row", "UnknownBaseModel", "leaderboard",
           "reported_facts", "rows_from_runs", "suite_models"]
