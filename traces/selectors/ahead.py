"""What the static export's pages of many runs read, read ahead for all of them at once: per run, the answers of
the reads its pages make one by one (texts, evaluations, facets, evidence, the published reference scores, the
time split, the override log, public challenges, trace and tool names, the step index, the runs of its cell), keyed as
``warehouse.once`` keeps them, so that each run's pages, rendered in a ``warehouse.once.reads_kept(ahead)`` block,
answer those reads without a query. On DuckLake each query of a table costs ~6-20 CPU ms of catalog work whatever it
returns: ~12 such reads a run cost ~0.2 CPU s, and the same read for 32 runs costs about what one run's did; the runs'
rows of the tables several reads query (steps, phases, monitor) are copied into memory once and those reads run on
the copy (``warehouse.rows_in_memory``).
"""
from __future__ import annotations

from collections.abc import Callable, Hashable
from typing import Any

from ptbsite import warehouse
from ptbsite.warehouse.once import kept_key

from ..challenges import read_public_challenges, read_public_challenges_of
from ..schemas import Run
from .compare import Cell, CellFacts, read_cell_runs, read_cell_runs_of, read_sides_ahead
from .analysis import read_timeline, read_timeline_summaries_of, read_timeline_summary, read_timelines_of
from .runs import (read_all_reference_scores, read_evaluations, read_evaluations_of, read_reference_scores,
                   read_run_facets, read_run_facets_of, read_run_texts, read_run_texts_of)
from .steps import (read_evidence, read_evidence_of, read_first_pages_of, read_step_index,
                    read_step_indices_and_tools_of, read_steps_page, read_tools_used, read_trace_names, trace_names_of,
                    read_whole_steps_ahead)
from .verdicts import read_override_log, read_override_logs_of, read_panels_ahead


# The tables every read ahead query of which reads only the runs read ahead, by ``run_id``, and of which several do.
AHEAD_TABLES = ("steps", "phases", "monitor")
# The tables read ahead that often never held a row (overrides, public challenges): an empty copy when so.
AHEAD_UNWRITTEN = ("verdict_overrides", "verdict_challenges", "challenge_events")


@warehouse.retrying
def read_ahead(some: list[Run], *, agent_pages: tuple[int, ...] = (), trace_pages: int | None = None,
               side_budgets: list[float] | None = None,
               cell_facts: dict[Cell, CellFacts] | None = None,
               whole_steps: dict[str, dict[Hashable, Any]] | None = None) -> dict[str, dict[Hashable, Any]]:
    """{run id: {``warehouse.once.kept_key`` of a read: its answer}} of the runs ``some``, in one unit of work of
    ~20 queries whatever their number, 10 of them of the warehouse (AHEAD_TABLES' rows of the runs copied into memory,
    one query each, the rest on the copies; AHEAD_UNWRITTEN, when never written, as empty copies); with the first page
    (unfiltered, ``read_steps_page``) of ``agent_pages`` steps of the agent trace (each size), and of
    ``trace_pages`` steps of every other trace; with ``side_budgets`` (``read_budgets``), what each run's
    comparison side reads besides (``compare.read_sides_ahead``). ``cell_facts``: when given, the
    :class:`compare.CellFacts` of the runs' cells put there ({(suite, benchmark, base model): facts}; the static
    export's cell files), from the query of their cells' runs. ``whole_steps``: when given, what the export's search
    reads of the runs (:func:`read_search_ahead`'s answers) put there, from the same copy of their steps."""
    ids = [run.id for run in some]
    out: dict[str, dict[Hashable, Any]] = {run_id: {} for run_id in ids}
    if not ids:
        return out
    # The runs' rows of the tables several of these queries read, copied into memory once (one catalog lookup each
    # instead of one per query: ~10 queries of steps, 4 of phases, 2 of monitor), and the tables never written to
    # as empty copies (``warehouse.rows_in_memory``).
    unwritten = AHEAD_UNWRITTEN + (("step_texts",) if whole_steps is not None else ())
    with warehouse.snapshot() as con, warehouse.rows_in_memory(con, AHEAD_TABLES, "run_id", ids, unwritten=unwritten):
        if whole_steps is not None:
            whole_steps.update(read_whole_steps_ahead(con, ids))
        # the steps' index, their trace names (its keys) and the agent's tools in one query
        indices, tools = read_step_indices_and_tools_of(con, ids)
        per_run: dict[Callable[..., Any], dict[str, Any]] = {
            read_trace_names: trace_names_of(ids, indices),
            read_run_texts: read_run_texts_of(con, ids),
            read_evaluations: read_evaluations_of(con, ids),
            read_run_facets: read_run_facets_of(con, ids),
            read_evidence: read_evidence_of(con, ids),
            read_tools_used: tools,
            read_override_log: read_override_logs_of(con, ids),
            read_public_challenges: read_public_challenges_of(con, ids),
        }
        summaries = read_timeline_summaries_of(con, some)
        timelines = read_timelines_of(con, some)
        references = read_all_reference_scores(con)
        cells = read_cell_runs_of(con, [(run.suite, run.benchmark, run.base_model) for run in some], cell_facts)
        sides = read_sides_ahead(con, some, side_budgets) if side_budgets is not None else {}
        reasonings = read_panels_ahead(con, some, per_run[read_trace_names])
        others = sorted({t for names in per_run[read_trace_names].values() for t in names} - {"agent"})
        first_pages = read_first_pages_of(con, {
            "agent": (some, agent_pages),
            **({trace: ([run for run in some if trace in per_run[read_trace_names].get(run.id, [])], (trace_pages,))
                for trace in others} if trace_pages is not None else {})})
    for run in some:
        kept = out[run.id]
        kept.update(sides.get(run.id, {}))
        kept.update(reasonings.get(run.id, {}))
        for read, answers in per_run.items():
            if run.id in answers:
                kept[kept_key(read, run.id)] = answers[run.id]
        kept[kept_key(read_cell_runs, run.suite, run.benchmark, run.base_model)] = cells[
            (run.suite, run.benchmark, run.base_model)]
        kept[kept_key(read_timeline_summary, run)] = summaries[run.id]
        kept[kept_key(read_timeline, run)] = timelines[run.id]
        kept[kept_key(read_reference_scores, run.suite, run.base_model, run.benchmark)] = references.get(
            (run.suite, run.base_model, run.benchmark), {"base": None, "instruct": None})
        for trace in {"agent", *kept.get(kept_key(read_trace_names, run.id), [])}:
            kept[kept_key(read_step_index, run.id, trace=trace)] = indices.get((run.id, trace), [])
        for (trace, limit), pages in first_pages.items():
            if run.id in pages:
                kept[kept_key(read_steps_page, run.id, trace=trace, limit=limit, budget_hours=run.budget_hours,
                              step_count=run.step_count if trace == "agent" else None)] = pages[run.id]
    return out


@warehouse.retrying
def read_search_ahead(run_ids: list[str]) -> dict[str, dict[Hashable, Any]]:
    """What the static export's search reads of each of ``run_ids`` (``Exporter.run_records``: its layout's trace
    names and step index, every step of every trace whole, ``steps.read_whole_steps_ahead``), read for them all
    at once, {run id: {kept key: answer}}: two queries (the names and indices are taken from the steps' rows)."""
    if not run_ids:
        return {}
    with warehouse.snapshot() as con, warehouse.rows_in_memory(con, unwritten=("step_texts",)):
        return read_whole_steps_ahead(con, run_ids)


__all__ = ["read_ahead", "read_search_ahead"]
