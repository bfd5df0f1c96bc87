"""Reads of the traces app, by concept; the other apps read runs here (this package's names only).

- ``runs``: the runs list, one run, its texts, evaluations, facets, references, directory.
- ``steps``: step pages (keyset pagination), whole step texts, the export's step index and whole steps, cursors,
  evidence.
- ``verdicts``: the override audit log and judge-vs-reviewer agreement.
- ``analysis``: a run's timeline; the analysis page's computation.
- ``feeds``: what the leaderboard and the static export read (latest cells, tree baselines, usage, fingerprints).
- ``compare``: runs side by side (``/compare/``) and the runs of a cell a run page offers to compare with.
- ``search``: the search of every trace (``/search/``).
- ``ahead``: what the static export's pages of many runs read, read for all of them at once (``read_ahead``).
- ``pages``: one selector per page (``run_page``, ``run_steps``, ``runs_page``), one unit of work each, and the run
  page's query (``RunQuery``, ``open_run``).

The models they return are in ``traces.schemas``.
"""
from __future__ import annotations

from ..schemas import STATE_TEXT, Evaluation, EvidenceStep, Facet, OverrideEntry, Run, RunTexts, Step, StepPage
from ..verdicts import SCORED_KINDS
from .analysis import (MAX_TIMELINE_CALLS, AgentCalibration, AgentTimeUse, Analysis, AnalysisTwin, Calibration, CalibrationPoint,
                       CalibrationRun,
                       MethodMix, MethodScore, MonitorSample, PhaseStretch, RunFacts, Timeline, TimelineCall, analysis,
                       run_facts, run_timeline)
from .feeds import (AgentRunsUsage, CellRun, TreeBaseline, latest_cells, read_latest_cells, read_tree_baselines, read_usage_by_agent,
                    run_content_hashes, run_fingerprints, tree_baselines,
                    FINGERPRINT_TABLES, FingerprintRow, RunFingerprintParts, read_fingerprint_rows,
                    run_fingerprint_parts)
from .compare import CellFacts, ComparePage, CompareSide, Peer, PeerRun, cell_facts, cell_peers, compare_page, compare_side, read_budgets
from .pages import (MAX_PAGE_SIZE, PAGE_SIZE, RunPage, RunQuery, RunsPage, RunStepsPage, open_run, parse_time_jump,
                    run_page, run_steps, runs_page, timeline_page)
from .runs import (AGENT_RUN, EXPLORATORY_ORIGINS, PROBLEMS_SHOWN, RUN_SORTS, TEXT_SHOWN, RunSortKey, checkpoint_path, evaluations, facet_clause,
                   fetch_dicts, filter_options, get_run, get_runs, list_runs, read_runs_with_facet, reference_scores,
                   run_directory, run_facets, run_texts, run_titles, runs_read_once, runs_with_facet)
from .steps import (EVIDENCE_CHARS, EVIDENCE_LIMIT, MAX_TEXT_RANGE, PAGE_TEXT_CHARS, IndexedStep, TextRange,
                    WholeStep, evidence_count, evidence_steps, field_chars, step_at_time,
                    step_index, step_text, steps_page, trace_names, whole_steps)
from .judges import JudgeReport, judge_report
from .ahead import read_ahead, read_search_ahead
from .verdicts import override_agreement, override_log

RunSummary = Run  # the name before issue 14

__all__ = ["JudgeReport", "judge_report", "MAX_PAGE_SIZE", "PAGE_SIZE", "RunQuery", "open_run", "parse_time_jump",
    "AGENT_RUN", "EVIDENCE_CHARS", "EVIDENCE_LIMIT", "MAX_TEXT_RANGE", "MAX_TIMELINE_CALLS", "PAGE_TEXT_CHARS",
    "EXPLORATORY_ORIGINS", "PROBLEMS_SHOWN", "RUN_SORTS", "RunSortKey", "SCORED_KINDS", "STATE_TEXT", "TEXT_SHOWN",
    "AgentCalibration", "AgentTimeUse", "CellFacts", "ComparePage", "CompareSide", "Peer", "PeerRun", "cell_facts", "compare_side", "read_budgets", "cell_peers", "compare_page", "Analysis", "AnalysisTwin", "Calibration", "CalibrationPoint", "CalibrationRun", "CellRun", "MonitorSample",
    "PhaseStretch", "Evaluation", "EvidenceStep", "Facet", "IndexedStep",
    "MethodMix", "MethodScore", "OverrideEntry", "Run", "RunFacts", "RunPage", "RunStepsPage", "RunSummary",
    "RunTexts", "AgentRunsUsage", "RunsPage", "Step", "StepPage", "TextRange", "Timeline", "TimelineCall", "TreeBaseline",
    "WholeStep",
    "analysis", "checkpoint_path", "evaluations", "evidence_count", "evidence_steps", "facet_clause", "fetch_dicts",
    "field_chars", "read_latest_cells", "read_runs_with_facet", "read_usage_by_agent", "read_tree_baselines",
    "filter_options", "get_run", "get_runs", "latest_cells", "list_runs", "override_agreement", "override_log",
    "reference_scores", "run_content_hashes", "run_directory", "run_titles", "run_facets", "run_facts",
    "run_fingerprints", "FINGERPRINT_TABLES", "FingerprintRow", "RunFingerprintParts", "read_fingerprint_rows",
    "run_fingerprint_parts",
    "read_ahead", "read_search_ahead", "run_page", "run_steps", "run_texts", "runs_read_once", "run_timeline", "runs_page", "runs_with_facet", "step_at_time",
    "step_index", "step_text", "steps_page", "timeline_page", "trace_names", "tree_baselines",
    "whole_steps",
]
